"""The chapter's scalar fixtures: quadratic, cubic scan, rounded identity, |x| kink.

Every fixture constant here is the chapter's (the |x| step, which the chapter
does not print, is ours; the library's own defaults live in :mod:`defaults`).
Scalar only: this module imports no numpy, so the scalar subcommands start
fast; the NLL fixture lives in :mod:`nll`.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.record import Record
from ..engine.estimator import (
    OneSidedSlopeComparison,
    ScalarGradientCheck,
    central_difference,
    compare_one_sided_slopes,
    scalar_gradient_check,
)
from ..errors import GradCheckError

STEP_TOLERANCE = 1.0e-6

QUADRATIC_POINT = 3.0
QUADRATIC_STEP = 0.1
QUADRATIC_CANDIDATES = (6.0, 5.5)

CUBIC_POINT = 1.5
STEP_SCAN = (1.0, 1.0e-1, 1.0e-3, 1.0e-5, 1.0e-13, 1.0e-15)

IDENTITY_POINT = 1.0
#: fl(1 − h) and fl(1 + h) land at unequal distances 2⁻⁵³ and 2⁻⁵² from 1.
IDENTITY_STEP = 1.33226762955018780e-16

KINK_POINT = 0.0
KINK_STEP = 1.0e-5
KINK_TOLERANCE = 1.0e-12

LOGIT_SHAPE = (2, 3)
LOGIT_VALUES = (0.0, 1.0, -1.0, 2.0, 0.0, -2.0)
TARGETS = (0, 2)
TENSOR_STEP = 1.0e-5
TENSOR_TOLERANCE = 1.0e-6
TENSOR_SAMPLES = 4

COLLAPSED_POINT = 1.0
COLLAPSED_STEP = 1.0e-20


def quadratic(point: float) -> float:
    """q(θ) = θ²."""
    return point * point


def quadratic_derivative(point: float) -> float:
    """q'(θ) = 2θ."""
    return 2.0 * point


def cubic(point: float) -> float:
    """g(θ) = θ³ − 2θ."""
    return point * point * point - 2.0 * point


def cubic_derivative(point: float) -> float:
    """g'(θ) = 3θ² − 2."""
    return 3.0 * point * point - 2.0


def identity(point: float) -> float:
    """f(x) = x."""
    return point


def quadratic_gradient_check(analytic: float, point=QUADRATIC_POINT, step=QUADRATIC_STEP, tolerance=STEP_TOLERANCE):
    """Check a candidate for q'(θ): the chapter's 6 passes, 5.5 fails."""
    return scalar_gradient_check(point, analytic, step, tolerance, quadratic)


def cubic_step_scan(point=CUBIC_POINT, steps=STEP_SCAN, tolerance=STEP_TOLERANCE):
    """The same cubic check from truncation-dominated to rounded probes."""
    from .scan import step_scan  # only the scan needs it: `gradcheck quadratic` starts without it

    return step_scan(cubic, point, cubic_derivative(point), steps, tolerance)


def rounded_identity_gradient_check(point=IDENTITY_POINT, step=IDENTITY_STEP, tolerance=STEP_TOLERANCE):
    """f(x) = x with unequal actual spacings: each slope is 1, so the estimate is 1."""
    return scalar_gradient_check(point, 1.0, step, tolerance, identity)


@dataclass(frozen=True)
class KinkDiagnostic(Record):
    """|x| at a corner: candidate 0 against the symmetric estimate, and the one-sided slopes."""

    check: ScalarGradientCheck
    slopes: OneSidedSlopeComparison


def absolute_kink_diagnostic(point=KINK_POINT, step=KINK_STEP, tolerance=KINK_TOLERANCE, candidate=0.0):
    """|x| at 0: candidate 0 passes (a false pass) while the slopes −1 and 1 disagree."""
    check = scalar_gradient_check(point, candidate, step, tolerance, abs)
    return KinkDiagnostic(check, compare_one_sided_slopes(check.difference, tolerance))


def collapsed_step_error():
    """The chapter's rejected request: h = 1e-20 at 1 rounds the minus probe back to 1."""
    try:
        central_difference(COLLAPSED_POINT, COLLAPSED_STEP, quadratic)
    except GradCheckError as error:
        return error
    raise AssertionError("h = 1e-20 at 1 must collapse the minus probe")
