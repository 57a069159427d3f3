"""The coordinate sweep, column-wise: every selected coordinate's probes planned at once, the
probing loop and the one-sided slopes, as numpy columns: the one engine that the first step, the
confirmation steps (h/10, 10h) and the directional test all use; their estimates and error bars
are :mod:`~gradcheck_cli.verdict.estimates`'.

The probes are :func:`~gradcheck_cli.engine.dtypes.dtype_perturbations`' bit for bit; where the columns
find a probe or slope unusable, the chapter's own validation (:func:`~gradcheck_cli.engine.estimator.probe_geometry`,
:func:`~gradcheck_cli.engine.estimator.difference_from_values`) decides and raises its typed error. How the
verdict is decided is docs/method.md ("Verdicts").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from ..errors import GradCheckError, ReadOnlyArray
from .dtypes import PROBE_DTYPES, ProbeDtype
from .estimator import CentralDifference, difference_from_values, evaluated_value, probe_geometry
from .sampling import at_coordinate

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
    :func:`~gradcheck_cli.engine.dtypes.dtype_perturbations`: the first invalid one is its typed error in
    AtCoordinate."""
    offsets = np.asarray(offsets, dtype=np.intp).reshape(-1)
    if not len(offsets):  # a fast check's parameter: no column to compute
        empty = np.empty(0, dtype=np.float64)
        return ProbeColumns(tuple(array.shape), offsets, *(empty,) * (9 if probes else 2))
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
        # Spacings finite and positive: both probes finite and off θ, and the weights finite (the
        # larger unit is 1); a non-finite θ or probe makes a spacing NaN or infinite.
        valid = np.isfinite(minus_spacing) & np.isfinite(plus_spacing) & (minus_spacing > 0.0) & (plus_spacing > 0.0)
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
    """:func:`~gradcheck_cli.engine.estimator.probe_geometry` of the k-th coordinate's rounded probes; its
    typed error in AtCoordinate."""
    try:
        return probe_geometry(float(columns.theta[k]), step, minus, plus)
    except GradCheckError as error:
        raise at_coordinate(columns.coordinate(k), error) from error


def _rounded_probes(theta: np.ndarray, steps: np.ndarray, dtype: ProbeDtype) -> tuple:
    """fl(θ − h), fl(θ + h) rounded once into ``dtype`` (as f64 columns)."""
    if dtype.significand_bits == 53:
        return theta - steps, theta + steps
    if dtype.significand_bits == 24:  # both sides in one pass: half the calls on a few coordinates
        both = _float32_rounded(np.concatenate([theta, theta]), np.concatenate([-steps, steps]))
        return both[: len(theta)], both[len(theta) :]
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
    objective: Callable,
    argument,
    *,
    part: tuple | None = None,
    progress: Callable | None = None,
    center: float | None = None,
) -> tuple:
    """Probe coordinates ``start:stop`` of ``part`` (default: every one): each one's θ−h and θ+h
    written into ``array`` in turn, the objective called as ``objective(argument)``, and θ's exact
    bits written back before the value is looked at, whatever the objective does. Returns the
    lists (values at θ−h, values at θ+h).

    As the chapter's scalar check does, in this order: a non-finite or non-scalar value, or the array made
    read-only by the objective, is its typed error in AtCoordinate right after that call; with
    ``center`` (f(θ)), a coordinate whose slopes or estimate are not finite is its typed error
    right after its second call. ``progress(k)`` after each coordinate k (counted from 1).
    """
    start, stop = (0, len(columns)) if part is None else part
    probes = (columns.minus_point[start:stop], columns.plus_point[start:stop])
    values = _probe_calls(array, columns, _ProbePass(start, probes, _PAIR, progress, center), objective, argument)
    return values[0::2], values[1::2]


def stencil_values(array: np.ndarray, columns: ProbeColumns, objective: Callable, argument) -> tuple:
    """The chapter's three calls at every coordinate, minus, center, plus, in turn (the center call
    with θ itself written): as :func:`probe_values`, and a coordinate whose slopes or estimate are
    not finite is its typed error right after its third call. An error the objective raises that is
    a GradCheckError is wrapped in AtCoordinate, as the chapter's check wraps it. Returns the
    columns (minus values, center values, plus values)."""
    probes = (columns.minus_point, columns.theta, columns.plus_point)
    probing = _ProbePass(0, probes, _STENCIL, wrap_objective_errors=True)
    values = _probe_calls(array, columns, probing, objective, argument)
    return tuple(np.array(values[side::3], dtype=np.float64) for side in range(3))


@dataclass(frozen=True, slots=True)
class _ProbePass:
    """One pass of the probe loop over coordinates ``start`` on: ``probes`` one column of probe
    points per side in ``sides`` (the k-th entry of each is coordinate start + k's); ``progress(k)``
    after each coordinate; ``center`` the shared f(θ) the pairs' slopes are checked against (none:
    only finite floats); ``wrap_objective_errors``: a GradCheckError f raises is put in AtCoordinate."""

    start: int
    probes: tuple
    sides: tuple
    progress: Callable | None = None
    center: float | None = None
    wrap_objective_errors: bool = False


_PAIR = ("minus", "plus")
_STENCIL = ("minus", "center", "plus")
#: A value below min(h₋, h₊, 1)·2^999 in magnitude at each call of a coordinate: its slopes and its
#: estimate are finite (|f − f'| < 2^1000·min(h₋, h₊), weights at most 1), so no check is needed.
_VALUE_BOUND = 2.0**999


def _probe_calls(array, columns, probing: _ProbePass, objective, argument) -> list:
    """The write-probe/call/write-back loop of one pass (:class:`_ProbePass`), ``objective(argument)``
    called at each probe in turn; returns the values in call order.

    Writes go through ndarray's own flat iterator of ``array`` (row-major offsets, any layout, never
    a subclass's indexing), which refuses a write once the objective made the array read-only: the
    write of θ back is also the read-only check, and θ is then written through a view made before
    the first call, which stays writable. A value that is a float within the coordinate's
    bound needs no other check; any other is converted or refused by the scalar rules, and a
    coordinate with one such value gets the chapter's finite-slopes rule (:func:`difference_at`),
    with the shared f(θ) ``center`` (pairs; none without it) or its own center value (the stencil).
    """
    start, probes, sides = probing.start, probing.probes, probing.sides  # once, outside the loop
    progress, center, wrap_objective_errors = probing.progress, probing.center, probing.wrap_objective_errors
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
    values, numpy_floats = [], (np.float64, np.float32)
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
            if type(value) in numpy_floats:  # numpy's float64 (a float subclass) and float32: common, exact
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
    error, :func:`~gradcheck_cli.engine.estimator.difference_from_values`, is raised there).
    """

    left: np.ndarray
    right: np.ndarray
    derivative: np.ndarray
    finite: np.ndarray


def slope_columns(columns: ProbeColumns, minus_values: np.ndarray, center: float, plus_values: np.ndarray):
    """The columns of what :func:`~gradcheck_cli.engine.estimator.difference_from_values` computes."""
    with np.errstate(all="ignore"):
        left = (center - minus_values) / columns.minus_spacing
        right = (plus_values - center) / columns.plus_spacing
        derivative = columns.left_weight * left + columns.right_weight * right
        finite = np.isfinite(left) & np.isfinite(right) & np.isfinite(derivative)
    return SlopeColumns(left, right, derivative, finite)
