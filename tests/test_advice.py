"""Step advice without the analytic candidate (gradcheck_cli/advice.py).

The central tests compare the advised step with the truly best step, found
by brute force against the known derivative on a dense grid of requested
steps (40 per decade). A single lucky cancellation of rounding errors can
make one step look spuriously perfect, so the truly best step is the one
whose WORST actual error within ±¼ decade is smallest. Measured when these
tests were written (advised / truly best, and the actual error at the
advised step over that best windowed error):

    exp at 700 (large point)          8.28e-6 / 4.47e-6  (+0.27 decade, error ×1.13)
    exp at 1e-3 (small point)         1.21e-5 / 6.28e-6  (+0.29 decade, error ×0.93)
    exp at −30 (tiny values)          1.14e-5 / 4.73e-6  (+0.38 decade, error ×1.87)
    sin at 1e4 (unit length scale)    7.39e-6 / 4.73e-6  (+0.19 decade, error ×1.03)
    cubic θ³−2θ at 1.5                2.27e-6 / 3.97e-6  (−0.24 decade, error ×0.69)
    float32 exp at 1                  9.84e-3 / 5.93e-3  (+0.22 decade, error ×0.74)
    float32 sin at 0.5                4.92e-3 / 3.53e-3  (+0.14 decade, error ×0.51)

(An error ratio below 1 means the advised step's own actual error is below
the best step's worst error within ±¼ decade.) The advice errs slightly
toward larger steps: each estimate takes the larger of its two Richardson
pairs. The assertions allow half a decade (a factor √10) in the step and a factor
three in the actual error.
"""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from gradcheck_cli.advice.steps import (
    DEFAULT_RATIO,
    advise_coordinate_step,
    advise_problem_steps,
    advise_step,
    default_steps,
    geometric_steps,
)
from gradcheck_cli.chapter.fixtures import CUBIC_POINT, cubic, identity, quadratic
from gradcheck_cli.engine.dtypes import dtype_perturbations, probe_dtype
from gradcheck_cli.engine.estimator import central_difference, perturbations
from gradcheck_cli.errors import (
    AtParameter,
    InvalidStep,
    InvalidStepSequence,
    NonFiniteEvaluation,
    PerturbationUnchanged,
    ReadOnlyArray,
    TooFewAcceptedSteps,
    UnrepresentablePoint,
    UnsupportedDtype,
)
from gradcheck_cli.problem import GradientProblem

STEP_DECADES_ALLOWED = 0.5
ERROR_FACTOR_ALLOWED = 3.0
GRID_PER_DECADE = 40


def _float32(function):
    def evaluate(point):
        return float(function(np.float32(point)))

    return evaluate


def _difference(point, step, evaluate, dtype):
    geometry = (
        perturbations(point, step) if dtype == "float64" else dtype_perturbations(point, step, probe_dtype(dtype))
    )
    return central_difference(point, step, evaluate, geometry)


def actual_error(point, step, evaluate, derivative, dtype="float64"):
    """|three-point estimate − known derivative| at one requested step, with the advice's probes."""
    return abs(_difference(point, step, evaluate, dtype).derivative - derivative)


def brute_force_best_step(point, evaluate, derivative, dtype="float64"):
    """(step, windowed error): the step whose worst actual error within ±¼ decade is smallest."""
    epsilon = probe_dtype(dtype).epsilon
    scale = max(1.0, abs(point))
    # Capped at 1 so that exp at 700 does not overflow; every case's best step is far below.
    largest, smallest = min(scale / 4.0, 1.0), max(4.0 * epsilon * scale, 1e-14)
    count = int(math.log10(largest / smallest) * GRID_PER_DECADE) + 1
    steps = [largest * 10.0 ** (-index / GRID_PER_DECADE) for index in range(count)]
    errors = []
    for step in steps:
        try:
            errors.append(actual_error(point, step, evaluate, derivative, dtype))
        except PerturbationUnchanged:
            errors.append(math.inf)
    window = GRID_PER_DECADE // 4
    envelope = [max(errors[max(0, index - window) : index + window + 1]) for index in range(count)]
    best = min(range(count), key=lambda index: envelope[index])
    return steps[best], envelope[best]


