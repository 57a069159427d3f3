"""Probes in the parameter's own arithmetic: one correct rounding, actual spacings, defaults."""

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from extras import bfloat16, needs, require, with_module
from gradcheck_cli import check_gradients, sampled_tensor_gradient_check
from gradcheck_cli.engine.dtypes import PROBE_DTYPES, dtype_perturbations, probe_dtype
from gradcheck_cli.engine.estimator import perturbations
from gradcheck_cli.errors import (
    AtCoordinate,
    AtParameter,
    PerturbationNotFinite,
    PerturbationUnchanged,
    UnsupportedDtype,
)

FLOAT64, FLOAT32, BFLOAT16 = PROBE_DTYPES["float64"], PROBE_DTYPES["float32"], PROBE_DTYPES["bfloat16"]
FLOAT16 = PROBE_DTYPES["float16"]
NUMPY_TYPES = {"float64": np.float64, "float32": np.float32, "float16": np.float16, "bfloat16": bfloat16}


def stored(value, name):
    """``value`` as the f64 of the dtype's nearest value (numpy's conversion; fine for test inputs)."""
    return float(np.asarray(value, dtype=NUMPY_TYPES[name]))


# --- the formats -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["float64", "float32", "float16", with_module("ml_dtypes", "bfloat16")])
def test_formats_match_numpy_and_ml_dtypes(name):
    info = require("ml_dtypes").finfo(bfloat16) if name == "bfloat16" else np.finfo(NUMPY_TYPES[name])
    fmt = probe_dtype(NUMPY_TYPES[name])
    assert fmt.name == name
    assert fmt.significand_bits == info.nmant + 1
    assert fmt.min_exponent == info.minexp
    assert fmt.max_exponent == info.maxexp - 1
    assert fmt.max_finite == float(info.max)
    assert fmt.epsilon == float(info.eps)


@pytest.mark.parametrize(
    "name, cube_root, sixth_root",
    [
        # ε^(1/3) and ε^(1/6) for ε = 2⁻⁵², 2⁻²³, 2⁻⁷, to 16 digits from a 40-digit Decimal evaluation
        # of exp(−ln 2 · k/3) and exp(−ln 2 · k/6).
        ("float64", 6.055454452393339e-06, 2.460783300575924e-03),
        ("float32", 4.921566601151848e-03, 7.015387801933581e-02),
        ("bfloat16", 1.984251314960249e-01, 4.454493590701697e-01),
        # ε = 2⁻¹⁰: 2^(−10/3) and 2^(−10/6), the same way.
        ("float16", 9.921256574801247e-02, 3.149802624737183e-01),
    ],
)
def test_default_step_tolerance_and_kink_tolerance(name, cube_root, sixth_root):
    fmt = probe_dtype(name)
    assert math.isclose(fmt.step_factor, cube_root, rel_tol=1e-14)
    assert math.isclose(fmt.tolerance, cube_root, rel_tol=1e-14)
    assert math.isclose(fmt.kink_tolerance, sixth_root, rel_tol=1e-14)
    # The step is relative above |θ| = 1 and absolute below it.
    assert fmt.default_step(0.0) == fmt.step_factor
    assert fmt.default_step(-0.5) == fmt.step_factor
    assert fmt.default_step(-300.0) == 300.0 * fmt.step_factor


@pytest.mark.parametrize(
    "dtype, nearest",
    [(np.int64, "float64"), (np.complex128, "complex128"), (np.bool_, "float64"), ("U3", "float64")],
)
def test_other_dtypes_are_rejected_naming_the_nearest_supported_one(dtype, nearest):
    # A complex array is no probed dtype: check_gradients takes it as its real and imaginary parts.
    with pytest.raises(UnsupportedDtype) as caught:
        probe_dtype(np.dtype(dtype))
    assert str(caught.value) == (
        f"parameters array has dtype {np.dtype(dtype).name}; expected float64, float32, float16, bfloat16, "
        f"complex128 or complex64; the nearest is {nearest}: pass .astype({nearest!r})"
    )


