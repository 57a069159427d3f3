"""check/fast.py: the fast check (``fast=True``, ``--fast``), docs/method.md "The fast check".

A fast check passes a parameter on its directional test alone, in a constant number of calls
(f(θ) twice, two probes per parameter, more only where the first multiplier cannot decide);
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
def test_a_correct_layer_passes_in_two_calls_per_parameter_whatever_its_size(inputs, outputs):
    objective, parameters, gradients = dense_layer(inputs, outputs)
    report = check_gradients(objective, parameters, gradients, fast=True)
    assert report.verdict == PASSED
    assert report.evaluations == 2 + 2 * len(parameters)  # f(θ) twice, θ₊ and θ₋ of each direction
    assert [parameter.selection for parameter in report.parameters] == ["fast", "fast"]
    assert report.checked == 0 and report.purity.evaluations == 2


@pytest.mark.parametrize("inputs, outputs", [(1000, 100), (1000, 1000)])
def test_a_doubled_row_fails_at_1e5_and_1e6_parameters_and_is_localized(inputs, outputs):
    objective, parameters, gradients = dense_layer(inputs, outputs, doubled_row=3)
    report = check_gradients(objective, parameters, gradients, fast=True)
    weight, bias = report.parameters
    assert report.verdict == FAILED and report.failing_parameters == ("W",)
    assert weight.directional.verdict == FAILED
    assert bias.selection == "fast" and bias.verdict == PASSED
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
    assert report.evaluations <= 2 + 8 * len(parameters)  # multiplier 1, then 0.1, 10 and 100 where it cannot decide


def test_the_example_mlp_and_its_missing_batch_mean():
    import importlib.util

    path = Path(__file__).resolve().parent.parent / "examples" / "mlp.py"
    spec = importlib.util.spec_from_file_location("fast_mlp_example", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    correct = check_problem(module.problem(), fast=True)
    assert correct.verdict == PASSED and correct.evaluations == 2 + 2 * 4
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
