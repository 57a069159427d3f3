"""A two-layer MLP with softmax cross-entropy and a hand-written backward pass (float64).

    logits = tanh(x @ W1 + b1) @ W2 + b2
    loss   = mean over the batch of −log softmax(logits)[target]

``problem`` returns the correct gradients; ``wrong_problem`` the same model
with a classic bug: the 1/batch of the mean is missing from W2's gradient.

    python examples/mlp.py                          # checks both, prints a summary
    gradcheck check examples/mlp.py:problem         # exit 0
    gradcheck check examples/mlp.py:wrong_problem   # exit 1, W2 fails
"""

import sys
import textwrap

import numpy as np

from gradcheck_cli import GradientProblem, check_problem
from gradcheck_cli.testing import failure_table

BATCH, FEATURES, HIDDEN, CLASSES = 8, 5, 6, 4


def make_model(dtype=np.float64, seed=0):
    """Inputs, integer targets and parameters of the given dtype (a fixed seed: deterministic)."""
    rng = np.random.default_rng(seed)
    inputs = rng.normal(size=(BATCH, FEATURES)).astype(dtype)
    targets = rng.integers(0, CLASSES, size=BATCH)
    parameters = {
        "W1": (rng.normal(size=(FEATURES, HIDDEN)) / np.sqrt(FEATURES)).astype(dtype),
        "b1": (0.1 * rng.normal(size=HIDDEN)).astype(dtype),
        "W2": (rng.normal(size=(HIDDEN, CLASSES)) / np.sqrt(HIDDEN)).astype(dtype),
        "b2": (0.1 * rng.normal(size=CLASSES)).astype(dtype),
    }
    return inputs, targets, parameters


def forward(parameters, inputs, targets):
    """The loss and the intermediates backward needs, in the parameters' dtype."""
    hidden = np.tanh(inputs @ parameters["W1"] + parameters["b1"])
    logits = hidden @ parameters["W2"] + parameters["b2"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_normalizer = np.log(np.exp(shifted).sum(axis=1))
    rows = np.arange(len(targets))
    loss = (log_normalizer - shifted[rows, targets]).mean()
    probabilities = np.exp(shifted - log_normalizer[:, None])
    return loss, hidden, probabilities


def backward(parameters, inputs, targets, missing_batch_mean=False):
    """The hand-derived gradient of the mean cross-entropy for every parameter."""
    _, hidden, probabilities = forward(parameters, inputs, targets)
    batch = len(targets)
    one_hot = np.zeros_like(probabilities)
    one_hot[np.arange(batch), targets] = 1
    per_example = probabilities - one_hot  # d(loss of one example)/d(logits)
    d_logits = per_example / batch  # the mean over the batch
    # The bug: W2's gradient forgets the mean's 1/batch.
    d_w2 = hidden.T @ (per_example if missing_batch_mean else d_logits)
    d_b2 = d_logits.sum(axis=0)
    d_pre = (d_logits @ parameters["W2"].T) * (1 - hidden**2)
    return {"W1": inputs.T @ d_pre, "b1": d_pre.sum(axis=0), "W2": d_w2, "b2": d_b2}


def build(dtype=np.float64, missing_batch_mean=False) -> GradientProblem:
    """The MLP's gradient problem in ``dtype``, correct or with the missing 1/batch."""
    inputs, targets, parameters = make_model(dtype)

    def objective(current):
        return float(forward(current, inputs, targets)[0])

    return GradientProblem(objective, parameters, backward(parameters, inputs, targets, missing_batch_mean))


def problem() -> GradientProblem:
    """The correct float64 MLP: every sampled coordinate passes."""
    return build()


def wrong_problem() -> GradientProblem:
    """W2's gradient misses the mean's 1/batch: W2 fails, the others pass."""
    return build(missing_batch_mean=True)


def main(problems=(("problem", problem), ("wrong_problem", wrong_problem))) -> int:
    """Check each problem and print what happened; 0 when the correct one passes and the wrong one fails."""
    outcomes = []
    for name, make in problems:
        report = check_problem(make())
        verdict = "passed" if report.passed else "failed: " + ", ".join(report.failing_parameters)
        print(f"{name}: {report.checked} coordinates, {verdict}")
        if not report.passed:
            print(textwrap.indent(failure_table(report, max_rows=4), "    "))
        outcomes.append(report.passed)
    return 0 if outcomes == [True, False] else 1


if __name__ == "__main__":
    sys.exit(main())
