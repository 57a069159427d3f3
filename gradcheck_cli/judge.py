"""Three verdicts from numerical estimates and their error bars: passed, failed, inconclusive.

Scalar work only (no numpy). The rules, and why, are in docs/method.md ("Verdicts").
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, replace

from .records import Record

__all__ = [
    "ROUNDING_FACTOR",
    "FAIL_MARGIN",
    "CONFIRMATION_FACTORS",
    "ErrorBar",
    "StepEstimate",
    "Judgement",
    "Resolution",
    "stencil_gain",
    "relative_error",
    "step_estimate",
    "judge_primary",
    "with_step_sensitivity",
    "judge_confirmed",
]

#: Each objective value is trusted to ROUNDING_FACTOR·ε·|f| (ε of the parameter's dtype).
ROUNDING_FACTOR = 4.0
#: A disagreement fails only when it exceeds FAIL_MARGIN times the estimate's error bar.
FAIL_MARGIN = 2.0
#: A coordinate that does not pass at its step h is probed again at h·factor for each factor.
CONFIRMATION_FACTORS = (0.1, 10.0)

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
class StepEstimate(Record):
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


def value_epsilon(values, epsilon: float) -> float:
    """ε of the precision f actually carries: float32's (bfloat16's) when every value is one.

    An objective computed in float32 for float64 parameters returns float32 values; the bar must
    use their rounding, not the parameters'.
    """
    if epsilon >= 2.0**-7:
        return epsilon
    try:
        single = array("f", values)  # rounded to float32 in one C loop
    except OverflowError:
        return epsilon
    if list(single) != list(values):
        return epsilon
    if all(word & 0xFFFF == 0 for word in array("I", single.tobytes())):  # bfloat16: float32's top half
        return 2.0**-7
    return max(epsilon, 2.0**-23)


def slopes_agree(left: float, right: float, tolerance: float, scale: float, noise: float) -> bool:
    """The one-sided slopes agree: |left − right| ≤ tolerance·max(|left|, |right|, scale) + noise.

    ``scale`` is the parameter's largest gradient, so that a stationary point (slopes ±curvature·h)
    is not a kink and a small loss's corner still is; ``noise`` what rounding can put between them.
    """
    return abs(left - right) <= tolerance * max(abs(left), abs(right), scale) + noise


def stencil_gain(minus_spacing: float, plus_spacing: float, left_weight: float, right_weight: float) -> float:
    """The largest change of the weighted three-point estimate per unit error in each of f₋, f₀, f₊."""
    left = left_weight / minus_spacing
    right = right_weight / plus_spacing
    return left + right + abs(left - right)


def relative_error(analytic: float, numerical: float, scale: float) -> float:
    """|a − n| / scale; 0 when the scale is 0 (and so a = n = 0)."""
    return 0.0 if scale == 0.0 else abs(analytic - numerical) / scale


def step_estimate(
    step: float,
    analytic: float,
    numerical: float,
    *,
    largest_value: float,
    epsilon: float,
    jitter: float,
    gain: float,
    slopes_consistent: bool = True,
    scale: float = None,
) -> StepEstimate:
    """One StepEstimate whose bar has the a-priori parts: rounding and jitter of f, times ``gain``.

    ``scale`` defaults to max(|a|, |n|).
    """
    if scale is None:
        scale = max(abs(analytic), abs(numerical))
    rounding = ROUNDING_FACTOR * epsilon * largest_value * gain
    spread = jitter * gain
    bar = ErrorBar(rounding=rounding, jitter=spread, step_sensitivity=0.0, total=rounding + spread)
    return StepEstimate(
        step=step,
        analytic=analytic,
        numerical=numerical,
        scale=scale,
        relative_error=relative_error(analytic, numerical, scale),
        slopes_consistent=slopes_consistent,
        error_bar=bar,
    )


def _agrees(estimate: StepEstimate, tolerance: float) -> bool:
    return estimate.slopes_consistent and estimate.relative_error <= tolerance


@dataclass(frozen=True)
class Resolution:
    """What "small" means for an estimate's bar: beside the parameter's largest gradient, or beside
    the largest gradient of the whole check (a parameter the loss barely depends on)."""

    gradient: float
    check: float


def _resolution_scale(resolution: Resolution) -> float:
    """The gradient that matters beside this estimate: the parameter's largest, or the check's."""
    return max(resolution.gradient, resolution.check)


def _within_resolution(estimate: StepEstimate, tolerance: float, resolution: Resolution) -> bool:
    """Agreement where the relative tolerance cannot decide, at the scale of the gradients that matter.

    Either both values are indistinguishable from zero at the error bar and the bar is small beside
    the parameter's or the check's largest gradient, or the worst case |a − n| + bar is within the
    tolerance of the parameter's own largest gradient.
    """
    bar = estimate.error_bar.total
    if not estimate.slopes_consistent:
        return False
    zero = abs(estimate.analytic) <= bar and abs(estimate.numerical) <= bar
    if zero and bar <= tolerance * _resolution_scale(resolution):
        return True
    return abs(estimate.analytic - estimate.numerical) + bar <= tolerance * resolution.gradient


def _passes(estimate: StepEstimate, tolerance: float, resolution: Resolution) -> bool:
    return _agrees(estimate, tolerance) or _within_resolution(estimate, tolerance, resolution)


def _disagrees(estimate: StepEstimate, tolerance: float) -> bool:
    """A gap beyond the tolerance and beyond FAIL_MARGIN error bars, at consistent slopes."""
    gap = abs(estimate.analytic - estimate.numerical)
    return estimate.slopes_consistent and gap > max(tolerance * estimate.scale, FAIL_MARGIN * estimate.error_bar.total)


def judge_primary(
    estimate: StepEstimate, tolerance: float, resolution: Resolution, unit: str = "step"
) -> Judgement | None:
    """The verdict at the first step when it passes there; None when it needs confirmation.

    Beside the check's largest gradient (not the parameter's own), values within the bar of zero
    pass only once confirmed at the other steps, where the bar may be smaller.
    """
    own = Resolution(gradient=resolution.gradient, check=0.0)
    if _passes(estimate, tolerance, own):
        return Judgement(verdict=PASSED, decided_at=0, reason=_agreement(estimate, tolerance, unit))
    return None


def with_step_sensitivity(estimates: Sequence[StepEstimate]) -> tuple:
    """Each estimate with its bar widened by the distance to the nearest estimate at another step."""
    widened = []
    for index, estimate in enumerate(estimates):
        others = [abs(estimate.numerical - other.numerical) for j, other in enumerate(estimates) if j != index]
        sensitivity = min(others, default=0.0)
        bar = estimate.error_bar
        bar = replace(bar, step_sensitivity=sensitivity, total=bar.rounding + bar.jitter + sensitivity)
        widened.append(replace(estimate, error_bar=bar))
    return tuple(widened)


def _supported(estimates: Sequence[StepEstimate], index: int, tolerance: float) -> bool:
    """Another step backs the estimate: their Richardson extrapolation agrees with the analytic
    value too, or the two differ by no more than their rounding and jitter allow."""
    chosen = estimates[index]
    for other in estimates:
        if other is chosen:
            continue
        small, large = (chosen, other) if chosen.step < other.step else (other, chosen)
        ratio = large.step / small.step
        extrapolated = small.numerical + (small.numerical - large.numerical) / (ratio * ratio - 1)
        if abs(chosen.analytic - extrapolated) <= tolerance * chosen.scale:
            return True
        a_priori = sum(e.error_bar.rounding + e.error_bar.jitter for e in (chosen, other))
        if abs(chosen.numerical - other.numerical) <= FAIL_MARGIN * a_priori:
            return True
    return False


def _approaching(estimates: Sequence[StepEstimate]) -> bool:
    """At the smallest step the gap is less than half that at the original step, beyond their bars:
    the estimate moves toward the analytic value as h shrinks, as truncation does, not an error."""
    original = estimates[0]
    smallest = min(estimates, key=lambda estimate: estimate.step)
    if smallest.step >= original.step:
        return False
    gap = abs(smallest.analytic - smallest.numerical) + smallest.error_bar.rounding + smallest.error_bar.jitter
    return gap < 0.5 * abs(original.analytic - original.numerical)


def judge_confirmed(
    estimates: Sequence[StepEstimate], tolerance: float, resolution: Resolution, unit: str = "step"
) -> Judgement:
    """The verdict from estimates at several steps (the first is the original step).

    ``estimates`` must already carry their step sensitivity (:func:`with_step_sensitivity`).
    An estimate passes as in :func:`judge_primary` when another step backs it (their
    extrapolation agrees too, or they agree within rounding). The best estimate is the one with
    the smallest bar: the check fails only when the gap exceeds the tolerance and FAIL_MARGIN
    bars there and at one more step (the gap persists as h changes). When no step has consistent
    one-sided slopes it is a suspected kink; otherwise the evidence cannot decide.
    """
    best = min(range(len(estimates)), key=lambda index: (estimates[index].error_bar.total, index))
    own = Resolution(gradient=resolution.gradient, check=0.0)
    passing = [
        index
        for index, estimate in enumerate(estimates)
        if _passes(estimate, tolerance, resolution if index == best else own)
        and _supported(estimates, index, tolerance)
    ]
    if passing:
        chosen = min(passing, key=lambda index: (estimates[index].error_bar.total, index))
        return Judgement(verdict=PASSED, decided_at=chosen, reason=_agreement(estimates[chosen], tolerance, unit))
    persisting = [index for index, estimate in enumerate(estimates) if _disagrees(estimate, tolerance)]
    if best in persisting and len(persisting) >= 2 and not _approaching(estimates):
        return Judgement(verdict=FAILED, decided_at=best, reason=_disagreement(estimates, best, tolerance, unit))
    if _approaching(estimates) and any(estimate.slopes_consistent for estimate in estimates):
        return Judgement(
            verdict=INCONCLUSIVE,
            decided_at=best,
            reason=f"the estimate approaches the analytic value as the {unit} shrinks (curvature too large "
            "for these steps): try a smaller step (--step)",
        )
    if not any(estimate.slopes_consistent for estimate in estimates):
        return Judgement(
            verdict=KINK,
            decided_at=best,
            reason=f"the one-sided slopes disagree at every {unit} tried (a corner, or curvature too large "
            "for these steps): not evidence either way",
        )
    return Judgement(
        verdict=INCONCLUSIVE, decided_at=best, reason=_undecided(estimates, best, tolerance, resolution, unit)
    )


def _number(value: float) -> str:
    return f"{value:.2e}"


def _agreement(estimate: StepEstimate, tolerance: float, unit: str) -> str:
    if estimate.relative_error <= tolerance:
        return (
            f"relative error {_number(estimate.relative_error)} within the tolerance {_number(tolerance)} "
            f"at {unit} {_number(estimate.step)}"
        )
    return (
        f"analytic {_number(estimate.analytic)} and numerical {_number(estimate.numerical)} agree within the error "
        f"bar ±{_number(estimate.error_bar.total)} at {unit} {_number(estimate.step)}, well within the tolerance "
        "of the parameter's largest gradient"
    )


def _disagreement(estimates: Sequence[StepEstimate], best: int, tolerance: float, unit: str) -> str:
    chosen = estimates[best]
    steps = ", ".join(_number(estimate.step) for estimate in estimates if _disagrees(estimate, tolerance))
    return (
        f"analytic {_number(chosen.analytic)} vs numerical {_number(chosen.numerical)} ± "
        f"{_number(chosen.error_bar.total)}: relative error {_number(chosen.relative_error)} beyond the tolerance "
        f"{_number(tolerance)} and the error bar, at {unit}s {steps}"
    )


_REMEDIES = {
    "rounding": (
        "the rounding of f",
        "decide it in float64, at a larger step (--step), or with a smaller |f| (subtract a constant from the loss)",
    ),
    "jitter": ("the objective's nondeterminism (f(θ) varies between calls)", "make the objective deterministic"),
    "step": ("how far the estimate moves between steps", "try another step (--step)"),
}


def _undecided(
    estimates: Sequence[StepEstimate], best: int, tolerance: float, resolution: Resolution, unit: str
) -> str:
    chosen = estimates[best]
    bar = chosen.error_bar
    gap = abs(chosen.analytic - chosen.numerical)
    if _disagrees(chosen, tolerance):
        return (
            f"the disagreement at {unit} {_number(chosen.step)} is not confirmed at another {unit}: "
            "try another step (--step)"
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
