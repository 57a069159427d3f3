"""Three verdicts from numerical estimates and their error bars: passed, failed, inconclusive.

Scalar work only (no numpy). The rules, and why, are in docs/method.md ("Verdicts").
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

from .reasons import (
    agreement,
    collapse_reason,
    disagreement_reason,
    evidence_note,
    flat_reason,
    stateful_slopes_reason,
    undecided_reason,
)
from .terms import (
    FAILED,
    FAIL_MARGIN,
    INCONCLUSIVE,
    KINK,
    PASSED,
    Evidence,
    JudgedEstimate,
    Judgement,
    Standard,
    disagrees,
    resolution_scale,
    threshold,
)

__all__ = [
    "verdict_passes",
    "verdict_of",
    "judge_primary",
    "with_step_sensitivity",
    "judge_confirmed",
    "smooth_by_curvature",
]


def verdict_passes(estimate, limit, standard: Standard, unresolved=True):
    """Agreement within ``limit`` at consistent slopes, or, where ``unresolved`` (no other estimate
    resolves it better), agreement where the estimate cannot resolve a relative comparison, at the
    scale of the gradients that matter: elementwise, on one estimate (a :class:`JudgedEstimate`, its
    fields floats) or on the estimates' columns alike (``analytic``, ``numerical``, ``bar``,
    ``scale``, ``relative_error`` and ``consistent``), judged by the ``standard``'s tolerance and
    resolution.

    Either both values are indistinguishable from zero at the error bar and the bar is small beside
    the parameter's or the check's largest gradient, or FAIL_MARGIN bars exceed the tolerance of
    the scale and |a − n| is within them, and the worst case |a − n| + bar is within the tolerance
    of the parameter's own largest numerical gradient.
    """
    analytic, numerical, bar, scale = estimate.analytic, estimate.numerical, estimate.bar, estimate.scale
    tolerance, resolution, consistent = standard.tolerance, standard.resolution, estimate.consistent
    agrees = consistent & (estimate.relative_error <= limit)
    if not unresolved:
        return agrees
    zero = _zero_within(analytic, numerical, bar, _zero_limit(standard))
    gap = abs(analytic - numerical)
    small = (FAIL_MARGIN * bar > tolerance * scale) & (gap <= FAIL_MARGIN * bar)
    small = small & (gap + bar <= tolerance * resolution.gradient)
    return agrees | (consistent & (zero | small))


def verdict_of(verdicts, stateful: bool = False) -> str:
    """The verdict of a whole from its parts': failed if any failed, passed if all passed (and f
    is not stateful), inconclusive otherwise."""
    verdicts = set(verdicts)
    if FAILED in verdicts:
        return FAILED
    return PASSED if verdicts == {PASSED} and not stateful else INCONCLUSIVE


def judge_primary(estimate: JudgedEstimate, standard: Standard) -> Judgement | None:
    """The verdict at the first step when it passes there; None when it needs confirmation.

    The ``standard``'s floor is :func:`~gradcheck_cli.verdict.estimates.sensitivity_floors` at the step
    (default: the tolerance): a relative error above it is confirmed at other steps, where the bar
    may resolve it. Beside the check's largest gradient (not the parameter's own), values within
    the bar of zero pass only once confirmed at the other steps, where the bar may be smaller.
    """
    if verdict_passes(estimate, standard.floor, standard.own()):
        return Judgement(verdict=PASSED, decided_at=0, reason=_agreement(estimate, standard))
    return None


def _agreement(estimate: JudgedEstimate, standard: Standard) -> str:
    """:func:`agreement`'s sentence at the ``standard``."""
    return agreement(estimate, standard.tolerance, standard.floor, standard.unit)


