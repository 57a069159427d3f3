"""The estimate columns: every estimate with its error bar and its verdict at one step, as numpy
columns (the first step, the confirmation steps h/10 and 10h, the directional test), the
sensitivity floors, and the value noise the probes observe. The probes they read are
:mod:`~gradcheck_cli.engine.sweep`'s. How the verdict is decided is docs/method.md ("Verdicts").
"""

from __future__ import annotations

import functools
import struct
from dataclasses import dataclass

import numpy as np

from ..engine.dtypes import ProbeDtype, probe_dtype
from ..engine.estimator import validate_step
from ..engine.sweep import ProbeColumns, SlopeColumns
from .reasons import NOISE_LIMIT
from .rules import verdict_passes
from .terms import FLOOR_FACTOR, HIGHER_PRECISION_FLOOR_FACTOR, ROUNDING_FACTOR, ErrorBar, JudgedEstimate, Standard

__all__ = [
    "NoiseModel",
    "ProbeValues",
    "EstimateColumns",
    "estimate_columns",
    "estimate_of",
    "stencil_estimates",
    "PrimaryColumns",
    "primary_columns",
    "no_coordinates",
    "sensitivity_floors",
    "floor_factor",
    "value_epsilons",
    "ObservedNoise",
    "observed_noise",
    "series_noise",
    "kink_tolerance_for_step",
    "step_kink_tolerances",
]


@dataclass(frozen=True, slots=True)
class NoiseModel:
    """What an estimate's bar and its slopes allow for: ``epsilon``, what each value of f is trusted
    to relative to |f|; the ``jitter`` of f(θ); the one-sided slopes' ``kink_tolerance`` (a number
    or a column)."""

    epsilon: float
    jitter: float
    kink_tolerance: object


