"""The scalar estimator: the chapter's printed numbers, its rejected requests, and properties."""

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from gradcheck_cli import (
    InvalidStep,
    InvalidTolerance,
    NonFiniteAnalyticGradient,
    NonFiniteEvaluation,
    NonFiniteNumericalGradient,
    NonFiniteOneSidedSlope,
    NonFinitePoint,
    NonScalarEvaluation,
    PerturbationNotFinite,
    PerturbationUnchanged,
    central_difference,
    compare_gradients,
    compare_one_sided_slopes,
    scalar_gradient_check,
)
from gradcheck_cli.chapter.fixtures import (
    absolute_kink_diagnostic,
    collapsed_step_error,
    quadratic,
    quadratic_gradient_check,
    rounded_identity_gradient_check,
)
from gradcheck_cli.core.formatting import rust_debug, rust_exp, rust_fixed
from gradcheck_cli.engine.estimator import perturbations


def test_quadratic_reproduces_the_chapters_line():
    # Chapter: "quadratic: theta=3.000000000000 requested_h=1.00000000000000006e-1
    # actual_h_minus=1.00000000000000089e-1 ... numerical=6.000000000000"
    difference = quadratic_gradient_check(6.0).difference
    assert rust_fixed(difference.point) == "3.000000000000"
    assert rust_exp(difference.requested_step, 17) == "1.00000000000000006e-1"
    assert rust_exp(difference.minus_spacing, 17) == "1.00000000000000089e-1"
    assert rust_exp(difference.plus_spacing, 17) == "1.00000000000000089e-1"
    assert rust_fixed(difference.minus_value) == "8.410000000000"
    assert rust_fixed(difference.center_value) == "9.000000000000"
    assert rust_fixed(difference.plus_value) == "9.610000000000"
    assert rust_fixed(difference.left_slope) == "5.900000000000"
    assert rust_fixed(difference.right_slope) == "6.100000000000"
    assert rust_exp(difference.left_weight, 17) == "5.00000000000000000e-1"
    assert rust_exp(difference.right_weight, 17) == "5.00000000000000000e-1"
    assert rust_fixed(difference.derivative) == "6.000000000000"
    # The figure: probes 2.9 and 3.1 (the f64 values nearest to them), stencil symmetric.
    assert (rust_debug(difference.minus_point), rust_debug(difference.plus_point)) == ("2.9", "3.1")
    assert difference.stencil == "symmetric"


def test_quadratic_probe_spacing_is_not_the_requested_step():
    difference = quadratic_gradient_check(6.0).difference
    # fl(3 - 0.1) = 2.9 lies 0.10000000000000009 below 3, not 0.1.
    assert difference.minus_spacing == 0.10000000000000009 != difference.requested_step


def test_candidate_six_passes_and_five_and_a_half_fails():
    correct = quadratic_gradient_check(6.0).comparison
    assert correct.passed and correct.scaled_error == 0.0
    wrong = quadratic_gradient_check(5.5).comparison
    # Chapter: "wrong candidate: analytic=5.500000000000 scaled_error=8.333333333333e-2
    # tolerance=1.000000000000e-6 pass=false"; by hand s = max(1, 5.5, 6) = 6, |5.5/6 - 6/6| = 1/12.
    assert rust_fixed(wrong.analytic) == "5.500000000000"
    assert rust_exp(wrong.scaled_error, 12) == "8.333333333333e-2"
    assert rust_exp(wrong.tolerance, 12) == "1.000000000000e-6"
    assert wrong.scale == 6.0 and wrong.absolute_error == 0.5
    assert wrong.passed is False


def test_rounded_identity_uses_unequal_actual_spacings():
    # Chapter figure: requested 1.33226762955018780e-16, spacings 1.11022302462515654e-16 and
    # 2.22044604925031308e-16 (2^-53 and 2^-52), stencil unequal, numerical 1.000000000000.
    check = rounded_identity_gradient_check()
    difference = check.difference
    assert rust_exp(difference.requested_step, 17) == "1.33226762955018780e-16"
    assert rust_exp(difference.minus_spacing, 17) == "1.11022302462515654e-16"
    assert rust_exp(difference.plus_spacing, 17) == "2.22044604925031308e-16"
    assert difference.minus_spacing == 2.0**-53 and difference.plus_spacing == 2.0**-52
    assert difference.stencil == "unequal"
    assert difference.left_slope == difference.right_slope == 1.0
    assert difference.left_weight == 2 / 3 and difference.right_weight == 1 / 3
    assert rust_fixed(difference.derivative) == "1.000000000000"
    assert check.comparison.passed