CLOSED_FORM_CASES = {
    # name: (point, function, derivative, dtype)
    "exp at 700 (large point)": (700.0, math.exp, math.exp(700.0), "float64"),
    "exp at 1e-3 (small point)": (1e-3, math.exp, math.exp(1e-3), "float64"),
    "exp at -30 (tiny values)": (-30.0, math.exp, math.exp(-30.0), "float64"),
    "sin at 1e4 (unit length scale)": (1e4, math.sin, math.cos(1e4), "float64"),
    "chapter cubic at 1.5": (CUBIC_POINT, cubic, 3.0 * CUBIC_POINT**2 - 2.0, "float64"),
    "float32 exp at 1": (1.0, _float32(np.exp), math.exp(1.0), "float32"),
    "float32 sin at 0.5": (0.5, _float32(np.sin), math.cos(0.5), "float32"),
}


def advice_distance(name):
    """(advice, truly best step, decades between them, actual-error ratio) for one case."""
    point, function, derivative, dtype = CLOSED_FORM_CASES[name]
    advice = advise_step(function, point, dtype=dtype)
    best_step, best_error = brute_force_best_step(point, function, derivative, dtype)
    advised_error = actual_error(point, advice.advised_step, function, derivative, dtype)
    return advice, best_step, math.log10(advice.advised_step / best_step), advised_error / best_error


@pytest.mark.parametrize("name", sorted(CLOSED_FORM_CASES))
def test_advised_step_is_near_the_truly_best_step(name):
    advice, best_step, decades, error_ratio = advice_distance(name)
    assert abs(decades) <= STEP_DECADES_ALLOWED, (name, advice.advised_step, best_step)
    assert error_ratio <= ERROR_FACTOR_ALLOWED, (name, advice.advised_step, best_step, error_ratio)
    assert not advice.advised_at_edge
    assert advice.deterministic


def test_float32_advice_probes_in_float32():
    advice = advise_step(_float32(np.exp), 1.0, dtype="float32")
    assert advice.dtype == "float32"
    assert advice.epsilon == 2.0**-23
    for estimate in advice.estimates:
        difference = estimate.difference
        # Every probe is a float32 value, and the stencil used its actual distance.
        assert float(np.float32(difference.minus_point)) == difference.minus_point
        assert float(np.float32(difference.plus_point)) == difference.plus_point
    # The float32 optimum is near ε₃₂^(1/3) ≈ 4.9e-3, three decades above float64's.
    assert 1e-3 < advice.advised_step < 3e-2


GEOMETRY_FIELDS = (
    "minus_point",
    "plus_point",
    "minus_spacing",
    "plus_spacing",
    "left_weight",
    "right_weight",
    "stencil",
)


def test_float32_advice_rounds_the_exact_probe_once():
    # h = 2⁻²⁴ + 2⁻⁷⁶. The exact 1 + h lies 2⁻⁷⁶ above the float32 halfway point 1 + 2⁻²⁴, so its one
    # correct rounding is 1 + 2⁻²³. In f64, 2⁻⁷⁶ is below half an ulp of 1 (2⁻⁵³): 1.0 + h is exactly
    # 1 + 2⁻²⁴, a float32 tie that rounds to even, 1.0. Rounding that f64 sum again would collapse the
    # plus probe onto θ and reject the step. Below 1 float32 is spaced 2⁻²⁴, so θ₋ = 1 − 2⁻²⁴.
    step = 2.0**-24 + 2.0**-76
    assert 1.0 + step == 1.0 + 2.0**-24 and float(np.float32(1.0 + step)) == 1.0
    steps = [2.0**-21, 2.0**-22, step]
    advice = advise_step(quadratic, 1.0, dtype="float32", steps=steps)
    assert advice.rejected == ()
    float32 = probe_dtype("float32")
    for requested, estimate in zip(steps, advice.estimates, strict=True):
        expected = dtype_perturbations(1.0, requested, float32)
        assert {field: getattr(estimate.difference, field) for field in GEOMETRY_FIELDS} == {
            field: getattr(expected, field) for field in GEOMETRY_FIELDS
        }
    last = advice.estimates[-1].difference
    assert (last.minus_point, last.plus_point) == (1.0 - 2.0**-24, 1.0 + 2.0**-23)
    assert (last.minus_spacing, last.plus_spacing, last.stencil) == (2.0**-24, 2.0**-23, "unequal")


def test_advice_takes_epsilon_and_name_from_the_probe_dtype():
    for name in ("float64", "float32", "bfloat16"):
        advice = advise_step(quadratic, 1.0, dtype=name, steps=[2.0**-3, 2.0**-4])
        assert (advice.dtype, advice.epsilon) == (name, probe_dtype(name).epsilon)
    assert advise_step(quadratic, 1.0, dtype=np.float32, steps=[2.0**-3, 2.0**-4]).dtype == "float32"


