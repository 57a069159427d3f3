"""Three verdicts from numerical estimates and their error bars: passed, failed, inconclusive.

Scalar work only (no numpy). The rules, and why, are in docs/method.md ("Verdicts").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from .records import Record

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
    "verdict_passes",
    "verdict_of",
    "judge_primary",
    "agreement",
    "with_step_sensitivity",
    "judge_confirmed",
    "noise_note",
]

#: Each objective value is trusted to ROUNDING_FACTOR·ε·|f| (ε of the parameter's dtype).
ROUNDING_FACTOR = 4.0
#: A disagreement fails only when it exceeds FAIL_MARGIN times the estimate's error bar.
FAIL_MARGIN = 2.0
#: A coordinate that does not pass at its step h is probed again at h·factor for each factor.
CONFIRMATION_FACTORS = (0.1, 10.0)
#: The sensitivity floor: FLOOR_FACTOR times the estimate's expected relative error r² + ε/r, and
#: never finer than the tolerance / FLOOR_FACTOR.
FLOOR_FACTOR = 16.0
#: The floor's factor where the analytic values carry more precision than the parameter's float32
#: or bfloat16 (computed in float64): their own rounding needs no margin, the estimate's does.
HIGHER_PRECISION_FLOOR_FACTOR = 8.0

PASSED, FAILED, INCONCLUSIVE, KINK = "passed", "failed", "inconclusive", "suspected kink"


@dataclass(frozen=True, slots=True)
class ErrorBar(Record):
    """What the numerical estimate may be off by, in the gradient's units.

    ``rounding``: ROUNDING_FACTOR·ε·max|f| over the actual spacings; ``jitter``: the observed
    spread of f(θ) over the same spacings; ``step_sensitivity``: how far the estimate moves to
    the nearest estimate at another step (truncation, or noise beyond the rounding model), 0
    until a second step is tried. ``total`` is their sum.
    """

    rounding: float
    jitter: float
    step_sensitivity: float
    total: float


@dataclass(frozen=True, slots=True)
class JudgedEstimate(Record):
    """The analytic and numerical values at one step, with the estimate's error bar.

    ``step`` is the requested step (a coordinate) or the direction's multiplier (a
    directional test). ``scale`` is what the tolerance is relative to: max(|a|, |n|) at a
    coordinate (see :mod:`gradcheck_cli.directional` for a direction); ``relative_error`` is
    |a − n| / scale, 0 when the scale is 0. ``slopes_consistent`` is the one-sided slopes'
    agreement at the kink tolerance.
    """

    step: float
    analytic: float
    numerical: float
    scale: float
    relative_error: float
    slopes_consistent: bool
    error_bar: ErrorBar


@dataclass(frozen=True)
class Judgement(Record):
    """A verdict, the estimate it rests on (index into the estimates) and why, in one sentence."""

    verdict: str
    decided_at: int
    reason: str


def slopes_agree(left: float, right: float, tolerance: float, scale: float, noise: float) -> bool:
    """The one-sided slopes agree: |left − right| ≤ tolerance·max(|left|, |right|, scale) + noise.

    ``scale`` is the parameter's largest gradient, so that a stationary point (slopes ±curvature·h)
    is not a kink and a small loss's corner still is; ``noise`` what rounding can put between them.
    """
    return abs(left - right) <= tolerance * max(abs(left), abs(right), scale) + noise


def threshold(estimate: JudgedEstimate, tolerance: float, floor: float) -> float:
    """The relative gap up to which ``estimate`` agrees: FAIL_MARGIN error bars, at least ``floor``
    (what the estimate can support at its step), at most ``tolerance`` (the user's bound)."""
    if estimate.scale == 0.0:
        return tolerance
    return min(tolerance, max(floor, FAIL_MARGIN * estimate.error_bar.total / estimate.scale))


@dataclass(frozen=True)
class Resolution:
    """What "small" means for an estimate's bar: beside the parameter's largest gradient, or beside
    the largest gradient of the whole check (a parameter the loss barely depends on)."""

    gradient: float
    check: float


def _resolution_scale(resolution: Resolution) -> float:
    """The gradient that matters beside this estimate: the parameter's largest, or the check's."""
    return max(resolution.gradient, resolution.check)


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
    zero = (abs(analytic) <= bar) & (abs(numerical) <= bar) & (bar <= tolerance * _resolution_scale(resolution))
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


def _disagrees(estimate: JudgedEstimate, floor: float) -> bool:
    """A gap beyond the floor and beyond FAIL_MARGIN error bars, at consistent slopes."""
    gap = abs(estimate.analytic - estimate.numerical)
    return estimate.slopes_consistent and gap > max(floor * estimate.scale, FAIL_MARGIN * estimate.error_bar.total)


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
        return Judgement(verdict=PASSED, decided_at=0, reason=_agreement(estimate, tolerance, floor, unit))
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
    if not (_disagrees(chosen, floor) and chosen.relative_error >= GROSS_ERROR):
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
        return Judgement(
            verdict=PASSED, decided_at=chosen, reason=_agreement(estimates[chosen], tolerance, floor, unit)
        )
    usable = [index for index in every if not (collapsed and collapsed[index])]
    if not usable:
        return Judgement(verdict=INCONCLUSIVE, decided_at=0, reason=_collapse(estimates[0], unit, precision))
    best = min(usable, key=lambda index: (estimates[index].error_bar.total, index))
    approaching = _approaching(estimates, usable)
    persisting = [index for index in usable if _disagrees(estimates[index], floor)]
    if best in persisting and len(persisting) >= 2 and not approaching:
        return Judgement(
            verdict=FAILED, decided_at=best, reason=_disagreement(estimates, usable, best, tolerance, floor, unit)
        )
    # A part of f frozen below its lower precision's quantum at every step can hide any gradient.
    lower = noise or values_precision is not None
    gross = None if lower else _gross_disagreement(estimates, usable, floor)
    if gross is not None and not approaching:
        return Judgement(
            verdict=FAILED, decided_at=gross, reason=_disagreement(estimates, usable, gross, tolerance, floor, unit)
        )
    note = _evidence_note(estimates, usable, noise, precision, values_precision)
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
    reason = _undecided(estimates, best, tolerance, floor, resolution, unit)
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


def _evidence_note(estimates: Sequence[JudgedEstimate], usable: list, noise: float, precision: str, values_precision):
    """What an undecided verdict adds about the values' precision: the observed noise, or the bars' precision."""
    note = noise_note(noise, precision) if noise else _precision_note(estimates, usable, precision)
    if values_precision is not None:
        note += f"; f's values are all {values_precision} numbers: the objective computes in lower precision than "
        note += f"{precision}, and its rounding sets the bar"
    return note


#: f's observed noise beyond NOISE_LIMIT·ε·|f| is not the rounding of the parameters' dtype.
NOISE_LIMIT = 256.0


def _precision_note(estimates: Sequence[JudgedEstimate], usable: list, precision: str) -> str:
    """A note when f's values carry far more noise than ε·|f|: the distance from the estimate at
    the smallest step to the next one, in units of that estimate's ε·|f|·gain (its rounding bar
    over ROUNDING_FACTOR), beyond NOISE_LIMIT: the objective computes in lower precision inside."""
    ordered = sorted(usable, key=lambda index: estimates[index].step)
    if len(ordered) < 2 or estimates[ordered[0]].error_bar.rounding == 0.0:
        return ""
    smallest, next_one = estimates[ordered[0]], estimates[ordered[1]]
    units = abs(smallest.numerical - next_one.numerical) / (smallest.error_bar.rounding / ROUNDING_FACTOR)
    return noise_note(units, precision) if units > NOISE_LIMIT else ""


def noise_note(units: float, precision: str) -> str:
    """The reason's note when f's values vary by ``units``·ε·|f|, far above the rounding of ``precision``."""
    return (
        f"; f's values vary by about {units:.0f}·ε·|f| between steps, far above the rounding of {precision}: "
        "the objective computes in lower precision inside (float32?), or is noisy"
    )


def _collapse(estimate: JudgedEstimate, unit: str, precision: str) -> str:
    return (
        f"f did not change at any {unit} tried ({unit} {_number(estimate.step)}, a tenth and ten times it): does "
        f"the objective read the array it was given, or compute in lower precision than {precision}?"
    )


def _number(value: float) -> str:
    return f"{value:.2e}"


def agreement(estimate: JudgedEstimate, tolerance: float, floor: float, unit: str = "step") -> str:
    """Why ``estimate`` passes, in one sentence."""
    return _agreement(estimate, tolerance, floor, unit)


def _agreement(estimate: JudgedEstimate, tolerance: float, floor: float, unit: str) -> str:
    limit = threshold(estimate, tolerance, floor)
    if estimate.slopes_consistent and estimate.relative_error <= limit:
        within = "the tolerance" if limit == tolerance else "its error bar's threshold"
        return (
            f"relative error {_number(estimate.relative_error)} within {within} {_number(limit)} "
            f"at {unit} {_number(estimate.step)}"
        )
    return (
        f"analytic {_number(estimate.analytic)} and numerical {_number(estimate.numerical)} agree within the error "
        f"bar ±{_number(estimate.error_bar.total)} at {unit} {_number(estimate.step)}, well within the tolerance "
        "of the parameter's largest gradient"
    )


def _disagreement(
    estimates: Sequence[JudgedEstimate], usable: list, best: int, tolerance: float, floor: float, unit: str
) -> str:
    chosen = estimates[best]
    steps = ", ".join(_number(estimates[index].step) for index in usable if _disagrees(estimates[index], floor))
    beyond = f"the tolerance {_number(tolerance)}" if floor == tolerance else f"the sensitivity floor {_number(floor)}"
    return (
        f"analytic {_number(chosen.analytic)} vs numerical {_number(chosen.numerical)} ± "
        f"{_number(chosen.error_bar.total)}: relative error {_number(chosen.relative_error)} beyond {beyond} "
        f"and {FAIL_MARGIN:g}× the error bar (which counts how far the estimate moves with the {unit}), "
        f"at {unit}s {steps}"
    )


_REMEDIES = {
    "rounding": (
        "the rounding of f",
        "decide it in float64, at a larger step (parameter step), or with a smaller |f| (subtract a constant from the loss)",
    ),
    "jitter": ("the objective's nondeterminism (f(θ) varies between calls)", "make the objective deterministic"),
    "step": ("how far the estimate moves between steps", "try another step (parameter step)"),
}


def _undecided(
    estimates: Sequence[JudgedEstimate], best: int, tolerance: float, floor: float, resolution: Resolution, unit: str
) -> str:
    chosen = estimates[best]
    bar = chosen.error_bar
    gap = abs(chosen.analytic - chosen.numerical)
    if _disagrees(chosen, floor):
        return (
            f"the disagreement at {unit} {_number(chosen.step)} is not confirmed at another {unit}: "
            "try another step (parameter step)"
        )
    if gap > FAIL_MARGIN * bar.total and chosen.slopes_consistent:
        return (
            f"the gap {_number(gap)} at {unit} {_number(chosen.step)} is beyond {FAIL_MARGIN:g}× the error bar but "
            f"within the sensitivity floor {_number(floor)} of the gradient, what estimates at this {unit} support: "
            "try another step (parameter step)"
        )
    if gap > FAIL_MARGIN * bar.total:  # and the slopes disagree there
        return (
            f"the gap {_number(gap)} at {unit} {_number(chosen.step)} is beyond {FAIL_MARGIN:g}× the error bar, but "
            f"the one-sided slopes disagree there and the other {unit}s do not confirm it: try another step (parameter step)"
        )
    largest = max((bar.rounding, "rounding"), (bar.jitter, "jitter"), (bar.step_sensitivity, "step"))[1]
    cause, remedy = _REMEDIES[largest]
    unresolved = ""
    if bar.total > tolerance * _resolution_scale(resolution) and abs(chosen.analytic) <= bar.total:
        unresolved = (
            f", more than {_number(tolerance)}× the parameter's largest gradient ({_number(resolution.gradient)}) "
            "and than its share of f's largest one-step change, so the loss cannot resolve it at this precision"
        )
    return (
        f"the gap {_number(gap)} at {unit} {_number(chosen.step)} is within {FAIL_MARGIN:g}× the error bar "
        f"±{_number(bar.total)}, set by {cause}{unresolved}: {remedy}"
    )
