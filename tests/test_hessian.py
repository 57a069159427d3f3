"""gradcheck_cli.check.hessian: a Hessian-vector product against the central difference of the gradient.

The problem is scipy's use case: logistic regression's mean loss, whose gradient is
Xᵀ(σ(Xw) − y)/N and Hessian-vector product Xᵀ(s(1 − s) ⊙ Xv)/N with s = σ(Xw). The classic bug
is a ``hessp`` that forgets the 1/N: every component is N times too large.
"""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck_cli.check.hessian import check_hessian_vector_product
from gradcheck_cli.errors import AtParameter, InvalidArgument

N, D = 40, 5


def logistic_regression(dtype=np.float64, missing_mean=False, seed=0):
    rng = np.random.default_rng(seed)
    features = rng.standard_normal((N, D))
    labels = (rng.random(N) < 0.5).astype(np.float64)
    parameters = {"w": (0.5 * rng.standard_normal(D)).astype(dtype), "b": np.array(0.25, dtype=dtype)}

    def sigmoid(w, b):
        return 1.0 / (1.0 + np.exp(-(features @ w.astype(np.float64) + float(b))))

    def gradient(p):
        residual = sigmoid(p["w"], p["b"]) - labels
        return {"w": features.T @ residual / N, "b": np.sum(residual) / N}

    def hessp(v):
        s = sigmoid(parameters["w"], parameters["b"])
        weighted = s * (1.0 - s) * (features @ v["w"] + v["b"])
        scale = 1.0 if missing_mean else 1.0 / N
        return {"w": features.T @ weighted * scale, "b": np.sum(weighted) * scale}

    return gradient, hessp, parameters


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_hessp_missing_its_one_over_n_fails_and_the_right_one_passes(dtype):
    gradient, hessp, parameters = logistic_regression(dtype)
    before = {name: value.copy() for name, value in parameters.items()}
    report = check_hessian_vector_product(gradient, hessp, parameters)
    assert report.passed, report
    assert report.gradient_calls == 3 and report.hvp_calls == 1  # m = 1 decided every component
    gradient, hessp, parameters = logistic_regression(dtype, missing_mean=True)
    report = check_hessian_vector_product(gradient, hessp, parameters)
    assert report.verdict == "failed" and report.failing_parameters == ("w", "b")
    assert report.parameter("w").failed == D and report.parameter("b").failed == 1
    # analytic/numerical is N = 40 at every component (up to the difference's own error).
    worst = report.parameter("w").worst.estimates[0]
    assert worst.analytic / worst.numerical == pytest.approx(N, rel=1e-2)
    for name, value in parameters.items():  # restored bit for bit
        assert np.array_equal(value, logistic_regression(dtype)[2][name]) and value.dtype == before[name].dtype


@given(seed=st.integers(0, 2**32 - 1))
def test_a_correct_hessp_passes_at_every_point(seed):
    gradient, hessp, parameters = logistic_regression(seed=seed)
    assert check_hessian_vector_product(gradient, hessp, parameters, seed=seed).passed


def test_parameters_are_restored_when_the_gradient_raises():
    gradient, hessp, parameters = logistic_regression()
    original = parameters["w"].copy()
    calls = []

    def failing(p):
        calls.append(p["w"].copy())
        if len(calls) == 2:
            raise ZeroDivisionError("at the plus probe")
        return gradient(p)

    with pytest.raises(ZeroDivisionError):
        check_hessian_vector_product(failing, hessp, parameters)
    assert not np.array_equal(calls[1], original)  # the probe was written...
    assert np.array_equal(parameters["w"].view(np.int64), original.view(np.int64))  # ...and written back


def test_bad_requests_are_typed_errors():
    gradient, hessp, parameters = logistic_regression()
    with pytest.raises(InvalidArgument):
        check_hessian_vector_product(gradient, None, parameters)
    with pytest.raises(InvalidArgument, match="step"):
        check_hessian_vector_product(gradient, hessp, parameters, step=0.0)
    with pytest.raises(InvalidArgument, match=r"direction\['w'\]"):
        check_hessian_vector_product(gradient, hessp, parameters, direction={"w": np.zeros(D), "b": 1.0})
    with pytest.raises(InvalidArgument, match=r"hvp\(\)\['w'\]"):
        check_hessian_vector_product(gradient, lambda v: {"w": np.zeros(2), "b": 0.0}, parameters)
    parameters["w"].flags.writeable = False
    with pytest.raises(AtParameter, match="'w'"):
        check_hessian_vector_product(gradient, hessp, parameters)


