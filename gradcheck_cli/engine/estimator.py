"""Three-point finite differences from the actual floating-point probes.

Scalar work only: this module imports nothing but ``math`` from the
standard library (never numpy). The chapter's rule throughout is that the derivative uses the distances to the probes the
computer actually stored, fl(θ−h) and fl(θ+h), never the requested h.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..core.formatting import short_repr
from ..core.record import Record
from ..errors import (
    CollapsedStep,
    InvalidActualSpacing,
    InvalidArgument,
    InvalidStep,
    InvalidStepSequence,
    InvalidTolerance,
    NonFiniteAnalyticGradient,
    NonFiniteEvaluation,
    NonFiniteNumericalGradient,
    NonFiniteOneSidedSlope,
    NonFinitePoint,
    NonFiniteStencilWeight,
    NonScalarEvaluation,
    PerturbationNotFinite,
    PerturbationUnchanged,
)

__all__ = [
    "ProbeGeometry",
    "CentralDifference",
    "GradientComparison",
    "OneSidedSlopeComparison",
    "ScalarGradientCheck",
    "validate_step",
    "validate_steps",
    "validate_tolerance",
    "perturbations",
    "probe_geometry",
    "central_difference",
    "compare_gradients",
    "compare_one_sided_slopes",
    "scalar_gradient_check",
    "real_number",
    "real_scalar",
    "smallest_moving_step",
    "with_smallest_step",
]


@dataclass(frozen=True)
class ProbeGeometry(Record):
    """The actual probes around one point, their distances and stencil weights."""

    minus_point: float
    plus_point: float
    minus_spacing: float
    plus_spacing: float
    left_weight: float
    right_weight: float
    stencil: str


@dataclass(frozen=True)
class CentralDifference(Record):
    """One three-point derivative estimate with all of its evidence (the chapter's field names; its JSON
    keys are the words the chapter's lines print: ``theta``, ``requested_h``, ``actual_h_minus``, ...)."""

    json_keys = {
        "point": "theta",
        "requested_step": "requested_h",
        "minus_point": "theta_minus",
        "plus_point": "theta_plus",
        "minus_spacing": "actual_h_minus",
        "plus_spacing": "actual_h_plus",
        "minus_value": "f_minus",
        "center_value": "f_center",
        "plus_value": "f_plus",
        "derivative": "numerical",
    }

    point: float
    requested_step: float
    minus_point: float
    plus_point: float
    minus_spacing: float
    plus_spacing: float
    minus_value: float
    center_value: float
    plus_value: float
    left_slope: float
    right_slope: float
    left_weight: float
    right_weight: float
    stencil: str
    derivative: float


@dataclass(frozen=True)
class GradientComparison(Record):
    """An analytic candidate against a numerical value, scaled by max(1, |a|, |n|)."""

    analytic: float
    numerical: float
    absolute_error: float
    scale: float
    scaled_error: float
    tolerance: float
    passed: bool


@dataclass(frozen=True)
class OneSidedSlopeComparison(Record):
    """The left and right secant slopes compared like gradients; never a proof."""

    left: float
    right: float
    absolute_gap: float
    scale: float
    scaled_gap: float
    tolerance: float
    consistent: bool


@dataclass(frozen=True)
class ScalarGradientCheck(Record):
    """A central difference and the comparison of one candidate with it."""

    difference: CentralDifference
    comparison: GradientComparison


def real_number(value, argument: str, expected: str) -> float:
    """``value`` as a float if it is one real number, else InvalidArgument naming ``argument``.

    A float, an int, a numpy real scalar or 0-d array, anything with
    ``__float__``; not a bool, a string, a complex number or a sequence. An
    int too large for a float (``10**400``) is refused too.
    """
    if type(value) is float:
        return value
    if isinstance(value, (bool, str, bytes)) or _is_complex(value) or getattr(value, "ndim", 0) != 0:
        raise InvalidArgument(argument=argument, value=short_repr(value), expected=expected)
    try:
        return float(value)
    except OverflowError:
        raise InvalidArgument(
            argument=argument, value=short_repr(value), expected=expected + " within float range"
        ) from None
    except (TypeError, ValueError):
        raise InvalidArgument(argument=argument, value=short_repr(value), expected=expected) from None


def validate_step(step: float, argument: str = "step") -> float:
    """Return ``step`` as a float if it is positive and finite, else raise InvalidStep.

    Something that is not a real number at all is InvalidArgument naming ``argument``.
    """
    step = real_number(step, argument, "a positive finite number")
    if not (math.isfinite(step) and step > 0.0):
        raise InvalidStep(step=step)
    return step


def validate_steps(steps: Sequence[float], argument: str = "steps") -> tuple:
    """``steps`` as a tuple of floats if they are at least two valid steps in strictly decreasing order.

    Each step is checked first (InvalidStep names the first bad one), then
    the sequence (InvalidStepSequence): the step advice and the Taylor test
    both walk from the largest step down.
    """
    if isinstance(steps, (str, bytes)) or not hasattr(steps, "__iter__"):
        raise InvalidArgument(
            argument=argument, value=short_repr(steps), expected="a sequence of positive finite numbers"
        )
    steps = tuple(validate_step(step, argument) for step in steps)
    if len(steps) < 2 or any(later >= earlier for earlier, later in zip(steps, steps[1:])):
        raise InvalidStepSequence(steps=list(steps))
    return steps


def validate_tolerance(tolerance: float, argument: str = "tolerance") -> float:
    """Return ``tolerance`` as a float if it is finite and nonnegative, else raise InvalidTolerance.

    Something that is not a real number at all is InvalidArgument naming ``argument``.
    """
    tolerance = real_number(tolerance, argument, "a finite nonnegative number")
    if not (math.isfinite(tolerance) and tolerance >= 0.0):
        raise InvalidTolerance(tolerance=tolerance)
    return tolerance


def perturbations(point: float, step: float) -> ProbeGeometry:
    """The actual f64 probes fl(point − step), fl(point + step) and their stencil.

    Probes stored in float32 or bfloat16 come from
    :func:`gradcheck_cli.engine.dtypes.dtype_perturbations`, which rounds the exact
    θ ∓ h once into that format (rounding this function's f64 probes again
    would be a double rounding) and then calls :func:`probe_geometry`.

    Parameters
    ----------
    point, step : float
        A finite point and a positive finite requested step.

    Returns
    -------
    ProbeGeometry
        Probes strictly on each side of ``point``, the positive actual
        spacings ``point − minus_point`` and ``plus_point − point``, and the
        weights ``u₊/(u₋+u₊)``, ``u₋/(u₋+u₊)`` with ``u = spacing / max spacing``
        (so that the two spacings are never added and cannot overflow).
    """
    step = validate_step(step)
    point = float(point)
    if not math.isfinite(point):
        raise NonFinitePoint(point=point)
    return probe_geometry(point, step, point - step, point + step)


def probe_geometry(point: float, step: float, minus_point: float, plus_point: float) -> ProbeGeometry:
    """Validate two already-rounded probes around ``point`` and form their stencil.

    The second half of :func:`perturbations`, for probes that were rounded
    elsewhere (into a float32 or bfloat16 parameter). ``point`` and ``step``
    must already be validated; they only name the request in an error.
    """
    for side, probe in (("minus", minus_point), ("plus", plus_point)):
        if not math.isfinite(probe):
            raise PerturbationNotFinite(side=side, point=point, step=step)
        if probe == point:
            raise PerturbationUnchanged(side=side, point=point, step=step)

    minus_spacing = point - minus_point
    plus_spacing = plus_point - point
    for side, probe, spacing in (("minus", minus_point, minus_spacing), ("plus", plus_point, plus_spacing)):
        if not (math.isfinite(spacing) and spacing > 0.0):
            raise InvalidActualSpacing(side=side, point=point, probe=probe, spacing=spacing)

    largest = max(minus_spacing, plus_spacing)
    minus_unit = minus_spacing / largest
    plus_unit = plus_spacing / largest
    left_weight = plus_unit / (minus_unit + plus_unit)
    right_weight = minus_unit / (minus_unit + plus_unit)
    for side, weight in (("minus", left_weight), ("plus", right_weight)):
        if not math.isfinite(weight):
            raise NonFiniteStencilWeight(side=side, value=weight)

    return ProbeGeometry(
        minus_point=minus_point,
        plus_point=plus_point,
        minus_spacing=minus_spacing,
        plus_spacing=plus_spacing,
        left_weight=left_weight,
        right_weight=right_weight,
        stencil="symmetric" if minus_spacing == plus_spacing else "unequal",
    )


def evaluated_value(side: str, value) -> float:
    """One objective value as a finite float, else NonScalarEvaluation or NonFiniteEvaluation naming ``side``."""
    if type(value) is not float:
        value = real_scalar(side, value)
    if not math.isfinite(value):
        raise NonFiniteEvaluation(side=side, value=value)
    return value


def real_scalar(side: str, value) -> float:
    """``value`` as a float if it is one real number (a 0-d array or numpy scalar too), else NonScalarEvaluation.

    A complex value is refused even when its imaginary part is zero, whatever
    its type: Python's ``complex``, numpy's ``complex64`` (not a ``complex``
    subclass), or a 0-d complex array. ``float()`` of the numpy ones would
    quietly keep the real part.
    """
    refused = _not_a_number(value)
    if refused is not None:
        raise NonScalarEvaluation(side=side, returned=refused)
    try:
        shape = getattr(value, "shape", ())
        if shape == () and not (isinstance(value, (str, bytes)) or _is_complex(value)):
            return float(value)
        described = type(value).__name__ + (f" of shape {tuple(shape)}" if shape != () else "")
    except (TypeError, ValueError):
        described = type(value).__name__
    except OverflowError:
        described = f"{type(value).__name__} too large for a float"
    except Exception as error:  # the user's value: its __float__ or .shape raised
        described = f"{type(value).__name__} whose conversion to float raised {type(error).__name__}"
    raise NonScalarEvaluation(side=side, returned=described)


def _not_a_number(value) -> str | None:
    """What ``value`` is when float() would take it but it is no number: a truth value (Python's or
    numpy's bool, a 0-d bool array), or numpy.ma.masked, of which float() warns and makes NaN."""
    if isinstance(value, bool) or getattr(getattr(value, "dtype", None), "kind", None) == "b":
        return f"{type(value).__name__} {value!r}, a truth value"
    if type(value).__name__ == "coroutine":  # closed, so that it is not also "never awaited"
        value.close()
        return "a coroutine: make the objective a plain def, not async def"
    masked_arrays = sys.modules.get("numpy.ma")  # nobody has a masked value before numpy.ma is imported
    if masked_arrays is not None and masked_arrays.is_masked(value) and getattr(value, "shape", ()) == ():
        return "numpy.ma.masked, a missing value"
    return None


def _is_complex(value) -> bool:
    # ``complex`` covers Python's and numpy's complex128; a dtype of kind "c" the other numpy ones.
    return isinstance(value, complex) or getattr(getattr(value, "dtype", None), "kind", None) == "c"


def difference_from_values(
    point: float, step: float, geometry: ProbeGeometry, minus_value: float, center_value: float, plus_value: float
) -> CentralDifference:
    """The weighted three-point estimate from three already-validated values."""
    left_slope = (center_value - minus_value) / geometry.minus_spacing
    if not math.isfinite(left_slope):
        raise NonFiniteOneSidedSlope(side="minus", value=left_slope)
    right_slope = (plus_value - center_value) / geometry.plus_spacing
    if not math.isfinite(right_slope):
        raise NonFiniteOneSidedSlope(side="plus", value=right_slope)
    derivative = geometry.left_weight * left_slope + geometry.right_weight * right_slope
    if not math.isfinite(derivative):
        raise NonFiniteNumericalGradient(value=derivative)
    return CentralDifference(
        point=point,
        requested_step=step,
        minus_point=geometry.minus_point,
        plus_point=geometry.plus_point,
        minus_spacing=geometry.minus_spacing,
        plus_spacing=geometry.plus_spacing,
        minus_value=minus_value,
        center_value=center_value,
        plus_value=plus_value,
        left_slope=left_slope,
        right_slope=right_slope,
        left_weight=geometry.left_weight,
        right_weight=geometry.right_weight,
        stencil=geometry.stencil,
        derivative=derivative,
    )


def central_difference(
    point: float,
    step: float,
    evaluate: Callable[[float], float],
    geometry: ProbeGeometry = None,
) -> CentralDifference:
    """Approximate one derivative from the actual representable probe spacings.

    ``evaluate`` is called exactly three times, in minus, center, plus order,
    and must be deterministic, side-effect-free and smooth across the closed
    probe interval. A passing comparison is evidence for this sampled smooth
    point, not a proof of the derivative; examine possible kinks with
    :func:`compare_one_sided_slopes`.

    Parameters
    ----------
    point : float
        The finite point θ.
    step : float
        The positive finite requested step h.
    evaluate : callable float -> float
        The objective.
    geometry : ProbeGeometry, optional
        Probes already computed by :func:`perturbations` for this point and
        step (the tensor check validates them before any call).

    Raises
    ------
    GradCheckError
        A typed error for an invalid step or point, a probe that overflows or
        rounds back to the point, or a non-finite value, slope or estimate.
    """
    if geometry is None:
        geometry = perturbations(point, step)
    point, step = float(point), float(step)
    minus_value = evaluated_value("minus", evaluate(geometry.minus_point))
    center_value = evaluated_value("center", evaluate(point))
    plus_value = evaluated_value("plus", evaluate(geometry.plus_point))
    return difference_from_values(point, step, geometry, minus_value, center_value, plus_value)


def _scaled_gap(first: float, second: float):
    scale = max(1.0, abs(first), abs(second))
    return abs(first - second), scale, abs(first / scale - second / scale)


def compare_gradients(analytic: float, numerical: float, tolerance: float) -> GradientComparison:
    """Compare gradients after scaling both by max(1, |analytic|, |numerical|).

    The floor at one makes the error absolute for small gradients and
    relative for large ones; the candidate passes exactly when the scaled
    error is no greater than ``tolerance``.
    """
    tolerance = validate_tolerance(tolerance)
    analytic, numerical = float(analytic), float(numerical)
    if not math.isfinite(analytic):
        raise NonFiniteAnalyticGradient(value=analytic)
    if not math.isfinite(numerical):
        raise NonFiniteNumericalGradient(value=numerical)
    absolute_error, scale, scaled_error = _scaled_gap(analytic, numerical)
    return GradientComparison(
        analytic=analytic,
        numerical=numerical,
        absolute_error=absolute_error,
        scale=scale,
        scaled_error=scaled_error,
        tolerance=tolerance,
        passed=scaled_error <= tolerance,
    )


def compare_one_sided_slopes(difference: CentralDifference, tolerance: float) -> OneSidedSlopeComparison:
    """Compare the recorded left and right secant slopes without claiming proof.

    Disagreement can indicate a kink, a step too large for the local
    curvature, or rounding; agreement cannot establish differentiability.
    """
    tolerance = validate_tolerance(tolerance)
    left, right = difference.left_slope, difference.right_slope
    if not math.isfinite(left):
        raise NonFiniteOneSidedSlope(side="minus", value=left)
    if not math.isfinite(right):
        raise NonFiniteOneSidedSlope(side="plus", value=right)
    absolute_gap, scale, scaled_gap = _scaled_gap(left, right)
    return OneSidedSlopeComparison(
        left=left,
        right=right,
        absolute_gap=absolute_gap,
        scale=scale,
        scaled_gap=scaled_gap,
        tolerance=tolerance,
        consistent=scaled_gap <= tolerance,
    )


def scalar_gradient_check(
    point: float,
    analytic: float,
    step: float,
    tolerance: float,
    evaluate: Callable[[float], float],
) -> ScalarGradientCheck:
    """Run a central difference and compare one analytic candidate with it.

    The tolerance is validated before the objective is called; the objective
    has the requirements of :func:`central_difference`.
    """
    validate_tolerance(tolerance)
    try:
        difference = central_difference(point, step, evaluate)
    except PerturbationUnchanged as error:
        raise with_smallest_step(error) from error
    comparison = compare_gradients(analytic, difference.derivative, tolerance)
    return ScalarGradientCheck(difference=difference, comparison=comparison)


def smallest_moving_step(point: float) -> float:
    """The smallest requested step h for which fl(point − h) and fl(point + h) both differ from ``point``.

    Just over half the wider of the two gaps to the neighbouring floats
    (round to nearest, ties to even); infinite next to the largest float.
    """
    point = float(point)
    below = point - math.nextafter(point, -math.inf)
    above = math.nextafter(point, math.inf) - point
    step = max(below, above) / 2.0
    while math.isfinite(step) and (point - step == point or point + step == point):
        step = math.nextafter(step, math.inf)
    return step


def with_smallest_step(error: PerturbationUnchanged) -> PerturbationUnchanged:
    """``error`` as a :class:`CollapsedStep`, which also says the smallest step that would work."""
    smallest = smallest_moving_step(error.point)
    if isinstance(error, CollapsedStep) or not math.isfinite(smallest):
        return error
    return CollapsedStep(side=error.side, point=error.point, step=error.step, smallest_step=smallest)
