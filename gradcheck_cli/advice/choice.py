"""Which of the advised steps to keep for a whole parameter: never one at which a probe leaves f
bit-identical, nor one whose probes collapse at most of the parameter's coordinates (docs/method.md,
"Step advice"). The functions read :class:`~gradcheck_cli.advice.steps.StepAdvice` records."""

from __future__ import annotations

from dataclasses import replace

__all__ = [
    "collapsed_fraction",
    "moving_for_the_parameter",
    "lower_precision_seen",
    "moves_f",
    "both_probes_move",
    "regime",
]


def regime(index: int, advised: int) -> str:
    return "truncation" if index < advised else ("advised" if index == advised else "rounding")


def advised_at(advice, advised: int):
    """``advice`` with the estimate at index ``advised`` as its advised step (regimes relabelled)."""
    estimates = tuple(
        replace(estimate, regime=regime(index, advised)) for index, estimate in enumerate(advice.estimates)
    )
    best = estimates[advised]
    return replace(
        advice,
        advised_step=best.requested_step,
        derivative=best.difference.derivative,
        estimated_error=best.estimated_error,
        scaled_estimated_error=best.scaled_estimated_error,
        advised_at_edge=advised in (0, len(estimates) - 1),
        estimates=estimates,
    )


def collapsed_fraction(array, step: float, lower_precision: bool) -> float:
    """The fraction of ``array``'s coordinates at which θ ± step rounds back onto θ in its dtype (and, with
    ``lower_precision``, in float32: an objective casting a float64 parameter to float32 would not see it)."""
    import numpy as np

    values = np.asarray(array).astype(np.float64).reshape(-1)
    with np.errstate(all="ignore"):
        plus, minus = (values + step).astype(array.dtype), (values - step).astype(array.dtype)
        collapsed = (plus.astype(np.float64) == values) | (minus.astype(np.float64) == values)
        if lower_precision and array.dtype.itemsize > 4:
            single = values.astype(np.float32)
            collapsed |= ((values + step).astype(np.float32) == single) | ((values - step).astype(np.float32) == single)
    return float(np.mean(collapsed)) if values.size else 0.0


def lower_precision_seen(advice) -> bool:
    """Whether a probe left f bit-identical at some step (it moved in the parameter's own dtype)."""
    return any(
        e.difference.center_value in (e.difference.minus_value, e.difference.plus_value) for e in advice.estimates
    )


def moves_f(advice) -> bool:
    """Whether both probes of the advised step moved f."""
    return both_probes_move(next(e.difference for e in advice.estimates if e.regime == "advised"))


def both_probes_move(difference) -> bool:
    """Whether f(θ − h) and f(θ + h) both differ from f(θ)."""
    return difference.minus_value != difference.center_value != difference.plus_value


def moving_for_the_parameter(advice, array, lower: bool = False):
    """The advice re-chosen, if its step's probes collapse at most of the parameter's coordinates, among the
    steps at which f moved at both probes: the smallest estimated error where at most half collapse,
    else the least collapsed. A probe that left f bit-identical at the representative coordinate is
    taken as a float32 inside for a float64 parameter (float32's grid then counts as collapse)."""
    estimates = advice.estimates
    lower = lower or lower_precision_seen(advice)
    current = next(index for index, estimate in enumerate(estimates) if estimate.regime == "advised")
    if collapsed_fraction(array, advice.advised_step, lower) <= 0.5:
        return advice
    moved = [index for index, e in enumerate(estimates) if both_probes_move(e.difference)] or [current]
    fractions = {index: collapsed_fraction(array, estimates[index].requested_step, lower) for index in moved}
    # At most half collapsed ties at 0.5 and is decided by the estimated error; beyond, the least collapsed.
    best = min(moved, key=lambda index: (max(fractions[index], 0.5), estimates[index].estimated_error, index))
    return advice if best == current else advised_at(advice, best)
