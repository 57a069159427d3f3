"""check/fast.py: the fast check (``fast=True``, ``--fast``), docs/method.md "The fast check".

A fast check passes a parameter on a directional test alone, in a constant number of calls: f(θ)
twice and the two probes of one joint direction that moves every parameter at once, where that
holds each of them to JOINT_TOLERANCE of its own share (float64 at its default tolerance), else two
probes per parameter, more only where the first multiplier cannot decide;
a parameter whose test does not pass is checked as the default check checks it, which localizes
and diagnoses the failure. The layers are dense least-squares layers whose exact gradient is
(XᵀW − T)ᵀX / batch; the bug doubles one whole row of it, the error torch's fast_mode misses at
1e5 and 1e6 parameters (docs/performance.md).
"""

from pathlib import Path

import numpy as np
import pytest

from gradcheck_cli import check_gradients, check_problem
from gradcheck_cli.errors import InvalidArgument
from gradcheck_cli.verdict.words import FAILED, INCONCLUSIVE, PASSED

BATCH = 16


def dense_layer(inputs: int, outputs: int, dtype=np.float64, doubled_row=None, seed=0):
    """(objective, parameters, gradients) of ½‖XWᵀ − T‖²/batch in ``dtype``, row ``doubled_row`` of
    the gradient doubled when given."""
    rng = np.random.default_rng(seed)
    weight = (rng.normal(size=(outputs, inputs)) / np.sqrt(inputs)).astype(dtype)
    bias = (0.1 * rng.normal(size=outputs)).astype(dtype)
    x = rng.normal(size=(BATCH, inputs)).astype(dtype)
    targets = rng.normal(size=(BATCH, outputs)).astype(dtype)

    def objective(parameters):
        residual = x @ parameters["W"].T + parameters["b"] - targets
        return float(np.sum(residual * residual, dtype=dtype) / dtype(2 * BATCH))

    residual = x @ weight.T + bias - targets
    gradients = {"W": (residual.T @ x / BATCH).astype(dtype), "b": (residual.sum(axis=0) / BATCH).astype(dtype)}
    if doubled_row is not None:
        gradients["W"][doubled_row] *= 2
    return objective, {"W": weight, "b": bias}, gradients


@pytest.mark.parametrize("inputs, outputs", [(100, 10), (1000, 100)])
def test_a_correct_layer_passes_in_four_calls_whatever_its_size(inputs, outputs):
    objective, parameters, gradients = dense_layer(inputs, outputs)
    report = check_gradients(objective, parameters, gradients, fast=True)
    assert report.verdict == PASSED
    assert report.evaluations == 4  # f(θ) twice, θ₊ and θ₋ of the joint direction
    assert [parameter.selection for parameter in report.parameters] == ["fast", "fast"]
    assert report.checked == 0 and report.purity.evaluations == 2
    weight, bias = report.parameters
    assert weight.directional.joint == bias.directional.joint == ("W", "b")
    assert weight.directional.elements == inputs * outputs + outputs
    assert report.to_dict()["parameters"][1]["directional"]["joint"] == ["W", "b"]


@pytest.mark.parametrize("inputs, outputs", [(1000, 100), (1000, 1000)])
def test_a_doubled_row_fails_at_1e5_and_1e6_parameters_and_is_localized(inputs, outputs):
    objective, parameters, gradients = dense_layer(inputs, outputs, doubled_row=3)
    report = check_gradients(objective, parameters, gradients, fast=True)
    weight, bias = report.parameters
    assert report.verdict == FAILED and report.failing_parameters == ("W",)
    assert weight.directional.verdict == FAILED and weight.directional.joint == ()
    assert bias.selection == "fast" and bias.verdict == PASSED and bias.directional.joint == ()
    # W is checked as the default check checks it: its coordinates, the failing ones in row 3 only
    assert weight.selection == "structured" and len(weight.checks) == 16
    failing_rows = {check.coordinate[0] for check in weight.checks.failed()}
    assert failing_rows == {3}
    default = check_gradients(objective, parameters, gradients)
    assert weight.checks == default.parameters[0].checks