def test_scalar_advice_names_no_complex_dtype():
    with pytest.raises(UnsupportedDtype) as caught:
        probe_dtype("complex64", role="probed")
    assert str(caught.value) == (
        "probed array has dtype complex64; expected float64, float32, float16 or bfloat16; "
        "the nearest is float32: pass .astype('float32')"
    )


@pytest.mark.parametrize("dtype", [np.int32, np.complex64])
def test_int_and_complex_arrays_are_still_rejected_by_the_chapters_tensor_check(dtype):
    with pytest.raises(UnsupportedDtype) as caught:
        sampled_tensor_gradient_check(np.zeros(3, dtype=dtype), np.zeros(3), 1e-3, 1e-3, 1, np.sum)
    assert caught.value.role == "parameters" and caught.value.dtype == np.dtype(dtype).name


# --- one correct rounding ----------------------------------------------------------------------


def test_float32_probe_is_one_rounding_of_the_exact_sum_not_of_the_float64_sum():
    # θ = 1, h = 2⁻²⁴ + 2⁻⁷⁶. Exact θ + h lies 2⁻⁷⁶ above the float32 halfway point 1 + 2⁻²⁴, so it
    # rounds up to 1 + 2⁻²³. The f64 sum drops the 2⁻⁷⁶ (below half an f64 ulp) and lands exactly on
    # the tie, which float32 rounds to even: 1.0, a probe collapsed onto θ.
    step = 2.0**-24 + 2.0**-76
    assert float(np.float32(1.0 + step)) == 1.0
    geometry = dtype_perturbations(1.0, step, FLOAT32)
    assert geometry.plus_point == 1.0 + 2.0**-23
    # Below 1 the float32 spacing is 2⁻²⁴: exact 1 − h lies 2⁻⁷⁶ below the value 1 − 2⁻²⁴, its nearest.
    assert geometry.minus_point == 1.0 - 2.0**-24
    assert geometry.minus_spacing == 2.0**-24 and geometry.plus_spacing == 2.0**-23
    assert geometry.stencil == "unequal"


def test_float32_minus_probe_halfway_case():
    # θ = 1, h = 2⁻²⁵ + 2⁻⁷⁷: exact 1 − h lies 2⁻⁷⁷ below the float32 halfway point 1 − 2⁻²⁵
    # (float32 spacing just below 1 is 2⁻²⁴), so it rounds down to 1 − 2⁻²⁴. The f64 difference is
    # the tie 1 − 2⁻²⁵ exactly, which float32 rounds to even: 1.0.
    # (As a probe this step is too small on the plus side, so the rounding is tested directly.)
    step = 2.0**-25 + 2.0**-77
    assert float(np.float32(1.0 - step)) == 1.0
    assert FLOAT32.round_exact(Fraction(1) - Fraction(step)) == 1.0 - 2.0**-24


@needs("ml_dtypes")
def test_bfloat16_probe_halfway_case_whatever_the_conversion_does():
    # θ = 1, h = 2⁻⁸ + 2⁻⁶⁰: exact 1 + h is above the bfloat16 halfway point 1 + 2⁻⁸, so the correct
    # probe is 1 + 2⁻⁷. The f64 sum is the tie 1 + 2⁻⁸ itself; any conversion of it gives 1.0.
    step = 2.0**-8 + 2.0**-60
    assert stored(1.0 + step, "bfloat16") == 1.0
    assert dtype_perturbations(1.0, step, BFLOAT16).plus_point == 1.0 + 2.0**-7


@needs("ml_dtypes")
def test_bfloat16_probes_never_depend_on_how_ml_dtypes_converts_float64():
    # Why dtypes.py never hands an unrounded f64 to ml_dtypes: 1 + 2⁻⁸ + 2⁻³⁰ is an f64 above the
    # bfloat16 halfway point 1 + 2⁻⁸, so bfloat16's nearest value is 1 + 2⁻⁷. ml_dtypes up to 0.6
    # rounds to float32 first (2⁻³⁰ is below half a float32 ulp: the tie 1 + 2⁻⁸), then to even:
    # 1.0; 0.7 rounds once. The probes come from the exact rounding either way.
    value = 1.0 + 2.0**-8 + 2.0**-30
    assert float(np.asarray(value).astype(bfloat16)) in (1.0, 1.0 + 2.0**-7)
    assert BFLOAT16.round_exact(Fraction(value)) == 1.0 + 2.0**-7
    assert dtype_perturbations(1.0, 2.0**-8 + 2.0**-30, BFLOAT16).plus_point == 1.0 + 2.0**-7


