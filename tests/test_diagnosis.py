"""Each classic bug is diagnosed with its kind (and factor or place); correct parameters carry none.

The model is a small linear-tanh layer with a mean squared error, so every bug is one line of its
hand-written backward pass; the factors are exact (a batch of 6, a ×2, a sign).
"""

import json
import math

import numpy as np
import pytest

from gradcheck_cli import GradientProblem, check_gradients
from gradcheck_cli.testing import assert_gradients

BATCH = 6
RNG = np.random.default_rng(11)
INPUTS = RNG.normal(size=(BATCH, 5))
TARGETS = RNG.normal(size=(BATCH, 5))


def _forward(parameters):
    return np.tanh(INPUTS @ parameters["W"] + parameters["b"])


def _objective(parameters):
    return float(np.mean(np.sum((_forward(parameters) - TARGETS) ** 2, axis=1)))


def _backward(parameters, bug=None):
    output = _forward(parameters)
    per_example = 2 * (output - TARGETS) * (1 - output**2)
    d_pre = per_example if bug == "missing_mean" else per_example / BATCH
    gradients = {"W": INPUTS.T @ d_pre, "b": d_pre.sum(axis=0)}
    if bug == "doubled":
        gradients = {name: 2 * gradient for name, gradient in gradients.items()}
    if bug == "sign":
        gradients["W"] = -gradients["W"]
    if bug == "transpose":
        gradients["W"] = gradients["W"].T.copy()
    if bug == "zero_bias":
        gradients["b"] = np.zeros_like(gradients["b"])
    if bug == "one_row":
        gradients["W"][3] *= 1.5
    return gradients


def problem(bug=None) -> GradientProblem:
    parameters = {"W": RNG.normal(size=(5, 5)) / 2, "b": 0.1 * RNG.normal(size=5)}
    return GradientProblem(_objective, parameters, _backward(parameters, bug))


def _check(bug, **options):
    made = problem(bug)
    return check_gradients(made.objective, made.parameters, made.gradients, **options)


EXPECTED = {
    "missing_mean": {"W": ("scale", 6.0, None), "b": ("scale", 6.0, None)},
    "doubled": {"W": ("scale", 2.0, None), "b": ("scale", 2.0, None)},
    "sign": {"W": ("sign", -1.0, None)},
    "transpose": {"W": ("transpose", None, None)},
    "zero_bias": {"b": ("zero", 0.0, None)},
    "one_row": {"W": ("localized", 1.5, "row 3")},
}


@pytest.mark.parametrize("bug", sorted(EXPECTED))
def test_each_bug_is_diagnosed_in_the_library(bug):
    report = _check(bug)
    assert report.verdict == "failed"
    for parameter in report.parameters:
        expected = EXPECTED[bug].get(parameter.name)
        if expected is None:
            assert parameter.passed and parameter.diagnosis is None
        else:
            diagnosis = parameter.diagnosis
            assert (diagnosis.kind, diagnosis.factor, diagnosis.where) == expected, diagnosis.message


def test_a_correct_model_has_no_diagnosis():
    report = _check(None)
    assert report.passed and report.diagnosis is None
    assert all(parameter.diagnosis is None for parameter in report.parameters)


def test_one_factor_shared_by_every_failing_parameter_is_said_once():
    report = _check("doubled")
    assert (report.diagnosis.kind, report.diagnosis.factor) == ("scale", 2.0)
    assert report.diagnosis.message.startswith("every parameter is off by the same factor 2")
    assert _check("one_row").diagnosis is None


def test_the_missing_mean_names_its_likely_causes():
    message = _check("missing_mean").parameter("W").diagnosis.message
    assert message == (
        "analytic = 6 × numerical at every failing coordinate: a sum where a mean belongs "
        "(a batch or sequence length of 6), or a missing 1/6"
    )


@pytest.mark.parametrize("bug", sorted(EXPECTED))
def test_the_diagnosis_is_in_the_json(bug):
    document = json.loads(json.dumps(_check(bug).to_dict(), allow_nan=False))
    for parameter in document["parameters"]:
        expected = EXPECTED[bug].get(parameter["name"])
        if expected is None:
            assert parameter["diagnosis"] is None
        else:
            diagnosis = parameter["diagnosis"]
            assert list(diagnosis) == ["kind", "factor", "where", "message"]
            assert (diagnosis["kind"], diagnosis["factor"], diagnosis["where"]) == expected