def test_dividing_by_the_requested_two_h_would_fail_the_identity():
    difference = rounded_identity_gradient_check().difference
    naive = (difference.plus_value - difference.minus_value) / (2 * difference.requested_step)
    assert abs(naive - 1.0) > 0.2  # 1.25: the requested step does not describe the probes


def test_absolute_value_corner_is_a_false_pass_with_disagreeing_slopes():
    # Chapter figure: left slope -1.000000000000, right 1.000000000000, numerical 0.000000000000,
    # tolerance 1.000000000000e-12.
    kink = absolute_kink_diagnostic()
    assert rust_fixed(kink.slopes.left) == "-1.000000000000"
    assert rust_fixed(kink.slopes.right) == "1.000000000000"
    assert rust_fixed(kink.check.difference.derivative) == "0.000000000000"
    assert rust_exp(kink.slopes.tolerance, 12) == "1.000000000000e-12"
    assert kink.check.comparison.passed  # the false pass the chapter warns about
    assert not kink.slopes.consistent
    assert (kink.slopes.absolute_gap, kink.slopes.scale, kink.slopes.scaled_gap) == (2.0, 1.0, 2.0)


def test_collapsed_step_is_the_chapters_error():
    error = collapsed_step_error()
    assert isinstance(error, PerturbationUnchanged)
    assert (error.side, error.point, error.step) == ("minus", 1.0, 1e-20)
    assert str(error) == "minus perturbation from point 1.0 by step 1e-20 rounds back to the point"


@pytest.mark.parametrize(
    "point, step, error_type, message",
    [
        (1.0, 0.0, InvalidStep, "central-difference requested step 0.0 must be positive and finite"),
        (1.0, -0.5, InvalidStep, "central-difference requested step -0.5 must be positive and finite"),
        (1.0, math.nan, InvalidStep, "central-difference requested step NaN must be positive and finite"),
        (1.0, math.inf, InvalidStep, "central-difference requested step inf must be positive and finite"),
        (math.nan, 0.1, NonFinitePoint, "gradient-check point NaN must be finite"),
        (-math.inf, 0.1, NonFinitePoint, "gradient-check point -inf must be finite"),
        (
            -1.7e308,
            1e308,
            PerturbationNotFinite,
            "minus perturbation from point -1.7e308 by step 1e308 is not finite",
        ),
        (
            1.7e308,
            1e308,
            PerturbationNotFinite,
            "plus perturbation from point 1.7e308 by step 1e308 is not finite",
        ),
        (
            1.0,
            1e-16,
            PerturbationUnchanged,
            "plus perturbation from point 1.0 by step 1e-16 rounds back to the point",
        ),
    ],
)
def test_rejected_requests_never_call_the_objective(point, step, error_type, message):
    calls = []
    with pytest.raises(error_type) as caught:
        central_difference(point, step, calls.append)
    assert str(caught.value) == message
    assert calls == []


def test_minus_probe_nan_is_named_by_side():
    values = iter([math.nan, 1.0, 2.0])
    with pytest.raises(NonFiniteEvaluation) as caught:
        central_difference(1.0, 0.5, lambda _: next(values))
    assert caught.value.side == "minus"
    assert str(caught.value) == "minus function evaluation returned NaN"


@pytest.mark.parametrize("side, position", [("center", 1), ("plus", 2)])
def test_each_non_finite_value_is_named_by_its_side(side, position):
    values = [0.0, 0.0, 0.0]
    values[position] = math.inf
    calls = iter(values)
    with pytest.raises(NonFiniteEvaluation) as caught:
        central_difference(1.0, 0.5, lambda _: next(calls))
    assert caught.value.side == side
    assert str(caught.value) == f"{side} function evaluation returned inf"


def test_evaluation_stops_at_the_first_non_finite_value():
    seen = []

    def objective(x):
        seen.append(x)
        return math.nan

    with pytest.raises(NonFiniteEvaluation):
        central_difference(2.0, 0.5, objective)
    assert seen == [1.5]


@pytest.mark.parametrize(
    "returned, described",
    [("1.0", "str"), (1 + 2j, "complex"), ([1.0], "list"), (None, "NoneType")],
)
def test_an_objective_that_returns_no_real_number_is_a_typed_error(returned, described):
    with pytest.raises(NonScalarEvaluation) as caught:
        central_difference(1.0, 0.5, lambda _: returned)
    assert str(caught.value) == f"minus function evaluation must return one real number, got {described}"