def test_cubic_richardson_estimate_is_the_exact_truncation_error():
    # The cubic's three-point error is exactly h₋h₊·g‴/6 = h₋h₊, so in the
    # truncation regime the Richardson estimate must equal the actual spacing
    # product (to rounding) — and the actual error, without using 4.75.
    advice = advise_step(cubic, CUBIC_POINT)
    large = [estimate for estimate in advice.estimates if estimate.requested_step >= 1e-3]
    assert large and all(estimate.regime == "truncation" for estimate in large)
    for estimate in large:
        product = estimate.difference.minus_spacing * estimate.difference.plus_spacing
        assert estimate.truncation_estimate == pytest.approx(product, rel=1e-6)
        assert estimate.estimated_error == pytest.approx(abs(estimate.difference.derivative - 4.75), rel=1e-6)


def test_richardson_uses_the_actual_float32_spacings():
    # The cubic evaluated exactly (in f64) at float32 probes: D − 4.75 is
    # exactly h₋h₊ of the ACTUAL float32 spacings. At these steps h₋h₊
    # differs from the requested h² by 1.4e-5 to 1.4e-4 relative; the
    # Richardson estimate built on the actual products recovers the error to
    # 1e-6, which the requested h² could not.
    advice = advise_step(cubic, CUBIC_POINT, dtype="float32", steps=[3e-3, 1.5e-3, 7.5e-4])
    for estimate in advice.estimates:
        product = estimate.difference.minus_spacing * estimate.difference.plus_spacing
        assert abs(product / estimate.requested_step**2 - 1.0) > 1e-5
        assert estimate.difference.derivative - 4.75 == pytest.approx(product, rel=1e-6)
        assert estimate.truncation_estimate == pytest.approx(product, rel=1e-6)


def test_regimes_split_at_the_advised_step():
    advice = advise_step(cubic, CUBIC_POINT)
    regimes = [estimate.regime for estimate in advice.estimates]
    advised = regimes.index("advised")
    assert regimes.count("advised") == 1
    assert set(regimes[:advised]) <= {"truncation"}
    assert set(regimes[advised + 1 :]) <= {"rounding"}
    assert advice.estimates[advised].requested_step == advice.advised_step
    assert advice.estimated_error == min(estimate.estimated_error for estimate in advice.estimates)
    # Steps above the advised one are truncation-dominated by construction.
    for estimate in advice.estimates[:advised]:
        assert estimate.truncation_estimate > estimate.rounding_floor


def test_rounding_floor_is_epsilon_f_over_the_actual_spacing():
    advice = advise_step(cubic, CUBIC_POINT)
    for estimate in advice.estimates:
        difference = estimate.difference
        assert difference.stencil == "symmetric"
        largest = max(abs(difference.minus_value), abs(difference.center_value), abs(difference.plus_value))
        assert estimate.rounding_floor == pytest.approx(2.0**-52 * largest / difference.minus_spacing, rel=1e-12)


@pytest.mark.parametrize("function, point", [(quadratic, 3.0), (identity, 1.0)])
def test_zero_third_derivative_advises_the_largest_step(function, point):
    # The three-point estimate of a quadratic or a line is exact up to
    # rounding, which shrinks as the step grows: the largest step is best.
    advice = advise_step(function, point)
    assert advice.advised_step == advice.estimates[0].requested_step
    assert advice.advised_at_edge
    assert [estimate.regime for estimate in advice.estimates[1:]] == ["rounding"] * (len(advice.estimates) - 1)


def test_default_steps_float64():
    steps = default_steps(0.5)
    assert len(steps) == 24
    assert steps[0] == pytest.approx((2.0**-52) ** (1 / 3) * 2.0**10)
    assert steps[-1] == pytest.approx((2.0**-52) ** (1 / 3) * 2.0**-13)
    assert all(later / earlier == DEFAULT_RATIO for earlier, later in zip(steps, steps[1:]))


def test_default_steps_scale_at_the_top_but_not_at_the_bottom():
    small, large = default_steps(1.0), default_steps(1e4)
    assert large[0] == pytest.approx(1e4 * small[0])
    assert small[-1] <= large[-1] < 2.0 * small[-1]
    assert all(step >= 4.0 * 2.0**-52 * 1e4 for step in large)
    assert all(step <= 1e4 / 4 for step in large)


