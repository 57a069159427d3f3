"""The fast check's joint direction against each parameter's own direction, on random problems.

Each trial draws a problem of 2–7 parameters of 1 to 5,000 elements, f = Σ_j c_j Σ log cosh(w·θ_j)
with the parameters' scales c_j spread over 10⁻⁶ to 1 (so some parameters' shares of the joint
directional derivative are too small to be covered), and checks it with ``fast=True`` twice: as
gradcheck does (the joint direction where it can hold the parameters, docs/method.md "The fast
check") and with the joint direction turned off (every parameter along its own direction, the fast
check before the joint direction). It does so for the right gradient and for one mistake in one
parameter of each kind: ×2, ×2 on half its entries, the sign of a tenth flipped, ×2 at its largest
entry, zero, ×1.01, ×1.01 on half its entries, and 1 % and 10 % independent noise on each entry.

Printed per kind: how often the wrong parameter failed, how often the check passed, and how often a
right parameter did not pass (failed or inconclusive: a parameter whose share of f is 10⁻⁶ of the
largest is often inconclusive, in both modes); and the mean calls of f for the right gradients.
Nothing is asserted.

Usage: python benchmarks/fast_joint.py [--trials 300] [--seed 1]
"""

from __future__ import annotations

import argparse
import collections
import contextlib

import numpy as np

import gradcheck_cli.check.fast as fast
from _common import header
from gradcheck_cli import check_gradients
from gradcheck_cli.verdict.words import FAILED

KINDS = {
    "×2": lambda g, rng: g * 2,
    "×2 on half": lambda g, rng: np.concatenate([g[: max(1, g.size // 2)] * 2, g[max(1, g.size // 2) :]]),
    "a tenth's sign": lambda g, rng: np.concatenate([-g[: max(1, g.size // 10)], g[max(1, g.size // 10) :]]),
    "×2 at its largest": lambda g, rng: np.where(np.arange(g.size) == np.argmax(np.abs(g)), 2 * g, g),
    "zero": lambda g, rng: np.zeros_like(g),
    "×1.01": lambda g, rng: g * 1.01,
    "×1.01 on half": lambda g, rng: np.concatenate([g[: max(1, g.size // 2)] * 1.01, g[max(1, g.size // 2) :]]),
    "1 % noise": lambda g, rng: g + 0.01 * np.abs(g) * rng.normal(size=g.size),
    "10 % noise": lambda g, rng: g + 0.1 * np.abs(g) * rng.normal(size=g.size),
}
MODES = {"joint": True, "own only": False}


def problem(rng) -> tuple:
    """(objective, parameters, gradients) of one random trial."""
    count = int(rng.integers(2, 8))
    names = [f"p{j}" for j in range(count)]
    sizes = {name: int(rng.choice([1, 3, 10, 100, 1000, 5000])) for name in names}
    scales = {name: 10.0 ** rng.uniform(-6, 0) for name in names}
    thetas = {name: rng.normal(size=sizes[name]) for name in names}
    weights = {name: rng.normal(size=sizes[name]) for name in names}

    def objective(values):
        return float(sum(scales[name] * np.sum(np.log(np.cosh(values[name] * weights[name]))) for name in names))

    gradients = {name: scales[name] * weights[name] * np.tanh(thetas[name] * weights[name]) for name in names}
    return objective, thetas, gradients


@contextlib.contextmanager
def joint_direction(on: bool):
    """The fast check as gradcheck makes it, or with no joint direction (each parameter's own)."""
    joinable = fast._joinable
    if not on:
        fast._joinable = lambda plan: False
    try:
        yield
    finally:
        fast._joinable = joinable


def run(trials: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    counts, calls = collections.Counter(), collections.Counter()
    for _ in range(trials):
        objective, thetas, gradients = problem(rng)
        for mode, on in MODES.items():
            with joint_direction(on):
                report = check_gradients(objective, thetas, gradients, fast=True)
            counts["right", mode, "passed"] += report.passed
            counts["right", mode, "blamed"] += bool(report.failing_parameters)  # not passed: failed or inconclusive
            calls[mode] += report.evaluations
        for kind, mistake in KINDS.items():
            name = str(rng.choice(sorted(gradients)))
            wrong = {**gradients, name: mistake(gradients[name], rng)}
            for mode, on in MODES.items():
                with joint_direction(on):
                    report = check_gradients(objective, thetas, wrong, fast=True)
                counts[kind, mode, "caught"] += report.parameter(name).verdict == FAILED
                counts[kind, mode, "passed"] += report.passed
                counts[kind, mode, "blamed"] += any(other != name for other in report.failing_parameters)
    print(
        f"{trials} random problems (seed {seed}); the wrong parameter failed / the check passed / a right parameter not passing (failed or inconclusive)"
    )
    print("| gradient | " + " | ".join(MODES) + " |")
    print("|---|" + "---|" * len(MODES))
    right = [
        f"passed {counts['right', mode, 'passed']}, a parameter not passing {counts['right', mode, 'blamed']}"
        for mode in MODES
    ]
    print("| right | " + " | ".join(right) + " |")
    for kind in KINDS:
        cells = [
            f"{counts[kind, mode, 'caught']} / {counts[kind, mode, 'passed']} / {counts[kind, mode, 'blamed']}"
            for mode in MODES
        ]
        print(f"| {kind} | " + " | ".join(cells) + " |")
    print("mean calls of f, right gradients: " + ", ".join(f"{mode} {calls[mode] / trials:.1f}" for mode in MODES))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    arguments = parser.parse_args()
    header("fast check: the joint direction against each parameter's own")
    run(arguments.trials, arguments.seed)


if __name__ == "__main__":
    main()