@dataclass(frozen=True, slots=True)
class ProbeValues:
    """f at each estimate's θ−h (``minus``), θ (``center``: one number, or a column) and θ+h
    (``plus``), and the one-sided ``slopes`` and estimate they give (:class:`SlopeColumns`)."""

    minus: np.ndarray
    center: object
    plus: np.ndarray
    slopes: SlopeColumns


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

    def estimate(self, k: int, record=JudgedEstimate) -> JudgedEstimate:
        """The k-th estimate as a record (of class ``record``, a JudgedEstimate)."""
        rounding, jitter, total = float(self.rounding[k]), float(self.jitter[k]), float(self.bar[k])
        return record(
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
        if scale is None:
            scale = np.maximum(np.abs(analytic), np.abs(numerical))
        rounding, spread, relative = _bar_terms(analytic, numerical, scale, largest_value, epsilons, jitter, gain)
    shape = np.broadcast(analytic, numerical, rounding, spread, scale).shape

    def column(values, dtype=np.float64):  # a read-only view, as np.broadcast_to gives, made cheaply
        values = np.asarray(values, dtype=dtype)
        if values.shape != shape:
            return np.broadcast_to(values, shape)
        view = values.view()
        view.flags.writeable = False
        return view

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


def estimate_of(
    step, analytic, numerical, *, largest_value, epsilon, jitter, gain, consistent, scale, record=JudgedEstimate
):
    """One estimate of numbers (floats), as :func:`estimate_columns` writes each of its columns' (its
    bar the same arithmetic, in Python floats): a record of class ``record``, a JudgedEstimate."""
    rounding, spread, relative = _bar_terms(analytic, numerical, scale, largest_value, epsilon, jitter, gain)
    return record(
        step=float(step),
        analytic=float(analytic),
        numerical=float(numerical),
        scale=float(scale),
        relative_error=float(relative),
        slopes_consistent=bool(consistent),
        error_bar=ErrorBar(rounding=rounding, jitter=spread, step_sensitivity=0.0, total=rounding + spread),
    )


def _bar_terms(analytic, numerical, scale, largest_value, epsilons, jitter, gain) -> tuple:
    """(rounding ROUNDING_FACTOR·ε·max|f|·gain, jitter·gain, |a − n| / scale, 0 where the scale is 0:
    then a = n = 0), of numbers or of columns (under an errstate) alike."""
    rounding = ROUNDING_FACTOR * epsilons * largest_value * gain
    gap = abs(analytic - numerical)
    if isinstance(scale, np.ndarray):
        return rounding, jitter * gain, gap / np.where(scale == 0.0, 1.0, scale)
    return rounding, jitter * gain, gap / (1.0 if scale == 0.0 else scale)


def stencil_estimates(differences: list, analytic: float, noise: NoiseModel):
    """The EstimateColumns of one coordinate's CentralDifferences (its confirmation steps)."""
    fields = ("minus_value", "center_value", "plus_value", "left_slope", "right_slope", "derivative")
    fields += ("minus_spacing", "plus_spacing", "left_weight", "right_weight", "requested_step")
    fields += ("minus_point", "point", "plus_point")
    values = {name: np.array([getattr(d, name) for d in differences], dtype=np.float64) for name in fields}
    steps = ProbeColumns(  # one coordinate at each of its steps: no selection, no offsets
        shape=(),
        offsets=None,
        theta=values["point"],
        analytic=analytic,
        step=values["requested_step"],
        minus_point=values["minus_point"],
        plus_point=values["plus_point"],
        minus_spacing=values["minus_spacing"],
        plus_spacing=values["plus_spacing"],
        left_weight=values["left_weight"],
        right_weight=values["right_weight"],
    )
    slopes = SlopeColumns(values["left_slope"], values["right_slope"], values["derivative"], None)
    return _stencil_columns(
        steps, ProbeValues(values["minus_value"], values["center_value"], values["plus_value"], slopes), noise
    )


def _stencil_columns(columns: ProbeColumns, values: ProbeValues, noise: NoiseModel, epsilons=None):
    """Three-point estimates' columns at the ``columns``' steps and probes: the bar over the
    stencil's gain (the values' ``epsilons``, :func:`value_epsilons` unless given), the slopes at
    the kink tolerance."""
    if epsilons is None:
        epsilons = _value_epsilons(columns, values, noise.epsilon)
    with np.errstate(all="ignore"):
        left, right = values.slopes.left, values.slopes.right
        slope_scale = np.maximum(np.maximum(1.0, np.abs(left)), np.abs(right))
        largest_value = np.maximum(np.maximum(np.abs(values.minus), np.abs(values.center)), np.abs(values.plus))
        # f(θ)'s jitter moves each slope by up to 2·jitter/h: no corner within it
        allowance = 2 * noise.jitter * (1.0 / columns.minus_spacing + 1.0 / columns.plus_spacing) / slope_scale
        consistent = np.abs(left / slope_scale - right / slope_scale) <= noise.kink_tolerance + allowance
        left_gain = columns.left_weight / columns.minus_spacing
        right_gain = columns.right_weight / columns.plus_spacing
        gain = left_gain + right_gain + np.abs(left_gain - right_gain)
    return estimate_columns(
        columns.step,
        columns.analytic,
        values.slopes.derivative,
        largest_value=largest_value,
        epsilons=epsilons,
        jitter=noise.jitter,
        gain=gain,
        consistent=consistent,
    )


def _value_epsilons(columns: ProbeColumns, values: ProbeValues, epsilon: float):
    """:func:`value_epsilons` of the ``values`` at the ``columns``' probes and θ."""
    points = (columns.minus_point, columns.theta, columns.plus_point)
    return value_epsilons(values.minus, values.center, values.plus, epsilon, points)


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

    def estimate(self, k: int) -> JudgedEstimate:
        """Coordinate k's JudgedEstimate at h, read from the columns."""
        return self.estimates.estimate(k)


def primary_columns(
    columns: ProbeColumns,
    values: ProbeValues,
    noise: NoiseModel,
    standard: Standard,
    floor_factor: float = FLOOR_FACTOR,
) -> PrimaryColumns:
    """The estimate at h of every coordinate and its verdict there (every slope finite), by the
    ``standard``'s tolerance beside its resolution's ``gradient``, the parameter's largest
    |numerical| value (the check's is not consulted here); ``floor_factor`` :func:`floor_factor`'s.
    """
    if len(columns) == 0:  # a fast check's parameter: no coordinate
        return no_coordinates()
    epsilons = _value_epsilons(columns, values, noise.epsilon)
    estimates = _stencil_columns(columns, values, noise, epsilons)
    tolerance, resolution = standard.tolerance, standard.resolution.gradient
    floor = sensitivity_floors(columns.step, columns.theta, epsilons, tolerance, floor_factor)
    with np.errstate(all="ignore"):
        passed = verdict_passes(estimates, floor, standard.own())
    # f bit-identical at every probe of the parameter is no evidence for a nonzero gradient: confirm.
    if np.all(values.minus == values.center) and np.all(values.plus == values.center):
        passed &= np.abs(columns.analytic) <= ROUNDING_FACTOR * noise.epsilon * resolution
    return PrimaryColumns(estimates, floor, passed)


@functools.cache
def no_coordinates() -> PrimaryColumns:
    """The PrimaryColumns of no coordinate, read-only, made once."""
    empty, none = np.empty(0), np.empty(0, dtype=bool)
    empty.flags.writeable = none.flags.writeable = False
    return PrimaryColumns(EstimateColumns(*(empty,) * 8, none), empty, none)


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
    shape = minus_values.shape
    if epsilon >= 2.0**-7:
        return np.full(shape, epsilon)
    # Where no coordinate's three values may all be float32 numbers (bfloat16 numbers, at float32's
    # ε or coarser, where only those may carry a coarser one), none are: the columns are not built.
    if not _maybe_numbers((minus_values, center, plus_values), 8 if epsilon >= 2.0**-23 else 24):
        return np.full(shape, epsilon)
    with np.errstate(all="ignore"):  # a value beyond float32's range is no number of it: no warning
        single, rounded = _float32_numbers((minus_values, center, plus_values), shape)
        found = single.any()
        half = single & _bfloat16_numbers(rounded) if found else single
        # at float32's ε or coarser, only the values that are bfloat16 numbers may carry a coarser one
        if not found or (epsilon >= 2.0**-23 and not half.any()):
            return np.full(shape, epsilon)
        if points is not None:
            single_points, rounded = _float32_numbers(points, shape)
            single &= ~single_points
            half &= ~(_bfloat16_numbers(rounded) & single_points)
    return np.where(single, np.where(half, 2.0**-7, max(epsilon, 2.0**-23)), epsilon)


def _maybe_numbers(columns, significand_bits: int) -> bool:
    """Whether some coordinate's values in every one of the ``columns`` (numbers or float64 columns)
    may be numbers of a binary precision of ``significand_bits`` (float32's 24, bfloat16's 8): the
    float64 pattern of such a number (zero, infinite, normal or subnormal there) ends in at least
    53 − ``significand_bits`` zero bits. A necessary condition, tested before the exact rounding."""
    low = (1 << (53 - significand_bits)) - 1
    shared, pattern = 0, None  # the numbers' bits (a Python float is one number), the columns' bits
    for column in columns:
        if isinstance(column, float):
            shared |= int.from_bytes(_DOUBLE.pack(column), "little")
            continue
        bits = np.asarray(column, dtype=np.float64).view(np.uint64)
        pattern = bits if pattern is None else pattern | bits
    if shared & low:
        return False
    return pattern is None or not (pattern & np.uint64(low)).all()  # numpy 1's int & uint64 is float64


_DOUBLE = struct.Struct("<d")


def _float32_numbers(columns, shape) -> tuple:
    """(where every column's value is a float32 number, the columns rounded to float32), under an errstate."""
    values = np.empty((len(columns), *shape))
    for row, column in enumerate(columns):
        values[row] = column
    rounded = values.astype(np.float32)
    return np.logical_and.reduce(rounded == values), rounded  # float32 against float64: compared exactly


def _bfloat16_numbers(rounded: np.ndarray) -> np.ndarray:
    """Where every one of the ``rounded`` columns (float32) is also a bfloat16 number."""
    return np.logical_and.reduce((rounded.view(np.uint32) & 0xFFFF) == 0)


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


def kink_tolerance_for_step(step: float, point: float, dtype) -> float:
    """The kink tolerance that goes with requested step h at θ: max(ε^(1/6), √(h / max(1, |θ|))).

    Parameters
    ----------
    step : float
        The requested step h, positive and finite.
    point : float
        The coordinate's θ.
    dtype : ProbeDtype, numpy dtype or str
        The parameter's dtype (float64, float32 or bfloat16).
    """
    dtype = dtype if isinstance(dtype, ProbeDtype) else probe_dtype(dtype)
    return float(step_kink_tolerances(np.float64(validate_step(step)), np.float64(point), dtype))


def step_kink_tolerances(steps, theta, dtype: ProbeDtype):
    """max(ε^(1/6), √(h / max(1, |θ|))) of each requested step h at θ (numbers or columns)."""
    with np.errstate(all="ignore"):
        return np.maximum(dtype.kink_tolerance, np.sqrt(steps / np.maximum(1.0, np.abs(theta))))
