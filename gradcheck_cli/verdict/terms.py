"""The terms of the verdict rules (:mod:`gradcheck_cli.verdict.rules`): an estimate and its error bar, the
verdicts' constants, and the threshold an estimate agrees within and the gap it disagrees beyond.

Scalar work only (no numpy). The rules, and why, are in docs/method.md ("Verdicts").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core.record import Record
from .words import FAILED, INCONCLUSIVE, PASSED, SUSPECTED_KINK

__all__ = [
    "ROUNDING_FACTOR",
    "FAIL_MARGIN",
    "CONFIRMATION_FACTORS",
    "LAST_FACTOR",
    "LARGEST_RELATIVE_STEP",
    "FLOOR_FACTOR",
    "HIGHER_PRECISION_FLOOR_FACTOR",
    "PASSED",
    "FAILED",
    "INCONCLUSIVE",
    "KINK",
    "ErrorBar",
    "JudgedEstimate",
    "DirectionalEstimate",
    "Judgement",
    "Resolution",
    "Standard",
    "Evidence",
    "slopes_agree",
    "threshold",
    "resolution_scale",
    "disagrees",
]


#: Each objective value is trusted to ROUNDING_FACTOR·ε·|f| (ε of the parameter's dtype).
ROUNDING_FACTOR = 4.0
#: A disagreement fails only when it exceeds FAIL_MARGIN times the estimate's error bar.
FAIL_MARGIN = 2.0
#: A coordinate that does not pass at its step h is probed again at h·factor for each factor.
CONFIRMATION_FACTORS = (0.1, 10.0)
#: One that those steps leave undecided is probed once more at h·LAST_FACTOR, where the rounding of a
#: large |f| (a float32 sum over a big layer) weighs 100 times less than at h ...
LAST_FACTOR = 100.0
#: ... unless a probe there would move θ by more than this, relative to max(1, |θ|).
LARGEST_RELATIVE_STEP = 0.5
#: The sensitivity floor: FLOOR_FACTOR times the estimate's expected relative error r² + ε/r, and
#: never finer than the tolerance / FLOOR_FACTOR.
FLOOR_FACTOR = 16.0
#: The floor's factor where the analytic values carry more precision than the parameter's float32
#: or bfloat16 (computed in float64): their own rounding needs no margin, the estimate's does.
HIGHER_PRECISION_FLOOR_FACTOR = 8.0

KINK = SUSPECTED_KINK


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
    coordinate (see :mod:`gradcheck_cli.check.directional` for a direction); ``relative_error`` is
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

    @property
    def bar(self) -> float:
        """The error bar's total, by the name the estimates' columns give it."""
        return self.error_bar.total

    @property
    def consistent(self) -> bool:
        """``slopes_consistent``, by the name the estimates' columns give it."""
        return self.slopes_consistent


@dataclass(frozen=True, slots=True)
class DirectionalEstimate(JudgedEstimate):
    """A directional test's JudgedEstimate, whose ``step`` is the direction's multiplier: so named in
    its JSON, as the text prints it (``multiplier=``)."""

    json_keys = {"step": "multiplier"}


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


@dataclass(frozen=True, slots=True)
class Standard:
    """What an estimate is judged by: the user's ``tolerance``, the ``resolution`` of the gradients
    that matter, the sensitivity ``floor`` (what the estimate can support at its step; None: the
    tolerance) and the ``unit`` its steps are counted in ("step", or a direction's "multiplier")."""

    tolerance: float
    resolution: Resolution
    floor: float | None = None
    unit: str = "step"

    def __post_init__(self):
        if self.floor is None:
            object.__setattr__(self, "floor", self.tolerance)

    def own(self) -> Standard:
        """This standard beside the parameter's own largest gradient only (not the check's)."""
        return Standard(self.tolerance, Resolution(gradient=self.resolution.gradient, check=0.0), self.floor, self.unit)


@dataclass(frozen=True, slots=True)
class Evidence:
    """What f's values say about the estimates at several steps: ``collapsed[i]`` True where f at
    both probes of estimate i equals f(θ) bit for bit (no evidence); ``precision`` the parameter's
    dtype; ``values_precision`` the dtype f's values are all numbers of, when it is less precise (an
    objective computed in float32); ``noise`` the value noise the estimates showed, in units of ε
    (0: none beyond rounding), when the bars already carry it; ``rounding_zero`` the largest |a|
    that is zero up to the rounding of the gradients beside it, all a collapsed estimate can pass;
    ``stateful`` when f(θ) itself varies between calls beyond rounding (then nothing is a kink);
    ``frozen`` when f's values are numbers of a lower precision whose resolution in θ exceeds every
    step tried (a part of f computed in it cannot move: an f that never changes is no evidence)."""

    collapsed: Sequence[bool] = ()
    precision: str = "the parameter's dtype"
    values_precision: str | None = None
    noise: float = 0.0
    rounding_zero: float = 0.0
    stateful: bool = False
    frozen: bool = False


def resolution_scale(resolution: Resolution) -> float:
    """The gradient that matters beside this estimate: the parameter's largest, or the check's."""
    return max(resolution.gradient, resolution.check)


def disagrees(estimate: JudgedEstimate, floor: float) -> bool:
    """A gap beyond the floor and beyond FAIL_MARGIN error bars, at consistent slopes."""
    gap = abs(estimate.analytic - estimate.numerical)
    return estimate.slopes_consistent and gap > max(floor * estimate.scale, FAIL_MARGIN * estimate.error_bar.total)