@pytest.mark.parametrize("bug", sorted(EXPECTED))
def test_the_pytest_helper_puts_the_diagnosis_first(bug):
    made = problem(bug)
    with pytest.raises(AssertionError) as caught:
        assert_gradients(made.objective, made.parameters, made.gradients)
    lines = str(caught.value).splitlines()
    first_failing = next(name for name in ("W", "b") if name in EXPECTED[bug])
    kind = EXPECTED[bug][first_failing][0]
    assert lines[1].startswith(f"{first_failing}: {kind}")


def test_an_error_only_the_directional_test_sees_is_unexplained_and_says_where_to_look():
    x = RNG.normal(size=400)
    top = int(np.argmax(x))
    wrong = np.zeros(400)  # the gradient at the argmax is missing, and it is not among the samples
    report = check_gradients(lambda p: float(np.max(p["x"])), {"x": x}, {"x": wrong}, samples=4)
    diagnosis = report.parameter("x").diagnosis
    assert all(record.coordinate != (top,) for record in report.parameter("x").checks)
    assert report.verdict == "failed" and diagnosis.kind == "unexplained"
    assert "check all 400 coordinates of x (samples='all', names=['x'])" in diagnosis.message


# The command line: these functions are problems for `gradcheck check tests/test_diagnosis.py:NAME`.
def missing_mean():
    return problem("missing_mean")


def doubled():
    return problem("doubled")


def sign():
    return problem("sign")


def transpose():
    return problem("transpose")


def zero_bias():
    return problem("zero_bias")


def one_row():
    return problem("one_row")


@pytest.mark.parametrize("bug", sorted(EXPECTED))
def test_the_command_line_prints_and_writes_the_diagnosis(bug):
    from click.testing import CliRunner

    from gradcheck_cli.cli import main

    reference = f"{__file__}:{bug}"
    text = CliRunner().invoke(main, ["check", reference])
    assert text.exit_code == 1
    document = json.loads(CliRunner().invoke(main, ["check", reference, "--json"]).stdout)["check"]
    for parameter in document["parameters"]:
        expected = EXPECTED[bug].get(parameter["name"])
        diagnosis = parameter["diagnosis"]
        assert (diagnosis is None) == (expected is None)
        if expected is not None:
            assert (diagnosis["kind"], diagnosis["factor"], diagnosis["where"]) == expected
            line = next(
                line for line in text.stdout.splitlines() if line.startswith(f"{parameter['name']} diagnosis: ")
            )
            assert line.startswith(f"{parameter['name']} diagnosis: {expected[0]}")
            assert diagnosis["message"] in line


def _embedding_with_a_repeated_index():
    """f(W) = Σ u ∘ W[index] with index[0] = index[1]; the classic bug dW[index] += u keeps only
    the second of the two rows' cotangents (np.add.at sums both)."""
    random = np.random.default_rng(1919)
    index = random.integers(0, 20, size=8)
    index[1] = index[0]
    u = random.normal(size=(8, 16))
    weights = random.normal(size=(20, 16))
    right, wrong = np.zeros((20, 16)), np.zeros((20, 16))
    np.add.at(right, index, u)
    wrong[index] += u
    return (lambda parameters: float(np.sum(u * parameters["W"][index]))), weights, right, wrong, index


def test_a_row_is_localized_only_when_the_directional_test_is_explained():
    objective, weights, right, wrong, index = _embedding_with_a_repeated_index()
    assert check_gradients(objective, {"W": weights}, {"W": right}).passed
    report = check_gradients(objective, {"W": weights}, {"W": wrong})
    diagnosis = report.parameter("W").diagnosis
    failing_rows = sorted({record.coordinate[0] for record in report.parameter("W").checks.failed()})
    # Only the repeated rows are wrong, but no single factor relates them: the unchecked entries of
    # those rows cannot be predicted, so the diagnosis says where W fails at least (here the one
    # failing coordinate), not "only ... and the rest passes".
    assert set(failing_rows) <= {int(i) for i in index}
    assert diagnosis.kind == "unexplained" and diagnosis.where is not None
    assert "fails at least" in diagnosis.message and "only" not in diagnosis.message


