"""Why a verdict is what it is, in one sentence: the reasons :mod:`gradcheck_cli.verdict.rules`'s rules give."""

from __future__ import annotations

from collections.abc import Sequence

from .terms import FAIL_MARGIN, ROUNDING_FACTOR, JudgedEstimate, Resolution, disagrees, resolution_scale, threshold

__all__ = [
    "NOISE_LIMIT",
    "agreement",
    "collapse_reason",
    "disagreement_reason",
    "evidence_note",
    "flat_reason",
    "stateful_slopes_reason",
    "noise_note",
    "undecided_reason",
]


def evidence_note(estimates: Sequence[JudgedEstimate], usable: list, noise: float, precision: str, values_precision):
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
        "the objective computes in lower precision inside (float32?), is noisy, or is a small difference "
        "of much larger terms (whose rounding that is, not ε·|f|'s)"
    )


def _steps_tried(estimates: Sequence[JudgedEstimate], unit: str) -> str:
    """``steps 6.06e-07, 6.06e-06 and 6.06e-05``: every step of the estimates, smallest first."""
    steps = [_number(step) for step in sorted(estimate.step for estimate in estimates)]
    listed = steps[0] if len(steps) == 1 else ", ".join(steps[:-1]) + " and " + steps[-1]
    return f"{unit}{'s' if len(steps) > 1 else ''} {listed}"


def collapse_reason(estimates: Sequence[JudgedEstimate], unit: str, precision: str) -> str:
    """Why estimates whose probes all left f bit-identical decide nothing."""
    best = min(estimates, key=lambda estimate: estimate.error_bar.total)
    return (
        f"f did not change at any {unit} tried ({_steps_tried(estimates, unit)}), which bounds the derivative "
        f"only to ±{_number(best.error_bar.total)}, not enough to tell the analytic value {_number(best.analytic)} "
        f"from 0: try a larger step (parameter step); if f never moves, does the objective read the array it was "
        f"given, or compute in lower precision than {precision}?"
    )


def flat_reason(estimates: Sequence[JudgedEstimate], best: int, unit: str) -> str:
    """Why a flat f beside a nonzero analytic value fails: what was observed, no cause."""
    chosen = estimates[best]
    return (
        f"f does not change here: bit-identical to f(θ) at both probes of every {unit} tried "
        f"({_steps_tried(estimates, unit)}), so the numerical derivative is 0 ± {_number(chosen.error_bar.total)}, "
        f"while the analytic value is {_number(chosen.analytic)}, beyond {FAIL_MARGIN:g}× that bar"
    )


def stateful_slopes_reason(unit: str) -> str:
    """Why slopes that disagree at every step are no kink when f(θ) varies between calls."""
    return (
        f"the one-sided slopes disagree at every {unit} tried, but f(θ) itself varies between calls (the "
        "objective is nondeterministic or stateful): that is no evidence of a corner, nor of anything else; "
        "make the objective deterministic"
    )


def _number(value: float) -> str:
    return f"{value:.2e}"


def agreement(estimate: JudgedEstimate, tolerance: float, floor: float, unit: str = "step") -> str:
    """Why ``estimate`` passes, in one sentence."""
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


def disagreement_reason(
    estimates: Sequence[JudgedEstimate], usable: list, best: int, tolerance: float, floor: float, unit: str
) -> str:
    chosen = estimates[best]
    steps = ", ".join(_number(estimates[index].step) for index in usable if disagrees(estimates[index], floor))
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


def undecided_reason(
    estimates: Sequence[JudgedEstimate],
    best: int,
    tolerance: float,
    floor: float,
    resolution: Resolution,
    unit: str,
    precision: str = "float64",
) -> str:
    chosen = estimates[best]
    bar = chosen.error_bar
    gap = abs(chosen.analytic - chosen.numerical)
    if disagrees(chosen, floor):
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
    if largest == "step" and precision in (
        "float32",
        "bfloat16",
    ):  # rounding below, truncation above: float64 resolves both
        remedy += ", or recheck the same problem in float64, whose rounding is 10⁸ times finer"
    unresolved = ""
    if bar.total > tolerance * resolution_scale(resolution) and abs(chosen.analytic) <= bar.total:
        unresolved = (
            f", more than {_number(tolerance)}× the parameter's largest gradient ({_number(resolution.gradient)}) "
            "and than its share of f's largest one-step change, so the loss cannot resolve it at this precision"
        )
    return (
        f"the gap {_number(gap)} at {unit} {_number(chosen.step)} is within {FAIL_MARGIN:g}× the error bar "
        f"±{_number(bar.total)}, set by {cause}{unresolved}: {remedy}"
    )