def with_step_sensitivity(estimates: Sequence[JudgedEstimate]) -> tuple:
    """Each estimate with its bar widened by the error its neighbours' distances attribute to it.

    Rounding grows like 1/h and truncation like h². The whole distance to the nearest estimate at
    a smaller step bounds this one's truncation (and its noise, the smaller step's being larger);
    the distance to the nearest at a larger step is mostly that one's truncation, ρ² − 1 times
    this one's (ρ the step ratio; this one's rounding is in its bar already).
    """
    widened = []
    for estimate in estimates:
        smaller = [other for other in estimates if other.step < estimate.step]
        larger = [other for other in estimates if other.step > estimate.step]
        sensitivity = 0.0
        if smaller:
            other = max(smaller, key=lambda other: other.step)
            sensitivity += abs(estimate.numerical - other.numerical)
        if larger:
            other = min(larger, key=lambda other: other.step)
            ratio = other.step / estimate.step
            sensitivity += abs(estimate.numerical - other.numerical) / (ratio * ratio - 1.0)
        bar = estimate.error_bar
        bar = replace(bar, step_sensitivity=sensitivity, total=bar.rounding + bar.jitter + sensitivity)
        widened.append(replace(estimate, error_bar=bar))
    return tuple(widened)


def _supported(
    estimates: Sequence[JudgedEstimate], usable: list, index: int, tolerance: float, floor: float, zero: float
) -> bool:
    """Another step backs the estimate: it agrees with the analytic value too (within the floor or
    their two bars, at most the tolerance), or their Richardson extrapolation does (within the floor or their rounding and
    jitter, at most the tolerance), or the two differ by no more than their rounding and jitter, or
    both are zero within their bars and those bars are at most ``zero`` (the tolerance of the
    gradients that matter: a zero gradient's estimates are its truncation, h²·f‴/6, and rounding)."""
    chosen = estimates[index]
    for other_index in usable:
        if other_index == index:
            continue
        other = estimates[other_index]
        if all(e.slopes_consistent and _zero_within(e.analytic, e.numerical, e.bar, zero) for e in (chosen, other)):
            return True
        both = FAIL_MARGIN * (chosen.error_bar.total + other.error_bar.total)
        if other.slopes_consistent and abs(other.analytic - other.numerical) <= min(
            tolerance * other.scale, max(floor * other.scale, both)
        ):
            return True
        small, large = (chosen, other) if chosen.step < other.step else (other, chosen)
        ratio = large.step / small.step
        extrapolated = small.numerical + (small.numerical - large.numerical) / (ratio * ratio - 1)
        a_priori = sum(e.error_bar.rounding + e.error_bar.jitter for e in (chosen, other))
        limit = min(tolerance * chosen.scale, max(floor * chosen.scale, FAIL_MARGIN * a_priori))
        if abs(chosen.analytic - extrapolated) <= limit:
            return True
        if abs(chosen.numerical - other.numerical) <= FAIL_MARGIN * a_priori:
            return True
    return False


def _zero_limit(standard: Standard) -> float:
    """The largest bar within which both values of an estimate are zero beside the gradients that
    matter (verdict_passes' clause)."""
    return standard.tolerance * resolution_scale(standard.resolution)


def _zero_within(analytic, numerical, bar, limit):
    """Both values within the bar of zero, and the bar at most ``limit``: elementwise on columns alike."""
    return (abs(analytic) <= bar) & (abs(numerical) <= bar) & (bar <= limit)


#: At a smooth point the one-sided slopes' gap over the step (the curvature f″) is the same at every
#: step within this relative spread (f⁗·h² terms); across a corner the gap itself stays the same.
CURVATURE_SPREAD = 0.25


def smooth_by_curvature(steps: Sequence[float], gaps: Sequence[float], noises: Sequence[float]) -> list:
    """Which steps' one-sided slopes, disagreeing beyond the kink tolerance or not, show a smooth f:
    another step j resolves its gap (beyond twice its ``noise``), this step's gap is the one j's
    curvature predicts (gap_j·h/h_j, within CURVATURE_SPREAD and this step's noise), and the two gaps
    differ beyond their noises, so that a corner's constant gap is ruled out. ``gaps`` are right
    minus left slopes, ``noises`` what the values' rounding and jitter can put between them."""
    smooth = [False] * len(steps)
    for j, (step_j, gap_j, noise_j) in enumerate(zip(steps, gaps, noises)):
        if not abs(gap_j) > 2 * noise_j:
            continue
        for i, (step_i, gap_i, noise_i) in enumerate(zip(steps, gaps, noises)):
            predicted = gap_j * step_i / step_j
            if i == j or step_i == step_j:
                continue
            if abs(gap_i - predicted) <= CURVATURE_SPREAD * abs(predicted) + noise_i and abs(gap_i - gap_j) > (
                noise_i + noise_j
            ):
                smooth[i] = smooth[j] = True
    return smooth


