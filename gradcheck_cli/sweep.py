"""The coordinate sweep, column-wise: every selected coordinate's probes planned at once, the
probing loop, and every estimate with its error bar and its verdict at the first step, as numpy
columns: the one engine that the first step, the confirmation steps (h/10, 10h) and the
directional test all use.

The probes are :func:`~gradcheck_cli.dtypes.dtype_perturbations`' bit for bit; where the columns
find a probe or slope unusable, the chapter's own validation (:func:`~gradcheck_cli.chapter.estimator.probe_geometry`,
:func:`~gradcheck_cli.chapter.estimator.difference_from_values`) decides and raises its typed error. How the
verdict is decided is docs/method.md ("Verdicts").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from .chapter.estimator import CentralDifference, difference_from_values, evaluated_value, probe_geometry
from .chapter.sampling import at_coordinate
from .dtypes import PROBE_DTYPES, ProbeDtype
from .errors import GradCheckError, ReadOnlyArray
from .judge import (
    FLOOR_FACTOR,
    HIGHER_PRECISION_FLOOR_FACTOR,
    NOISE_LIMIT,
    ROUNDING_FACTOR,
    ErrorBar,
    Resolution,
    StepEstimate,
    verdict_passes,
)

__all__ = [
    "ProbeColumns",
    "index_columns",
    "plan_columns",
    "with_probes",
    "probe_values",
    "stencil_values",
    "difference_at",
    "SlopeColumns",
    "slope_columns",
    "EstimateColumns",
    "estimate_columns",
    "stencil_estimates",
    "PrimaryColumns",
    "primary_columns",
    "passes",
    "sensitivity_floors",
    "floor_factor",
    "value_epsilons",
    "ObservedNoise",
    "observed_noise",
    "series_noise",
]


@dataclass(frozen=True)
class ProbeColumns:
    """One parameter's selected coordinates, a column each (all float64 but ``offsets``).

    ``offsets`` are row-major flat offsets, in the order the coordinates are probed. ``theta``
    and ``analytic`` are θ and the candidate there. ``step`` and the geometry columns are None
    until a step is chosen (``step="auto"`` plans them after the advice).
    """

    shape: tuple
    offsets: np.ndarray
    theta: np.ndarray
    analytic: np.ndarray
    step: np.ndarray | None = None
    minus_point: np.ndarray | None = None
    plus_point: np.ndarray | None = None
    minus_spacing: np.ndarray | None = None
    plus_spacing: np.ndarray | None = None
    left_weight: np.ndarray | None = None
    right_weight: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.offsets)

    def coordinate(self, k: int) -> tuple:
        """The index tuple of the k-th coordinate."""
        return tuple(int(position[0]) for position in index_columns(self.offsets[k : k + 1], self.shape))


def index_columns(offsets: np.ndarray, shape: tuple) -> tuple:
    """``np.unravel_index`` of row-major ``offsets``, also for a 0-d shape (where it is ())."""
    return np.unravel_index(offsets, shape) if shape else ()


def plan_columns(array: np.ndarray, gradient: np.ndarray, offsets, dtype: ProbeDtype, step: float | None, probes=True):
    """θ and the analytic value at ``offsets`` (both already validated finite), and, with ``probes``,
    the probes at the requested ``step`` (None: the dtype's default) validated like
    :func:`~gradcheck_cli.dtypes.dtype_perturbations`: the first invalid one is its typed error in
    AtCoordinate."""
    offsets = np.asarray(offsets, dtype=np.intp).reshape(-1)
    index = index_columns(offsets, array.shape)
    theta = np.asarray(np.ndarray.__getitem__(array, index), dtype=np.float64).reshape(-1)
    analytic = np.asarray(np.ndarray.__getitem__(np.asarray(gradient), index), dtype=np.float64).reshape(-1)
    columns = ProbeColumns(tuple(array.shape), offsets, theta, analytic)
    return with_probes(columns, dtype, step) if probes else columns


def with_probes(columns: ProbeColumns, dtype: ProbeDtype, step: float | None) -> ProbeColumns:
    """``columns`` with the probes and stencil at ``step`` (None: ε^(1/3)·max(1, |θ|) each)."""
    theta = columns.theta
    with np.errstate(all="ignore"):  # Python floats never warn: neither does their arithmetic here
        if step is None:
            steps = dtype.default_step(theta)
        else:
            steps = np.full(theta.shape, float(step))
        minus, plus = _rounded_probes(theta, steps, dtype)
        minus_spacing = theta - minus
        plus_spacing = plus - theta
        largest = np.maximum(minus_spacing, plus_spacing)
        minus_unit = minus_spacing / largest
        plus_unit = plus_spacing / largest
        left_weight = plus_unit / (minus_unit + plus_unit)
        right_weight = minus_unit / (minus_unit + plus_unit)
        valid = np.isfinite(minus) & np.isfinite(plus) & (minus != theta) & (plus != theta)
        valid &= np.isfinite(minus_spacing) & (minus_spacing > 0.0) & np.isfinite(plus_spacing) & (plus_spacing > 0.0)
        valid &= np.isfinite(left_weight) & np.isfinite(right_weight)
    for k in np.flatnonzero(~valid).tolist():  # the chapter's validation decides (the first raises)
        geometry = _geometry(columns, k, float(steps[k]), float(minus[k]), float(plus[k]))
        minus_spacing[k], plus_spacing[k] = geometry.minus_spacing, geometry.plus_spacing
        left_weight[k], right_weight[k] = geometry.left_weight, geometry.right_weight
    return ProbeColumns(
        columns.shape,
        columns.offsets,
        theta,
        columns.analytic,
        steps,
        minus,
        plus,
        minus_spacing,
        plus_spacing,
        left_weight,
        right_weight,
    )


def _geometry(columns: ProbeColumns, k: int, step: float, minus: float, plus: float):
    """:func:`~gradcheck_cli.chapter.estimator.probe_geometry` of the k-th coordinate's rounded probes; its
    typed error in AtCoordinate."""
    try:
        return probe_geometry(float(columns.theta[k]), step, minus, plus)
    except GradCheckError as error:
        raise at_coordinate(columns.coordinate(k), error) from error


def _rounded_probes(theta: np.ndarray, steps: np.ndarray, dtype: ProbeDtype) -> tuple:
    """fl(θ − h), fl(θ + h) rounded once into ``dtype`` (as f64 columns)."""
    if dtype.significand_bits == 53:
        return theta - steps, theta + steps
    if dtype.significand_bits == 24:
        return _float32_rounded(theta, -steps), _float32_rounded(theta, steps)
    # bfloat16: one exact rational rounding per probe, as dtype_perturbations does it.
    pairs = [(Fraction(t), Fraction(h)) for t, h in zip(theta.tolist(), steps.tolist())]
    minus = [dtype.round_exact(point - step) for point, step in pairs]
    plus = [dtype.round_exact(point + step) for point, step in pairs]
    return np.array(minus, dtype=np.float64), np.array(plus, dtype=np.float64)


def _float32_rounded(theta: np.ndarray, shift: np.ndarray) -> np.ndarray:
    """The exact θ + shift rounded once to float32 (no double rounding through f64).

    s = fl64(θ + shift) and its exact residual e (TwoSum). The exact sum lies between s and the
    next f64 toward e, so when both round to the same float32 that is its rounding; where they do
    not (a float32 midpoint or an overflow between them), the exact rational rounding decides.
    """
    with np.errstate(all="ignore"):
        return _float32_rounded_quietly(theta, shift)


def _float32_rounded_quietly(theta: np.ndarray, shift: np.ndarray) -> np.ndarray:
    total = theta + shift
    back = total - theta
    residual = (theta - (total - back)) + (shift - back)
    rounded = total.astype(np.float32).astype(np.float64)
    inexact = (residual != 0.0) | ~np.isfinite(total)
    if inexact.any():
        beyond = np.nextafter(total, np.where(residual > 0.0, np.inf, -np.inf))
        hard = inexact & (beyond.astype(np.float32).astype(np.float64) != rounded)
        hard |= ~np.isfinite(total)
        for k in np.flatnonzero(hard).tolist():
            rounded[k] = PROBE_DTYPES["float32"].round_exact(Fraction(float(theta[k])) + Fraction(float(shift[k])))
    return rounded


def probe_values(
    array: np.ndarray,
    columns: ProbeColumns,
    start: int,
    stop: int,
    objective: Callable,
    argument,
    minus_values: list,
    plus_values: list,
    progress: Callable | None = None,
    center: float | None = None,
) -> None:
    """Probe coordinates ``start:stop``: each one's θ−h and θ+h written into ``array`` in turn, the
    objective called as ``objective(argument)``, and θ's exact bits written back before the value
    is looked at, whatever the objective does. The values are appended to ``minus_values`` and
    ``plus_values``.

    As the chapter's scalar check does, in this order: a non-finite or non-scalar value, or the array made
    read-only by the objective, is its typed error in AtCoordinate right after that call; with
    ``center`` (f(θ)), a coordinate whose slopes or estimate are not finite is its typed error
    right after its second call. ``progress(k)`` after each coordinate k (counted from 1).
    """
    probes = (columns.minus_point[start:stop], columns.plus_point[start:stop])
    values = _probe_calls(array, columns, start, probes, _PAIR, objective, argument, progress, center)
    minus_values += values[0::2]
    plus_values += values[1::2]


def stencil_values(array: np.ndarray, columns: ProbeColumns, objective: Callable, argument) -> tuple:
    """The chapter's three calls at every coordinate, minus, center, plus, in turn (the center call
    with θ itself written): as :func:`probe_values`, and a coordinate whose slopes or estimate are
    not finite is its typed error right after its third call. An error the objective raises that is
    a GradCheckError is wrapped in AtCoordinate, as the chapter's check wraps it. Returns the
    columns (minus values, center values, plus values)."""
    probes = (columns.minus_point, columns.theta, columns.plus_point)
    values = _probe_calls(array, columns, 0, probes, _STENCIL, objective, argument, wrap_objective_errors=True)
    return tuple(np.array(values[side::3], dtype=np.float64) for side in range(3))


_PAIR = ("minus", "plus")
_STENCIL = ("minus", "center", "plus")
#: A value below min(h₋, h₊, 1)·2^999 in magnitude at each call of a coordinate: its slopes and its
#: estimate are finite (|f − f'| < 2^1000·min(h₋, h₊), weights at most 1), so no check is needed.
_VALUE_BOUND = 2.0**999


def _probe_calls(
    array, columns, start, probes, sides, objective, argument, progress=None, center=None, wrap_objective_errors=False
) -> list:
    """The write-probe/call/write-back loop: coordinate ``start + k``'s probes in turn (the k-th
    entry of each column of ``probes``, one column per side in ``sides``); returns the values in
    call order.

    Writes go through ndarray's own flat iterator of ``array`` (row-major offsets, any layout, never
    a subclass's indexing), which refuses a write once the objective made the array read-only: the
    write of θ back is also the read-only check, and θ is then written through a view made before
    the first call, which stays writable. A value that is a float within the coordinate's
    bound needs no other check; any other is converted or refused by the scalar rules, and a
    coordinate with one such value gets the chapter's finite-slopes rule (:func:`difference_at`),
    with the shared f(θ) ``center`` (pairs; none without it) or its own center value (the stencil).
    """
    width, stop = len(sides), start + len(probes[0])
    flat = np.ndarray.flat.__get__(array)
    spare = np.ndarray.flat.__get__(np.ndarray.view(array, np.ndarray))  # stays writable whatever the flags of array
    if center is None and width == 2:  # no slopes to check: a finite float is all a value must be
        bound = np.full(stop - start, math.inf)
    else:
        with np.errstate(all="ignore"):
            bound = np.minimum(np.minimum(columns.minus_spacing[start:stop], columns.plus_spacing[start:stop]), 1.0)
            bound *= _VALUE_BOUND
            if center is not None:
                bound[~(abs(center) < bound)] = 0.0  # every value then takes the checked path
    rows = zip(
        columns.offsets[start:stop].tolist(), columns.theta[start:stop].tolist(), (-bound).tolist(), bound.tolist()
    )
    values, float64 = [], np.float64
    add = values.append
    for (offset, original, low, high), coordinate_probes in zip(rows, zip(*(side.tolist() for side in probes))):
        settled = True
        for probe in coordinate_probes:
            try:
                flat[offset] = probe
                value = objective(argument)
            except BaseException as error:
                spare[offset] = original
                if wrap_objective_errors and isinstance(error, GradCheckError):
                    raise at_coordinate(columns.coordinate(start + len(values) // width), error) from error
                raise
            try:
                flat[offset] = original
            except ValueError:  # the objective made the array read-only
                spare[offset] = original
                error = ReadOnlyArray(role="parameters", during_check=True)
                raise at_coordinate(columns.coordinate(start + len(values) // width), error) from error
            if type(value) is float64:  # numpy's float64, a float subclass, is common enough to come first
                value = float(value)
            elif type(value) is not float:
                value = _checked(value, sides[len(values) % width], columns, start + len(values) // width)
            if not low < value < high:  # a value that is not finite is its typed error here
                value = _checked(value, sides[len(values) % width], columns, start + len(values) // width)
                settled = False
            add(value)
        if not settled or progress is not None:
            _settle(columns, start + len(values) // width - 1, values[-width:], center, settled, progress)
    return values


def _settle(columns: ProbeColumns, k: int, values: list, center, settled: bool, progress) -> None:
    """After coordinate k's last call: the finite-slopes rule unless ``settled``, then ``progress``."""
    if not settled and (center is not None or len(values) == 3):
        minus, middle, plus = (values[0], center, values[1]) if len(values) == 2 else values
        difference_at(columns, k, minus, middle, plus)  # the chapter's rule raises where it must
    if progress is not None:
        progress(k + 1)


