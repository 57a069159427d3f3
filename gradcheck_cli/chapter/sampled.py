"""The chapter's sampled tensor gradient check: min(R, N) deterministic coordinates of one array.

It perturbs the caller's own array in place, through any view, and restores the exact original
bits on every path. It validates as the multi-parameter check does (the shared pieces are in
:mod:`~gradcheck_cli.engine.tensors`) and probes with the same column plan
(:mod:`~gradcheck_cli.engine.sweep`), so the two agree bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.record import Record, records_from_rows
from ..engine.dtypes import ProbeDtype
from ..engine.estimator import CentralDifference, GradientComparison, validate_step, validate_tolerance
from ..engine.sampling import SampledCoordinate, coordinate_from_offset, sampled_offsets, validate_samples
from ..engine.sweep import index_columns, plan_columns, slope_columns, stencil_values, with_probes
from ..engine.tensors import parameter_and_gradient, plain_view, plan_coordinates

__all__ = ["CoordinateGradientCheck", "TensorGradientCheck", "sampled_tensor_gradient_check"]


@dataclass(frozen=True, slots=True)
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
        (:func:`~gradcheck_cli.engine.dtypes.dtype_perturbations`); float64 probes
        are the chapter's fl(θ∓h).
    analytic : np.ndarray, same shape
        The candidate gradient (any real dtype that float64 holds exactly;
        a real scalar for a 0-d parameter), validated as
        :func:`parameter_and_gradient` validates it for ``check_gradients``.
    step, tolerance : float
        The requested step h > 0 and the scaled-error tolerance ≥ 0.
    max_samples : int
        R (a numpy integer too; recorded as a Python int); min(R, N)
        coordinates are checked.
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
    dtype, analytic = parameter_and_gradient(parameters, analytic)
    max_samples = validate_samples(max_samples)
    columns = _planned_columns(parameters, analytic, sampled_offsets(parameters.shape, max_samples), dtype, step)
    values = stencil_values(parameters, columns, objective, parameters)
    checks = _coordinate_checks(columns, step, tolerance, values)
    return TensorGradientCheck(
        shape=tuple(parameters.shape),
        requested_samples=max_samples,
        passed=all(check.comparison.passed for check in checks),
        checks=checks,
    )


def _coordinate_checks(columns, step: float, tolerance: float, values: tuple) -> tuple:
    """Every selected coordinate's CoordinateGradientCheck, from its probe columns and objective values."""
    slopes = slope_columns(columns, *values)  # all finite: stencil_values raised where one is not
    differences = _differences(columns, step, values, (slopes.left, slopes.right, slopes.derivative))
    comparisons = _comparisons(columns.analytic, slopes.derivative, tolerance)
    index = list(zip(*(axis.tolist() for axis in index_columns(columns.offsets, columns.shape))))
    coordinates = index if columns.shape else [()] * len(columns)
    rows = zip(columns.offsets.tolist(), coordinates, differences, comparisons)
    return tuple(records_from_rows(CoordinateGradientCheck, rows))


def _planned_columns(parameters, analytic, offsets: list, dtype: ProbeDtype, step: float):
    """The selected coordinates' columns with their probes at ``step``, validated as
    :func:`plan_coordinates` validates them: where θ or the analytic value is not finite, it decides
    (the first coordinate in error raises, in the chapter's order); else the first invalid probe is
    its typed error in AtCoordinate."""
    plain = plain_view(parameters)
    columns = plan_columns(plain, analytic, offsets, dtype, step, probes=False)
    unusable = ~(np.isfinite(columns.theta) & np.isfinite(columns.analytic))
    if unusable.any():
        first = int(np.argmax(unusable))
        samples = [SampledCoordinate(k, coordinate_from_offset(columns.shape, k)) for k in offsets[: first + 1]]
        plan_coordinates(parameters, analytic, samples, dtype, step)  # raises
    return with_probes(columns, dtype, step)


def _differences(columns, step: float, values: tuple, slopes: tuple) -> list:
    """Every coordinate's CentralDifference, from the columns (the scalar code's very operations)."""
    stencils = np.where(columns.minus_spacing == columns.plus_spacing, "symmetric", "unequal").tolist()
    fields = (
        columns.theta,
        np.full(len(columns), step),
        columns.minus_point,
        columns.plus_point,
        columns.minus_spacing,
        columns.plus_spacing,
        *values,
        *slopes[:2],
        columns.left_weight,
        columns.right_weight,
    )
    rows = zip(*(column.tolist() for column in fields), stencils, slopes[2].tolist())
    return records_from_rows(CentralDifference, rows)


def _comparisons(analytic: np.ndarray, numerical: np.ndarray, tolerance: float) -> list:
    """Every coordinate's GradientComparison, as :func:`~gradcheck_cli.engine.estimator.compare_gradients`
    computes it, from the columns."""
    scale = np.maximum(np.maximum(1.0, np.abs(analytic)), np.abs(numerical))
    absolute_error = np.abs(analytic - numerical)
    scaled_error = np.abs(analytic / scale - numerical / scale)
    passed = (scaled_error <= tolerance).tolist()
    columns = (analytic, numerical, absolute_error, scale, scaled_error)
    rows = zip(*(column.tolist() for column in columns), [tolerance] * len(passed), passed)
    return records_from_rows(GradientComparison, rows)