#: The evidence of estimates whose values show nothing beyond their bars (none collapsed, no noise).
NO_EVIDENCE = Evidence()

#: A relative error from which a gap is of the order of the gradient itself (×2, ×½, a sign).
GROSS_ERROR = 0.5


def _gross_disagreement(estimates: Sequence[JudgedEstimate], usable: list, floor: float) -> int | None:
    """The estimate that shows a gap of the gradient's own order when no second step resolves it:
    the one with the smallest bar among those with consistent slopes disagrees beyond the floor and
    FAIL_MARGIN bars by at least GROSS_ERROR (within its own bar), and every other step's estimate is the same number
    within their two bars (the gap persists as h changes; only their bars are wider)."""
    consistent = [index for index in usable if estimates[index].slopes_consistent]
    if len(usable) < 2 or not consistent:
        return None
    best = min(consistent, key=lambda index: (estimates[index].error_bar.total, index))
    chosen = estimates[best]
    # Half the gradient's size within the estimate's own bar: a bfloat16 or float16 ×2 lands at 0.498.
    scale = max(abs(chosen.analytic), abs(chosen.numerical))
    if not (disagrees(chosen, floor) and chosen.relative_error + chosen.error_bar.total / scale >= GROSS_ERROR):
        return None
    for index in usable:
        other = estimates[index]
        if abs(other.numerical - chosen.numerical) > FAIL_MARGIN * (other.error_bar.total + chosen.error_bar.total):
            return None
    return best


def _approaching(estimates: Sequence[JudgedEstimate], usable: list) -> bool:
    """At the smallest step the gap is less than half that at the original step, beyond their bars:
    the estimate moves toward the analytic value as h shrinks, as truncation does, not an error."""
    original = estimates[usable[0]]
    smallest = min((estimates[index] for index in usable), key=lambda estimate: estimate.step)
    if smallest.step >= original.step:
        return False
    gap = abs(smallest.analytic - smallest.numerical) + smallest.error_bar.rounding + smallest.error_bar.jitter
    return gap < 0.5 * abs(original.analytic - original.numerical)


