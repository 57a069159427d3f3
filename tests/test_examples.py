"""Every example, both ways: the correct problem passes, the wrong one fails on the right parameters."""

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from extras import needs
from gradcheck_cli import check_problem, load_problem
from gradcheck_cli.engine.dtypes import PROBE_DTYPES
from gradcheck_cli.testing import assert_gradients

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
HAS_TORCH = importlib.util.find_spec("torch") is not None
needs_torch = needs("torch")

CASES = [
    # (example file, dtype of its parameters, the parameters its wrong variant must fail)
    # The README's line: the forgotten 2 halves both gradients.
    pytest.param("line.py", "float64", ("w", "b"), id="line"),
    pytest.param("mlp.py", "float64", ("W2",), id="mlp"),
    pytest.param("mlp_float32.py", "float32", ("W2",), id="mlp_float32"),
    # dK's bug reaches γ, β and X through dY; Wq, Wv and Wo do not see it.
    pytest.param("attention.py", "float64", ("X", "gamma", "beta", "Wk"), id="attention"),
    pytest.param("torch_mlp.py", "float32", ("out.bias",), id="torch_mlp", marks=needs_torch),
]


def load(file, function):
    return load_problem(f"{EXAMPLES / file}:{function}")


@pytest.mark.parametrize("file, dtype, failing", CASES)
def test_the_correct_example_passes(file, dtype, failing):
    problem = load(file, "problem")
    report = assert_gradients(problem.objective, problem.parameters, problem.gradients, samples="all")
    assert {check.dtype for check in report.parameters} == {dtype}
    assert not any(record.kink.suspected for _, record in report.failures())


@pytest.mark.parametrize("file, dtype, failing", CASES)
def test_the_wrong_example_fails_on_the_right_parameters(file, dtype, failing):
    report = check_problem(load(file, "wrong_problem"), samples="all")
    assert not report.passed
    assert report.failing_parameters == failing
    assert report.purity.pure and report.verdict == "failed"
    # Real mismatches, not kinks: every failing record is a plain "failed".
    assert {record.verdict for _, record in report.failures()} == {"failed"}
    for check in report.parameters:
        if check.name not in failing:
            assert check.passed


def test_the_missing_batch_mean_is_a_factor_of_the_batch():
    # W2's wrong gradient is batch (8) times the right one, so analytic/numerical is 8 on every
    # coordinate whose gradient is not tiny.
    report = check_problem(load("mlp.py", "wrong_problem"), names=["W2"], samples="all")
    ratios = [record.comparison.analytic / record.comparison.numerical for record in report.parameters[0].checks]
    assert np.allclose(ratios, 8.0, rtol=1e-6)


def test_float32_needs_float32_defaults():
    # The float32 MLP's correct gradients, checked with float64's default step (rounding swamps the
    # difference quotient) or float64's default tolerance (holds float32 to float64 precision): both
    # fail, while float32's defaults pass them (test_the_correct_example_passes).
    float64 = PROBE_DTYPES["float64"]
    with_step = check_problem(load("mlp_float32.py", "problem"), step=float64.step_factor)
    with_tolerance = check_problem(load("mlp_float32.py", "problem"), tolerance=float64.tolerance)
    assert not with_step.passed and not with_tolerance.passed
    worst = max(record.comparison.scaled_error for _, record in with_step.failures())
    assert worst > PROBE_DTYPES["float32"].tolerance


@needs_torch
def test_torch_parameters_are_views_and_come_back_bit_identical():
    import torch

    sys.path.insert(0, str(EXAMPLES))
    try:
        from torch_mlp import build
    finally:
        sys.path.remove(str(EXAMPLES))
    from gradcheck_cli.torch import module_problem

    model, loss_fn = build()
    problem = module_problem(model, loss_fn)
    tensors = dict(model.named_parameters())
    assert list(problem.parameters) == list(tensors) == ["hidden.weight", "hidden.bias", "out.weight", "out.bias"]
    for name, array in problem.parameters.items():
        assert np.shares_memory(array, tensors[name].detach().numpy())
    before = {name: tensor.detach().clone() for name, tensor in tensors.items()}
    assert check_problem(problem, samples="all").passed
    for name, tensor in tensors.items():
        assert torch.equal(tensor.detach().view(torch.int32), before[name].view(torch.int32))
        assert tensor.grad is None


SCRIPTS = [
    pytest.param("mlp.py", id="mlp"),
    pytest.param("mlp_float32.py", id="mlp_float32"),
    pytest.param("attention.py", id="attention"),
    pytest.param("torch_mlp.py", id="torch_mlp", marks=needs_torch),
]


@pytest.mark.parametrize("file", SCRIPTS)
def test_every_example_runs_as_a_script(file):
    # Each script checks its correct and its wrong problem and exits 0 when the first passes and the
    # second fails.
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / file)], capture_output=True, text=True, cwd=EXAMPLES.parent, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert any(line.startswith("problem: ") and line.endswith("passed") for line in lines)
    assert any(line.startswith("wrong_problem: ") and "failed: " in line for line in lines)