def difference_at(columns: ProbeColumns, k: int, minus: float, center: float, plus: float) -> CentralDifference:
    """Coordinate k's CentralDifference at its first step, by the scalar code; its typed error (a
    non-finite slope or estimate) in AtCoordinate."""
    point, step = float(columns.theta[k]), float(columns.step[k])
    try:
        geometry = probe_geometry(point, step, float(columns.minus_point[k]), float(columns.plus_point[k]))
        return difference_from_values(point, step, geometry, minus, center, plus)
    except GradCheckError as error:
        raise at_coordinate(columns.coordinate(k), error) from error


def _checked(value, side: str, columns: ProbeColumns, k: int) -> float:
    """An objective value that is not a finite Python float: converted, or its typed error."""
    try:
        return evaluated_value(side, value)
    except GradCheckError as error:
        raise at_coordinate(columns.coordinate(k), error) from error


@dataclass(frozen=True)
class SlopeColumns:
    """Each coordinate's one-sided slopes and three-point estimate at its first step h.

    ``finite`` is False where a slope or the estimate is not finite (the scalar code's typed
    error, :func:`~gradcheck_cli.chapter.estimator.difference_from_values`, is raised there).
    """

    left: np.ndarray
    right: np.ndarray
    derivative: np.ndarray
    finite: np.ndarray