def test_float16_probe_is_one_rounding_of_the_exact_sum_not_of_the_float64_sum():
    # θ = 1, h = 2⁻¹¹ + 2⁻⁶³: exact 1 + h lies 2⁻⁶³ above the float16 halfway point 1 + 2⁻¹¹ (float16's
    # spacing above 1 is 2⁻¹⁰), so the probe is 1 + 2⁻¹⁰; the f64 sum is the tie itself, which numpy's
    # conversion rounds to even: 1.0, a probe collapsed onto θ.
    step = 2.0**-11 + 2.0**-63
    assert float(np.float16(1.0 + step)) == 1.0
    geometry = dtype_perturbations(1.0, step, FLOAT16)
    assert (geometry.minus_point, geometry.plus_point) == (1.0 - 2.0**-11, 1.0 + 2.0**-10)
    # float16's subnormals: 2⁻²⁴ is the smallest, and 3·2⁻²⁵ the tie between 2⁻²⁴ and 2⁻²³ (even).
    assert FLOAT16.round_exact(Fraction(3, 2**25)) == 2.0**-23
    assert FLOAT16.round_exact(Fraction(1, 2**25)) == 0.0
    # Past 65504 + 16 (half an ulp of the largest float16) a probe overflows.
    with pytest.raises(PerturbationNotFinite):
        dtype_perturbations(65504.0, 16.0, FLOAT16)
    assert FLOAT16.round_exact(Fraction(65504) + Fraction(15)) == 65504.0


def test_subnormal_ties_round_to_even():
    # θ = 2⁻¹⁴⁹ (the smallest float32 subnormal), h = 2⁻¹⁵⁰: θ − h = 2⁻¹⁵⁰ is the tie between 0 and
    # 2⁻¹⁴⁹ → 0 (even); θ + h = 3·2⁻¹⁵⁰ is the tie between 2⁻¹⁴⁹ and 2⁻¹⁴⁸ → 2⁻¹⁴⁸ (even).
    geometry = dtype_perturbations(2.0**-149, 2.0**-150, FLOAT32)
    assert (geometry.minus_point, geometry.plus_point) == (0.0, 2.0**-148)
    assert (geometry.minus_spacing, geometry.plus_spacing) == (2.0**-149, 2.0**-149)


def test_overflow_at_exactly_half_an_ulp_above_the_largest_float32():
    largest = FLOAT32.max_finite  # (2 − 2⁻²³)·2¹²⁷, whose last significand bit is odd
    # max + 2¹⁰³ (half its ulp 2¹⁰⁴) is a tie between max and 2¹²⁸; even is 2¹²⁸: overflow.
    with pytest.raises(PerturbationNotFinite) as caught:
        dtype_perturbations(largest, 2.0**103, FLOAT32)
    assert caught.value.side == "plus"
    # Just below the tie it rounds back to max, just above it overflows too.
    assert FLOAT32.round_exact(Fraction(largest) + Fraction(2.0**103 - 2.0**60)) == largest
    assert FLOAT32.round_exact(Fraction(largest) + Fraction(2.0**103 + 2.0**60)) == math.inf
    assert FLOAT32.round_exact(-Fraction(largest) - Fraction(2.0**103)) == -math.inf


