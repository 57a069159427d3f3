"""check_gradients: the chapter's sampled check over named parameters, its verdicts and its refusals."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import gradcheck_cli
from extras import bfloat16, with_module
from gradcheck_cli import GradientProblem, check_gradients, check_problem, sampled_tensor_gradient_check
from gradcheck_cli.chapter.nll import TARGETS, chapter_logits, hand_derived_nll_gradient, indexed_mean_nll
from gradcheck_cli.check import ALL_COORDINATES
from gradcheck_cli.core.defaults import CHECK_SAMPLES
from gradcheck_cli.engine.dtypes import PROBE_DTYPES
from gradcheck_cli.errors import (
    AtCoordinate,
    AtParameter,
    DuplicateCoordinate,
    EmptyTensor,
    GradCheckError,
    GradientShapeMismatch,
    InvalidArgument,
    InvalidCoordinate,
    InvalidParameterName,
    InvalidStep,
    InvalidTolerance,
    MissingGradient,
    NoParameters,
    NonFiniteAnalyticGradient,
    NonFiniteEvaluation,
    NonFinitePoint,
    NonScalarEvaluation,
    PerturbationUnchanged,
    ReadOnlyArray,
    SharedMemory,
    UnexpectedGradient,
    UnknownParameter,
    UnsupportedDtype,
    ZeroSamples,
)

FLOAT64 = PROBE_DTYPES["float64"]


def sum_of_squares(parameters):
    return float(sum(np.sum(np.asarray(array, dtype=np.float64) ** 2) for array in parameters.values()))


def doubled(parameters):
    return {name: 2 * np.asarray(array, dtype=np.float64) for name, array in parameters.items()}


def counting(objective):
    calls = []

    def counted(parameters):
        calls.append(1)
        return objective(parameters)

    return counted, calls


# --- the chapter's numbers through the multi-parameter API -------------------------------------


def test_the_chapters_nll_check_gives_the_chapters_records():
    # The chapter's NLL fixture: step 1e-5, tolerance 1e-6, four samples, coordinates
    # [[0,0],[0,1],[1,0],[1,2]] with the printed analytic and numerical values (12 decimals).
    logits = chapter_logits()
    targets = np.asarray(TARGETS)
    analytic = hand_derived_nll_gradient(logits, targets)
    report = check_gradients(
        lambda p: indexed_mean_nll(p["logits"], targets),
        {"logits": logits},
        {"logits": analytic},
        samples=4,
        step=1e-5,
        tolerance=1e-6,
        sampler="chapter",
    )
    check = report.parameters[0]
    assert [record.coordinate for record in check.checks] == [(0, 0), (0, 1), (1, 0), (1, 2)]
    printed = [
        ("-0.377635764473", "-0.377635764481"),
        ("0.332620477887", "0.332620477894"),
        ("0.433406666099", "0.433406666087"),
        ("-0.492061880012", "-0.492061879994"),
    ]
    for record, (analytic_text, numerical_text) in zip(check.checks, printed):
        assert f"{record.comparison.analytic:.12f}" == analytic_text
        assert f"{record.comparison.numerical:.12f}" == numerical_text
        assert record.verdict == "passed"
    # Bit for bit the chapter's single-tensor check (same probes, values, estimate).
    chapter = sampled_tensor_gradient_check(logits, analytic, 1e-5, 1e-6, 4, lambda a: indexed_mean_nll(a, targets))
    assert [record.difference for record in check.checks] == [record.difference for record in chapter.checks]
    assert [record.comparison for record in check.checks] == [record.comparison for record in chapter.checks]
    assert report.passed
    assert (report.checked, report.failed, report.failing_parameters) == (4, 0, ())


def test_defaults_are_sixteen_samples_and_the_dtype_policy():
    weights = np.arange(40.0).reshape(5, 8) / 10
    report = check_gradients(sum_of_squares, {"w": weights}, {"w": 2 * weights})
    check = report.parameters[0]
    assert CHECK_SAMPLES == 16
    assert (check.selection, check.requested_samples, len(check.checks)) == ("structured", 16, 16)
    chapter = check_gradients(sum_of_squares, {"w": weights}, {"w": 2 * weights}, sampler="chapter").parameters[0]
    # The chapter's sampler: ⌊k·39/15⌋ for k = 0..15.
    assert [record.flat_index for record in chapter.checks] == [k * 39 // 15 for k in range(16)]
    assert (check.step, check.tolerance, check.kink_tolerance) == (None, FLOAT64.tolerance, FLOAT64.kink_tolerance)
    for record in check.checks:
        assert record.difference.requested_step == FLOAT64.step_factor * max(1.0, abs(record.difference.point))
    assert report.passed


def test_explicit_step_tolerance_and_kink_tolerance_apply_to_every_coordinate():
    weights = np.array([0.5, -3.0, 20.0])
    report = check_gradients(
        sum_of_squares, {"w": weights}, {"w": 2 * weights}, step=1e-4, tolerance=1e-7, kink_tolerance=0.5
    )
    check = report.parameters[0]
    assert (check.step, check.tolerance, check.kink_tolerance) == (1e-4, 1e-7, 0.5)
    assert {record.difference.requested_step for record in check.checks} == {1e-4}
    assert {record.kink.slopes.tolerance for record in check.checks} == {0.5}


def test_a_step_mapping_sets_each_parameters_step_and_leaves_the_others_at_the_default():
    # What `gradcheck check --step auto` passes: one advised step per parameter name.
    weights, bias = np.array([0.5, -3.0, 20.0]), np.array([[2.0, -1.0]])
    report = check_gradients(
        sum_of_squares, {"w": weights, "b": bias}, {"w": 2 * weights, "b": 2 * bias}, step={"w": 1e-4}
    )
    w, b = report.parameters
    assert (w.step, b.step) == (1e-4, None)
    assert [record.difference.requested_step for record in w.checks] == [1e-4, 1e-4, 1e-4]
    # Unlisted: the float64 default ε^(1/3)·max(1, |θ|) at θ = 2 and θ = -1.
    assert [record.difference.requested_step for record in b.checks] == [FLOAT64.step_factor * 2.0, FLOAT64.step_factor]
    assert report.passed


def test_a_kink_tolerance_mapping_is_per_parameter_like_the_step():
    # f = x² + |y|: at y = 0 the slopes are -1 and 1 whatever the tolerance below 2; x has curvature 2,
    # so at h = 1e-2 its slopes differ by 2h = 0.02 (scaled gap 0.0198): a "kink" at ε^(1/6) = 2.46e-3,
    # but not at the default that goes with that step, √(1e-2 / max(1, 0.5)) = 0.1.
    def objective(p):
        return float(p["x"][0] ** 2 + abs(p["y"][0]))

    parameters = {"x": np.array([0.5]), "y": np.array([0.0])}
    gradients = {"x": np.array([1.0]), "y": np.array([0.0])}
    at_default = check_gradients(objective, parameters, gradients, step=1e-2)
    assert [(check.name, check.kink_tolerance) for check in at_default.parameters] == [("x", 0.1), ("y", 0.1)]
    assert [(name, record.verdict) for name, record in at_default.failures()] == [("y", "suspected kink")]
    tight = check_gradients(objective, parameters, gradients, step=1e-2, kink_tolerance={"x": FLOAT64.kink_tolerance})
    assert [(check.name, check.kink_tolerance) for check in tight.parameters] == [
        ("x", FLOAT64.kink_tolerance),
        ("y", 0.1),
    ]
    # At the tighter tolerance x's curvature is a suspected kink at h = 1e-2 (gap 0.0198), but the gap is
    # a tenth of that at h/10 and ten times it at 10h: a curvature, so x passes; y's corner (the same gap
    # at every step) stays a kink.
    [x] = tight.parameter("x").checks
    assert x.kink.suspected and x.verdict == "passed"
    assert all(estimate.slopes_consistent for estimate in x.estimates)
    assert [(name, record.verdict) for name, record in tight.failures()] == [("y", "suspected kink")]


@pytest.mark.parametrize(
    "step, point, dtype, expected",
    [
        (1e-2, 0.5, "float64", 0.1),  # √(1e-2 / max(1, 0.5))
        (4e-2, -4.0, "float64", 0.1),  # √(4e-2 / 4)
        (1e-5, 0.0, "float64", math.sqrt(1e-5)),  # 3.16e-3, just above ε^(1/6) = 2.46e-3
        (6e-6, 0.0, "float64", FLOAT64.kink_tolerance),  # √6e-6 = 2.45e-3: never tighter than ε^(1/6)
        (0.25, 1.0, "float32", 0.5),  # float32's ε^(1/6) is 7.0e-2
        (1e-3, 0.0, "float32", PROBE_DTYPES["float32"].kink_tolerance),
    ],
)
def test_the_kink_tolerance_for_a_step_is_the_midpoint_of_its_curvature_gap_and_a_jump(step, point, dtype, expected):
    assert gradcheck_cli.check.kink_tolerance_for_step(step, point, dtype) == expected


@pytest.mark.parametrize(
    "step, error_type, message",
    [
        ({"v": 1e-4}, UnknownParameter, "parameter 'v' is not one of the problem's parameters ['w']"),
        ({"w": 0.0}, AtParameter, "parameter 'w': central-difference requested step 0.0 must be positive and finite"),
        ({1: 1e-4}, InvalidParameterName, "parameter names must be strings, got 1 (int)"),
    ],
)
def test_a_bad_step_mapping_is_refused_before_any_call(step, error_type, message):
    assert str(refused(error_type, step=step)) == message


def test_all_coordinates_in_row_major_order():
    weights = np.arange(6.0).reshape(2, 3)
    report = check_gradients(sum_of_squares, {"w": weights}, {"w": 2 * weights}, samples=ALL_COORDINATES)
    check = report.parameters[0]
    assert (check.selection, check.requested_samples) == ("all", None)
    assert [record.coordinate for record in check.checks] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert [record.flat_index for record in check.checks] == list(range(6))


def test_explicit_coordinates_keep_their_order_and_others_are_sampled():
    weights, bias = np.arange(6.0).reshape(2, 3), np.arange(4.0)
    parameters = {"w": weights, "b": bias}
    report = check_gradients(
        sum_of_squares, parameters, doubled(parameters), samples=2, coordinates={"w": [(1, 2), [0, 1]]}
    )
    w, b = report.parameters
    assert (w.selection, w.requested_samples) == ("explicit", None)
    assert [(record.coordinate, record.flat_index) for record in w.checks] == [((1, 2), 5), ((0, 1), 1)]
    # The structured selection of 2 of 4: the largest |gradient| (b[3] = 3) and one spread point,
    # the only stratum of one point: ⌊0·4/1⌋ = 0.
    assert (b.selection, [record.coordinate for record in b.checks]) == ("structured", [(0,), (3,)])
    # A bare int is a coordinate of a 1-D parameter.
    report = check_gradients(sum_of_squares, parameters, doubled(parameters), coordinates={"b": [3, np.int64(1)]})
    assert [record.coordinate for record in report.parameter("b").checks] == [(3,), (1,)]


def test_names_restrict_the_check_and_keep_the_problems_order():
    parameters = {"a": np.ones(2), "b": np.ones(3), "c": np.ones(4)}
    gradients = doubled(parameters)
    objective, calls = counting(sum_of_squares)
    report = check_gradients(objective, parameters, gradients, names=["c", "a"])
    assert [check.name for check in report.parameters] == ["a", "c"]
    # f(θ) once and at 3 checkpoints, 2 calls per coordinate, 2 per parameter's directional test.
    assert len(calls) == 1 + 3 + 2 * (2 + 4) + 2 * 2
    assert [check.name for check in check_gradients(sum_of_squares, parameters, gradients, names="b").parameters] == [
        "b"
    ]
    # Unchecked parameters need no gradient.
    del gradients["b"]
    assert check_gradients(sum_of_squares, parameters, gradients, names=["a"]).passed


def test_zero_dimensional_parameters():
    parameters = {"scale": np.array(1.5)}
    report = check_gradients(sum_of_squares, parameters, {"scale": np.array(3.0)})
    assert [record.coordinate for record in report.parameters[0].checks] == [()]
    assert report.passed


@pytest.mark.parametrize("gradient", [np.float64(3.0), np.float32(3.0), 3.0, 3])
def test_a_scalar_gradient_of_a_zero_dimensional_parameter(gradient):
    # np.cos(np.array(0.0)) is an np.float64, not an array: scalars stand for 0-d gradients.
    assert check_gradients(sum_of_squares, {"scale": np.array(1.5)}, {"scale": gradient}).passed


def test_a_list_is_not_a_gradient():
    error = refused(AtParameter, {"w": np.ones(2)}, {"w": [2.0, 2.0]})
    assert str(error) == "parameter 'w': analytic must be a numpy array, got list"


def test_check_problem_takes_a_gradient_problem():
    weights = np.linspace(-1.0, 1.0, 5)
    problem = GradientProblem(sum_of_squares, {"w": weights}, {"w": 2 * weights})
    direct = check_gradients(problem.objective, problem.parameters, problem.gradients, samples=3)
    assert check_problem(problem, samples=3).to_dict() == direct.to_dict()


def test_report_is_json_ready_and_names_the_failing_parameter():
    parameters = {"good": np.array([1.0, 2.0]), "bad": np.array([3.0])}
    gradients = {"good": np.array([2.0, 4.0]), "bad": np.array([5.0])}
    report = check_gradients(sum_of_squares, parameters, gradients)
    assert not report.passed
    assert (report.checked, report.failed, report.failing_parameters) == (3, 1, ("bad",))
    [(name, record)] = report.failures()
    # Exact hand arithmetic: the numerical derivative of x² at 3 is 6, so scale 6 and error 1/6.
    assert (name, record.coordinate, record.verdict, record.passed) == ("bad", (0,), "failed", False)
    assert math.isclose(record.comparison.numerical, 6.0, rel_tol=1e-9)
    assert math.isclose(record.comparison.scaled_error, 1 / 6, rel_tol=1e-9)
    record_dict = report.to_dict()
    assert json.loads(json.dumps(record_dict, allow_nan=False)) == record_dict
    assert list(record_dict) == [
        "verdict",
        "pass",
        "checked",
        "failed",
        "inconclusive",
        "failing_parameters",
        "purity",
        "parameters",
        "step_advice",
        "evaluations",
        "diagnosis",
        "calls",
    ]
    assert (
        record_dict["step_advice"] is None and record_dict["calls"] == []
    )  # a problem's gradients are called by nobody
    first = record_dict["parameters"][0]["checks"][0]
    assert list(first) == [
        "flat_index",
        "coordinate",
        "difference",
        "comparison",
        "kink",
        "estimates",
        "decided_at",
        "verdict",
        "reason",
        "pass",
    ]
    assert list(first["estimates"][0]["error_bar"]) == ["rounding", "jitter", "step_sensitivity", "total"]
    assert list(first["difference"])[-1] == "numerical" and first["comparison"]["pass"] is True


def test_progress_is_reported_from_zero_to_total():
    seen = []
    parameters = {"a": np.ones(3), "b": np.ones(2)}
    check_gradients(
        sum_of_squares, parameters, doubled(parameters), progress=lambda done, total: seen.append((done, total))
    )
    assert seen == [(done, 5) for done in range(6)]


# --- kinks -------------------------------------------------------------------------------------


def absolute_sum(parameters):
    return float(np.sum(np.abs(parameters["x"])))


def test_a_kink_is_flagged_and_never_passes():
    # |x| at 0: symmetric probes give slopes −1 and 1 and the numerical value 0 (the chapter's false
    # pass). Candidate 0 lies between the slopes (a subgradient); 2 lies outside.
    report = check_gradients(absolute_sum, {"x": np.array([0.0, 0.0])}, {"x": np.array([0.0, 2.0])})
    between, outside = report.parameters[0].checks
    for record in (between, outside):
        assert record.kink.suspected and record.verdict == "suspected kink" and not record.passed
        assert (record.kink.slopes.left, record.kink.slopes.right) == (-1.0, 1.0)
        assert record.kink.slopes.scaled_gap == 2.0 and record.comparison.numerical == 0.0
    assert between.comparison.passed and between.kink.analytic_between_slopes
    assert not outside.kink.analytic_between_slopes
    assert not report.passed and report.failing_parameters == ("x",)


def test_relu_kink_endpoints_count_as_between_the_slopes():
    # relu at 0: slopes 0 and 1 (exact: the probes are ±h and relu(h)/h = 1); candidates 0 and 1 are
    # both subgradients, 1.5 is not.
    report = check_gradients(
        lambda p: float(np.sum(np.maximum(p["x"], 0.0))), {"x": np.zeros(3)}, {"x": np.array([0.0, 1.0, 1.5])}
    )
    assert [record.kink.analytic_between_slopes for record in report.parameters[0].checks] == [True, True, False]
    assert {record.verdict for record in report.parameters[0].checks} == {"suspected kink"}


def test_the_kink_tolerance_is_what_flags_the_corner():
    # With a kink tolerance above the gap 2 the same corner is not flagged, and candidate 0 passes:
    # the chapter's false pass, which the default kink tolerance 2.46e-3 exists to expose.
    report = check_gradients(absolute_sum, {"x": np.zeros(1)}, {"x": np.zeros(1)}, kink_tolerance=2.0)
    assert report.passed and not report.parameters[0].checks[0].kink.suspected


def test_smooth_curvature_is_not_a_kink_at_the_default_step():
    # exp(4x) at 0: f″ = 16, slopes differ by about f″·h = 16·6.06e-6 ≈ 9.7e-5 relative to the slope
    # scale 4: a scaled gap near 2.4e-5, a hundred times below the kink tolerance 2.46e-3.
    report = check_gradients(lambda p: float(np.exp(4 * p["x"][0])), {"x": np.zeros(1)}, {"x": np.array([4.0])})
    record = report.parameters[0].checks[0]
    assert math.isclose(record.kink.slopes.scaled_gap, 16 * FLOAT64.step_factor / 4, rel_tol=1e-3)
    assert report.passed


# --- purity ------------------------------------------------------------------------------------


def test_a_stateful_objective_never_passes_and_says_so():
    state = {"calls": 0}

    def leaky(parameters):
        state["calls"] += 1
        return sum_of_squares(parameters) + 1e-3 * (state["calls"] // 3)

    parameters = {"w": np.array([1.0, 2.0, 3.0])}
    report = check_gradients(leaky, parameters, doubled(parameters))
    purity = report.purity
    assert not purity.pure and purity.stateful and not report.passed and report.verdict == "inconclusive"
    # f(θ) is call 1 (14 + 0), then after coordinates 1 and 2 (calls 4 and 7: 14.001, 14.002) and at
    # the end, after coordinate 3 and the direction (call 12: 14.004).
    assert (purity.evaluations, purity.distinct, purity.reference_value) == (4, 4, 14.0)
    assert purity.spread == pytest.approx(4e-3)
    assert purity.message.startswith("the objective is nondeterministic or stateful: f(θ) took 4 different values")


def test_a_pure_objective_reports_how_many_values_agreed():
    parameters = {"w": np.arange(5.0)}
    report = check_gradients(sum_of_squares, parameters, doubled(parameters))
    assert report.purity.message == "all 4 evaluations of f(θ) are bit-identical"
    assert (report.purity.pure, report.purity.stateful, report.purity.spread) == (True, False, 0.0)


# --- refusals before the first call ------------------------------------------------------------


def refused(error_type, *arguments, **options):
    """Run a check that must be refused; return the error after asserting no call was made."""
    objective, calls = counting(sum_of_squares)
    if not arguments:
        arguments = ({"w": np.ones(3)}, {"w": np.ones(3)})
    with pytest.raises(error_type) as caught:
        check_gradients(objective, *arguments, **options)
    assert calls == []
    return caught.value


@pytest.mark.parametrize(
    "options, error_type, message",
    [
        ({"samples": 0}, ZeroSamples, "sampled tensor gradient check needs at least one sample"),
        ({"samples": -2}, InvalidArgument, 'samples per parameter must be a positive whole number or "all", got -2'),
        (
            {"samples": "some"},
            InvalidArgument,
            "samples per parameter must be a positive whole number or \"all\", got 'some'",
        ),
        ({"samples": 1.5}, InvalidArgument, 'samples per parameter must be a positive whole number or "all", got 1.5'),
        (
            {"samples": True},
            InvalidArgument,
            'samples per parameter must be a positive whole number or "all", got True',
        ),
        ({"step": 0.0}, InvalidStep, "central-difference requested step 0.0 must be positive and finite"),
        ({"step": math.nan}, InvalidStep, "central-difference requested step NaN must be positive and finite"),
        ({"tolerance": -1.0}, InvalidTolerance, "gradient-check tolerance -1.0 must be finite and nonnegative"),
        ({"kink_tolerance": math.inf}, InvalidTolerance, "gradient-check tolerance inf must be finite and nonnegative"),
        ({"names": ["v"]}, UnknownParameter, "parameter 'v' is not one of the problem's parameters ['w']"),
        ({"names": []}, NoParameters, "the problem has no parameters to perturb"),
        ({"coordinates": {"v": [0]}}, UnknownParameter, "parameter 'v' is not one of the problem's parameters ['w']"),
        (
            {"coordinates": [(0,)]},
            InvalidArgument,
            "coordinates must be a mapping from parameter names to lists of coordinates, got list",
        ),
        ({"progress": 3}, InvalidArgument, "progress must be callable, got int"),
    ],
)
def test_bad_options_are_refused(options, error_type, message):
    assert str(refused(error_type, **options)) == message


@pytest.mark.parametrize(
    "parameters, gradients, error_type, message",
    [
        ([np.ones(2)], {}, InvalidArgument, "parameters must be a mapping from parameter names to arrays, got list"),
        (
            {"w": np.ones(2)},
            None,
            InvalidArgument,
            "gradients must be a mapping from parameter names to arrays, got NoneType",
        ),
        ({3: np.ones(2)}, {}, InvalidParameterName, "parameter names must be strings, got 3 (int)"),
        ({}, {}, NoParameters, "the problem has no parameters to perturb"),
        ({"w": np.ones(2)}, {}, MissingGradient, "the problem has no analytic gradient for parameter 'w'"),
        (
            {"w": np.ones(2)},
            {"w": np.ones(2), "W": np.ones(2)},
            UnexpectedGradient,
            "analytic gradient 'W' names no parameter of the problem",
        ),
    ],
)
def test_bad_mappings_are_refused(parameters, gradients, error_type, message):
    assert str(refused(error_type, parameters, gradients)) == message


#: What an unsupported parameter dtype's message ends with: the supported ones and the nearest.
UNSUPPORTED_TAIL = "expected float64, float32, float16, bfloat16, complex128 or complex64; the nearest is float64: pass .astype('float64')"


def read_only(array):
    array.flags.writeable = False
    return array


@pytest.mark.parametrize(
    "parameter, gradient, error_type, message",
    [
        ([1.0, 2.0], np.ones(2), InvalidArgument, "parameters must be a numpy array, got list"),
        (
            np.ones(2, dtype=np.int64),
            np.ones(2),
            UnsupportedDtype,
            "parameters array has dtype int64; " + UNSUPPORTED_TAIL,
        ),
        (
            np.ones(2, dtype=np.clongdouble),
            np.ones(2),
            UnsupportedDtype,
            f"parameters array has dtype {np.dtype(np.clongdouble).name}; "
            + UNSUPPORTED_TAIL.replace("float64: pass .astype('float64')", "complex128: pass .astype('complex128')"),
        ),
        (
            read_only(np.ones(2)),
            np.ones(2),
            ReadOnlyArray,
            "parameters array is read-only; the check perturbs it in place and restores it",
        ),
        (
            np.ones(2),
            np.ones(2, dtype=complex),
            UnsupportedDtype,
            "analytic array has dtype complex128; expected a real float64-representable dtype",
        ),
        (
            np.ones(2),
            np.ones((1, 2)),
            GradientShapeMismatch,
            "parameter shape [2] does not match analytic-gradient shape [1, 2]",
        ),
        (np.ones((0, 2)), np.ones((0, 2)), EmptyTensor, "sampled tensor gradient check needs at least one value"),
    ],
)
def test_bad_arrays_are_refused_with_the_parameter_named(parameter, gradient, error_type, message):
    error = refused(AtParameter, {"w": parameter}, {"w": gradient})
    assert isinstance(error.source, error_type) and error.parameter == "w"
    assert str(error) == f"parameter 'w': {message}"
    assert "\n" not in str(error)


def test_empty_array_with_all_samples_is_an_empty_tensor():
    error = refused(AtParameter, {"w": np.ones(0)}, {"w": np.ones(0)}, samples="all")
    assert isinstance(error.source, EmptyTensor)


@pytest.mark.parametrize(
    "listed, error_type, message",
    [
        ([(0, 3)], InvalidCoordinate, "coordinate [0, 3] is not an index into shape [2, 3]"),
        ([(-1, 0)], InvalidCoordinate, "coordinate [-1, 0] is not an index into shape [2, 3]"),
        ([(0,)], InvalidCoordinate, "coordinate [0] is not an index into shape [2, 3]"),
        ([1], InvalidCoordinate, "coordinate 1 is not an index into shape [2, 3]"),
        ([(0.5, 1)], InvalidCoordinate, "coordinate (0.5, 1) is not an index into shape [2, 3]"),
        ([(True, 1)], InvalidCoordinate, "coordinate (True, 1) is not an index into shape [2, 3]"),
        ("01", InvalidCoordinate, "coordinate '01' is not an index into shape [2, 3]"),
        ([(1, 1), (0, 0), (1, 1)], DuplicateCoordinate, "coordinate [1, 1] is listed twice"),
        ([], ZeroSamples, "sampled tensor gradient check needs at least one sample"),
    ],
)
def test_bad_explicit_coordinates_are_refused(listed, error_type, message):
    weights = np.ones((2, 3))
    error = refused(AtParameter, {"w": weights}, {"w": weights.copy()}, coordinates={"w": listed})
    assert isinstance(error.source, error_type)
    assert str(error) == f"parameter 'w': {message}"


def test_a_late_non_finite_analytic_value_stops_everything_before_the_first_call():
    # The chapter: the complete selected coordinate set is validated before the first objective call.
    parameters = {"a": np.ones(3), "b": np.ones((2, 2))}
    gradients = {"a": np.ones(3), "b": np.array([[1.0, 1.0], [1.0, math.nan]])}
    error = refused(AtParameter, parameters, gradients)
    assert (
        str(error) == "parameter 'b': gradient check at coordinate [1, 1] failed: analytic gradient NaN must be finite"
    )
    assert isinstance(error.source, AtCoordinate) and isinstance(error.source.source, NonFiniteAnalyticGradient)


def test_a_non_finite_parameter_value_is_refused():
    error = refused(AtParameter, {"w": np.array([1.0, math.inf])}, {"w": np.ones(2)}, samples="all")
    assert isinstance(error.source.source, NonFinitePoint)
    assert (
        str(error) == "parameter 'w': gradient check at coordinate [1] failed: gradient-check point inf must be finite"
    )


def test_a_non_callable_objective_is_refused():
    with pytest.raises(InvalidArgument) as caught:
        check_gradients(3.0, {"w": np.ones(2)}, {"w": np.ones(2)})
    assert str(caught.value) == "objective must be callable, got float"


@pytest.mark.parametrize(
    "make",
    [
        lambda base: {"w": base, "v": base},  # the same array twice
        lambda base: {"w": base, "v": base[1:]},  # a view overlapping it
        lambda base: {"w": base[:, 0], "v": base.T},  # a column and the transpose
    ],
)
def test_parameters_that_share_memory_are_refused(make):
    parameters = make(np.ones((3, 3)))
    gradients = {name: np.zeros(array.shape) for name, array in parameters.items()}
    error = refused(SharedMemory, parameters, gradients)
    assert (
        str(error)
        == "parameters 'w' and 'v' share memory; perturbing one would perturb both: pass a copy (np.array(...)) of one"
    )


def test_disjoint_views_of_one_buffer_are_fine():
    base = np.arange(12.0).reshape(3, 4)
    parameters = {"even": base[:, ::2], "odd": base[:, 1::2]}
    assert check_gradients(sum_of_squares, parameters, doubled(parameters), samples="all").passed


# --- errors during the check, and exceptions -----------------------------------------------------


def test_a_non_finite_value_during_the_check_names_parameter_coordinate_and_side():
    state = {"calls": 0}

    def breaks_on_the_ninth_call(parameters):
        state["calls"] += 1
        return math.inf if state["calls"] == 9 else sum_of_squares(parameters)

    parameters = {"a": np.ones(2), "b": np.ones(3)}
    before = {name: array.tobytes() for name, array in parameters.items()}
    with pytest.raises(AtParameter) as caught:
        check_gradients(breaks_on_the_ninth_call, parameters, doubled(parameters))
    # Call 1 is f(θ); a[0] is calls 2–3, a[1] 4–5, then a checkpoint f(θ) (6) and a's direction
    # (7–8): call 9 is b[0]'s minus probe.
    assert (
        str(caught.value)
        == "parameter 'b': gradient check at coordinate [0] failed: minus function evaluation returned inf"
    )
    assert isinstance(caught.value.source.source, NonFiniteEvaluation)
    assert {name: array.tobytes() for name, array in parameters.items()} == before


def test_a_non_scalar_value_is_a_typed_error():
    parameters = {"w": np.ones(2)}
    with pytest.raises(NonScalarEvaluation) as caught:
        check_gradients(lambda p: p["w"] * 2, parameters, doubled(parameters))
    # The first call is f(θ) itself, at no coordinate.
    assert str(caught.value) == "center function evaluation must return one real number, got ndarray of shape (2,)"


class Boom(Exception):
    pass


def test_the_objectives_exception_propagates_unchanged():
    boom = Boom("stop")

    def objective(parameters):
        raise boom

    parameters = {"w": np.array([0.25, -0.0])}
    before = parameters["w"].tobytes()
    with pytest.raises(Boom) as caught:
        check_gradients(objective, parameters, doubled(parameters))
    assert caught.value is boom and parameters["w"].tobytes() == before


dtypes = st.sampled_from([np.float64, np.float32] + ([bfloat16] if bfloat16 else []))
elements = st.floats(min_value=-1e4, max_value=1e4, allow_subnormal=True, width=32)


@st.composite
def problems(draw):
    count = draw(st.integers(min_value=1, max_value=3))
    parameters = {}
    for index in range(count):
        shape = draw(hnp.array_shapes(min_dims=0, max_dims=3, max_side=3))
        values = draw(hnp.arrays(np.float32, shape, elements=elements))
        array = values.astype(draw(dtypes))
        if draw(st.booleans()) and array.ndim == 2:
            array = array.T  # a non-contiguous view, perturbed through the view
        parameters[f"p{index}"] = array
    return parameters


def smooth(parameters):
    return float(sum(np.sum(np.sin(np.asarray(array, dtype=np.float64))) for array in parameters.values()))


def cosines(parameters):
    return {name: np.cos(np.asarray(array, dtype=np.float64)) for name, array in parameters.items()}


@given(
    problems(),
    st.integers(min_value=1, max_value=6),
    st.integers(min_value=1, max_value=60),
    st.sampled_from([Boom, KeyboardInterrupt, "nan", None]),
)
def test_every_array_is_bit_identical_after_success_error_and_exception(parameters, samples, failing_call, failure):
    before = {name: array.tobytes() for name, array in parameters.items()}
    calls = []

    def objective(current):
        calls.append(1)
        if len(calls) == failing_call and failure is not None:
            if failure == "nan":
                return math.nan
            raise failure("stop")
        return smooth(current)

    coordinates = sum(min(samples, array.size) for array in parameters.values())
    # f(θ) with 3 checkpoints (fewer for 1 or 2 coordinates), 2 calls per coordinate, 2 per direction.
    checkpoints = len({max(1, math.ceil(coordinates * part / 3)) for part in (1, 2)}) + 1
    expected_calls = 1 + checkpoints + 2 * coordinates + 2 * len(parameters)
    try:
        report = check_gradients(objective, parameters, cosines(parameters), samples=samples)
    except (Boom, KeyboardInterrupt):
        assert len(calls) == failing_call
    except AtParameter as error:  # at a coordinate (AtCoordinate inside) or at the direction's probes
        source = error.source.source if isinstance(error.source, AtCoordinate) else error.source
        assert failure == "nan" and isinstance(source, NonFiniteEvaluation)
        assert len(calls) == failing_call
    except NonFiniteEvaluation as error:  # f(θ) itself, at no coordinate
        assert failure == "nan" and error.side == "center" and failing_call in (1, len(calls))
    else:
        assert failure is None or failing_call > expected_calls or report.verdict != "passed"
        assert len(calls) == report.evaluations >= expected_calls  # more when a coordinate is confirmed
    assert {name: array.tobytes() for name, array in parameters.items()} == before


@given(problems(), st.integers(min_value=1, max_value=5))
def test_each_call_sees_one_probe_the_whole_direction_or_nothing(parameters, samples):
    originals = {name: array.copy() for name, array in parameters.items()}
    seen = []

    def objective(current):
        changed = []
        for name, array in current.items():
            differs = array.astype(np.float64) != originals[name].astype(np.float64)
            changed += [
                (name, tuple(int(i) for i in index), float(array[tuple(index)])) for index in np.argwhere(differs)
            ]
        seen.append(changed)
        return smooth(current)

    report = check_gradients(objective, parameters, cosines(parameters), samples=samples)
    assert len(seen) == report.evaluations
    total = report.checked
    checkpoints = {max(1, math.ceil(total * part / 3)) for part in (1, 2)}
    calls, done = iter(seen), 0
    assert next(calls) == []  # f(θ), nothing moved
    for check in report.parameters:
        for record in check.checks:
            assert next(calls) == [(check.name, record.coordinate, record.difference.minus_point)]
            assert next(calls) == [(check.name, record.coordinate, record.difference.plus_point)]
            done += 1
            if done in checkpoints:
                assert next(calls) == []
        for _ in range(2):  # the direction: only this parameter's elements moved
            assert {name for name, _, _ in next(calls)} <= {check.name}
    assert next(calls) == []  # f(θ) once more at the end
    for call in calls:  # confirmations: one element of one parameter, or one parameter's direction
        assert len({name for name, _, _ in call}) == 1


def test_transposed_and_sliced_views_are_probed_through_the_view():
    base = np.arange(1.0, 13.0).reshape(3, 4)
    parameters = {"column": base[:, 1], "transposed": np.arange(1.0, 7.0).reshape(2, 3).T}
    before = base.tobytes()
    report = check_gradients(sum_of_squares, parameters, doubled(parameters), samples="all")
    assert report.passed and base.tobytes() == before
    assert [record.difference.point for record in report.parameter("column").checks] == [2.0, 6.0, 10.0]


# --- the package surface -----------------------------------------------------------------------


def test_importing_the_package_does_not_import_numpy_and_exports_the_check_api():
    code = (
        "import sys, gradcheck_cli\n"
        "assert 'numpy' not in sys.modules\n"
        "from gradcheck_cli import check_gradients, load_problem, GradientProblem, probe_dtype\n"
        "assert 'numpy' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
    for name in (
        "check_gradients",
        "check_problem",
        "GradientCheckReport",
        "KinkVerdict",
        "PurityVerdict",
        "ParameterCheck",
        "CoordinateCheck",
        "GradientProblem",
        "load_problem",
        "ProbeDtype",
    ):
        assert name in gradcheck_cli.__all__ and getattr(gradcheck_cli, name) is not None


# Message examples for the error classes this module added (the core's error test lists the rest).
ERROR_EXAMPLES = [
    (
        gradcheck_cli.errors.InvalidArgument(argument="objective", value="int", expected="callable"),
        "objective must be callable, got int",
    ),
    (
        InvalidArgument(argument="parameters", value="list", expected="a mapping from parameter names to arrays"),
        "parameters must be a mapping from parameter names to arrays, got list",
    ),
    (InvalidParameterName(name="3", type_name="int"), "parameter names must be strings, got 3 (int)"),
    (UnexpectedGradient(name="W"), "analytic gradient 'W' names no parameter of the problem"),
    (
        InvalidArgument(argument="samples per parameter", value="-2", expected='a positive whole number or "all"'),
        'samples per parameter must be a positive whole number or "all", got -2',
    ),
    (InvalidCoordinate(coordinate="[0, 3]", shape=[2, 3]), "coordinate [0, 3] is not an index into shape [2, 3]"),
    (DuplicateCoordinate(coordinate=[1, 1]), "coordinate [1, 1] is listed twice"),
    (
        SharedMemory(role="parameters", first="w", second="v"),
        "parameters 'w' and 'v' share memory; perturbing one would perturb both: pass a copy (np.array(...)) of one",
    ),
    (
        AtParameter(parameter="w", source=ZeroSamples()),
        "parameter 'w': sampled tensor gradient check needs at least one sample",
    ),
]


@pytest.mark.parametrize("error, message", ERROR_EXAMPLES, ids=[type(error).__name__ for error, _ in ERROR_EXAMPLES])
def test_error_messages_and_records(error, message):
    assert isinstance(error, GradCheckError) and str(error) == message
    record = error.to_dict()
    assert record["kind"] == type(error).__name__ and record["message"] == message
    assert json.loads(json.dumps(record, allow_nan=False)) == record


# --- the kink tolerance goes with each coordinate's step ----------------------------------------


def exp_three_sum(parameters):
    return float(np.exp(3 * parameters["x"]).sum())


def test_an_explicit_step_above_the_default_does_not_take_curvature_for_a_kink():
    # The reviewer's case: exp(3x) at step 1e-2. The slopes differ by about f″·h = 9e^(3θ)·1e-2 against a
    # slope 3e^(3θ): a scaled gap near 0.03, above ε^(1/6) = 2.46e-3 but below √(h / max(1, |θ|)),
    # which is 0.1 at θ = 1 and 0.5, and √(5e-3) = 7.07e-2 at θ = 2.
    x = np.array([1.0, 2.0, 0.5])
    report = check_gradients(exp_three_sum, {"x": x}, {"x": 3 * np.exp(3 * x)}, step=1e-2, tolerance=1e-3)
    check = report.parameters[0]
    assert [record.verdict for record in check.checks] == ["passed", "passed", "passed"]
    assert [record.kink.slopes.tolerance for record in check.checks] == [0.1, math.sqrt(1e-2 / 2.0), 0.1]
    for record in check.checks:
        assert 0.02 < record.kink.slopes.scaled_gap < 0.04
    # The coordinates' kink tolerances differ, so the parameter has none of its own.
    assert check.kink_tolerance is None
    assert report.passed


def test_a_parameter_whose_coordinates_share_a_kink_tolerance_reports_it():
    x = np.array([1.0, -0.5, 0.25])
    report = check_gradients(exp_three_sum, {"x": x}, {"x": 3 * np.exp(3 * x)}, step=1e-2, tolerance=1e-3)
    assert report.parameters[0].kink_tolerance == 0.1  # √(1e-2 / max(1, |θ|)) with every |θ| ≤ 1
    assert report.passed


def test_a_step_below_the_default_keeps_the_default_kink_tolerance():
    x = np.array([0.5, 3.0])
    report = check_gradients(exp_three_sum, {"x": x}, {"x": 3 * np.exp(3 * x)}, step=1e-7)
    assert {record.kink.slopes.tolerance for record in report.parameters[0].checks} == {FLOAT64.kink_tolerance}
    assert report.parameters[0].kink_tolerance == FLOAT64.kink_tolerance


def test_a_float32_default_kink_tolerance_uses_float32s_floor():
    x = np.array([0.5, -0.25], dtype=np.float32)
    report = check_gradients(
        lambda p: float(np.sum(np.exp(np.asarray(p["x"], dtype=np.float64)))),
        {"x": x},
        {"x": np.exp(x.astype(np.float64))},
        step=0.25,
    )
    # √0.25 = 0.5 is above float32's ε^(1/6) = 7.0e-2.
    assert report.parameters[0].kink_tolerance == 0.5


# --- step="auto": the request is validated first, then advised, then checked ---------------------


def two_parameter_problem():
    weights = np.array([[0.5, -0.25, 1.0]])
    bias = np.array([0.1, -0.3])

    def objective(parameters):
        return float(np.sum(np.exp(parameters["weights"])) + np.sum(np.cos(parameters["bias"])))

    return GradientProblem(
        objective, {"weights": weights, "bias": bias}, {"weights": np.exp(weights), "bias": -np.sin(bias)}
    )


def test_step_auto_checks_each_parameter_at_its_advised_step_and_carries_the_advice():
    from gradcheck_cli.advice.steps import advise_problem_steps

    problem = two_parameter_problem()
    report = check_problem(problem, step="auto", samples=2)
    advice = advise_problem_steps(problem)
    assert report.step_advice == advice
    for check in report.parameters:
        assert check.step == advice.steps[check.name]
        assert {record.difference.requested_step for record in check.checks} == {advice.steps[check.name]}
    # The same records as a check at the advised steps, whose kink tolerances go with them.
    at_advised = check_problem(problem, step=advice.steps, samples=2)
    assert [check.to_dict() for check in report.parameters] == [check.to_dict() for check in at_advised.parameters]
    assert at_advised.step_advice is None
    assert report.passed


def test_step_auto_is_reported_in_json():
    report = check_problem(two_parameter_problem(), step="auto", samples=1)
    document = report.to_dict()
    assert list(document)[:2] == ["verdict", "pass"] and document["step_advice"] is not None
    assert list(document["step_advice"]["steps"]) == ["weights", "bias"]
    assert json.loads(json.dumps(document, allow_nan=False)) == document


def test_step_auto_progress_starts_before_the_advice():
    seen, calls = [], []
    problem = two_parameter_problem()

    def objective(parameters):
        calls.append(len(seen))
        return problem.objective(parameters)

    check_gradients(
        objective, problem.parameters, problem.gradients, step="auto", samples=1, progress=lambda *a: seen.append(a)
    )
    assert seen[0] == (0, 2) and calls[0] == 1


def shared_memory_request():
    weights = np.ones(3)
    return {"w": weights, "v": weights[1:]}, {"w": np.ones(3), "v": np.ones(2)}


@pytest.mark.parametrize(
    "make_request, error_type",
    [
        # A NaN analytic value at a selected coordinate (samples=2 selects offsets 0 and 2).
        (lambda: ({"w": np.ones(3)}, {"w": np.array([1.0, 1.0, math.nan])}), AtParameter),
        # Two parameters sharing memory: found before ~70 advice calls per parameter, not after.
        (shared_memory_request, SharedMemory),
        # A NaN where the advice would probe (flat offset ⌊N/2⌋ = 1, not a selected coordinate).
        (lambda: ({"w": np.array([1.0, math.nan, 1.0])}, {"w": np.ones(3)}), AtParameter),
    ],
    ids=["nan-analytic", "shared-memory", "nan-at-the-advised-coordinate"],
)
def test_step_auto_refuses_a_bad_request_before_any_call(make_request, error_type):
    error = refused(error_type, *make_request(), step="auto", samples=2)
    if error_type is AtParameter:
        assert error.parameter == "w" and isinstance(error.source, AtCoordinate)


def test_step_auto_validates_the_probes_at_the_advised_step_before_the_first_check():
    # Advised at w[1] = 0.5, the step (about 1e-5) rounds back to the point at w[0] = 1e20: refused after
    # the advice's calls and before any coordinate is checked, with the array restored.
    weights = np.array([1e20, 0.5, 0.25])
    before = weights.tobytes()
    objective, calls = counting(sum_of_squares)
    with pytest.raises(AtParameter) as caught:
        check_gradients(objective, {"w": weights}, {"w": 2 * weights}, step="auto", samples="all")
    assert isinstance(caught.value.source.source, PerturbationUnchanged)
    assert caught.value.source.coordinate == [0]
    advice_calls = 3 * len(gradcheck_cli.advice.steps.default_steps(0.5))
    assert len(calls) == advice_calls and weights.tobytes() == before


@pytest.mark.parametrize("step", [None, "auto"])
def test_a_nan_anywhere_in_the_gradient_or_the_point_is_refused_before_any_call(step):
    # The directional test moves every coordinate, so every one must be finite, selected or not.
    weights = np.array([0.5, -0.25, 1.0, 0.75, 0.1])
    gradient = np.exp(weights)
    gradient[1] = math.nan
    error = refused(AtParameter, {"w": weights}, {"w": gradient}, samples=2, step=step)
    assert str(error) == "parameter 'w': gradient check at coordinate [1] failed: analytic gradient NaN must be finite"
    weights[3] = math.inf
    error = refused(AtParameter, {"w": weights}, {"w": np.ones(5)}, samples=2, step=step)
    assert str(error).startswith("parameter 'w': gradient check at coordinate [3] failed:")


# --- samples: one validation for the sampler and the check ----------------------------------------


def test_a_numpy_integer_sample_count_becomes_a_python_int():
    report = check_gradients(sum_of_squares, {"w": np.ones(4)}, {"w": 2 * np.ones(4)}, samples=np.int64(3))
    assert type(report.parameters[0].requested_samples) is int
    json.dumps(report.to_dict(), allow_nan=False)


@pytest.mark.parametrize("failing_call", [1, 40, 90, 150, 159])
def test_step_auto_restores_every_array_when_the_objective_raises_during_the_advice_or_the_check(failing_call):
    # 24 steps × 3 calls = 72 advice calls for each of the two parameters, then 5 coordinates × 3 calls.
    problem = two_parameter_problem()
    before = {name: array.tobytes() for name, array in problem.parameters.items()}
    calls = []

    def objective(parameters):
        calls.append(1)
        if len(calls) == failing_call:
            raise Boom("stop")
        return problem.objective(parameters)

    with pytest.raises(Boom):
        check_gradients(objective, problem.parameters, problem.gradients, step="auto")
    assert {name: array.tobytes() for name, array in problem.parameters.items()} == before


def test_an_array_changed_during_the_confirmations_is_an_error_and_restored():
    x = np.array([1.0, 2.0, 3.0, 4.0])

    def objective(parameters):
        array = parameters["x"]
        if 0.0 < abs(array[0] - 1.0) < 1e-6:  # coordinate 0 at h/10: only a confirmation probes there
            array[3] += 1.0
        return float(np.sum(array * array))

    wrong = 2 * x
    wrong[0] *= 2.0  # coordinate 0 fails at h and is confirmed at h/10 and 10h
    with pytest.raises(GradCheckError, match="modified in place"):
        check_gradients(objective, {"x": x}, {"x": wrong}, samples="all")
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_an_array_changed_by_an_objective_that_then_raises_is_restored():
    x = np.array([1.0, 2.0, 3.0, 4.0])

    def objective(parameters):
        array = parameters["x"]
        if array[2] != 3.0:
            array[1] = 99.0
            raise ValueError("boom")
        return float(np.sum(array * array))

    with pytest.raises(ValueError, match="boom"):
        check_gradients(objective, {"x": x}, {"x": 2 * x}, samples="all")
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0]


def _reference_structured_offsets(shape, samples, gradient):
    """The structured selection one point at a time, in Python integers (the vectorized one's spec):
    the largest entries, then the stratified points (ranks of the R_d fractions per axis, mirrored
    pairs and 3-cycles on the last two axes when square), then R_d points until enough."""
    from gradcheck_cli.check.selection import _recurrence_multipliers, largest_offsets
    from gradcheck_cli.engine.sampling import offset_from_coordinate, sample_tensor_coordinates

    one = 1 << 64
    chosen = dict.fromkeys(largest_offsets(gradient, max(1, samples // 4)))
    square = len(shape) >= 2 and shape[-1] == shape[-2] > 1
    multipliers = _recurrence_multipliers(len(shape))
    count = samples - len(chosen)

    def ranks(step):
        fractions = [((one >> 1) + r * step) % one for r in range(count)]
        order = sorted(range(count), key=fractions.__getitem__)
        return [order.index(r) for r in range(count)]

    axes = [[rank * extent // count for rank in ranks(step)] for step, extent in zip(multipliers, shape)]
    if square and count:
        values = sorted(axes[-2])
        cycle_values = [values[rank] for rank in ranks(multipliers[-1])]
        rows, columns, position, lengths = [], [], 0, 0
        while position < count:
            left = count - position
            length = left if left <= 3 else 2 if left == 4 or lengths % 2 == 0 else 3
            cycle = cycle_values[position : position + length]
            rows, columns = rows + cycle, columns + cycle[1:] + cycle[:1]
            position, lengths = position + length, lengths + 1
        axes[-2], axes[-1] = rows, columns
    spread = [offset_from_coordinate(shape, tuple(axis[r] for axis in axes)) for r in range(count)]
    for offset in dict.fromkeys(spread):
        if len(chosen) < samples:
            chosen.setdefault(offset)
    k = 0
    while len(chosen) < samples and k < 8 * samples + 64:
        point = tuple((((one >> 1) + k * step) % one) * extent >> 64 for step, extent in zip(multipliers, shape))
        chosen.setdefault(offset_from_coordinate(shape, point))
        if square and k % 2 == 0 and point[-1] != point[-2] and len(chosen) < samples:
            chosen.setdefault(offset_from_coordinate(shape, (*point[:-2], point[-1], point[-2])))
        k += 1
    for fallback in sample_tensor_coordinates(shape, samples):
        if len(chosen) >= samples:
            break
        chosen.setdefault(fallback.flat_index)
    return sorted(chosen)


@pytest.mark.parametrize(
    "shape",
    [(7,), (100,), (5, 5), (3, 4), (40, 50), (16, 16), (2, 3, 3), (1, 1000), (1000, 1), (4, 4, 4, 4), (2, 1, 1)],
)
def test_the_vectorized_structured_selection_is_the_point_by_point_one(shape):
    from gradcheck_cli.check.selection import structured_offsets

    random = np.random.default_rng(len(shape) * 1000 + shape[-1])
    elements = int(np.prod(shape))
    for samples in (1, 2, 3, 5, 16, 17, 64, 100, 999):
        if samples >= elements:
            continue
        for gradient in (random.standard_normal(shape), np.zeros(shape)):
            assert structured_offsets(shape, samples, gradient) == _reference_structured_offsets(
                shape, samples, gradient
            )


def test_the_structured_selection_is_exact_on_extents_beyond_32_bits():
    from gradcheck_cli.check.selection import _recurrence_multipliers, _spread_offsets

    one = 1 << 64
    for shape in [(2**40,), (3, 2**35), (2**31 + 1, 2**31 - 1), (2**20, 2**42 + 3), (2**62 + 5,)]:
        multipliers = _recurrence_multipliers(len(shape))
        offsets = _spread_offsets(shape, multipliers, 0, 50, square=False).tolist()
        expected = []
        for k in range(50):
            point = [(((one >> 1) + k * step) % one) * extent >> 64 for step, extent in zip(multipliers, shape)]
            flat = 0
            for index, extent in zip(point, shape):
                flat = flat * extent + index
            expected.append(flat)
        assert offsets == expected


@settings(max_examples=300, deadline=None)
@given(
    rows=st.integers(2, 64),
    columns=st.integers(2, 64),
    samples=st.integers(8, 64),
    gradient_seed=st.one_of(st.none(), st.integers(0, 2**32 - 1)),
)
def test_the_spread_coordinates_cover_every_row_and_column(rows, columns, samples, gradient_seed):
    """k spread points (samples less the largest entries) hit min(k, n) rows and min(k, m) columns,
    a square matrix keeps mirrored pairs, and the selection is deterministic."""
    from gradcheck_cli.check.selection import largest_offsets, structured_offsets

    shape = (rows, columns)
    assume(samples < rows * columns)
    gradient = np.zeros(shape) if gradient_seed is None else np.random.default_rng(gradient_seed).normal(size=shape)
    chosen = structured_offsets(shape, samples, gradient)
    spread = samples - len(largest_offsets(gradient, max(1, samples // 4)))
    assert len(chosen) == len(set(chosen)) == samples
    assert len({offset // columns for offset in chosen}) >= min(spread, rows)
    assert len({offset % columns for offset in chosen}) >= min(spread, columns)
    if rows == columns:
        pairs = {(offset // columns, offset % columns) for offset in chosen}
        assert any((j, i) in pairs for i, j in pairs if i != j)
    assert structured_offsets(shape, samples, gradient.copy()) == chosen


def test_the_directional_scale_is_read_from_the_numerical_side_not_from_the_gradient_under_test():
    # f = ⟨g, x⟩ at 0, only x[0] checked. The analytic side is g with its two unchecked entries
    # scaled ×1000, and g's terms there nearly cancel along the direction: g₁Δ₁ = c, g₂Δ₂ = −(1 − 1e-7)c
    # with c = h/√3. The gap (1000 − 1)·1e-7·c is 5.77e-5 of ‖g∘Δ‖₂ = √3·c (every |g_i Δ_i| = c up to
    # 1e-7), beyond the tolerance 6.1e-6; beside ‖a∘Δ‖₂ ≈ 1000·√2·c it was 7.06e-8 and passed.
    from gradcheck_cli.check.directional_probes import direction_signs

    signs = direction_signs(3)
    g = np.array([1.0, signs[1], -signs[2] * (1 - 1e-7)])
    analytic = np.array([1.0, 1000.0 * g[1], 1000.0 * g[2]])
    report = check_gradients(
        lambda p: math.fsum((g * p["x"]).tolist()), {"x": np.zeros(3)}, {"x": analytic}, coordinates={"x": [(0,)]}
    )
    parameter = report.parameters[0]
    assert parameter.checks[0].verdict == "passed"
    directional = parameter.directional
    estimate = directional.estimates[directional.decided_at]
    c = PROBE_DTYPES["float64"].default_step(0.0) / math.sqrt(3)
    assert estimate.scale == pytest.approx(math.sqrt(3) * c, rel=1e-12)
    assert estimate.relative_error == pytest.approx(999e-7 * c / (math.sqrt(3) * c), rel=1e-3)
    assert directional.verdict == "failed" and report.verdict == "failed"


# The whole-array passes (directional test, direction scale, largest entries) go a block at a
# time; below, each is compared bit for bit with a straightforward whole-array reference, whose
# sums are taken in the documented order (docs/method.md, "Sums") from the whole array's products.


def _sum_in_blocks(values: np.ndarray) -> float:
    """Σ values in gradcheck's order: each block's np.add.reduce, the blocks' sums up the halving tree."""
    from gradcheck_cli.engine.blocks import block_bounds, tree_sum

    values = np.ascontiguousarray(values, dtype=np.float64).reshape(-1)
    return tree_sum([float(np.add.reduce(values[a:b])) for a, b in block_bounds(values.size)], values.size)


def _within_the_pairwise_bound(total: float, values: np.ndarray) -> bool:
    """|total − Σ values| ≤ (⌈log₂ N⌉ + 32)·2⁻⁵³·Σ|values|, Σ exact (math.fsum): docs/method.md's bound."""
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    bound = (math.ceil(math.log2(max(values.size, 2))) + 32) * 2.0**-53 * math.fsum(np.abs(values).tolist())
    return abs(total - math.fsum(values.tolist())) <= bound


def _reference_direction(w, g, step, multiplier=1.0):
    """θ₊ = θ + m·Δ and θ₋ = θ − (θ₊ − θ) rounded into w's dtype, the shifts' sums and moved count, on
    whole arrays: Δ_i = s_i·u·max(1, |θ_i|), u = ε^(1/3)/√N (or s_i·step/√N), in float32 for float32."""
    from gradcheck_cli.check.directional_probes import direction_signs
    from gradcheck_cli.engine.dtypes import probe_dtype

    work = np.float32 if w.dtype == np.float32 else np.float64  # float32 is computed in float32
    exact = np.array(w, dtype=work, order="C")
    unit = (probe_dtype(w.dtype).step_factor if step is None else step) / math.sqrt(exact.size)
    signed = (
        direction_signs(exact.size).reshape(exact.shape) * (unit * multiplier if multiplier != 1.0 else unit)
    ).astype(work)
    displacement = signed if step is not None else np.maximum(np.abs(exact), 1.0) * signed
    plus = (exact + displacement).astype(w.dtype)
    minus = (exact - (plus.astype(work) - exact)).astype(w.dtype)
    exact = exact.astype(np.float64)
    shifts = plus.astype(np.float64) - minus.astype(np.float64)
    products = np.multiply(g, shifts)
    return {
        "products": products,
        "plus": plus,
        "minus": minus,
        "shifts": shifts,
        "moved": int(
            np.count_nonzero(plus.astype(np.float64) != exact) + np.count_nonzero(minus.astype(np.float64) != exact)
        ),
        "dot": _sum_in_blocks(products),
        "norm": math.sqrt(_sum_in_blocks(products * products)),
    }


def _reference_direction_scale(g, shifts, checks):
    """‖ĝ∘s‖₂/2: |a| capped at the checked coordinates' largest one-sided slope, those slopes there."""
    resolved = {c.flat_index: max(abs(c.kink.slopes.left), abs(c.kink.slopes.right)) for c in checks}
    magnitude = np.fmin(np.abs(np.asarray(g, dtype=np.float64)).reshape(-1), max(resolved.values()))
    magnitude[list(resolved)] = list(resolved.values())
    products = magnitude * np.abs(shifts.reshape(-1))
    largest = float(np.max(products))
    return largest * math.sqrt(float(np.sum(np.square(products / largest)))) / 2


def _layout(values: np.ndarray, layout: str, dtype, tmp_path):
    if layout == "transposed":
        return np.array(values.T, dtype=dtype).T
    if layout == "strided":
        wide = np.zeros(values.shape[:-1] + (2 * values.shape[-1],), dtype=dtype)
        wide[..., ::2] = values
        return wide[..., ::2]
    if layout == "memmap":
        mapped = np.memmap(tmp_path / "w.dat", dtype=dtype, mode="w+", shape=values.shape or (1,))
        mapped[...] = np.asarray(values, dtype=dtype).reshape(mapped.shape)
        return mapped.reshape(values.shape) if values.shape else mapped.reshape(())
    return np.array(values, dtype=dtype)


BLOCKED_CASES = [
    with_module("ml_dtypes", dtype, shape, layout, step, bug)
    if dtype is bfloat16
    else (dtype, shape, layout, step, bug)
    for dtype in (np.float64, np.float32, bfloat16)
    for shape, layout in [
        ((), "contiguous"),
        ((7,), "contiguous"),
        ((5, 5), "transposed"),
        ((3, 4, 6), "strided"),
        ((40_000,), "contiguous"),
        ((70_001,), "memmap"),
        ((300, 230), "transposed"),
        ((33_000, 3), "strided"),
    ]
    for step, bug in [(None, None), (None, "one"), (0.01, None)]
]


@pytest.mark.parametrize(("dtype", "shape", "layout", "step", "bug"), BLOCKED_CASES)
def test_the_directional_test_in_blocks_is_the_whole_array_one_bit_for_bit(dtype, shape, layout, step, bug, tmp_path):
    import hashlib

    if step is not None and dtype is bfloat16:
        step = 0.25  # 0.01 rounds back to θ in bfloat16's 8 bits
    rng = np.random.default_rng(sum(shape) + len(layout))
    w = _layout(rng.standard_normal(shape) * 2, layout, dtype, tmp_path)
    weights = rng.uniform(0.5, 2.0, shape)
    w64 = np.asarray(w, dtype=np.float64)
    g = 2 * weights * w64 + np.cos(w64)
    if bug == "one" and g.size > 1:
        g.reshape(-1)[g.size // 3] += 5.0
    g = g.astype(dtype) if dtype is not np.float64 else g
    seen = set()

    def digest(array):
        return hashlib.blake2b(np.ascontiguousarray(array).tobytes()).hexdigest()

    def objective(p):
        seen.add(digest(p["w"]))
        x = np.asarray(p["w"], dtype=np.float64)
        return float(np.sum(weights * x * x) + np.sum(np.sin(x)))

    before = digest(w)
    report = check_gradients(objective, {"w": w}, {"w": g}, step=step, samples=16)
    assert digest(w) == before
    reference = _reference_direction(w, g, step)
    directional = report.parameters[0].directional
    assert digest(reference["plus"]) in seen and digest(reference["minus"]) in seen
    assert directional.moved == reference["moved"]
    assert directional.plus_value == objective({"w": reference["plus"]})
    assert directional.minus_value == objective({"w": reference["minus"]})
    first = directional.estimates[0]
    assert first.analytic == reference["dot"] / 2
    assert _within_the_pairwise_bound(2 * first.analytic, reference["products"])
    scale = _reference_direction_scale(g, reference["shifts"], report.parameters[0].checks)
    assert first.scale == pytest.approx(max(abs(first.analytic), abs(first.numerical), scale), rel=1e-13)


def test_the_direction_scale_is_what_the_reference_battery_reads():
    """The battery above tests the direction scale only where it is the estimate's scale: most cases."""
    rng = np.random.default_rng(5)
    dominant = 0
    for size in (7, 25, 72, 40_000, 70_001):
        w = rng.standard_normal(size) * 2
        g = 2 * w
        report = check_gradients(lambda p: float(np.sum(p["w"] ** 2)), {"w": w}, {"w": g}, samples=16)
        first = report.parameters[0].directional.estimates[0]
        scale = _reference_direction_scale(g, _reference_direction(w, g, None)["shifts"], report.parameters[0].checks)
        dominant += scale > max(abs(first.analytic), abs(first.numerical))
        assert first.scale == pytest.approx(max(abs(first.analytic), abs(first.numerical), scale), rel=1e-13)
    assert dominant >= 3


def _scaled_norm(values) -> float:
    values = np.abs(np.asarray(values, dtype=np.float64)).reshape(-1)
    largest = float(np.max(values))
    return largest * math.sqrt(float(np.sum(np.square(values / largest))))


@pytest.mark.parametrize("magnitude", [1e200, 1e-200, 1e-160])
@pytest.mark.parametrize("capped", [False, True])
def test_the_norms_of_a_gradient_whose_squares_overflow_or_underflow_are_taken_scaled(magnitude, capped):
    """Σ (a·s)² overflows at |a| ~ 1e200 and loses every term to underflow at 1e-200: the norms are then
    taken again, scaled, equal to a scaled whole-array reference (the plain sums gave inf and 0)."""
    from gradcheck_cli.check.directional import probe_direction
    from gradcheck_cli.check.directional_probes import Direction, DirectionScale, DirectionalProbing
    from gradcheck_cli.engine.dtypes import probe_dtype

    rng = np.random.default_rng(17)
    size = 3 * 2**16 + 5
    w = rng.standard_normal(size)
    g = rng.uniform(0.5, 2.0, size) * magnitude
    offsets, resolved = np.array([3, 70_000]), np.array([g[3], g[70_000]])
    peak = float(np.max(g))
    cap = 0.9 * peak if capped else peak
    scale = DirectionScale(offsets, resolved, cap, peak)
    direction = Direction(step=None, step_factor=probe_dtype(w.dtype).step_factor, elements=size)
    values = iter([1.5, 0.5])
    saved = w.copy()
    probe = probe_direction(DirectionalProbing(w, saved, g, direction, lambda: next(values), peak), 1.0, scale=scale)
    with np.errstate(over="ignore", under="ignore"):  # the plain sums of squares, what the check does not use here
        reference = _reference_direction(saved, g, None)
    weights = np.fmin(g, cap)
    weights[offsets] = resolved
    assert probe.scale == pytest.approx(_scaled_norm(g * reference["shifts"]) / 2, rel=1e-12)
    assert scale.norm == pytest.approx(_scaled_norm(weights * reference["shifts"]) / 2, rel=1e-12)
    assert probe.analytic == reference["dot"] / 2 and w.tobytes() == saved.tobytes()


@pytest.mark.parametrize("layout", ["contiguous", "float32", "strided", with_module("ml_dtypes", "bfloat16")])
@pytest.mark.parametrize("during", ["plus", "minus"])
def test_an_objective_that_changes_the_directions_probe_in_place_is_caught_or_overwritten(layout, during):
    """θ₋ is computed from the θ₊ the array holds: where the objective changed θ₊ in place during its
    call, θ₋ would be off, so the change is a ParameterChanged error (the array restored). A change
    made during the minus probe's call is overwritten by the restoring, as a coordinate's is."""
    from gradcheck_cli.engine.blocks import BLOCK
    from gradcheck_cli.errors import ParameterChanged

    dtype = {"float32": np.float32, "bfloat16": bfloat16}.get(layout, np.float64)
    base = np.linspace(-1.0, 1.0, 2 * (2 * BLOCK + 9)).astype(dtype)
    x = base[::2] if layout == "strided" else base[: 2 * BLOCK + 9]
    before, original, directions = base.tobytes(), np.array(x, dtype=np.float64), []

    def objective(parameters):
        moved = np.count_nonzero(np.asarray(parameters["x"], dtype=np.float64) != original)
        if moved > 1:  # one of the direction's probes: every element moved
            directions.append(moved)
            if len(directions) == (1 if during == "plus" else 2):
                parameters["x"][BLOCK + 3] = 7.0
        return float(np.sum(np.asarray(parameters["x"], dtype=np.float64) ** 2))

    gradient = (2.0 * np.asarray(x, dtype=np.float64)).astype(dtype)
    if during == "plus":
        with pytest.raises(ParameterChanged, match="'x' was modified in place"):
            check_gradients(objective, {"x": x}, {"x": gradient})
        assert len(directions) == 1
    else:
        assert check_gradients(objective, {"x": x}, {"x": gradient}).passed
    assert base.tobytes() == before


@pytest.mark.parametrize("dtype", [np.float64, np.float32, with_module("ml_dtypes", bfloat16, id="bfloat16")])
def test_blocks_whose_every_theta_is_within_one_take_the_unit_step_bit_for_bit(dtype):
    """Where every |θ_i| of a block is at most 1 (read in the pass that takes the snapshot), Δ_i there is
    s_i·u itself: max(1, |θ_i|)·x is x. The probes are the whole-array reference's, bit for bit."""
    from gradcheck_cli.check.directional import probe_direction
    from gradcheck_cli.check.directional_probes import Direction, DirectionalProbing
    from gradcheck_cli.check.plan import _finite_snapshot
    from gradcheck_cli.engine.blocks import BLOCK, block_bounds
    from gradcheck_cli.engine.dtypes import probe_dtype

    rng = np.random.default_rng(23)
    size = 4 * BLOCK + 3
    values = rng.uniform(-1.0, 1.0, size)
    values[3 * BLOCK + 1] = 1.5  # the last blocks are not within one
    values[:5] = [1.0, -1.0, 0.0, -0.0, 2.0**-1074]
    w = values.astype(dtype)
    saved, unit_blocks = _finite_snapshot(w, w)
    assert 0 < len(unit_blocks) < len(block_bounds(size))
    g = rng.standard_normal(size)
    direction = Direction(None, probe_dtype(w.dtype).step_factor, size, unit_blocks)
    seen = []

    def objective():
        seen.append(w.copy())
        return float(len(seen))

    probe = probe_direction(DirectionalProbing(w, saved, g, direction, objective), 1.0)
    reference = _reference_direction(saved, g, None)
    assert seen[0].tobytes() == reference["plus"].tobytes() and seen[1].tobytes() == reference["minus"].tobytes()
    assert probe.analytic == reference["dot"] / 2 and w.tobytes() == saved.tobytes()


@pytest.mark.parametrize("dtype", [np.float64, np.float32, with_module("ml_dtypes", bfloat16, id="bfloat16")])
@pytest.mark.parametrize("multiplier", [1.0, 0.1, 10.0])
def test_probe_direction_in_blocks_is_the_whole_array_one(dtype, multiplier):
    from gradcheck_cli.check.directional import probe_direction
    from gradcheck_cli.check.directional_probes import Direction, DirectionalProbing
    from gradcheck_cli.engine.dtypes import probe_dtype

    rng = np.random.default_rng(11)
    w = np.array(rng.standard_normal((41, 1700)) * 3, dtype=dtype)[:, ::2]  # 34 850 elements, strided
    g = rng.standard_normal(w.shape).astype(np.float32)
    saved = np.array(w, copy=True)
    values = iter([1.5, 0.5])
    direction = Direction(step=None, step_factor=probe_dtype(w.dtype).step_factor, elements=w.size)
    probe = probe_direction(DirectionalProbing(w, saved, g, direction, lambda: next(values)), multiplier)
    reference = _reference_direction(saved, g, None, multiplier)
    assert probe.to_dict() == {
        "multiplier": multiplier,
        "minus_value": 0.5,
        "plus_value": 1.5,
        "analytic": reference["dot"] / (2 * multiplier),
        "scale": reference["norm"] / (2 * multiplier),
        "moved": reference["moved"],
    }
    assert w.tobytes() == saved.tobytes()


def _reference_largest(gradient, count):
    """The whole-array selection of the largest |gradient| entries: a partition, ties by lowest offset."""
    magnitudes = np.abs(np.asarray(gradient, dtype=np.float64)).ravel()
    count = min(count, int(np.count_nonzero(magnitudes)))
    if count == 0:
        return []
    threshold = np.partition(magnitudes, magnitudes.size - count)[magnitudes.size - count]
    above = np.flatnonzero(magnitudes > threshold)
    at = np.flatnonzero(magnitudes == threshold)[: count - above.size]
    return sorted(int(offset) for offset in np.concatenate([above, at]))


@pytest.mark.parametrize("kind", ["normal", "ties", "ascending", "descending", "sparse", "zero"])
@pytest.mark.parametrize("count", [1, 4, 25, 300])
def test_the_largest_entries_in_blocks_are_the_whole_array_ones(kind, count):
    from gradcheck_cli.check.selection import largest_offsets

    rng = np.random.default_rng(count)
    size = 100_003
    gradient = {
        "normal": lambda: rng.standard_normal(size),
        "ties": lambda: rng.integers(-3, 4, size).astype(np.float32),
        "ascending": lambda: np.arange(size, dtype=np.float64),
        "descending": lambda: -np.arange(size, 0, -1).astype(np.int64),
        "sparse": lambda: np.where(rng.random(size) < 1e-4, 1.0, 0.0),
        "zero": lambda: np.zeros(size),
    }[kind]()
    for layout in (gradient, gradient.reshape(7, -1).T if size % 7 == 0 else gradient[::-1]):
        assert largest_offsets(layout, count) == _reference_largest(layout, count)


@pytest.mark.parametrize("layout", ["contiguous", "float32", "strided"])
def test_an_array_changed_past_the_first_block_is_caught_by_the_direction_and_restored(layout):
    from gradcheck_cli.engine.blocks import BLOCK
    from gradcheck_cli.errors import ParameterChanged

    base = np.linspace(-1.0, 1.0, 2 * (3 * BLOCK + 5)).astype(np.float32 if layout == "float32" else np.float64)
    x = base[::2] if layout == "strided" else base[: 3 * BLOCK + 5]
    before, calls = base.tobytes(), [0]

    def objective(parameters):
        calls[0] += 1
        if calls[0] == 3:  # a coordinate's probe: only the direction's pass reads that far
            parameters["x"][2 * BLOCK + 7] += 1.0
        return float(np.sum(np.asarray(parameters["x"], dtype=np.float64) ** 2))

    with pytest.raises(ParameterChanged, match="'x' was modified in place"):
        check_gradients(objective, {"x": x}, {"x": 2.0 * x})
    assert base.tobytes() == before


def test_a_sampled_coordinate_changed_before_its_own_probe_is_caught_at_the_next_center():
    from gradcheck_cli.errors import ParameterChanged

    x = np.linspace(-1.0, 1.0, 12)
    calls = [0]

    def objective(parameters):
        calls[0] += 1
        if calls[0] == 2:  # coordinate 0's first probe; coordinate 11's own probe would write θ back
            parameters["x"][11] += 1.0
        return float(np.sum(parameters["x"] ** 2))

    with pytest.raises(ParameterChanged, match="'x' was modified in place"):
        check_gradients(objective, {"x": x}, {"x": 2.0 * x}, samples="all")
    assert x.tobytes() == np.linspace(-1.0, 1.0, 12).tobytes()


@pytest.mark.parametrize(
    ("dtype", "size", "multiplier", "shortcut"),
    [
        (np.float64, 3 * 2**16 + 5, 0.1, True),
        (np.float32, 266_000, 0.1, True),  # at the bound: m·ε^(1/3)/√N is just above 8ε
        (np.float32, 300_000, 0.1, False),  # just past it: every shift is counted
        (np.float32, 300_000, 1.0, True),
    ],
)
def test_the_moved_count_is_the_count_of_moved_elements_with_or_without_counting(dtype, size, multiplier, shortcut):
    """Where every probe provably moves (the default step, small enough N) moved is 2N uncounted:
    compared with the whole-array count at θ from 0 and subnormals to 1e37, both signs."""
    from gradcheck_cli.check.directional import probe_direction
    from gradcheck_cli.check.directional_probes import Direction, DirectionalProbing, dtype_epsilon
    from gradcheck_cli.engine.dtypes import probe_dtype

    rng = np.random.default_rng(size)
    tiny = float(np.finfo(dtype).smallest_subnormal)
    magnitudes = np.array([0.0, tiny, 3 * tiny, 1e-30, 1e-7, 0.5, 1.0, 1.5, 3e5, 1e20, 1e37])
    w = (rng.choice(magnitudes, size) * rng.choice([-1.0, 1.0], size)).astype(dtype)
    w[: len(magnitudes)] = magnitudes
    g = rng.standard_normal(size)
    direction = Direction(step=None, step_factor=probe_dtype(w.dtype).step_factor, elements=size)
    assert direction.moves_everywhere(multiplier, dtype_epsilon(w.dtype)) is shortcut
    values = iter([1.0, 0.0])
    probe = probe_direction(
        DirectionalProbing(w, np.array(w, copy=True), g, direction, lambda: next(values)), multiplier
    )
    assert probe.moved == _reference_direction(w, g, None, multiplier)["moved"] == 2 * size


def test_a_given_step_is_always_counted_and_its_unmoved_elements_are_not():
    from gradcheck_cli.check.directional import probe_direction
    from gradcheck_cli.check.directional_probes import Direction, DirectionalProbing, dtype_epsilon

    w = np.where(np.arange(5000) % 3 == 0, 1e30, 1.0)
    direction = Direction(step=1e-3, step_factor=0.0, elements=w.size)
    assert not direction.moves_everywhere(1.0, dtype_epsilon(w.dtype))
    values = iter([1.0, 0.0])
    probe = probe_direction(DirectionalProbing(w, w.copy(), np.ones(w.size), direction, lambda: next(values)), 1.0)
    assert probe.moved == _reference_direction(w, np.ones(w.size), 1e-3)["moved"] == 2 * 3333


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_the_selecting_pass_reports_the_first_non_finite_block_and_selects_as_before(value):
    from gradcheck_cli.check.selection import largest_offsets
    from gradcheck_cli.engine.blocks import BLOCK

    gradient = np.linspace(-1.0, 1.0, 3 * BLOCK + 5)
    gradient[2 * BLOCK + 9] = value
    seen = []
    chosen = largest_offsets(gradient, 4, lambda: seen.append(len(seen)))
    assert seen == [0]
    assert chosen == largest_offsets(gradient, 4)  # the callback changes nothing but the call
    expected = [0, 1, 3 * BLOCK + 3, 3 * BLOCK + 4] if math.isnan(value) else [0, 1, 2 * BLOCK + 9, 3 * BLOCK + 4]
    assert chosen == expected
    assert largest_offsets(gradient, 0, lambda: seen.append(len(seen))) == [] and seen == [0, 1]


@pytest.mark.parametrize("samples", [16, "all"])
def test_a_non_finite_value_past_the_first_block_is_refused_theta_first(samples):
    from gradcheck_cli.engine.blocks import BLOCK

    w, g = np.linspace(-1.0, 1.0, 3 * BLOCK + 7).reshape(-1, 5), np.ones(3 * BLOCK + 7).reshape(-1, 5)
    g.reshape(-1)[BLOCK + 2] = math.nan
    error = refused(AtParameter, {"w": w}, {"w": g}, samples=samples)
    assert isinstance(error.source.source, NonFiniteAnalyticGradient)
    assert error.source.coordinate == list(divmod(BLOCK + 2, 5))
    w.reshape(-1)[2 * BLOCK + 1] = -math.inf
    error = refused(AtParameter, {"w": w}, {"w": g}, samples=samples)
    assert isinstance(error.source.source, NonFinitePoint)
    assert error.source.coordinate == list(divmod(2 * BLOCK + 1, 5))


def _reachable_array_bytes(root) -> int:
    """The bytes of every numpy array reachable from ``root`` through gc's referents (each once)."""
    import gc

    seen, pending, total = set(), [root], 0
    while pending:
        item = pending.pop()
        if id(item) in seen or isinstance(item, type):
            continue
        seen.add(id(item))
        if isinstance(item, np.ndarray):
            total += item.nbytes if item.base is None else 0
        pending.extend(gc.get_referents(item))
    return total


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_report_keeps_no_copy_of_the_parameter(dtype):
    """A report is what it shows: a training loop or a test session that keeps reports must not pin a
    copy of every checked θ (the restoration snapshot went with the slimmed plan: 8,000,424 bytes a
    report of a million float64 elements)."""
    w = np.linspace(-1.0, 1.0, 200_000).astype(dtype)
    report = check_gradients(lambda p: 0.5 * float(np.sum(p["w"].astype(np.float64) ** 2)), {"w": w}, {"w": w.copy()})
    assert report.passed
    assert _reachable_array_bytes(report) < w.nbytes // 100


def test_a_check_run_in_the_middle_of_another_checks_pass_changes_nothing_of_it(monkeypatch):
    """A signal handler or a finalizer may run a check while another is in the middle of a whole-array
    pass in the same thread: the inner check's temporaries must not be the outer pass's (its probes
    were written from the inner check's numbers: a correct directional test read 4193 against -0.001)."""
    from gradcheck_cli.check.directional_probes import Direction

    n = 3 * 65536 + 11
    w = np.linspace(-2.0, 3.0, n)

    def objective(p):
        return 0.5 * float(np.sum(np.sin(p["w"])))

    clean = check_gradients(objective, {"w": w}, {"w": 0.5 * np.cos(w)}).to_dict()
    original, nested, running = Direction.displacement, [], []
    other = np.linspace(5.0, 9.0, n)

    def interrupted(direction, exact, start, out, multiplier=1.0):
        magnitudes = original(direction, exact, start, out, multiplier)
        if len(nested) < 3 and not running:  # as a handler would, between two operations of a block
            running.append(True)
            nested.append(check_gradients(lambda p: float(np.sum(p["v"] ** 3)), {"v": other}, {"v": 3 * other**2}))
            running.pop()
        return magnitudes

    monkeypatch.setattr(Direction, "displacement", interrupted)
    assert check_gradients(objective, {"w": w}, {"w": 0.5 * np.cos(w)}).to_dict() == clean
    assert len(nested) == 3 and all(report.passed for report in nested)
    assert w.tobytes() == np.linspace(-2.0, 3.0, n).tobytes()


@pytest.mark.parametrize("n", [1000, 70_000])
def test_a_gradient_that_is_the_parameter_array_is_read_as_it_was_before_the_probes(n):
    """f = ½‖w‖² has gradient w, and a user may hand the very array as both: the analytic gradient is
    its value at θ, so the check reads it as if it were a copy, whatever the probes write into θ."""
    w = np.linspace(-1.0, 1.0, n)

    def objective(p):
        return 0.5 * float(np.sum(p["w"] ** 2))

    copied = check_gradients(objective, {"w": w}, {"w": w.copy()}).to_dict()
    assert check_gradients(objective, {"w": w}, {"w": w}).to_dict() == copied
    assert check_gradients(objective, {"w": w}, {"w": w[::-1][::-1]}).to_dict() == copied  # a view of it
    assert w.tobytes() == np.linspace(-1.0, 1.0, n).tobytes()


def test_a_gradient_sharing_memory_with_another_parameter_is_read_as_a_copy_too():
    buffer = np.linspace(-1.0, 1.0, 2000)
    a, b = buffer[:1000], buffer[1000:]  # b's gradient is a's memory, and a's is b's

    def objective(p):
        return float(np.sum(p["a"] * p["b"]))

    copied = check_gradients(objective, {"a": a, "b": b}, {"a": b.copy(), "b": a.copy()}).to_dict()
    assert check_gradients(objective, {"a": a, "b": b}, {"a": b, "b": a}).to_dict() == copied
    assert buffer.tobytes() == np.linspace(-1.0, 1.0, 2000).tobytes()