def slope_columns(columns: ProbeColumns, minus_values: np.ndarray, center: float, plus_values: np.ndarray):
    """The columns of what :func:`~gradcheck_cli.chapter.estimator.difference_from_values` computes."""
    with np.errstate(all="ignore"):
        left = (center - minus_values) / columns.minus_spacing
        right = (plus_values - center) / columns.plus_spacing
        derivative = columns.left_weight * left + columns.right_weight * right
        finite = np.isfinite(left) & np.isfinite(right) & np.isfinite(derivative)
    return SlopeColumns(left, right, derivative, finite)


@dataclass(frozen=True)
class EstimateColumns:
    """Estimates at one step each, as columns: the one place an estimate's error bar is written.

    ``step`` the requested step (a direction's multiplier), ``analytic`` and ``numerical`` the two
    values, ``scale`` what the tolerance is relative to, ``relative_error`` |a − n| / scale (0 where
    the scale is 0), the bar's ``rounding`` ROUNDING_FACTOR·ε·max|f|·gain and ``jitter``·gain and
    their sum ``bar``, and the one-sided slopes' agreement ``consistent``.
    """

    step: np.ndarray
    analytic: np.ndarray
    numerical: np.ndarray
    scale: np.ndarray
    relative_error: np.ndarray
    rounding: np.ndarray
    jitter: np.ndarray
    bar: np.ndarray
    consistent: np.ndarray

    def estimate(self, k: int) -> StepEstimate:
        """The k-th estimate as a record."""
        rounding, jitter, total = float(self.rounding[k]), float(self.jitter[k]), float(self.bar[k])
        return StepEstimate(
            step=float(self.step[k]),
            analytic=float(self.analytic[k]),
            numerical=float(self.numerical[k]),
            scale=float(self.scale[k]),
            relative_error=float(self.relative_error[k]),
            slopes_consistent=bool(self.consistent[k]),
            error_bar=ErrorBar(rounding=rounding, jitter=jitter, step_sensitivity=0.0, total=total),
        )