def test_overflowing_slopes_are_named():
    # Finite values 1e308 apart over a spacing of 0.5 overflow the secant slope.
    calls = iter([-1e308, 1e308, 1e308])
    with pytest.raises(NonFiniteOneSidedSlope) as caught:
        central_difference(1.0, 0.5, lambda _: next(calls))
    assert caught.value.side == "minus"
    assert str(caught.value) == "minus one-sided slope is not finite: inf"
    calls = iter([0.0, 0.0, 1e308])
    with pytest.raises(NonFiniteOneSidedSlope) as caught:
        central_difference(1.0, 0.5, lambda _: next(calls))
    assert caught.value.side == "plus"


def test_non_finite_numerical_value_is_named():
    # The weights are in (0, 1) and sum to one, so the weighted estimate of two finite slopes
    # cannot overflow; the variant is reached through the comparison.
    with pytest.raises(NonFiniteNumericalGradient) as caught:
        compare_gradients(1.0, math.inf, 1e-6)
    assert str(caught.value) == "central difference produced non-finite gradient inf"


@pytest.mark.parametrize("tolerance, text", [(-1e-6, "-1e-6"), (math.nan, "NaN"), (math.inf, "inf")])
def test_bad_tolerance_is_rejected_before_any_call(tolerance, text):
    calls = []
    with pytest.raises(InvalidTolerance) as caught:
        scalar_gradient_check(3.0, 6.0, 0.1, tolerance, calls.append)
    assert str(caught.value) == f"gradient-check tolerance {text} must be finite and nonnegative"
    assert calls == []


def test_non_finite_candidate_is_rejected():
    with pytest.raises(NonFiniteAnalyticGradient) as caught:
        scalar_gradient_check(3.0, math.nan, 0.1, 1e-6, quadratic)
    assert str(caught.value) == "analytic gradient NaN must be finite"


def test_zero_tolerance_passes_only_an_exact_match():
    assert compare_gradients(6.0, 6.0, 0.0).passed
    assert not compare_gradients(6.0, math.nextafter(6.0, 7.0), 0.0).passed


def test_scale_floor_makes_small_gradients_absolute_and_large_ones_relative():
    small = compare_gradients(1e-9, 2e-9, 1e-6)
    assert small.scale == 1.0 and small.scaled_error == small.absolute_error == 1e-9
    large = compare_gradients(1000.0, 1001.0, 1e-6)
    assert large.scale == 1001.0 and large.scaled_error == abs(1000.0 / 1001.0 - 1.0)


def test_objective_is_called_minus_center_plus():
    seen = []
    central_difference(3.0, 0.1, lambda x: seen.append(x) or x * x)
    assert seen == [3.0 - 0.1, 3.0, 3.0 + 0.1]


def test_one_sided_slopes_agree_on_a_line():
    difference = central_difference(2.0, 0.25, lambda x: 3.0 * x - 1.0)
    slopes = compare_one_sided_slopes(difference, 1e-12)
    assert slopes.consistent and slopes.left == slopes.right == 3.0


def test_results_serialise_to_plain_json_values():
    record = quadratic_gradient_check(5.5).to_dict()
    assert list(record) == ["difference", "comparison"]
    assert record["difference"]["stencil"] == "symmetric"
    assert record["comparison"]["pass"] is False
    assert record["difference"]["requested_h"] == 0.1


finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)
steps = st.floats(min_value=1e-300, max_value=1e6, allow_nan=False, allow_infinity=False)


@given(finite, steps)
def test_identity_gives_one_for_every_valid_probe_pair(point, step):
    try:
        difference = central_difference(point, step, lambda x: x)
    except (PerturbationUnchanged, PerturbationNotFinite):
        assume(False)
    assert abs(difference.derivative - 1.0) <= 1e-12
    assert difference.minus_point < point < difference.plus_point


@given(finite, steps)
def test_weights_are_finite_and_sum_to_one(point, step):
    try:
        geometry = perturbations(point, step)
    except (PerturbationUnchanged, PerturbationNotFinite):
        assume(False)
    assert math.isfinite(geometry.left_weight) and math.isfinite(geometry.right_weight)
    assert 0.0 < geometry.left_weight < 1.0 and 0.0 < geometry.right_weight < 1.0
    assert abs(geometry.left_weight + geometry.right_weight - 1.0) <= 2.0**-52
    assert (geometry.stencil == "symmetric") == (geometry.minus_spacing == geometry.plus_spacing)