@needs("ml_dtypes")
def test_bfloat16_probe_that_rounds_back_is_the_chapters_error():
    # bfloat16 spacing just below 1 is 2⁻⁸ ≈ 3.9e-3: a step of 1e-3 is less than half of it.
    with pytest.raises(PerturbationUnchanged) as caught:
        dtype_perturbations(1.0, 1e-3, BFLOAT16)
    assert str(caught.value) == "minus perturbation from point 1.0 by step 0.001 rounds back to the point"
    parameters = {"w": np.ones(2, dtype=bfloat16)}
    calls = []
    with pytest.raises(AtParameter) as caught:
        check_gradients(lambda p: calls.append(1) or 0.0, parameters, {"w": np.zeros(2)}, step=1e-3)
    assert str(caught.value) == (
        "parameter 'w': gradient check at coordinate [0] failed: "
        "minus perturbation from point 1.0 by step 0.001 rounds back to the point"
    )
    assert isinstance(caught.value.source, AtCoordinate) and calls == []


finite_doubles = st.floats(allow_nan=False, allow_infinity=False, allow_subnormal=True)


@given(finite_doubles, finite_doubles)
def test_rounding_to_float64_agrees_with_ieee_arithmetic(first, second):
    # The hardware's f64 subtraction is one correct rounding: an independent oracle for round_exact.
    with np.errstate(over="ignore"):
        expected = np.float64(first) - np.float64(second)
    assert FLOAT64.round_exact(Fraction(first) - Fraction(second)) == float(expected)


float32_values = st.floats(width=32, allow_nan=False, allow_infinity=False, allow_subnormal=True)


@given(float32_values, float32_values)
def test_rounding_to_float32_agrees_with_float32_arithmetic(first, second):
    # With both operands in float32, float32 arithmetic is one correct rounding of the exact sum.
    with np.errstate(over="ignore"):
        expected = np.float32(first) + np.float32(second)
    assert FLOAT32.round_exact(Fraction(first) + Fraction(second)) == float(expected)


def nearest_by_bracketing(exact: Fraction, candidate: float, name: str) -> float:
    """The nearest dtype value to ``exact`` among ``candidate`` and its two neighbours, ties to even."""
    kind = NUMPY_TYPES[name]
    center = np.asarray(candidate, dtype=kind)
    with np.errstate(over="ignore"):  # the largest finite value's neighbour is inf, left out below
        neighbours = [np.nextafter(center, kind(-np.inf)), center, np.nextafter(center, kind(np.inf))]
    finite = [value for value in neighbours if np.isfinite(value)]
    bits = {2: np.uint16, 4: np.uint32, 8: np.uint64}[center.itemsize]

    def key(value):
        return abs(Fraction(float(value)) - exact), int(np.asarray(value).view(bits)) & 1

    return float(min(finite, key=key))


#: The largest magnitude drawn for each dtype's points and steps (float16's largest value is 65504).
LARGEST = {"float32": 1e30, "bfloat16": 1e30, "float16": 6e4}


@pytest.mark.parametrize("name", ["float32", "float16", with_module("ml_dtypes", "bfloat16")])
@given(data=st.data())
def test_probes_are_the_nearest_values_of_the_dtype(name, data):
    # Oracle: among a probe and its two neighbours in the dtype (numpy's nextafter), the probe is the
    # closest to the exact θ ∓ h, measured with exact rationals, ties going to the even significand.
    largest = LARGEST[name]
    point = stored(data.draw(st.floats(min_value=-largest, max_value=largest)), name)
    step = data.draw(st.floats(min_value=1e-30, max_value=largest))
    try:
        geometry = dtype_perturbations(point, step, PROBE_DTYPES[name])
    except (PerturbationUnchanged, PerturbationNotFinite):
        assume(False)
    for exact, probe in (
        (Fraction(point) - Fraction(step), geometry.minus_point),
        (Fraction(point) + Fraction(step), geometry.plus_point),
    ):
        assert stored(probe, name) == probe
        assert nearest_by_bracketing(exact, probe, name) == probe


@given(st.floats(min_value=-1e6, max_value=1e6, allow_subnormal=True), st.floats(min_value=1e-300, max_value=1e6))
def test_float64_probes_are_exactly_the_chapters(point, step):
    try:
        expected = perturbations(point, step)
    except (PerturbationUnchanged, PerturbationNotFinite):
        assume(False)
    assert dtype_perturbations(point, step, FLOAT64) == expected


