"""One scalar check repeated over requested steps, each labelled with its error regime.

The regime rule (documented in ``gradcheck scan --help`` and the README)
needs only the records themselves, so it works at any point and step list:

1. Order the records by requested step, largest first, and find the one with
   the smallest scaled error (the larger step wins a tie).
2. Steps larger than that best step are ``truncation`` when they fail the
   tolerance (the O(h²) term still dominates) and ``converging`` when they
   pass.
3. The best step is ``trusted range`` when it passes.
4. Steps smaller than the best step are ``rounding`` when they fail
   (rounded probes and cancelling values dominate) and ``trusted range``
   when they still pass.
5. When even the best step fails there is no trusted range: the best step is
   ``crossover``, where truncation and rounding error meet.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

from .estimator import ScalarGradientCheck, scalar_gradient_check, validate_tolerance
from .records import Record

__all__ = ["StepScanRecord", "error_regimes", "step_scan"]


@dataclass(frozen=True)
class StepScanRecord(Record):
    """One requested step's check and the error regime it falls in."""

    phase: str
    check: ScalarGradientCheck


def error_regimes(steps: Sequence[float], scaled_errors: Sequence[float], passed: Sequence[bool]) -> list:
    """Label each (step, scaled error, verdict) with its regime, in the given order."""
    if not steps:
        return []
    order = sorted(range(len(steps)), key=lambda i: (-steps[i], i))
    best = min(order, key=lambda i: (scaled_errors[i], -steps[i]))
    best_rank = order.index(best)
    labels = [""] * len(steps)
    for rank, i in enumerate(order):
        if rank < best_rank:
            labels[i] = "converging" if passed[i] else "truncation"
        elif rank > best_rank:
            labels[i] = "trusted range" if passed[i] else "rounding"
        else:
            labels[i] = "trusted range" if passed[i] else "crossover"
    return labels


def step_scan(
    evaluate: Callable[[float], float],
    point: float,
    analytic: float,
    steps: Sequence[float],
    tolerance: float,
) -> list:
    """Run :func:`scalar_gradient_check` at every requested step and label the regimes.

    Every step is checked in the given order; the first rejected request
    raises its typed error (nothing partial is returned).
    """
    validate_tolerance(tolerance)
    checks = [scalar_gradient_check(point, analytic, step, tolerance, evaluate) for step in steps]
    phases = error_regimes(
        [check.difference.requested_step for check in checks],
        [check.comparison.scaled_error for check in checks],
        [check.comparison.passed for check in checks],
    )
    return [StepScanRecord(phase, check) for phase, check in zip(phases, checks)]
