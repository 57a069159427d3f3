"""Each classic bug is diagnosed with its kind (and factor or place); correct parameters carry none.

The model is a small linear-tanh layer with a mean squared error, so every bug is one line of its
hand-written backward pass; the factors are exact (a batch of 6, a ×2, a sign).
"""

import json

import numpy as np
import pytest

from gradcheck_cli import GradientProblem, check_gradients
from gradcheck_cli.testing import assert_gradients_match

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
    assert report.diagnosis.message.startswith("every failing parameter is off by the same factor 2")
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
        assert_gradients_match(made.objective, made.parameters, made.gradients)
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