def test_default_steps_float32():
    steps = default_steps(1.0, "float32")
    # ε₃₂^(1/3)·2¹⁰ ≈ 5.0 is capped at s/4: the sequence starts at ε₃₂^(1/3)·2⁵ ≈ 0.157.
    assert steps[0] == pytest.approx((2.0**-23) ** (1 / 3) * 2.0**5)
    assert steps[-1] == pytest.approx((2.0**-23) ** (1 / 3) * 2.0**-13)
    assert len(steps) == 19


def test_geometric_steps():
    assert geometric_steps(1.0, 0.125) == (1.0, 0.5, 0.25, 0.125)
    assert geometric_steps(1.0, 1e-3, 0.1) == (1.0, 0.1, 0.1 * 0.1, 0.1 * 0.1 * 0.1)
    with pytest.raises(InvalidStepSequence):
        geometric_steps(1e-3, 1.0)
    with pytest.raises(InvalidStepSequence):
        geometric_steps(1.0, 1e-3, 1.5)


def test_explicit_steps_are_used_in_order():
    steps = geometric_steps(1e-1, 1e-9, 0.1)
    advice = advise_step(cubic, CUBIC_POINT, steps=steps)
    assert tuple(estimate.requested_step for estimate in advice.estimates) == steps


@pytest.mark.parametrize("steps", [[1e-3], [1e-3, 1e-3], [1e-5, 1e-3]])
def test_step_sequence_must_be_strictly_decreasing(steps):
    with pytest.raises(InvalidStepSequence) as caught:
        advise_step(cubic, 1.0, steps=steps)
    assert "strictly decreasing" in str(caught.value)


def test_invalid_step_is_the_chapters_error():
    with pytest.raises(InvalidStep) as caught:
        advise_step(cubic, 1.0, steps=[1e-3, 0.0])
    assert str(caught.value) == "central-difference requested step 0.0 must be positive and finite"


def test_rejected_steps_are_recorded_and_skipped():
    def log_or_nan(point):
        return math.log(point) if point > 0.0 else math.nan

    steps = geometric_steps(1e-2, 1e-10)
    advice = advise_step(log_or_nan, 1e-3, steps=steps)
    # Steps above 1e-3 put the minus probe at or below zero, where log is NaN.
    assert [rejected.requested_step for rejected in advice.rejected] == [1e-2, 5e-3, 2.5e-3, 1.25e-3]
    assert all(isinstance(rejected.error, NonFiniteEvaluation) for rejected in advice.rejected)
    assert advice.rejected[0].error.side == "minus"
    assert len(advice.estimates) == len(steps) - 4
    assert advice.derivative == pytest.approx(1e3, rel=1e-8)
    document = advice.to_dict()
    assert document["rejected"][0]["error"]["kind"] == "NonFiniteEvaluation"
    json.dumps(document, allow_nan=False)


def test_too_few_accepted_steps():
    with pytest.raises(TooFewAcceptedSteps) as caught:
        advise_step(cubic, 1.0, steps=[1e-3, 1e-20, 1e-21])
    assert str(caught.value) == (
        "step advice needs at least two accepted steps with distinct actual spacings, got 1 of 3 requested steps"
    )


def test_point_must_be_representable_in_the_dtype():
    with pytest.raises(UnrepresentablePoint) as caught:
        advise_step(_float32(np.exp), 0.1, dtype="float32")
    assert str(caught.value) == (
        "gradient-check point 0.1 is not representable in float32 (nearest 0.10000000149011612)"
    )


@pytest.mark.parametrize("dtype", ["int32", "complex128"])
def test_unsupported_dtype(dtype):
    with pytest.raises(UnsupportedDtype):
        advise_step(cubic, 1.0, dtype=dtype)


def test_stateful_objective_is_flagged_nondeterministic():
    calls = []

    def drifting(point):
        calls.append(point)
        return point * point + 1e-12 * len(calls)

    advice = advise_step(drifting, 1.0)
    assert not advice.deterministic


def test_to_dict_is_json_ready():
    document = advise_step(cubic, CUBIC_POINT).to_dict()
    assert json.loads(json.dumps(document, allow_nan=False)) == document
    assert document["dtype"] == "float64"
    assert document["estimates"][0]["difference"]["requested_h"] == document["estimates"][0]["requested_step"]


