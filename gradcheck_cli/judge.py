"""Three verdicts from numerical estimates and their error bars: passed, failed, inconclusive.

Scalar work only (no numpy). The rules, and why, are in docs/method.md ("Verdicts").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .judge_reasons import (
    NOISE_LIMIT,
    agreement,
    collapse_reason,
    disagreement_reason,
    evidence_note,
    noise_note,
    undecided_reason,
)
from .judge_terms import (
    CONFIRMATION_FACTORS,
    FAILED,
    FAIL_MARGIN,
    FLOOR_FACTOR,
    HIGHER_PRECISION_FLOOR_FACTOR,
    INCONCLUSIVE,
    KINK,
    PASSED,
    ROUNDING_FACTOR,
    ErrorBar,
    JudgedEstimate,
    Judgement,
    Resolution,
    disagrees,
    resolution_scale,
    slopes_agree,
    threshold,
)

__all__ = [
    "ROUNDING_FACTOR",
    "FAIL_MARGIN",
    "CONFIRMATION_FACTORS",
    "FLOOR_FACTOR",
    "HIGHER_PRECISION_FLOOR_FACTOR",
    "NOISE_LIMIT",
    "ErrorBar",
    "JudgedEstimate",
    "Judgement",
    "Resolution",
    "slopes_agree",
    "verdict_passes",
    "verdict_of",
    "judge_primary",
    "agreement",
    "with_step_sensitivity",
    "judge_confirmed",
    "noise_note",
]


def verdict_passes(
    analytic,
    numerical,
    bar,
    scale,
    relative,
    consistent,
    limit,
    tolerance: float,
    resolution: Resolution,
    unresolved=True,
):
    """Agreement within ``limit`` at consistent slopes, or, where ``unresolved`` (no other estimate
    resolves it better), agreement where the estimate cannot resolve a relative comparison, at the
    scale of the gradients that matter: elementwise, on floats or on numpy columns alike.

    Either both values are indistinguishable from zero at the error bar and the bar is small beside
    the parameter's or the check's largest gradient, or FAIL_MARGIN bars exceed the tolerance of
    the scale and |a − n| is within them, and the worst case |a − n| + bar is within the tolerance
    of the parameter's own largest numerical gradient.
    """
    agrees = consistent & (relative <= limit)
    if not unresolved:
        return agrees
    zero = (abs(analytic) <= bar) & (abs(numerical) <= bar) & (bar <= tolerance * resolution_scale(resolution))
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


def _passes(
    estimate: JudgedEstimate, tolerance: float, limit: float, resolution: Resolution, unresolved: bool = True
) -> bool:
    """:func:`verdict_passes` of one estimate."""
    return verdict_passes(
        estimate.analytic,
        estimate.numerical,
        estimate.error_bar.total,
        estimate.scale,
        estimate.relative_error,
        estimate.slopes_consistent,
        limit,
        tolerance,
        resolution,
        unresolved,
    )


def judge_primary(
    estimate: JudgedEstimate, tolerance: float, resolution: Resolution, unit: str = "step", floor: float = None
) -> Judgement | None:
    """The verdict at the first step when it passes there; None when it needs confirmation.

    ``floor`` is :func:`~gradcheck_cli.estimates.sensitivity_floors` at the step (default: the tolerance): a relative error
    above it is confirmed at other steps, where the bar may resolve it. Beside the check's largest
    gradient (not the parameter's own), values within the bar of zero pass only
    once confirmed at the other steps, where the bar may be smaller.
    """
    floor = tolerance if floor is None else floor
    own = Resolution(gradient=resolution.gradient, check=0.0)
    if _passes(estimate, tolerance, floor, own):
        return Judgement(verdict=PASSED, decided_at=0, reason=agreement(estimate, tolerance, floor, unit))
    return None


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


def _supported(estimates: Sequence[JudgedEstimate], usable: list, index: int, tolerance: float, floor: float) -> bool:
    """Another step backs the estimate: it agrees with the analytic value too (within the floor or
    their two bars, at most the tolerance), or their Richardson extrapolation does (within the floor or their rounding and
    jitter, at most the tolerance), or the two differ by no more than their rounding and jitter."""
    chosen = estimates[index]
    for other_index in usable:
        if other_index == index:
            continue
        other = estimates[other_index]
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


#: A relative error from which a gap is of the order of the gradient itself (×2, ×½, a sign).
GROSS_ERROR = 0.5


def _gross_disagreement(estimates: Sequence[JudgedEstimate], usable: list, floor: float) -> int | None:
    """The estimate that shows a gap of the gradient's own order when no second step resolves it:
    the one with the smallest bar among those with consistent slopes disagrees beyond the floor and
    FAIL_MARGIN bars by at least GROSS_ERROR, and every other step's estimate is the same number
    within their two bars (the gap persists as h changes; only their bars are wider)."""
    consistent = [index for index in usable if estimates[index].slopes_consistent]
    if len(usable) < 2 or not consistent:
        return None
    best = min(consistent, key=lambda index: (estimates[index].error_bar.total, index))
    chosen = estimates[best]
    if not (disagrees(chosen, floor) and chosen.relative_error >= GROSS_ERROR):
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
    estimates: Sequence[JudgedEstimate],
    tolerance: float,
    resolution: Resolution,
    unit: str = "step",
    floor: float = None,
    collapsed: Sequence[bool] = (),
    precision: str = "the parameter's dtype",
    values_precision: str | None = None,
    noise: float = 0.0,
    rounding_zero: float = 0.0,
) -> Judgement:
    """The verdict from estimates at several steps (the first is the original step).

    ``estimates`` must already carry their step sensitivity (:func:`with_step_sensitivity`);
    ``collapsed[i]`` is True where f at both probes of estimate i equals f(θ) bit for bit (such
    an estimate is no evidence); ``values_precision`` names the dtype f's values are all numbers
    of, when it is less precise than ``precision`` (an objective computed in float32); ``noise`` the
    value noise the parameter's estimates showed, in units of ε (0: none beyond rounding), when the
    bars already carry it; ``rounding_zero`` the largest |a| that is zero up to the rounding of
    the gradients beside it, the only analytic value a collapsed estimate can pass. The best estimate is the usable one with the smallest bar. It
    passes when an estimate agrees within the best one's threshold (or the resolution clauses
    of :func:`judge_primary`) and another step backs it; it fails when the best estimate's gap
    exceeds the floor and FAIL_MARGIN bars, its bar counting how far it moves to another step.
    When no step has consistent one-sided slopes it is a suspected kink; otherwise the
    evidence cannot decide.
    """
    floor = tolerance if floor is None else floor
    every = list(range(len(estimates)))
    passing = _passing(estimates, tolerance, floor, resolution, collapsed, rounding_zero)
    if passing:
        chosen = min(passing, key=lambda index: (estimates[index].error_bar.total, index))
        return Judgement(verdict=PASSED, decided_at=chosen, reason=agreement(estimates[chosen], tolerance, floor, unit))
    usable = [index for index in every if not (collapsed and collapsed[index])]
    if not usable:
        return Judgement(verdict=INCONCLUSIVE, decided_at=0, reason=collapse_reason(estimates[0], unit, precision))
    best = min(usable, key=lambda index: (estimates[index].error_bar.total, index))
    approaching = _approaching(estimates, usable)
    persisting = [index for index in usable if disagrees(estimates[index], floor)]
    if best in persisting and len(persisting) >= 2 and not approaching:
        return Judgement(
            verdict=FAILED, decided_at=best, reason=disagreement_reason(estimates, usable, best, tolerance, floor, unit)
        )
    # A part of f frozen below its lower precision's quantum at every step can hide any gradient.
    lower = noise or values_precision is not None
    gross = None if lower else _gross_disagreement(estimates, usable, floor)
    if gross is not None and not approaching:
        return Judgement(
            verdict=FAILED,
            decided_at=gross,
            reason=disagreement_reason(estimates, usable, gross, tolerance, floor, unit),
        )
    note = evidence_note(estimates, usable, noise, precision, values_precision)
    if approaching and any(estimates[index].slopes_consistent for index in usable):
        return Judgement(
            verdict=INCONCLUSIVE,
            decided_at=best,
            reason=f"the estimate approaches the analytic value as the {unit} shrinks (curvature too large "
            f"for these steps): try a smaller step (parameter step){note}",
        )
    if not any(estimates[index].slopes_consistent for index in usable):
        return Judgement(
            verdict=KINK,
            decided_at=best,
            reason=f"the one-sided slopes disagree at every {unit} tried (a corner, or curvature too large "
            f"for these steps): not evidence either way{note}",
        )
    reason = undecided_reason(estimates, best, tolerance, floor, resolution, unit)
    return Judgement(verdict=INCONCLUSIVE, decided_at=best, reason=reason + note)


def _passing(
    estimates: Sequence[JudgedEstimate],
    tolerance: float,
    floor: float,
    resolution: Resolution,
    collapsed: Sequence[bool],
    rounding_zero: float,
) -> list:
    """The indices of the estimates that pass: within the smallest bar's threshold (the resolution
    clauses for that best one only), backed by another step, and not collapsed unless |a| is zero
    up to rounding."""
    every = list(range(len(estimates)))
    best = min(every, key=lambda index: (estimates[index].error_bar.total, index))
    limit = threshold(estimates[best], tolerance, floor)
    own = Resolution(gradient=resolution.gradient, check=0.0)
    return [
        index
        for index in every
        if _passes(
            estimates[index],
            tolerance,
            min(limit, threshold(estimates[index], tolerance, floor)),
            resolution if index == best else own,
            index == best,
        )
        and _supported(estimates, every, index, tolerance, floor)
        and not (collapsed and collapsed[index] and abs(estimates[index].analytic) > rounding_zero)
    ]