def test_a_correct_float32_layer_passes():
    objective, parameters, gradients = dense_layer(1000, 100, np.float32)
    report = check_gradients(objective, parameters, gradients, fast=True)
    assert report.verdict == PASSED
    assert all(parameter.selection == "fast" for parameter in report.parameters)
    # float32's tolerance, ε^(1/3), exceeds JOINT_TOLERANCE/10: each parameter's own two directions
    assert all(parameter.directional.joint == () for parameter in report.parameters)
    # multiplier 1, then 0.1, 10 and 100 where it cannot decide, along each of two directions
    assert 2 + 4 * len(parameters) <= report.evaluations <= 2 + 16 * len(parameters)


@pytest.mark.parametrize("seed", [5, 7])
def test_a_float32_doubled_row_one_direction_hides_fails_along_the_second(seed):
    # the seeds where the first direction alone passed the row (2 of 10 at 1e5 and 1e6 parameters)
    objective, parameters, gradients = dense_layer(1000, 100 if seed == 5 else 1000, np.float32, 3, seed)
    report = check_gradients(objective, parameters, gradients, fast=True)
    assert "W" in report.failing_parameters


def test_the_example_mlp_and_its_missing_batch_mean():
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "examples" / "mlp.py"
    spec = importlib.util.spec_from_file_location("fast_mlp_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    correct = check_problem(module.problem(), fast=True)
    assert correct.verdict == PASSED and correct.evaluations == 4
    wrong = check_problem(module.wrong_problem(), fast=True)
    assert wrong.failing_parameters == ("W2",)
    w2 = wrong.parameters[2]
    assert (w2.diagnosis.kind, w2.diagnosis.factor) == ("scale", 8.0)  # the example's missing 1/batch, batch 8


def test_the_purity_test_is_kept():
    objective, parameters, gradients = dense_layer(100, 10)
    calls = []

    def stateful(values):
        calls.append(None)
        return objective(values) + 1e-3 * len(calls)

    report = check_gradients(stateful, parameters, gradients, fast=True)
    assert report.purity.stateful
    assert report.verdict != PASSED
    assert all(parameter.verdict in (FAILED, INCONCLUSIVE) for parameter in report.parameters)


def test_the_arrays_are_restored_bit_for_bit():
    objective, parameters, gradients = dense_layer(100, 10, doubled_row=0)
    before = {name: array.copy() for name, array in parameters.items()}
    check_gradients(objective, parameters, gradients, fast=True)
    for name, array in parameters.items():
        assert array.tobytes() == before[name].tobytes()


def test_fast_is_true_or_false_and_not_with_listed_coordinates():
    objective, parameters, gradients = dense_layer(10, 2)
    with pytest.raises(InvalidArgument, match="fast must be True or False, got 1"):
        check_gradients(objective, parameters, gradients, fast=1)
    with pytest.raises(InvalidArgument, match="fast must be False when coordinates are listed"):
        check_gradients(objective, parameters, gradients, fast=True, coordinates={"b": [0]})


def test_with_workers_the_localization_is_the_serial_one():
    from gradcheck_cli import load_problem

    reference = str(Path(__file__).resolve().parent.parent / "examples" / "mlp.py") + ":wrong_problem"
    serial = check_problem(load_problem(reference), fast=True)
    parallel = check_problem(load_problem(reference), fast=True, jobs=2)
    assert parallel.failing_parameters == ("W2",) and parallel.to_dict() == serial.to_dict()


def two_scales(small_factor=1.0, small_scale=1e-5):
    """(objective, parameters, gradients) of ½Σbig² + small_scale·½Σsmall²: "small"'s share of the
    directional derivative is about small_scale of "big"'s; its gradient times ``small_factor``."""
    rng = np.random.default_rng(1)
    parameters = {"big": rng.normal(size=(30, 20)), "small": rng.normal(size=7)}

    def objective(values):
        return float(0.5 * np.sum(values["big"] ** 2) + small_scale * 0.5 * np.sum(values["small"] ** 2))

    gradients = {"big": parameters["big"].copy(), "small": small_factor * small_scale * parameters["small"]}
    return objective, parameters, gradients


def test_a_parameter_whose_share_the_joint_test_cannot_hold_gets_its_own_direction():
    report = check_gradients(*two_scales(), fast=True)
    big, small = report.parameters
    assert report.verdict == PASSED and report.evaluations >= 4 + 2  # its own, confirmed where it cannot decide
    assert big.directional.joint == ("big", "small") and small.directional.joint == ()


@pytest.mark.parametrize("small_scale", [1e-5, 1e-8])
def test_a_wrong_small_parameter_is_not_hidden_by_a_large_one(small_scale):
    # at 1e-5 the joint test resolves the doubled "small" and fails; at 1e-8 its change of the
    # joint derivative is within the joint tolerance, and "small" is not covered: its own test fails
    report = check_gradients(*two_scales(small_factor=2.0, small_scale=small_scale), fast=True)
    big, small = report.parameters
    assert report.failing_parameters == ("small",) and big.verdict == PASSED
    assert big.directional.joint == ((), ("big", "small"))[small_scale < 1e-6]
    assert small.directional.verdict == FAILED and small.directional.joint == ()


def test_mixed_dtypes_or_a_coarse_tolerance_get_no_joint_direction():
    objective, parameters, gradients = dense_layer(100, 10)
    report = check_gradients(objective, parameters, gradients, fast=True, tolerance=1e-3)
    assert report.verdict == PASSED and report.evaluations == 2 + 4 * 2  # two directions each: a coarse tolerance
    assert all(parameter.directional.joint == () for parameter in report.parameters)
    parameters["b"], gradients["b"] = parameters["b"].astype(np.float32), gradients["b"].astype(np.float32)
    mixed = check_gradients(objective, parameters, gradients, fast=True)
    assert all(parameter.directional.joint == () for parameter in mixed.parameters)


def test_an_objective_that_raises_at_the_joint_probes_is_checked_along_each_direction():
    objective, parameters, gradients = dense_layer(100, 10)
    before = {name: array.copy() for name, array in parameters.items()}

    def refusing(values):  # fails where every parameter is moved at once, as a domain edge might
        if all(not np.array_equal(values[name], before[name]) for name in before):
            raise ValueError("outside the domain")
        return objective(values)

    report = check_gradients(refusing, parameters, gradients, fast=True)
    assert report.verdict == PASSED and report.evaluations == 3 + 2 * 2  # f(θ) twice, θ₊ that raised, 2 × 2
    assert all(parameter.directional.joint == () for parameter in report.parameters)
    assert all(array.tobytes() == before[name].tobytes() for name, array in parameters.items())


@pytest.mark.parametrize("victim", ["W", "b"])
def test_an_objective_that_writes_into_a_parameter_at_the_joint_probes_is_a_typed_error(victim):
    from gradcheck_cli.errors import ParameterChanged

    objective, parameters, gradients = dense_layer(100, 10)
    before = {name: array.copy() for name, array in parameters.items()}

    def writing(values):
        if all(not np.array_equal(values[name], before[name]) for name in before):
            values[victim][0] += 1.0
        return objective(values)

    with pytest.raises(ParameterChanged) as raised:
        check_gradients(writing, parameters, gradients, fast=True)
    assert raised.value.parameter == victim
    assert all(array.tobytes() == before[name].tobytes() for name, array in parameters.items())


def test_a_parameter_whose_gradient_cancels_along_its_direction_gets_its_own_direction():
    """Σ a·s of "p" is 10⁻⁴ of ‖a∘s‖₂: a 1 % error of its whole gradient changes the joint estimate
    by 10⁻⁶ of "p"'s ‖a∘s‖₂, within the joint tolerance; "p" is not covered, and its own test fails it."""
    from gradcheck_cli.check.directional_probes import Direction
    from gradcheck_cli.engine.dtypes import probe_dtype

    rng = np.random.default_rng(2)
    theta = {"p": rng.uniform(-1, 1, size=400), "q": rng.uniform(-1, 1, size=400)}
    shifts = Direction(None, probe_dtype("float64").step_factor, 400).shifts(theta["p"])
    signs = np.sign(shifts)
    a = rng.normal(size=400)
    a -= (a @ signs - 1e-4 * np.linalg.norm(a)) / 400 * signs  # Σ a·s = 10⁻⁴ ‖a‖₂ for ±1 signs s
    w = rng.normal(size=400)

    def objective(values):
        return float(a @ values["p"] + np.sum(np.log(np.cosh(w * values["q"]))))

    right = {"p": a.copy(), "q": w * np.tanh(w * theta["q"])}
    report = check_gradients(objective, theta, right, fast=True)
    assert report.passed and report.parameter("p").directional.joint == ()
    assert report.parameter("q").directional.joint == ("p", "q")
    wrong = check_gradients(objective, theta, {**right, "p": 1.01 * a}, fast=True)
    assert wrong.failing_parameters == ("p",)