def test_a_shared_factor_is_said_for_the_report_only_when_every_parameter_has_it():
    random = np.random.default_rng(1920)
    x = random.normal(size=(8, 3))
    parameters = {"w": random.normal(size=3), "b": np.array([0.3]), "c": np.array([0.7])}

    def objective(p):
        return float(np.sum((x @ p["w"] + p["b"][0]) ** 2) + p["c"][0] ** 2)

    residual = x @ parameters["w"] + parameters["b"][0]
    right = {"w": 2 * x.T @ residual, "b": np.array([2 * residual.sum()]), "c": np.array([1.4])}
    doubled = {name: 2 * value for name, value in right.items()}
    assert check_gradients(objective, parameters, doubled).diagnosis.factor == 2.0
    partly = dict(doubled, c=right["c"])  # c passes: the loss itself is not what is scaled
    report = check_gradients(objective, parameters, partly)
    assert report.failing_parameters == ("w", "b") and report.diagnosis is None
    assert report.parameter("w").diagnosis.factor == 2.0


def test_a_factor_is_read_from_the_coordinates_the_estimate_resolves():
    # float32 GELU (tanh form) of 8×16 inputs, its backward doubled: the smallest gradients' ratios
    # are off by a few per cent within their bars; the resolved ones fix the factor 2.
    random = np.random.default_rng([sum(map(ord, "gelu")), 1, 4])
    u = random.normal(size=(8, 16))
    x = (random.normal(size=(8, 16)) * 1.5).astype(np.float32)
    c = math.sqrt(2 / math.pi)

    def objective(p):
        v = p["x"]
        return float(np.sum(u * 0.5 * v * (1 + np.tanh(c * (v + 0.044715 * v**3))), dtype=np.float64))

    v = x.astype(np.float64)
    t = np.tanh(c * (v + 0.044715 * v**3))
    gradient = u * (0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c * (1 + 3 * 0.044715 * v**2))
    assert check_gradients(objective, {"x": x}, {"x": gradient}).passed
    diagnosis = check_gradients(objective, {"x": x}, {"x": 2 * gradient}).parameter("x").diagnosis
    assert (diagnosis.kind, diagnosis.factor) == ("scale", 2.0)


def test_a_small_additive_error_is_not_called_a_scale():
    # W's gradient off by +1e-4 everywhere: the ratios are 1.0001 to 1.002, within 1 % of each other
    # but not one factor; and a factor that rounds to 1 is no scale bug at all.
    made = problem()
    shifted = dict(made.gradients, W=made.gradients["W"] + 1e-4)
    diagnosis = check_gradients(made.objective, made.parameters, shifted).parameter("W").diagnosis
    assert diagnosis.kind != "scale" and "×1:" not in diagnosis.message and diagnosis.factor != 1.0


def test_a_uniform_factor_close_to_one_keeps_its_digits():
    made = problem()
    scaled = dict(made.gradients, W=made.gradients["W"] * 1.001)
    diagnosis = check_gradients(made.objective, made.parameters, scaled).parameter("W").diagnosis
    assert (diagnosis.kind, diagnosis.factor) == ("scale", 1.001)
    assert "1.001 × numerical" in diagnosis.message


def test_one_failing_coordinate_is_not_localized_while_others_are_inconclusive():
    # The diagnosis says "only [i, j] fails and the rest passes" only when the rest did pass.
    from gradcheck_cli.verdict.diagnosis import Scope, diagnose_parameter

    made = problem("one_row")
    report = check_gradients(made.objective, made.parameters, made.gradients)
    parameter = report.parameter("W")
    failed = parameter.checks.failed()
    assert parameter.diagnosis.kind == "localized"
    arguments = (failed, parameter.checks.passing_index_columns(), parameter.directional, made.gradients["W"])
    diagnosis = diagnose_parameter(*arguments, scope=Scope("W", len(parameter.checks), made.gradients["W"].size, 3))
    assert diagnosis.kind == "unexplained" and diagnosis.where == parameter.diagnosis.where
    assert "3 coordinates were inconclusive" in diagnosis.message and "only" not in diagnosis.message


# -------------------------------------------------- issue 32: never misleading, always a next step


