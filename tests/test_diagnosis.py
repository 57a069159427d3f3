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
    assert "--samples all" in diagnosis.message


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
    from gradcheck_cli.verdict.diagnosis import diagnose_parameter

    made = problem("one_row")
    report = check_gradients(made.objective, made.parameters, made.gradients)
    parameter = report.parameter("W")
    failed = parameter.checks.failed()
    assert parameter.diagnosis.kind == "localized"
    arguments = (failed, parameter.checks.passing_index_columns(), parameter.directional, made.gradients["W"])
    diagnosis = diagnose_parameter(*arguments, inconclusive=3)
    assert diagnosis.kind == "unexplained" and diagnosis.where == parameter.diagnosis.where
    assert "3 coordinates were inconclusive" in diagnosis.message and "only" not in diagnosis.message