@pytest.mark.parametrize(
    "name, smallest",
    [("float32", 2.0**-36), ("float16", 2.0**-24), with_module("ml_dtypes", "bfloat16", 2.0**-47)],
)
@given(data=st.data())
def test_default_step_spacings_are_exact_differences_of_the_stored_values(name, smallest, data):
    # The documented range: exact for θ = 0 and for every |θ| ≥ 2⁻³⁶ (float32) or 2⁻⁴⁷ (bfloat16);
    # float16's every value (down to its smallest subnormal 2⁻²⁴) and probe differ by at most 40 bits.
    magnitude = data.draw(st.one_of(st.just(0.0), st.floats(min_value=smallest, max_value=LARGEST[name] / 2)))
    point = stored(magnitude * data.draw(st.sampled_from([1.0, -1.0])), name)
    fmt = PROBE_DTYPES[name]
    geometry = dtype_perturbations(point, fmt.default_step(point), fmt)
    assert Fraction(geometry.minus_spacing) == Fraction(point) - Fraction(geometry.minus_point)
    assert Fraction(geometry.plus_spacing) == Fraction(geometry.plus_point) - Fraction(point)


# --- why the actual spacings matter in float32 --------------------------------------------------


def test_float32_requested_step_that_is_not_representable_needs_the_actual_spacings():
    # θ = 3 in float32, where the spacing is 2⁻²². The requested h = 1e-6 is 4.19 of those ulps, so
    # both probes land 4 ulps away: θ ∓ 2⁻²⁰, actual spacing 2⁻²⁰ = 9.5367431640625e-07 ≠ 1e-6.
    # f(x) = x² in f64 is exact on float32 values, so every number below is exact arithmetic.
    parameters = np.array([3.0], dtype=np.float32)
    analytic = np.array([6.0], dtype=np.float32)
    check = sampled_tensor_gradient_check(parameters, analytic, 1e-6, FLOAT32.tolerance, 1, lambda a: float(a[0]) ** 2)
    difference = check.checks[0].difference
    assert (difference.minus_point, difference.plus_point) == (3.0 - 2.0**-20, 3.0 + 2.0**-20)
    assert difference.minus_spacing == difference.plus_spacing == 9.5367431640625e-07
    # Slopes 6 ∓ 2⁻²⁰, weights ½: the actual-spacing estimate is 6 exactly and passes.
    assert difference.derivative == 6.0
    assert check.checks[0].comparison.passed and check.checks[0].comparison.scaled_error == 0.0
    # Dividing the same two values by the requested 2h instead: 12·2⁻²⁰ / 2e-6 = 6·0.95367431640625.
    requested = (difference.plus_value - difference.minus_value) / (2 * 1e-6)
    assert requested == 5.7220458984375
    # Scaled error |6 − 5.72…|/6 = 0.04632568359375, nine times float32's default tolerance 4.92e-3.
    assert abs(6.0 - requested) / 6.0 == 0.04632568359375 > FLOAT32.tolerance
    # The same parameter through the multi-parameter API gives the same record.
    report = check_gradients(lambda p: float(p["x"][0]) ** 2, {"x": parameters}, {"x": analytic}, step=1e-6)
    assert report.passed and report.parameters[0].checks[0].difference == difference


# --- the tensor check in other dtypes -----------------------------------------------------------


@pytest.mark.parametrize("name", ["float32", "float16", with_module("ml_dtypes", "bfloat16")])
def test_tensor_check_in_low_precision_passes_a_smooth_objective_and_restores(name):
    # f = Σ sin(x) evaluated in f64 from the stored values; the analytic gradient cos(x) is rounded
    # into the same dtype, like a real low-precision backward. Default step and tolerance of the dtype.
    fmt = PROBE_DTYPES[name]
    parameters = np.linspace(-2.0, 2.0, 12).reshape(3, 4).astype(NUMPY_TYPES[name])
    analytic = np.cos(parameters.astype(np.float64)).astype(NUMPY_TYPES[name])
    before = parameters.tobytes()
    report = check_gradients(
        lambda p: float(np.sum(np.sin(p["x"].astype(np.float64)))), {"x": parameters}, {"x": analytic}, samples="all"
    )
    assert parameters.tobytes() == before
    assert report.passed and report.parameters[0].dtype == name
    assert report.parameters[0].tolerance == fmt.tolerance
    for record in report.parameters[0].checks:
        assert stored(record.difference.minus_point, name) == record.difference.minus_point
        assert record.difference.requested_step == fmt.default_step(record.difference.point)