def judge_confirmed(
    estimates: Sequence[JudgedEstimate], standard: Standard, evidence: Evidence = NO_EVIDENCE
) -> Judgement:
    """The verdict from estimates at several steps (the first is the original step), judged by the
    ``standard`` with what f's values show (:class:`Evidence`).

    ``estimates`` must already carry their step sensitivity (:func:`with_step_sensitivity`).
    The best estimate is the usable one with the smallest bar. It
    passes when an estimate agrees within the best one's threshold (or the resolution clauses
    of :func:`judge_primary`) and another step backs it; it fails when the best estimate's gap
    exceeds the floor and FAIL_MARGIN bars, its bar counting how far it moves to another step.
    When no step has consistent one-sided slopes it is a suspected kink; otherwise the
    evidence cannot decide.
    """
    tolerance, floor, unit, collapsed = standard.tolerance, standard.floor, standard.unit, evidence.collapsed
    every = list(range(len(estimates)))
    passing = _passing(estimates, standard, evidence)
    if passing:
        chosen = min(passing, key=lambda index: (estimates[index].error_bar.total, index))
        return Judgement(verdict=PASSED, decided_at=chosen, reason=_agreement(estimates[chosen], standard))
    usable = [index for index in every if not (collapsed and collapsed[index])]
    if not usable:
        flat = _flat_disagreement(estimates, standard, evidence)
        if flat is not None:
            return Judgement(verdict=FAILED, decided_at=flat, reason=flat_reason(estimates, flat, unit))
        return Judgement(
            verdict=INCONCLUSIVE, decided_at=0, reason=collapse_reason(estimates, unit, evidence.precision)
        )
    best = min(usable, key=lambda index: (estimates[index].error_bar.total, index))
    approaching = _approaching(estimates, usable)
    persisting = [index for index in usable if disagrees(estimates[index], floor)]
    if best in persisting and len(persisting) >= 2 and not approaching:
        return Judgement(
            verdict=FAILED, decided_at=best, reason=disagreement_reason(estimates, usable, best, tolerance, floor, unit)
        )
    # A part of f frozen below its lower precision's quantum at every step can hide any gradient.
    lower = evidence.noise or evidence.values_precision is not None
    gross = None if lower else _gross_disagreement(estimates, usable, floor)
    if gross is not None and not approaching:
        return Judgement(
            verdict=FAILED,
            decided_at=gross,
            reason=disagreement_reason(estimates, usable, gross, tolerance, floor, unit),
        )
    note = evidence_note(estimates, usable, evidence.noise, evidence.precision, evidence.values_precision)
    if approaching and any(estimates[index].slopes_consistent for index in usable):
        return Judgement(
            verdict=INCONCLUSIVE,
            decided_at=best,
            reason=f"the estimate approaches the analytic value as the {unit} shrinks (curvature too large "
            f"for these steps): try a smaller step (parameter step){note}",
        )
    if not any(estimates[index].slopes_consistent for index in usable):
        if evidence.stateful:  # f(θ) itself moves between calls: its slopes show no corner
            return Judgement(verdict=INCONCLUSIVE, decided_at=best, reason=stateful_slopes_reason(unit))
        return Judgement(
            verdict=KINK,
            decided_at=best,
            reason=f"the one-sided slopes disagree at every {unit} tried (a corner, or curvature too large "
            f"for these steps): not evidence either way{note}",
        )
    reason = undecided_reason(estimates, best, tolerance, floor, standard.resolution, unit, evidence.precision)
    return Judgement(verdict=INCONCLUSIVE, decided_at=best, reason=reason + note)


def _flat_disagreement(estimates: Sequence[JudgedEstimate], standard: Standard, evidence: Evidence) -> int | None:
    """The estimate that shows a flat f beside a nonzero analytic value, when f is bit-identical to
    f(θ) at both probes of every step (at least two; the numerical derivative is exactly 0 at each):
    the one with the smallest bar, where the analytic value is beyond the floor and FAIL_MARGIN
    bars, and beyond its tolerance of zero — the tolerance times the gradients that matter (1 when
    every one is 0), and zero up to the rounding of the gradients beside it. Never where f's values
    are noisy, or show a lower precision inside whose quantum in θ exceeds every step tried (a part
    of f frozen there can hide any gradient)."""
    if len(estimates) < 2 or evidence.noise or evidence.frozen:
        return None
    best = min(range(len(estimates)), key=lambda index: (estimates[index].error_bar.total, index))
    chosen = estimates[best]
    zero = standard.tolerance * (resolution_scale(standard.resolution) or 1.0)
    if evidence.rounding_zero < math.inf:  # inf: the bar alone bounds |f′|
        zero = max(zero, evidence.rounding_zero)
    if disagrees(chosen, standard.floor) and abs(chosen.analytic) > zero:
        return best
    return None


def _passing(estimates: Sequence[JudgedEstimate], standard: Standard, evidence: Evidence) -> list:
    """The indices of the estimates that pass: within the smallest bar's threshold (the resolution
    clauses for that best one only), backed by another step, and not collapsed unless |a| is zero
    up to rounding."""
    tolerance, floor, collapsed = standard.tolerance, standard.floor, evidence.collapsed
    every = list(range(len(estimates)))
    best = min(every, key=lambda index: (estimates[index].error_bar.total, index))
    limit = threshold(estimates[best], tolerance, floor)
    own = standard.own()
    return [
        index
        for index in every
        if verdict_passes(
            estimates[index],
            min(limit, threshold(estimates[index], tolerance, floor)),
            standard if index == best else own,
            index == best,
        )
        and _supported(estimates, every, index, tolerance, floor, _zero_limit(standard if index == best else own))
        and not (collapsed and collapsed[index] and abs(estimates[index].analytic) > evidence.rounding_zero)
    ]
