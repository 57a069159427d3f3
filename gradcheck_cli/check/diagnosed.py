"""The diagnosis of a parameter's record, what the failing coordinates and directional test show
(:mod:`gradcheck_cli.verdict.diagnosis`), and what the gradients of the parameters that passed add to it."""

from __future__ import annotations

import dataclasses

import numpy as np

from ..verdict.diagnosis import DirectionalGap, Scope, diagnose_parameter, with_other_parameters
from ..verdict.terms import FAILED, FAIL_MARGIN, INCONCLUSIVE
from .directional import DirectionalCheck
from .probe import ProbedParameter
from .records import CoordinateChecks

__all__ = ["diagnosis_of", "with_passing_gradients"]


def diagnosis_of(item: ProbedParameter, checks: CoordinateChecks, directional: DirectionalCheck):
    """The parameter's diagnosis: None when neither a coordinate nor the directional test failed."""
    failed, planned = checks.failed(), item.planned
    if not failed and directional.verdict != FAILED:
        return None  # nothing to diagnose: the columns the diagnosis reads are not made
    size, inconclusive = int(planned.array.size), checks.verdict_count(INCONCLUSIVE)
    scope = Scope(planned.name, len(checks), size, inconclusive, checks.index_columns())
    gradient = np.asarray(planned.gradient, dtype=np.float64) if failed else planned.gradient  # read if failed
    gap, parts = _directional_gap(item, directional, planned.tolerance), planned.complex_dtype is not None
    return diagnose_parameter(failed, checks.passing_index_columns(), directional, gradient, gap, scope, parts=parts)


def with_passing_gradients(checks: list, probed: list) -> list:
    """Each parameter's record, an unexplained diagnosis saying what the analytic gradients of the
    parameters that passed show about its failing coordinates (a copy of one, a term ∝ one)."""
    passing = {item.planned.name: item.planned.gradient for item, check in zip(probed, checks) if check.passed}
    if not passing:
        return checks
    updated = []
    for item, check in zip(probed, checks):
        diagnosis = check.diagnosis
        if diagnosis is not None:  # none stays none
            gradients = {**passing, check.name: item.planned.gradient}
            diagnosis = with_other_parameters(diagnosis, check.name, check.checks.failed(), gradients)
        updated.append(check if diagnosis is check.diagnosis else dataclasses.replace(check, diagnosis=diagnosis))
    return updated


def _directional_gap(item: ProbedParameter, directional: DirectionalCheck, tolerance: float) -> DirectionalGap | None:
    """A failed directional test's gap, for the diagnosis to explain (None unless it failed)."""
    if directional.verdict != FAILED or item.displacement is None:
        return None
    estimate = directional.estimates[directional.decided_at]
    return DirectionalGap(
        shifts=item.displacement.shifts(item.original),
        gap=estimate.analytic - estimate.numerical,
        limit=max(FAIL_MARGIN * estimate.error_bar.total, tolerance * estimate.scale),
    )