def estimate_columns(step, analytic, numerical, *, largest_value, epsilons, jitter, gain, consistent, scale=None):
    """The estimates' columns (each argument a number or a column); ``scale`` defaults to max(|a|, |n|)."""
    with np.errstate(all="ignore"):  # as Python floats: inf and NaN, never a warning
        analytic, numerical = np.asarray(analytic, dtype=np.float64), np.asarray(numerical, dtype=np.float64)
        rounding = ROUNDING_FACTOR * epsilons * largest_value * gain
        spread = jitter * gain
        if scale is None:
            scale = np.maximum(np.abs(analytic), np.abs(numerical))
        gap = np.abs(analytic - numerical)
        relative = gap / np.where(scale == 0.0, 1.0, scale)  # 0 where the scale is 0: then a = n = 0
    shape = np.broadcast(analytic, numerical, rounding, spread, scale).shape

    def column(values, dtype=np.float64):
        return np.broadcast_to(np.asarray(values, dtype=dtype), shape)

    return EstimateColumns(
        column(step),
        column(analytic),
        column(numerical),
        column(scale),
        column(relative),
        column(rounding),
        column(spread),
        column(rounding + spread),
        column(consistent, bool),
    )


def stencil_estimates(differences: list, analytic: float, *, epsilon: float, jitter: float, kink_tolerance):
    """The EstimateColumns of one coordinate's CentralDifferences (its confirmation steps)."""
    fields = ("minus_value", "center_value", "plus_value", "left_slope", "right_slope", "derivative")
    fields += ("minus_spacing", "plus_spacing", "left_weight", "right_weight", "requested_step")
    fields += ("minus_point", "point", "plus_point")
    values = {name: np.array([getattr(d, name) for d in differences], dtype=np.float64) for name in fields}
    return _stencil_columns(
        values["requested_step"],
        analytic,
        values["minus_value"],
        values["center_value"],
        values["plus_value"],
        SlopeColumns(values["left_slope"], values["right_slope"], values["derivative"], None),
        (values["minus_spacing"], values["plus_spacing"], values["left_weight"], values["right_weight"]),
        epsilon=epsilon,
        jitter=jitter,
        kink_tolerance=kink_tolerance,
        points=(values["minus_point"], values["point"], values["plus_point"]),
    )


