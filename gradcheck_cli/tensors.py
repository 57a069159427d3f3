"""The sampled tensor gradient check.

It perturbs the caller's own array in place, through any view, and restores
the exact original bits on every path, exceptions and KeyboardInterrupt
included. The coordinates come from :mod:`sampling` (re-exported here).
"""

import math
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .dtypes import ProbeDtype, dtype_perturbations, probe_dtype
from .errors import (
    AtCoordinate,
    GradCheckError,
    GradientShapeMismatch,
    NonFiniteAnalyticGradient,
    NotAnArray,
    ReadOnlyArray,
    UnsupportedDtype,
)
from .estimator import (
    CentralDifference,
    GradientComparison,
    central_difference,
    compare_gradients,
    validate_step,
    validate_tolerance,
)
from .records import Record
from .sampling import SampledCoordinate, coordinate_from_offset, element_count, sample_tensor_coordinates

__all__ = [
    "SampledCoordinate",
    "CoordinateGradientCheck",
    "TensorGradientCheck",
    "element_count",
    "coordinate_from_offset",
    "sample_tensor_coordinates",
    "sampled_tensor_gradient_check",
]


@dataclass(frozen=True)
class CoordinateGradientCheck(Record):
    """The central difference and comparison at one selected coordinate."""

    flat_index: int
    coordinate: tuple
    difference: CentralDifference
    comparison: GradientComparison


@dataclass(frozen=True)
class TensorGradientCheck(Record):
    """Every selected coordinate's check; ``passed`` when all of them passed."""

    shape: tuple
    requested_samples: int
    passed: bool
    checks: tuple


def writable_parameters(parameters, role: str = "parameters") -> ProbeDtype:
    """The :class:`ProbeDtype` of a writable float64, float32 or bfloat16 array, else a typed error."""
    if not isinstance(parameters, np.ndarray):
        raise NotAnArray(role=role, type_name=type(parameters).__name__)
    dtype = probe_dtype(parameters.dtype, role=role)
    if not parameters.flags.writeable:
        raise ReadOnlyArray(role=role)
    return dtype


def real_analytic(analytic, role: str = "analytic") -> np.ndarray:
    """``analytic`` if it is an array of a real dtype that float64 holds (bfloat16 included)."""
    if not isinstance(analytic, np.ndarray):
        raise NotAnArray(role=role, type_name=type(analytic).__name__)
    real = analytic.dtype.kind in "fiu" and analytic.dtype.itemsize <= 8
    if not (real or analytic.dtype.name == "bfloat16"):
        raise UnsupportedDtype(role=role, dtype=str(analytic.dtype), expected="a real float64-representable dtype")
    return analytic


def parameter_and_gradient(parameters, analytic) -> tuple:
    """Validate one parameter array and its analytic gradient; return (ProbeDtype, gradient array).

    The parameters must be a writable float64, float32 or bfloat16 array;
    the gradient a real array of the same shape (a scalar is accepted for a
    0-d parameter: ``np.cos(np.array(0.0))`` is one).
    """
    dtype = writable_parameters(parameters)
    if isinstance(analytic, (np.generic, float, int)) and not isinstance(analytic, bool):
        analytic = np.asarray(analytic)
    analytic = real_analytic(analytic)
    if parameters.shape != analytic.shape:
        raise GradientShapeMismatch(parameters=list(parameters.shape), analytic=list(analytic.shape))
    return dtype, analytic


def at_coordinate(coordinate, error: GradCheckError) -> AtCoordinate:
    """Wrap ``error`` with the coordinate it happened at."""
    return AtCoordinate(coordinate=list(coordinate), source=error)


def probing_objective(parameters: np.ndarray, index: tuple, objective: Callable) -> Callable[[float], float]:
    """A scalar function of one coordinate that writes the probe into ``parameters``.

    The exact original element is written back before the value is even
    looked at, whatever the objective does (returns, raises, is interrupted).
    The probe must be a value of the array's dtype, so writing it is exact.
    """
    original = parameters[index]

    def evaluate(probe: float):
        try:
            parameters[index] = probe
            return objective(parameters)
        finally:
            parameters[index] = original

    return evaluate


def sampled_tensor_gradient_check(
    parameters: np.ndarray,
    analytic: np.ndarray,
    step: float,
    tolerance: float,
    max_samples: int,
    objective: Callable[[np.ndarray], float],
) -> TensorGradientCheck:
    """Check deterministic tensor coordinates while restoring every probed value.

    Every selected coordinate is validated (probes and analytic value) before
    the first objective call, so a late invalid coordinate cannot leave a
    partial result. Then for each coordinate the objective is called three
    times, minus, center, plus, with the probe written into ``parameters``
    itself (no copy, through any view) and the original bits restored right
    after each call.

    Parameters
    ----------
    parameters : np.ndarray of float64, float32 or bfloat16, any shape, writable
        Perturbed in place; bit-identical afterwards on every path. Probes
        are rounded once into the array's dtype
        (:func:`~gradcheck_cli.dtypes.dtype_perturbations`); float64 probes
        are the chapter's fl(θ∓h).
    analytic : np.ndarray, same shape
        The candidate gradient (any real dtype that float64 holds exactly).
    step, tolerance : float
        The requested step h > 0 and the scaled-error tolerance ≥ 0.
    max_samples : int
        R; min(R, N) coordinates are checked.
    objective : callable ndarray -> float
        Deterministic, side-effect-free, smooth across every probe interval.

    Returns
    -------
    TensorGradientCheck

    Raises
    ------
    GradCheckError
        A typed error before any call for a bad request; errors during the
        check are wrapped in AtCoordinate with the coordinate.
    """
    step = validate_step(step)
    tolerance = validate_tolerance(tolerance)
    dtype = writable_parameters(parameters)
    analytic = real_analytic(analytic)
    if parameters.shape != analytic.shape:
        raise GradientShapeMismatch(parameters=list(parameters.shape), analytic=list(analytic.shape))

    samples = sample_tensor_coordinates(parameters.shape, max_samples)
    candidates = []
    for sample in samples:
        index = sample.coordinate
        point = float(parameters[index])
        try:
            geometry = dtype_perturbations(point, step, dtype)
        except GradCheckError as error:
            raise at_coordinate(index, error) from error
        analytic_value = float(analytic[index])
        if not math.isfinite(analytic_value):
            raise at_coordinate(index, NonFiniteAnalyticGradient(value=analytic_value))
        candidates.append((sample, point, geometry, analytic_value))

    checks = []
    for sample, point, geometry, analytic_value in candidates:
        evaluate = probing_objective(parameters, sample.coordinate, objective)
        try:
            difference = central_difference(point, step, evaluate, geometry)
            comparison = compare_gradients(analytic_value, difference.derivative, tolerance)
        except GradCheckError as error:
            raise at_coordinate(sample.coordinate, error) from error
        checks.append(CoordinateGradientCheck(sample.flat_index, sample.coordinate, difference, comparison))

    return TensorGradientCheck(
        shape=tuple(parameters.shape),
        requested_samples=max_samples,
        passed=all(check.comparison.passed for check in checks),
        checks=tuple(checks),
    )