@given(st.floats(min_value=-1e300, max_value=1e300), st.floats(min_value=1e250, max_value=1.7e308))
def test_huge_spacings_never_overflow_the_weights(point, step):
    try:
        geometry = perturbations(point, step)
    except (PerturbationUnchanged, PerturbationNotFinite):
        assume(False)
    assert abs(geometry.left_weight + geometry.right_weight - 1.0) <= 2.0**-52


@given(
    st.integers(min_value=-1000, max_value=1000),
    st.sampled_from([1.0, -1.0]),
    st.floats(min_value=0.51, max_value=0.74),
    st.floats(min_value=-1e6, max_value=1e6),
)
def test_unequal_spacings_still_give_the_slope_of_a_line(exponent, sign, fraction, intercept):
    # Just below a power of two the grid is twice as fine, so fl(p - f*ulp) lands ulp/2 away
    # while fl(p + f*ulp) lands a whole ulp away: the stencil is always unequal here.
    point = sign * 2.0**exponent
    step = fraction * math.ulp(point)
    difference = central_difference(point, step, lambda x: x)
    assert difference.stencil == "unequal"
    assert abs(difference.derivative - 1.0) <= 1e-12
    assert {difference.minus_spacing, difference.plus_spacing} == {math.ulp(point) / 2, math.ulp(point)}


@pytest.mark.parametrize("point", [1.0, 2.0, 1024.0, 0.5])
def test_unequal_stencil_at_powers_of_two(point):
    # The chapter's identity step is 0.6 ulp(1): 1 - h rounds to 1 - ulp/2, 1 + h to 1 + ulp.
    step = math.ulp(point) * 0.6
    difference = central_difference(point, step, lambda x: x)
    assert difference.stencil == "unequal"
    assert (difference.minus_spacing, difference.plus_spacing) == (math.ulp(point) / 2, math.ulp(point))
    assert difference.derivative == 1.0


# --- complex values of every dtype are refused --------------------------------------------------


def _numpy_complex_values():
    import numpy as np

    return [
        (np.complex64(1.0), "complex64"),
        (np.complex128(1.0), "complex128"),
        (np.array(1.0 + 0j, dtype=np.complex64), "ndarray"),
    ]


@pytest.mark.parametrize("returned, described", _numpy_complex_values(), ids=["complex64", "complex128", "0-d"])
def test_a_numpy_complex_value_is_refused_even_with_zero_imaginary_part(returned, described):
    # float(np.complex64(1)) would quietly drop the imaginary part with a ComplexWarning.
    with pytest.raises(NonScalarEvaluation) as caught:
        central_difference(1.0, 0.5, lambda _: returned)
    assert str(caught.value) == f"minus function evaluation must return one real number, got {described}"


def test_numpy_real_scalars_are_still_accepted():
    import numpy as np

    for value in (np.float32(2.0), np.float64(2.0), np.int64(2), np.array(2.0)):
        assert central_difference(1.0, 0.5, lambda _: value).center_value == 2.0


# --- shared helpers: one bit comparison, one step-sequence validation ---------------------------


def test_same_bits_tells_signed_zeros_apart_and_matches_a_nan_with_itself():
    from gradcheck_cli.core.record import float_bits, same_bits

    assert same_bits(1.5, 1.5) and same_bits(math.nan, math.nan)
    assert not same_bits(0.0, -0.0) and not same_bits(1.0, math.nextafter(1.0, 2.0))
    assert float_bits(1.0) == 0x3FF0000000000000 and float_bits(-0.0) == 1 << 63


@pytest.mark.parametrize("steps", [[1e-3], [1e-3, 1e-3], [1e-4, 1e-3], []])
def test_a_step_sequence_is_two_or_more_strictly_decreasing_steps(steps):
    from gradcheck_cli.engine.estimator import validate_steps
    from gradcheck_cli.errors import InvalidStepSequence

    with pytest.raises(InvalidStepSequence) as caught:
        validate_steps(steps)
    assert caught.value.steps == [float(step) for step in steps]


def test_validate_steps_returns_floats_and_names_a_bad_step():
    from gradcheck_cli.engine.estimator import validate_steps

    assert validate_steps([1, 0.5]) == (1.0, 0.5)
    with pytest.raises(InvalidStep):
        validate_steps([1e-3, math.inf])