def _stencil_columns(
    step, analytic, minus_values, center, plus_values, slopes, stencil, *, epsilon, jitter, kink_tolerance, points
):
    """Three-point estimates' columns: the bar over the stencil's gain, the slopes at the kink tolerance
    (``points`` the probes and θ, for :func:`value_epsilons`)."""
    minus_spacing, plus_spacing, left_weight, right_weight = stencil
    with np.errstate(all="ignore"):
        left, right = slopes.left, slopes.right
        slope_scale = np.maximum(np.maximum(1.0, np.abs(left)), np.abs(right))
        consistent = np.abs(left / slope_scale - right / slope_scale) <= kink_tolerance
        largest_value = np.maximum(np.maximum(np.abs(minus_values), np.abs(center)), np.abs(plus_values))
        left_gain = left_weight / minus_spacing
        right_gain = right_weight / plus_spacing
        gain = left_gain + right_gain + np.abs(left_gain - right_gain)
    return estimate_columns(
        step,
        analytic,
        slopes.derivative,
        largest_value=largest_value,
        epsilons=value_epsilons(minus_values, center, plus_values, epsilon, points),
        jitter=jitter,
        gain=gain,
        consistent=consistent,
    )


@dataclass(frozen=True)
class PrimaryColumns:
    """Every coordinate's estimate at its first step h and whether it passes there; a
    coordinate's record reads them (docs/method.md, "Verdicts").

    ``estimates`` the EstimateColumns at h, the sensitivity ``floor``, and ``passed``, True where
    the verdict is decided at h (the rest are confirmed at other steps).
    """

    estimates: EstimateColumns
    floor: np.ndarray
    passed: np.ndarray

    @property
    def relative_error(self) -> np.ndarray:
        return self.estimates.relative_error

    @property
    def bar(self) -> np.ndarray:
        return self.estimates.bar

    def estimate(self, k: int) -> StepEstimate:
        """Coordinate k's StepEstimate at h, read from the columns."""
        return self.estimates.estimate(k)