def test_scalar_advice_does_not_import_numpy():
    # Also for a float32 or bfloat16 objective named by its dtype: the exact rounding is integer arithmetic.
    code = (
        "import sys\n"
        "from gradcheck_cli.advice.steps import advise_step\n"
        "from gradcheck_cli.chapter.fixtures import cubic\n"
        "advice = advise_step(cubic, 1.5)\n"
        "assert advice.advised_step > 0\n"
        "assert advise_step(cubic, 1.5, dtype='float32').dtype == 'float32'\n"
        "print('numpy' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"


def _exp_sum(array):
    return float(np.sum(np.exp(array)))


def test_coordinate_advice_equals_the_scalar_advice_of_the_same_function():
    parameters = np.array([[0.25, -1.5], [2.0, 0.75]])
    before = parameters.tobytes()

    def scalar(point):
        copy = parameters.copy()
        copy[1, 0] = point
        return _exp_sum(copy)

    expected = advise_step(scalar, 2.0).to_dict()
    assert advise_coordinate_step(_exp_sum, parameters, (1, 0)).to_dict() == expected
    assert parameters.tobytes() == before


def test_coordinate_advice_in_float32_uses_the_arrays_dtype():
    parameters = np.array([0.5, 1.0, -0.25], dtype=np.float32)
    advice = advise_coordinate_step(lambda array: np.sum(np.exp(array)), parameters, (1,))
    assert advice.dtype == "float32"
    assert 1e-3 < advice.advised_step < 3e-2
    assert parameters.tolist() == [0.5, 1.0, -0.25]


@pytest.mark.parametrize("exception", [RuntimeError, KeyboardInterrupt])
def test_coordinate_advice_restores_the_array_when_the_objective_raises(exception):
    parameters = np.array([0.3, -0.0, 1.7])
    before = parameters.tobytes()
    calls = []

    def failing(array):
        calls.append(array[1])
        if len(calls) == 5:
            raise exception("stop")
        return _exp_sum(array)

    with pytest.raises(exception):
        advise_coordinate_step(failing, parameters, (1,))
    assert parameters.tobytes() == before


def test_coordinate_advice_rejects_a_read_only_array():
    parameters = np.array([1.0, 2.0])
    parameters.flags.writeable = False
    with pytest.raises(ReadOnlyArray):
        advise_coordinate_step(_exp_sum, parameters, (0,))


def test_problem_advice_gives_one_step_per_parameter():
    weights = np.array([[0.5, -0.25, 1.0]])
    bias = np.array([0.1])

    def objective(parameters):
        return float(np.sum(np.exp(parameters["weights"])) + np.cos(parameters["bias"][0]))

    problem = GradientProblem(
        objective, {"weights": weights, "bias": bias}, {"weights": np.exp(weights), "bias": -np.sin(bias)}
    )
    advice = advise_problem_steps(problem)
    assert list(advice.steps) == ["weights", "bias"]
    assert [record.coordinate for record in advice.parameters] == [(0, 1), (0,)]
    for record in advice.parameters:
        assert advice.steps[record.name] == record.advice.advised_step
        assert 1e-7 < record.advice.advised_step < 1e-4
    json.dumps(advice.to_dict(), allow_nan=False)
    assert advise_problem_steps(problem, names=["bias"]).steps.keys() == {"bias"}


# --- the Richardson estimate never multiplies two spacings --------------------------------------


def test_huge_spacings_do_not_overflow_the_richardson_estimate():
    # At θ = 1e200 the default steps are about 1e197 to 1e184: h₋·h₊ would overflow to inf for every
    # step, making all "products" equal. The function is linear with slope 1e-200, so every estimate is
    # 1e-200 up to rounding and the truncation estimate is tiny.
    advice = advise_step(lambda x: x * 1e-200, 1e200)
    assert len(advice.estimates) == len(default_steps(1e200)) == 43 and advice.rejected == ()
    assert advice.derivative == pytest.approx(1e-200, rel=1e-9)
    assert all(math.isfinite(estimate.truncation_estimate) for estimate in advice.estimates)


def test_tiny_spacings_do_not_underflow_the_richardson_estimate():
    # h₋·h₊ for 1e-158 and 1e-163 underflows to zero (or a subnormal), which divided by zero before.
    # sin(x) = x to the last bit at these x: every estimate is 1, every Richardson difference 0.
    steps = [1e-150, 1e-158, 1e-163, 1e-170]
    advice = advise_step(math.sin, 0.0, steps=steps)
    assert [estimate.requested_step for estimate in advice.estimates] == steps
    assert advice.derivative == 1.0
    assert [estimate.truncation_estimate for estimate in advice.estimates] == [0.0] * 4


def test_problem_advice_names_the_parameter_and_coordinate_it_could_not_advise():
    # The objective is NaN at every probe of flat[1], so no step is accepted there.
    def objective(parameters):
        return math.nan if parameters["flat"][1] != 0.5 else float(np.sum(parameters["smooth"] ** 2))

    problem = GradientProblem(
        objective,
        {"smooth": np.array([0.25]), "flat": np.array([0.0, 0.5, 1.0])},
        {"smooth": np.array([0.5]), "flat": np.zeros(3)},
    )
    with pytest.raises(AtParameter) as caught:
        advise_problem_steps(problem)
    assert caught.value.parameter == "flat" and caught.value.source.coordinate == [1]
    assert isinstance(caught.value.source.source, TooFewAcceptedSteps)
    assert str(caught.value).startswith(
        "parameter 'flat': gradient check at coordinate [1] failed: step advice needs at least two accepted steps"
    )


def test_the_advice_never_picks_a_step_at_which_f_does_not_move():
    # f = exp(10x) computed in float32 from a float64 θ = 0.1: steps below half a float32 ulp leave
    # f bit-identical, an estimate of 0 with no truncation and a float64 rounding floor of about
    # 1e-6 — below the error of any step at which float32's f moves (it picked 7.4e-10 before).
    def evaluate(x):
        return float(np.exp(np.float32(10) * np.float32(x)))

    advice = advise_step(evaluate, 0.1)
    assert any(
        e.difference.minus_value == e.difference.center_value == e.difference.plus_value for e in advice.estimates
    )
    advised = next(e for e in advice.estimates if e.regime == "advised")
    assert advised.difference.minus_value != advised.difference.plus_value
    assert advised.requested_step > 1e-6


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("large", [3e5, 1e6])
def test_the_parameters_step_leaves_f_moving_at_most_of_its_coordinates(dtype, large):
    # f = float32(Σ sin(float32(θ))): the representative coordinate is 0.5, the others 3e5 or 1e6, whose
    # float32 spacing is 1/32 or 1/16. Before: the advised step (4.9e-3 to 9.8e-3 in float32, 7.8e-4 to
    # 6.2e-3 in float64) left θ ± h on θ's float32 number at 19 of 20 coordinates: f could not move there.
    x = np.full((4, 5), large, dtype=dtype)
    x.reshape(-1)[:10] += np.arange(10).astype(dtype)
    x.reshape(-1)[10] = 0.5
    saved = x.copy()

    def objective(parameters):
        return float(np.sum(np.sin(parameters["x"].astype(np.float32)), dtype=np.float32))

    advice = advise_problem_steps((objective, {"x": x}, {"x": np.cos(x.astype(np.float64))}))
    assert x.tobytes() == saved.tobytes()
    step = advice.steps["x"]
    center = objective({"x": x})
    unmoved = 0
    for index in range(x.size):
        for sign in (-1.0, 1.0):
            probe = x.copy()
            probe.reshape(-1)[index] = probe.reshape(-1)[index].astype(np.float64) + sign * step
            if objective({"x": probe}) == center:
                unmoved += 1
                break
    assert unmoved <= x.size // 2, (step, unmoved)
    advised = next(e for e in advice.parameters[0].advice.estimates if e.regime == "advised")
    assert advised.difference.minus_value != advised.difference.center_value != advised.difference.plus_value


@pytest.mark.parametrize("form", ["tanh", "sin", "square", "exp"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1e-3, 1.0, 30.0])
def test_step_auto_picks_a_step_at_which_both_probes_move_a_float32_inside_objective(form, dtype, scale):
    inner = {"tanh": np.tanh, "sin": np.sin, "square": np.square, "exp": lambda z: np.exp(0.3 * z)}[form]
    for seed in range(3):
        x = (np.random.default_rng(seed).normal(size=(4, 5)) * scale).astype(dtype)

        def objective(parameters):
            values = parameters["x"]
            return float(np.sum(inner(values.astype(np.float32)), dtype=np.float32)) + 1e-3 * float(
                np.sum(values.astype(np.float64) ** 2)
            )

        advice = advise_problem_steps((objective, {"x": x}, {"x": np.zeros(x.shape)})).parameters[0].advice
        moving = [e for e in advice.estimates if e.difference.minus_value != e.difference.center_value]
        moving = [e for e in moving if e.difference.plus_value != e.difference.center_value]
        advised = next(e for e in advice.estimates if e.regime == "advised")
        assert advised in moving, (seed, advised.requested_step)