# --- float16: probed in its own arithmetic, with honest verdicts -------------------------------


def _half_sines(parameters):
    """Σ sin x computed in float16 throughout, as a float16 model computes it."""
    x = parameters["x"]
    return float(np.sum(np.sin(x.astype(np.float16)), dtype=np.float16))


def _half_squares(parameters):
    """Σ x² + Σ x computed in float16."""
    x = parameters["x"].astype(np.float16)
    return float(np.sum(x * x + x, dtype=np.float16))


def _wide_tanh(parameters):
    """Σ tanh x computed in float64 from the float16 values."""
    return float(np.sum(np.tanh(parameters["x"].astype(np.float64))))


FLOAT16_CASES = {
    "sin in float16": (_half_sines, np.cos),
    "x² + x in float16": (_half_squares, lambda x: 2 * x + 1),
    "tanh in float64": (_wide_tanh, lambda x: 1 - np.tanh(x) ** 2),
}


@pytest.mark.parametrize("case", list(FLOAT16_CASES))
@pytest.mark.parametrize("shape, seed", [((6,), 0), ((4, 3), 1), ((2, 2, 2), 2)])
def test_float16_passes_a_right_gradient_and_fails_a_doubled_or_negated_one(case, shape, seed):
    # The right gradient is computed in float64 and rounded into float16, as a float16 backward's
    # output is; its relative error at float16's default step is about ε^(2/3) ≈ 1e-2, the ×2 and
    # sign bugs' is 1 and 2, beside float16's tolerance ε^(1/3) = 0.0992.
    objective, derivative = FLOAT16_CASES[case]
    x = np.random.default_rng(seed).uniform(-1.5, 1.5, shape).astype(np.float16)
    right = derivative(x.astype(np.float64)).astype(np.float16)
    before = x.tobytes()
    verdicts = {
        label: check_gradients(objective, {"x": x}, {"x": factor * right}, samples="all").verdict
        for label, factor in (("right", 1.0), ("×2", 2.0), ("sign", -1.0))
    }
    assert x.tobytes() == before
    assert verdicts == {"right": "passed", "×2": "failed", "sign": "failed"}


def test_float16_defaults_are_its_own():
    x = np.linspace(-1.0, 1.0, 5).astype(np.float16)
    report = check_gradients(_half_sines, {"x": x}, {"x": np.cos(x)})
    parameter = report.parameters[0]
    assert parameter.dtype == "float16" and parameter.tolerance == FLOAT16.tolerance
    assert parameter.checks[0].difference.requested_step == FLOAT16.default_step(float(x[0]))


def test_a_doubled_float16_gradient_whose_estimates_carry_truncation_fails():
    # Σ tanh x at the float16 points of seed 13: at x = 1.095 the estimate at h is 0.3635 ± 0.065
    # (truncation at float16's step 0.109), so a doubled gradient 0.7246 is a relative error of 0.498,
    # just under ½: "of the gradient's own order" within the estimate's bar, it fails (it was
    # inconclusive at every coordinate, h/10's bar too wide and 10h's slopes apart).
    x = np.random.default_rng(13).uniform(-1.5, 1.5, 6).astype(np.float16)
    right = (1 - np.tanh(x.astype(np.float64)) ** 2).astype(np.float16)
    first = check_gradients(_wide_tanh, {"x": x}, {"x": 2 * right}, samples="all").parameters[0].checks[0]
    assert first.estimates[0].relative_error < 0.5 and first.verdict == "failed"
    assert check_gradients(_wide_tanh, {"x": x}, {"x": right}, samples="all").passed