def primary_columns(
    columns: ProbeColumns,
    minus_values: np.ndarray,
    center: float,
    plus_values: np.ndarray,
    slopes: SlopeColumns,
    *,
    epsilon: float,
    jitter: float,
    tolerance: float,
    kink_tolerance,
    resolution: float,
    floor_factor: float = FLOOR_FACTOR,
) -> PrimaryColumns:
    """The estimate at h of every coordinate and its verdict there (every slope finite).

    ``kink_tolerance`` (a number or a column) is the one-sided slopes' tolerance,
    ``resolution`` the parameter's largest |numerical| value, ``floor_factor``
    :func:`floor_factor`'s.
    """
    stencil = (columns.minus_spacing, columns.plus_spacing, columns.left_weight, columns.right_weight)
    points = (columns.minus_point, columns.theta, columns.plus_point)
    estimates = _stencil_columns(
        columns.step,
        columns.analytic,
        minus_values,
        center,
        plus_values,
        slopes,
        stencil,
        epsilon=epsilon,
        jitter=jitter,
        kink_tolerance=kink_tolerance,
        points=points,
    )
    epsilons = value_epsilons(minus_values, center, plus_values, epsilon, points)
    floor = sensitivity_floors(columns.step, columns.theta, epsilons, tolerance, floor_factor)
    with np.errstate(all="ignore"):
        passed = passes(estimates, tolerance, floor, Resolution(gradient=resolution, check=0.0))
    # f bit-identical at every probe of the parameter is no evidence for a nonzero gradient: confirm.
    if np.all(minus_values == center) and np.all(plus_values == center):
        passed &= np.abs(columns.analytic) <= ROUNDING_FACTOR * epsilon * resolution
    return PrimaryColumns(estimates, floor, passed)


def passes(estimates, tolerance: float, limit, resolution: Resolution):
    """Where the estimates agree within ``limit``, or, where they cannot resolve a relative
    comparison, within the resolution of the gradients that matter (docs/method.md, "Verdicts")."""
    return verdict_passes(
        estimates.analytic,
        estimates.numerical,
        estimates.bar,
        estimates.scale,
        estimates.relative_error,
        estimates.consistent,
        limit,
        tolerance,
        resolution,
    )


def sensitivity_floors(steps, theta, epsilons, tolerance: float, factor: float = FLOOR_FACTOR) -> np.ndarray:
    """The smallest relative gap an estimate at requested ``steps`` at ``theta`` can support as
    evidence: factor·(r² + ε/r), r = step / max(1, |θ|), between tolerance / FLOOR_FACTOR and
    the tolerance (docs/method.md, "Verdicts")."""
    with np.errstate(all="ignore"):
        relative = steps / np.maximum(1.0, np.abs(theta))
        floor = np.maximum(factor * (relative * relative + epsilons / relative), tolerance / FLOOR_FACTOR)
        return np.minimum(tolerance, floor)


def floor_factor(analytic: np.ndarray, dtype: ProbeDtype) -> float:
    """HIGHER_PRECISION_FLOOR_FACTOR when some analytic value of a float32 (bfloat16) parameter is
    no float32 (bfloat16) number: it was computed in higher precision; FLOOR_FACTOR otherwise."""
    if dtype.significand_bits == 53 or len(analytic) == 0:
        return FLOOR_FACTOR
    with np.errstate(all="ignore"):
        single = analytic.astype(np.float32)
    own = single.astype(np.float64) == analytic
    if dtype.significand_bits < 24:
        own &= (single.view(np.uint32) & 0xFFFF) == 0
    return FLOOR_FACTOR if own.all() else HIGHER_PRECISION_FLOOR_FACTOR