def test_one_coordinate_shows_no_shared_factor():
    # Swish's one-element β without σ'(βx) (RubixML/ML#437): analytic = 34 × numerical at its one
    # coordinate was "scale ×34.09, a constant factor applied twice or not at all".
    x = np.linspace(-2.0, 2.0, 9)

    def objective(parameters):
        return float(np.sum(x / (1 + np.exp(-parameters["beta"][0] * x))))

    beta = np.array([0.7])
    wrong = {"beta": np.array([np.sum(x * x)])}  # a derivative without its sigmoid factor
    diagnosis = check_gradients(objective, {"beta": beta}, wrong).parameter("beta").diagnosis
    assert diagnosis.kind == "unexplained"
    assert diagnosis.message.startswith("only one coordinate fails (beta[0]), where analytic = ")
    assert "one coordinate cannot tell a shared factor from any other error" in diagnosis.message


def test_two_one_element_parameters_off_by_one_factor_share_it_in_the_report():
    # Each alone is one coordinate; together they are two with the same ratio: the loss is scaled.
    def objective(parameters):
        return float((parameters["w"][0] - 1.0) ** 2 + (parameters["b"][0] + 2.0) ** 2)

    parameters = {"w": np.array([0.5]), "b": np.array([0.25])}
    report = check_gradients(objective, parameters, {"w": np.array([-0.5]), "b": np.array([2.25])})
    assert [parameter.diagnosis.kind for parameter in report.parameters] == ["unexplained", "unexplained"]
    assert (report.diagnosis.kind, report.diagnosis.factor) == ("scale", 0.5)


def test_zero_comes_before_confined_when_every_failing_analytic_value_is_zero():
    # A max-pool whose backward returns inside its loop (riccardoandreoni0/CNN-from-scratch#1): only
    # the first window gets its gradient; every failing coordinate has analytic 0, and some pass.
    x = RNG.normal(size=(6, 6))

    def objective(parameters):
        return float(np.sum(parameters["x"].reshape(3, 2, 3, 2).max(axis=(1, 3)) ** 2))

    windows = x.reshape(3, 2, 3, 2)
    top = windows == windows.max(axis=(1, 3), keepdims=True)
    right = (top * 2 * windows.max(axis=(1, 3), keepdims=True)).reshape(6, 6)
    wrong = np.zeros_like(right)
    wrong[:2, :2] = right[:2, :2]  # the first window only
    report = check_gradients(objective, {"x": x}, {"x": wrong}, samples="all")
    diagnosis = report.parameter("x").diagnosis
    assert diagnosis.kind == "zero", diagnosis.message
    assert "the analytic gradient is 0 at every failing coordinate" in diagnosis.message


@pytest.mark.parametrize(
    ("rank", "axis", "indices", "text"),
    [
        (1, 0, [3], "element 3"),
        (1, 0, [3, 5], "elements 3, 5"),
        (2, 0, [2], "row 2"),
        (2, 1, [1, 4], "columns 1, 4"),
        (3, 1, [2, 3, 5], "indices 2, 3, 5 of axis 1"),
        (4, 2, [0], "index 0 of axis 2"),
        (5, 4, list(range(9)), "indices 0, 1, 2, 3, 4, 5 and 3 more of axis 4"),
    ],
)
def test_places_read_right_for_any_number_of_axes(rank, axis, indices, text):
    from gradcheck_cli.verdict.findings import axis_text

    assert axis_text(rank, axis, indices) == text  # "index 0 of axis 2, 3, 5" was the rank-3 plural


def test_several_failing_indices_of_one_axis_take_a_plural_verb():
    x = RNG.normal(size=(4, 3, 5))

    def objective(parameters):
        return float(np.sum(np.sin(parameters["x"])))

    wrong = np.cos(x)
    wrong[:, 1, :] *= 1.5  # index 1 of axis 1 only
    diagnosis = check_gradients(objective, {"x": x}, {"x": wrong}, samples="all").parameter("x").diagnosis
    assert (diagnosis.kind, diagnosis.where) == ("localized", "index 1 of axis 1")
    wrong[:, 2, :] *= 1.5  # and index 2
    diagnosis = check_gradients(objective, {"x": x}, {"x": wrong}, samples="all").parameter("x").diagnosis
    assert diagnosis.where == "indices 1, 2 of axis 1" and "only indices 1, 2 of axis 1 fail and" in diagnosis.message


