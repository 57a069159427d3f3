"""complex_parts.py: a complex parameter checked as its real and imaginary parts, in check_gradients,
check_taylor, the step advice and the failure message; a conjugated gradient fails and is named.

The gradient's convention is ∂f/∂Re z + i ∂f/∂Im z. For f(z) = Re Σ c·h(z) with h holomorphic it is
conj(c·h'(z)) exactly (Cauchy–Riemann), the numbers these tests state; torch's autograd agrees
(tests/test_torch.py checks the same cases against ``torch.autograd.gradcheck``).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcheck_cli import GradientProblem, check_gradients, check_problem, check_taylor
from gradcheck_cli.advice.steps import advise_problem_steps
from gradcheck_cli.engine.complex_parts import coordinate_text, part_coordinates, real_parts, real_view
from gradcheck_cli.errors import AtParameter, GradientShapeMismatch, UnsupportedDtype
from gradcheck_cli.testing import assert_gradients
from gradcheck_cli.verdict.words import FAILED, PASSED

COMPLEX = [np.complex128, np.complex64]


def point(shape, dtype, seed=0):
    generator = np.random.default_rng(seed)
    return np.asarray(generator.uniform(-1.5, 1.5, shape) + 1j * generator.uniform(-1.5, 1.5, shape), dtype=dtype)


def modulus_plus_linear(c):
    """Σ|z|² + Re Σ c·z, whose gradient is 2z + c̄ (|z|² = x² + y², Re(c·z) = Re c·x − Im c·y)."""

    def objective(parameters):
        z = parameters["z"]
        return float(np.sum(np.abs(z) ** 2) + np.real(np.sum(c * z)))

    return objective, lambda z: 2 * z.astype(np.complex128) + np.conj(c)


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("shape", [(), (5,), (3, 4)])
def test_a_right_complex_gradient_passes_and_a_conjugated_one_fails_named_conjugate(dtype, shape):
    c = point(shape, np.complex128, seed=1)
    objective, gradient = modulus_plus_linear(c)
    z = point(shape, dtype)
    saved = z.copy()
    right = check_gradients(objective, {"z": z}, {"z": gradient(z).astype(dtype)}, samples="all")
    wrong = check_gradients(objective, {"z": z}, {"z": np.conj(gradient(z)).astype(dtype)}, samples="all")
    assert z.tobytes() == saved.tobytes()
    assert right.verdict == PASSED, right.failures()
    assert wrong.verdict == FAILED and wrong.failing_parameters == ("z",)
    assert wrong.parameters[0].diagnosis.kind == "conjugate"
    # Each entry is two real coordinates; only imaginary parts fail (Re of the conjugate is right).
    assert len(right.parameters[0].checks) == 2 * max(1, z.size)
    assert {record.coordinate[-1] for record in wrong.parameters[0].checks.failed()} == {1}


@pytest.mark.parametrize("dtype", COMPLEX)
def test_a_doubled_or_transposed_complex_gradient_is_named_as_a_real_one_is(dtype):
    generator = np.random.default_rng(2)
    a = point((3, 3), np.complex128, seed=3)

    def objective(parameters):  # Re Σ a·w² + Σ|w|²: gradient conj(2a·w) + 2w, not symmetric
        w = parameters["w"]
        return float(np.real(np.sum(a * w * w)) + np.sum(np.abs(w) ** 2))

    w = point((3, 3), dtype, seed=int(generator.integers(100)))
    right = np.conj(2 * a * w) + 2 * w.astype(np.complex128)
    diagnoses = {}
    for label, gradient in (("×2", 2 * right), ("transpose", right.T)):
        report = check_gradients(objective, {"w": w}, {"w": gradient.astype(dtype)}, samples="all")
        assert report.verdict == FAILED
        diagnoses[label] = report.parameters[0].diagnosis
    assert diagnoses["×2"].kind == "scale" and diagnoses["×2"].factor == 2.0
    assert diagnoses["transpose"].kind == "transpose"


def test_the_report_shows_the_complex_dtype_and_shape_and_each_coordinate_names_its_part():
    c = point((2, 3), np.complex128, seed=1)
    objective, gradient = modulus_plus_linear(c)
    z = point((2, 3), np.complex128)
    report = check_gradients(objective, {"z": z}, {"z": np.conj(gradient(z))}, samples="all")
    parameter = report.parameters[0]
    assert (parameter.dtype, parameter.shape) == ("complex128", (2, 3))
    assert parameter.checks[1].coordinate == (0, 0, 1)  # the index into view_as_real(z)
    document = report.to_dict()["parameters"][0]
    assert document["dtype"] == "complex128" and document["checks"][1]["coordinate"] == [0, 0, 1]
    with pytest.raises(AssertionError) as caught:
        assert_gradients(objective, {"z": z}, {"z": np.conj(gradient(z))}, samples="all")
    message = str(caught.value)
    assert "z: conjugate: the real parts agree and every failing imaginary part is −numerical" in message
    assert "\nz          [0, 0].imag  failed" in message
    assert "[0, 0].real" not in message  # the real parts passed


def test_a_real_gradient_of_a_complex_parameter_is_one_whose_imaginary_part_is_zero():
    def objective(parameters):  # Σ (Re z)²: ∂f/∂Im z = 0
        return float(np.sum(np.real(parameters["z"]) ** 2))

    z = point(4, np.complex128)
    assert check_gradients(objective, {"z": z}, {"z": 2 * z.real}).passed
    assert not check_gradients(objective, {"z": z}, {"z": 2 * z.real + 0.5j}).passed


def test_explicit_coordinates_name_an_entry_for_both_parts_or_one_part():
    objective, gradient = modulus_plus_linear(np.ones((2, 2)))
    z = point((2, 2), np.complex128)
    report = check_gradients(objective, {"z": z}, {"z": gradient(z)}, coordinates={"z": [(0, 1), (1, 1, 1)]})
    assert [record.coordinate for record in report.parameters[0].checks] == [(0, 1, 0), (0, 1, 1), (1, 1, 1)]
    assert part_coordinates([3, (2, 0)], (4, 2)) == [(3, 0), (3, 1), (2, 0)]


@pytest.mark.parametrize("dtype", COMPLEX)
def test_the_taylor_test_and_the_step_advice_take_complex_parameters(dtype):
    c = point(6, np.complex128, seed=4)
    objective, gradient = modulus_plus_linear(c)
    z = point(6, dtype)
    saved = z.copy()
    right = GradientProblem(objective, {"z": z}, {"z": gradient(z).astype(dtype)})
    wrong = GradientProblem(objective, {"z": z}, {"z": np.conj(gradient(z)).astype(dtype)})
    if dtype is np.complex128:  # float32's Taylor test is often inconclusive (docs/method.md)
        assert check_taylor(right).verdict == PASSED
        assert check_taylor(wrong).verdict == FAILED
    assert advise_problem_steps(right).parameters[0].coordinate == (3, 0)
    assert check_problem(right, step="auto").passed
    assert z.tobytes() == saved.tobytes()


def test_unsupported_complex_dtypes_and_shapes_are_one_line_naming_the_nearest():
    with pytest.raises(AtParameter) as caught:
        check_gradients(lambda p: 0.0, {"z": np.ones(2, dtype=np.clongdouble)}, {"z": np.ones(2)})
    assert isinstance(caught.value.source, UnsupportedDtype)
    assert str(caught.value).endswith("the nearest is complex128: pass .astype('complex128')")
    with pytest.raises(AtParameter) as caught:
        check_gradients(lambda p: 0.0, {"z": np.ones(2, dtype=complex)}, {"z": np.ones(3, dtype=complex)})
    assert isinstance(caught.value.source, GradientShapeMismatch)


def test_real_view_is_the_same_memory_for_any_layout():
    z = point((3, 4), np.complex64)
    for view in (z, z.T, z[::-1, ::2], z[1], z[1, 2, ...]):
        parts = real_view(view)
        assert parts.dtype == np.float32 and parts.shape == view.shape + (2,)
        assert np.array_equal(parts[..., 0], view.real) and np.array_equal(parts[..., 1], view.imag)
        assert np.shares_memory(parts, view)
    real, gradient = np.ones(2), np.ones(2)
    assert real_parts(real, gradient) == (real, gradient, None)  # a real parameter is left as it is
    assert coordinate_text((0, 1, 1), "complex64") == "[0, 1].imag"
    assert coordinate_text((2, 0), "complex128") == "[2].real"
    assert coordinate_text((0,), "complex128") == "[].real"  # a 0-d complex parameter's part
    assert coordinate_text((0, 1), "float64") == "[0, 1]"


@settings(max_examples=25, deadline=None)
@given(
    power=st.integers(1, 4),
    seed=st.integers(0, 2**16),
    dtype=st.sampled_from(COMPLEX),
)
def test_every_holomorphic_power_passes_and_its_conjugate_fails(power, seed, dtype):
    # f(z) = Re Σ c·zᵏ has the gradient conj(k·c·zᵏ⁻¹) (Cauchy–Riemann); its conjugate is a bug
    # wherever the gradient has an imaginary part (always, at these random complex points).
    c, z = point(4, np.complex128, seed), point(4, dtype, seed + 1)

    def objective(parameters):
        return float(np.real(np.sum(c * parameters["z"].astype(np.complex128) ** power)))

    right = np.conj(power * c * z.astype(np.complex128) ** (power - 1))
    assert check_gradients(objective, {"z": z}, {"z": right.astype(dtype)}, samples="all").passed
    wrong = check_gradients(objective, {"z": z}, {"z": np.conj(right).astype(dtype)}, samples="all")
    assert wrong.verdict == FAILED


@pytest.mark.parametrize("dtype", COMPLEX)
@pytest.mark.parametrize("failing_call", [2, 5, 9])
@pytest.mark.parametrize("raised", [RuntimeError, KeyboardInterrupt])
def test_a_complex_parameter_is_restored_bit_for_bit_when_the_objective_raises(dtype, failing_call, raised):
    objective, gradient = modulus_plus_linear(np.ones((2, 2)))
    z = point((2, 2), dtype)
    saved = z.tobytes()
    calls = []

    def failing(parameters):
        calls.append(1)
        if len(calls) == failing_call:
            raise raised("inside the objective")
        return objective(parameters)

    with pytest.raises(raised):
        check_gradients(failing, {"z": z}, {"z": gradient(z)})
    assert z.tobytes() == saved