@pytest.mark.parametrize("missing_mean, verdict, order", [(False, "passed", 2.0), (True, "failed", 1.0)])
def test_the_directional_taylor_test_of_the_hessian_term(missing_mean, verdict, order):
    from gradcheck_cli import check_problem, check_taylor
    from gradcheck_cli.check.hessian import hessian_problem

    gradient, hessp, parameters = logistic_regression(missing_mean=missing_mean)
    result = check_taylor(hessian_problem(gradient, hessp, parameters))
    # ⟨v, ∇f(θ + tΔ)⟩ − ⟨v, ∇f(θ)⟩ − t·⟨Hv, Δ⟩ is O(t²) with the right Hv (f's remainder 3), O(t) without 1/N.
    assert result.verdict == verdict and abs(result.order - order) < 0.3
    assert check_problem(hessian_problem(gradient, hessp, parameters)).passed == (not missing_mean)


def test_the_package_exports_the_hessian_check():
    import gradcheck_cli
    from gradcheck_cli.check import hessian

    assert gradcheck_cli.check_hessian_vector_product is hessian.check_hessian_vector_product
    assert gradcheck_cli.hessian_problem is hessian.hessian_problem


def _integer_problem(seed: int):
    """∇f = A x + x³ of a float64 x of small integers, A symmetric with integer entries: ∇f(θ) is
    made of integers (float32 numbers), ∇f(θ ± h·v) is not."""
    rng = np.random.default_rng(seed)
    x = rng.integers(-4, 5, size=6).astype(np.float64)
    a = rng.integers(-3, 4, size=(6, 6)).astype(np.float64)
    a = a + a.T
    return x, a, lambda p: {"x": a @ p["x"] + p["x"] ** 3}, a + np.diag(3 * x**2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_float64_parameters_of_small_integers_keep_float64_bars(seed):
    """The values' precision is read at the probes too: a float64 θ of integers is no float32
    objective. Its bars were float32's (rounding 4·2⁻²³·|∇f|/h ≈ 1.6 at |∇f| ≈ 20, h = 6.1e-6, against
    float64's ≤ 2e-7 here); a relative 1e-3 (and 1e-5) error in the hvp fails, the right one passes."""
    x, _, gradient, hessian = _integer_problem(seed)
    right = check_hessian_vector_product(gradient, lambda w: {"x": hessian @ w["x"]}, {"x": x})
    assert right.verdict == "passed"
    for error in (1e-3, 1e-5):
        wrong = check_hessian_vector_product(gradient, lambda w: {"x": (1 + error) * (hessian @ w["x"])}, {"x": x})
        assert wrong.verdict == "failed"
        for component in wrong.parameters[0].unpassed:
            assert all(estimate.error_bar.rounding < 1e-6 for estimate in component.estimates)


@given(seed=st.integers(0, 2**32 - 1), single=st.booleans())
def test_each_components_rounding_bar_is_a_derivatives(seed, single):
    """∇f = A·θ is linear, so the central difference has no truncation: its gap to A·w is the rounding
    of the gradient's values, about ε·|g| over the spacing 2mh. Computed in float32 for float64 θ that
    is about 2⁻²⁴·|g|/h ≈ 1e-2·|g| (h = 6.1e-6), far above the tolerance; a bar of ε·|g|/m, without the
    1/h, failed 94 of 300 such seeds. The right hvp never fails, and ×2 still fails."""
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((5, 5))
    a = a + a.T
    x = rng.standard_normal(5) * 10.0 ** rng.integers(-2, 3)
    dtype = np.float32 if single else np.float64

    def gradient(p):
        return {"x": (a.astype(dtype) @ p["x"].astype(dtype)).astype(np.float64)}

    right = check_hessian_vector_product(gradient, lambda w: {"x": a @ w["x"]}, {"x": x}, seed=seed)
    assert right.verdict in (("passed", "inconclusive") if single else ("passed",)), right
    doubled = check_hessian_vector_product(gradient, lambda w: {"x": 2.0 * (a @ w["x"])}, {"x": x}, seed=seed)
    assert doubled.verdict == "failed", doubled


def test_a_gradient_computed_in_float32_for_float64_parameters_carries_float32_bars():
    x, a, _, hessian = _integer_problem(3)
    x = x + np.random.default_rng(3).normal(size=6)

    def gradient(p):
        t = p["x"].astype(np.float32)
        return {"x": (a.astype(np.float32) @ t + t**3).astype(np.float64)}

    hessian = a + np.diag(3 * x**2)
    report = check_hessian_vector_product(gradient, lambda w: {"x": hessian @ w["x"]}, {"x": x})
    assert report.verdict != "failed"