def value_epsilons(minus_values, center, plus_values, epsilon: float, points=None):
    """ε of the precision f's values carry, for each coordinate's three values: float32's (bfloat16's)
    where all three are numbers of it. An objective computed in float32 for float64 parameters
    returns float32 values; the bar must use their rounding, not the parameters'. With ``points``
    (θ−h, θ, θ+h columns), that is evidence only where some point is no number of that precision:
    a float64 objective exact at small integers and a dyadic step returns such numbers too."""
    minus_values, plus_values = np.asarray(minus_values, dtype=np.float64), np.asarray(plus_values, dtype=np.float64)
    if epsilon >= 2.0**-7:
        return np.full(minus_values.shape, epsilon)
    single, half = _lower_precision_numbers((minus_values, center, plus_values), minus_values.shape)
    if points is not None:
        single_points, half_points = _lower_precision_numbers(points, minus_values.shape)
        single &= ~single_points
        half &= ~(half_points & single_points)
    return np.where(single, np.where(half, 2.0**-7, max(epsilon, 2.0**-23)), epsilon)


def _lower_precision_numbers(columns, shape) -> tuple:
    """Where every column's value is a float32 number, and where also a bfloat16 one."""
    single = np.ones(shape, dtype=bool)
    half = np.ones(shape, dtype=bool)
    for values in columns:
        values = np.asarray(values, dtype=np.float64)
        with np.errstate(all="ignore"):
            rounded = values.astype(np.float32)
        single &= rounded.astype(np.float64) == values
        half &= (rounded.view(np.uint32) & 0xFFFF) == 0
    return single, half


#: The largest value noise, relative to |f|, read as a lower precision inside: float32's rounding
#: with room for cancellation (2⁻¹⁶, 256 float32 ulps). A larger spread is the estimates' truncation
#: or a corner (a hinge crossed at 10h), not a precision; so only a float64 parameter's objective is
#: ever found to compute in lower precision this way (float32's own NOISE_LIMIT·ε is above it).
LOWEST_PRECISION = 2.0**-16


@dataclass(frozen=True)
class ObservedNoise:
    """The noise f's values show beyond the parameters' rounding, as a relative ε of |f|.

    ``epsilon`` is what each value is trusted to relative to |f| (at least the dtype's ε), ``units``
    that noise in units of the dtype's ε (0 when none is evidenced).
    """

    epsilon: float
    units: float


def observed_noise(stencils, epsilon: float) -> ObservedNoise:
    """The largest value noise, relative to |f|, that the confirmed coordinates' estimates show.

    ``stencils`` holds each coordinate's CentralDifferences at its steps (see :func:`series_noise`).
    """
    series = []
    for differences in stencils:
        usable = [d for d in differences if not d.minus_value == d.center_value == d.plus_value]
        values = [max(abs(d.minus_value), abs(d.center_value), abs(d.plus_value)) for d in usable]
        series.append([(d.requested_step, d.derivative, _gain(d), v) for d, v in zip(usable, values)])
    return series_noise(series, epsilon)


def series_noise(series, epsilon: float) -> ObservedNoise:
    """The largest value noise, relative to |f|, that estimates at several steps show.

    ``series`` holds, for each coordinate (or direction), a (step, estimate, gain, max|f|) for each
    step whose probes moved f. Estimates at two adjacent steps differ by at most the noise of
    their values through their stencils' gains (and their truncation, which is far smaller at the
    steps tried, or else beyond a float32 inside's rounding: LOWEST_PRECISION·|f|). Beyond
    NOISE_LIMIT·ε that is no rounding of the dtype: the objective computes in lower precision
    inside (a float32 part whose staircase the probes may straddle or not), and every bar of the
    parameter carries that noise (docs/method.md, "Verdicts").
    """
    largest = 0.0
    for estimates in series:
        ordered = sorted(estimates)
        for (_, small, small_gain, small_value), (_, large, large_gain, large_value) in zip(ordered, ordered[1:]):
            values = max(small_value, large_value)
            noise = abs(small - large) / (small_gain + large_gain)
            if values > 0.0 and noise <= LOWEST_PRECISION * values:  # beyond: truncation, not rounding
                largest = max(largest, noise / values)
    units = largest / epsilon
    if not units > NOISE_LIMIT:
        return ObservedNoise(epsilon=epsilon, units=0.0)
    return ObservedNoise(epsilon=largest, units=units)


def _gain(difference) -> float:
    """How far an error of 1 in each of the difference's values can move its estimate."""
    left = difference.left_weight / difference.minus_spacing
    right = difference.right_weight / difference.plus_spacing
    return left + right + abs(left - right)
