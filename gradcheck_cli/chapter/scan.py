"""One scalar check repeated over requested steps, each labelled with its error regime.

The regime rule (documented in ``gradcheck scan --help`` and docs/cli.md)
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
6. A step the checker refuses at this point (a probe that rounds back to θ
   or overflows, a non-finite value) is ``rejected``, with its error; the
   rule above labels the other steps.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.record import Record
from ..engine.estimator import (
    ScalarGradientCheck,
    real_number,
    scalar_gradient_check,
    validate_step,
    validate_tolerance,
)
from ..errors import GradCheckError, NonFiniteAnalyticGradient, NonFinitePoint

__all__ = ["REJECTED", "StepScanRecord", "error_regimes", "step_scan"]


#: The regime of a step the checker refused at the scan's point.
REJECTED = "rejected"


@dataclass(frozen=True)
class StepScanRecord(Record):
    """One requested step: its check and the error regime it falls in, or ``rejected`` and its error.

    Exactly one of ``check`` and ``error`` is None.
    """

    regime: str
    requested_step: float
    check: ScalarGradientCheck | None
    error: GradCheckError | None


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

    The request (point, analytic value, every step, tolerance) is validated
    first and raises its typed error. Then every step is checked in the given
    order; a step refused at this point (a collapsed or overflowing probe, a
    non-finite value) is a ``rejected`` record holding its error, and the
    scan goes on.
    """
    tolerance = validate_tolerance(tolerance)
    steps = [validate_step(step, "steps") for step in steps]
    point = real_number(point, "point", "a finite number")
    if not math.isfinite(point):
        raise NonFinitePoint(point=point)
    analytic = real_number(analytic, "analytic", "a finite number")
    if not math.isfinite(analytic):
        raise NonFiniteAnalyticGradient(value=analytic)
    outcomes = []
    for step in steps:
        try:
            outcomes.append(scalar_gradient_check(point, analytic, step, tolerance, evaluate))
        except GradCheckError as error:
            outcomes.append(error)
    checks = [outcome for outcome in outcomes if not isinstance(outcome, GradCheckError)]
    regimes = iter(
        error_regimes(
            [check.difference.requested_step for check in checks],
            [check.comparison.scaled_error for check in checks],
            [check.comparison.passed for check in checks],
        )
    )
    return [
        StepScanRecord(REJECTED, step, None, outcome)
        if isinstance(outcome, GradCheckError)
        else StepScanRecord(next(regimes), step, outcome, None)
        for step, outcome in zip(steps, outcomes)
    ]