def _unexplained(gradients, parameters, objective, **options):
    report = check_gradients(objective, parameters, gradients, **options)
    return {p.name: p.diagnosis for p in report.parameters if p.diagnosis is not None}


def test_an_unexplained_diagnosis_says_where_it_fails_the_ratios_and_the_next_step():
    x = RNG.normal(size=(8, 8))

    def objective(parameters):
        return float(np.sum(np.tanh(parameters["x"])))

    wrong = 1 - np.tanh(x) ** 2 + 0.3 * np.abs(x)  # an extra term of no common factor
    [diagnosis] = _unexplained({"x": wrong}, {"x": x}, objective).values()
    assert diagnosis.kind == "unexplained"
    assert "of 16 checked coordinates fail with no common factor, mirror or place" in diagnosis.message
    assert "analytic/numerical ranges from " in diagnosis.message
    assert diagnosis.message.endswith("check all 64 coordinates of x (samples='all', names=['x'])")


def test_a_missing_constant_per_row_is_named():
    # A layer norm whose backward subtracts mean(dy·γ) twice (tenstorrent/tt-metal#53204): the error
    # is one constant along each row.
    x = RNG.normal(size=(6, 5))

    def objective(parameters):
        return float(np.sum(np.sin(parameters["x"])))

    offsets = RNG.normal(size=(6, 1))
    diagnosis = _unexplained({"x": np.cos(x) - offsets}, {"x": x}, objective, samples="all")["x"]
    assert "analytic − numerical is one constant within each row and differs between them" in diagnosis.message


def test_a_missing_term_proportional_to_theta_is_named():
    x = RNG.normal(size=(4, 4))

    def objective(parameters):
        return float(np.sum(np.sin(parameters["x"])) + 0.05 * np.sum(parameters["x"] ** 2))

    diagnosis = _unexplained({"x": np.cos(x)}, {"x": x}, objective)["x"]  # the L2 term's gradient left out
    assert "analytic − numerical = -0.1·θ at every failing coordinate" in diagnosis.message


def test_a_kernel_reversed_along_an_axis_is_named():
    # conv1d's weight gradient correlated in the wrong order: analytic[f, k] = numerical[f, K−1−k].
    w = RNG.normal(size=(3, 5))
    weights = RNG.normal(size=(3, 5))

    def objective(parameters):
        return float(np.sum(weights * np.sin(parameters["w"])))

    right = weights * np.cos(w)
    diagnosis = _unexplained({"w": right[:, ::-1].copy()}, {"w": w}, objective, samples="all")["w"]
    assert "the numerical value at each failing coordinate is the analytic value at the mirrored column" in (
        diagnosis.message
    )


def test_a_gradient_copied_from_another_parameter_is_named():
    # LSTM biases whose gradients are the forget gate's, copy-pasted (hanbt/learn_dl#53).
    a, b = RNG.normal(size=4), RNG.normal(size=4)

    def objective(parameters):
        return float(np.sum(np.sin(parameters["a"])) + np.sum(parameters["b"] ** 3))

    diagnoses = _unexplained({"a": np.cos(a), "b": np.cos(a)}, {"a": a, "b": b}, objective)
    assert list(diagnoses) == ["b"]
    assert "the analytic values equal those of a at every failing coordinate" in diagnoses["b"].message


def test_a_flat_objective_beside_nonzero_analytic_values_says_so_and_where():
    # A triangular solve whose JVP uses dA where triu(dA) belongs (jax-ml/jax#1458): f never reads
    # the strictly lower triangle, whose analytic values are nonzero.
    a = np.triu(RNG.normal(size=(4, 4))) + 4 * np.eye(4)

    def objective(parameters):
        return float(np.sum(np.sin(np.triu(parameters["a"]))))

    wrong = np.cos(a) * np.triu(np.ones((4, 4))) + 0.3 * np.tril(np.ones((4, 4)), -1)
    report = check_gradients(objective, {"a": a}, {"a": wrong}, samples="all")
    parameter = report.parameter("a")
    assert parameter.verdict == "failed" and parameter.checks.verdict_count("failed") == 6
    assert parameter.diagnosis.message.startswith("f does not change along a[1, 0], a[2, 0], a[2, 1], a[3, 0]")
    assert "rows 1, 2, 3 hold the failures, row 0 only passes" in parameter.diagnosis.message
