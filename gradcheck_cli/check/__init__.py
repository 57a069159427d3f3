"""Check several named parameter arrays of one model against their analytic gradients.

:func:`check_gradients` perturbs each array in place, one selected coordinate at a time (and
once along a whole-parameter direction), with probes rounded into the array's own dtype, and
writes the exact original bits back after every call, on every path. Everything is validated
before the objective is called once. Each estimate carries an error bar, and each coordinate,
parameter and report gets one of three verdicts: passed, failed, inconclusive. How a verdict
is decided is docs/method.md ("Verdicts").
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..advice import ProblemStepAdvice, advise_parameter_steps, representative_coordinate
from ..defaults import CHECK_SAMPLES
from ..diagnosis import Diagnosis, DirectionalGap, diagnose_parameter, diagnose_report, unchanged_diagnosis
from ..directional import Direction, DirectionScale, DirectionalCheck, directional_estimate, probe_direction
from ..dtypes import ProbeDtype, dtype_perturbations, probe_dtype
from ..errors import (
    AtParameter,
    DuplicateCoordinate,
    EmptyTensor,
    GradCheckError,
    InvalidArgument,
    InvalidCoordinate,
    InvalidParameterName,
    ParameterChanged,
    ReadOnlyArray,
    UnexpectedGradient,
    UnknownParameter,
    UnknownSampler,
    ZeroSamples,
)
from ..estimator import (
    CentralDifference,
    GradientComparison,
    OneSidedSlopeComparison,
    compare_gradients,
    compare_one_sided_slopes,
    difference_from_values,
    evaluated_value,
    validate_step,
    validate_tolerance,
)
from ..formatting import rust_list
from ..judge import (
    CONFIRMATION_FACTORS,
    FAILED,
    FAIL_MARGIN,
    INCONCLUSIVE,
    KINK,
    PASSED,
    ROUNDING_FACTOR,
    Judgement,
    Resolution,
    agreement,
    judge_confirmed,
    judge_primary,
    verdict_of,
    with_step_sensitivity,
)
from ..problem import GradientProblem, reject_non_finite, reject_shared_memory, selected_names
from ..records import Record, float_bits, same_array_bits
from ..sampling import (
    CHECKED_COORDINATE_BYTES,
    ParameterSample,
    SampledCoordinate,
    coordinate_from_offset,
    offset_from_coordinate,
    validate_samples,
    validate_selection,
)
from ..selection import SAMPLERS, select_offsets
from ..sweep import (
    ObservedNoise,
    PrimaryColumns,
    ProbeColumns,
    SlopeColumns,
    difference_at,
    floor_factor,
    index_columns,
    observed_noise,
    plan_columns,
    primary_columns,
    probe_values,
    sensitivity_floors,
    series_noise,
    slope_columns,
    stencil_estimates,
    value_epsilons,
    with_probes,
)
from ..tensors import (
    at_coordinate,
    element_count,
    finite_point,
    parameter_and_gradient,
    plain_view,
    probing_objective,
    write_back,
)

__all__ = [
    "ALL_COORDINATES",
    "AUTO_STEP",
    "JITTER_LIMIT",
    "KinkVerdict",
    "CoordinateCheck",
    "PurityVerdict",
    "ParameterCheck",
    "GradientCheckReport",
    "check_gradients",
    "check_problem",
    "kink_tolerance_for_step",
    "selected_coordinates",
]

#: ``samples=ALL_COORDINATES`` checks every coordinate, in row-major order.
ALL_COORDINATES = "all"
#: ``step=AUTO_STEP`` checks each parameter at the step advised for one representative coordinate.
AUTO_STEP = "auto"
#: f(θ) varying by more than JITTER_LIMIT·ε·|f| between calls is not rounding jitter: no pass.
JITTER_LIMIT = 256.0

Samples = int | str


@dataclass(frozen=True, slots=True)
class KinkVerdict(Record):
    """The one-sided slopes at the kink tolerance, at the coordinate's step.

    ``analytic_between_slopes`` is ``min(left, right) ≤ analytic ≤ max(left, right)``:
    at a suspected kink, True means the candidate is consistent with a subgradient, False
    that it lies outside both one-sided slopes.
    """

    suspected: bool
    analytic_between_slopes: bool
    slopes: OneSidedSlopeComparison


@dataclass(frozen=True, slots=True)
class CoordinateCheck(Record):
    """One coordinate of one parameter: the chapter's records at its step, and the verdict.

    ``difference``, ``comparison`` (the chapter's scaled error) and ``kink`` are at the
    coordinate's step h; ``difference.center_value`` is the shared f(θ). ``estimates`` has
    the estimate at h first, then those at the confirmation steps when h did not pass;
    ``decided_at`` indexes the one the verdict rests on. ``verdict`` is ``"passed"``,
    ``"failed"``, ``"inconclusive"`` or ``"suspected kink"``; ``reason`` says why.
    """

    flat_index: int
    coordinate: tuple
    difference: CentralDifference
    comparison: GradientComparison
    kink: KinkVerdict
    estimates: tuple
    decided_at: int
    verdict: str
    reason: str
    passed: bool


@dataclass(frozen=True)
class PurityVerdict(Record):
    """f(θ) at the restored point, evaluated several times during the check.

    ``pure``: every value bit-identical. Otherwise ``spread`` (max − min) is counted in every
    error bar; ``stateful`` when it exceeds JITTER_LIMIT·ε·|f| (then nothing passes).
    """

    pure: bool
    stateful: bool
    evaluations: int
    distinct: int
    reference_value: float
    spread: float
    message: str


class CoordinateChecks(Sequence):
    """Every checked coordinate of one parameter, in selection order, kept as columns.

    A sequence of :class:`CoordinateCheck`: the records of the coordinates that did not pass at
    their first step are kept (they were confirmed at other steps); the others are built from
    the columns when asked for, one at a time, so a million coordinates cost a few numpy arrays
    (under 300 bytes a coordinate, docs/performance.md) rather than a million records.
    """

    __slots__ = ("_item", "_center", "_jitter", "_resolution", "_primary", "_judged")

    def __init__(self, item, center: float, jitter: float, resolution: Resolution, primary, judged: dict):
        self._item, self._center, self._jitter, self._resolution = item, center, jitter, resolution
        self._primary, self._judged = primary, judged

    def __len__(self) -> int:
        return len(self._primary.passed)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return tuple(self[j] for j in range(*k.indices(len(self))))
        k = operator.index(k)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError("coordinate index out of range")
        judged = self._judged.get(k)
        if judged is not None:
            return judged
        return _judge_coordinate(self._item, k, self._center, None, self._jitter, self._resolution, self._primary)

    def __eq__(self, other) -> bool:
        """Equal to another sequence of the same records (a tuple of them too)."""
        if isinstance(other, (CoordinateChecks, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"CoordinateChecks({len(self)} coordinates, {len(self._judged)} confirmed at other steps)"

    def verdict_count(self, verdict: str) -> int:
        """How many coordinates have ``verdict``."""
        if verdict == PASSED:
            return int(self._primary.passed.sum()) + sum(1 for r in self._judged.values() if r.verdict == PASSED)
        return sum(1 for record in self._judged.values() if record.verdict == verdict)

    def verdicts(self) -> set:
        """The distinct verdicts."""
        found = {record.verdict for record in self._judged.values()}
        return found | {PASSED} if self._primary.passed.any() else found

    def unpassed(self) -> list:
        """The records of the coordinates that did not pass, in order."""
        return [record for _, record in sorted(self._judged.items()) if not record.passed]

    def failed(self) -> list:
        """The records of the coordinates that failed, in order."""
        return [record for record in self.unpassed() if record.verdict == FAILED]

    def worst(self) -> CoordinateCheck:
        """The coordinate whose deciding estimate has the largest relative error (the first of equals)."""
        errors = self._primary.relative_error.copy()
        for k, record in self._judged.items():
            errors[k] = record.estimates[record.decided_at].relative_error
        return self[int(np.argmax(errors))]

    def passing_index_columns(self) -> list:
        """For each axis, the index of every coordinate that passed with a clearly nonzero numerical
        value (beyond twice its error bar): what the diagnosis compares failures against."""
        resolved = self._primary.passed & (np.abs(self._item.slopes.derivative) > 2 * self._primary.bar)
        for k, record in self._judged.items():
            decided = record.estimates[record.decided_at]
            resolved[k] = record.passed and abs(decided.numerical) > 2 * decided.error_bar.total
        columns = self._item.planned.columns
        return list(index_columns(columns.offsets[resolved], columns.shape))


@dataclass(frozen=True)
class ParameterCheck(Record):
    """Every selected coordinate of one named parameter, its directional test and its verdict.

    Attributes
    ----------
    name, dtype : str
    shape : tuple of int
    selection : str
        ``"structured"`` or ``"chapter"`` (a sampler with ``requested_samples``), ``"all"``
        or ``"explicit"``.
    requested_samples : int or None
    step : float or None
        The requested step of every coordinate (given, or advised with ``step="auto"``), or
        None for the dtype's default ε^(1/3)·max(1, |θ|).
    tolerance : float
        The relative tolerance, as used (given, or the dtype's ε^(1/3)).
    kink_tolerance : float or None
        Shared by every coordinate, or None when each coordinate's step sets its own.
    verdict : str
        ``"failed"`` if a coordinate or the directional test failed, else ``"inconclusive"``
        if one did not pass, else ``"passed"``.
    passed : bool
    checks : CoordinateChecks
        A sequence of CoordinateCheck, in selection order, built from columns when read.
    directional : DirectionalCheck
    diagnosis : Diagnosis or None
        What kind of bug the failures show (None when nothing failed).
    """

    name: str
    dtype: str
    shape: tuple
    selection: str
    requested_samples: int | None
    step: float | None
    tolerance: float
    kink_tolerance: float | None
    verdict: str
    passed: bool
    checks: tuple
    directional: DirectionalCheck
    diagnosis: Diagnosis | None


@dataclass(frozen=True)
class GradientCheckReport(Record):
    """The whole check: every parameter, the purity measurement and the verdict.

    Attributes
    ----------
    verdict : str
        ``"failed"`` if any parameter failed; ``"inconclusive"`` if any did not pass or the
        objective is stateful; else ``"passed"``.
    passed : bool
        ``verdict == "passed"``.
    checked, failed, inconclusive : int
        Coordinates checked; those that failed; those that neither passed nor failed.
    failing_parameters : tuple of str
        Names of the parameters that did not pass, in problem order.
    purity : PurityVerdict
    parameters : tuple of ParameterCheck, in problem order
    step_advice : ProblemStepAdvice or None
        With ``step="auto"``, the advice each parameter's step came from.
    evaluations : int
        Objective calls made by the check (the step advice's included).
    diagnosis : Diagnosis or None
        Set when every failing parameter is off by the same factor (the loss itself is scaled).
    """

    verdict: str
    passed: bool
    checked: int
    failed: int
    inconclusive: int
    failing_parameters: tuple
    purity: PurityVerdict
    parameters: tuple
    step_advice: ProblemStepAdvice | None
    evaluations: int
    diagnosis: Diagnosis | None

    def parameter(self, name: str) -> ParameterCheck:
        """The :class:`ParameterCheck` named ``name``."""
        for check in self.parameters:
            if check.name == name:
                return check
        raise KeyError(name)

    def failures(self) -> list:
        """``(parameter name, CoordinateCheck)`` for every coordinate that did not pass."""
        return [(check.name, record) for check in self.parameters for record in check.checks.unpassed()]


@dataclass(frozen=True)
class _PlannedParameter:
    """One selected parameter, validated: its arrays, coordinates and tolerances.

    ``step`` is the given step, None for the dtype's default, or AUTO_STEP until the advice
    replaces it (and then ``coordinates`` have no probes yet). ``kink_tolerance`` is the given
    one, or None for the default that goes with each coordinate's step.
    """

    name: str
    array: np.ndarray
    gradient: np.ndarray
    dtype: ProbeDtype
    selection: str
    requested_samples: int | None
    step: None | float | str
    tolerance: float
    kink_tolerance: float | None
    columns: ProbeColumns


@dataclass
class _Probed:
    """A parameter after the first pass: each coordinate's values at θ ∓ h, the direction's probe."""

    planned: _PlannedParameter
    minus_values: np.ndarray
    plus_values: np.ndarray
    slopes: SlopeColumns
    original: np.ndarray | None = None  # θ's snapshot, what the direction's probes restore from
    displacement: Direction | None = None
    direction: object = None
    direction_scale: float = 0.0  # ‖ĝ∘Δ‖₂, taken in the direction's first probes (_direction_scale)


class _Objective:
    """The user's objective, called as ``objective(parameters)`` and counted; f(θ) kept."""

    def __init__(self, objective: Callable, parameters: Mapping, checked: dict):
        self.objective, self.parameters, self.calls, self.centers = objective, parameters, 0, []
        self.checked = checked
        self.entries = {name: parameters[name] for name in checked}  # the objects given, np.matrix included
        self.snapshots = {name: np.array(array, copy=True) for name, array in checked.items()}
        self.compared_at = None  # the call count when every array was last compared with its snapshot

    def __call__(self, _parameters=None):
        self.calls += 1
        return self.objective(self.parameters)

    def center(self) -> float:
        """f(θ) with every array restored, validated and recorded for the purity measurement."""
        value = evaluated_value("center", self())
        self.unchanged()
        self.centers.append(value)
        return value

    def restore(self) -> None:
        """Every checked array back to its snapshot where its bits differ (never raises for that)."""
        for name, array in self.checked.items():
            if not same_array_bits(array, self.snapshots[name]):
                write_back(array, Ellipsis, self.snapshots[name])

    def unchanged(self, name: str | None = None) -> None:
        """Every checked array (or the one named) is still the one given, writable and bit-identical
        to the original: else it is restored and the objective's change is a typed error."""
        every = name is None
        checked = self.checked.items() if every else [(name, self.checked[name])]
        for name, array in checked:
            if not array.flags.writeable:
                raise ReadOnlyArray(role="parameters", during_check=True)
            if self.parameters.get(name) is not self.entries[name]:
                raise ParameterChanged(parameter=name, change="replaced or removed")
            if every and self.compared_at == self.calls:
                continue  # no call since every bit was compared: nothing but gradcheck's restored writes
            if not same_array_bits(array, self.snapshots[name]):
                write_back(array, Ellipsis, self.snapshots[name])
                raise ParameterChanged(parameter=name, change="modified in place")
        if every:
            self.compared_at = self.calls


def check_gradients(
    objective: Callable[[Mapping], float],
    parameters: Mapping,
    gradients: Mapping,
    *,
    samples: Samples = CHECK_SAMPLES,
    step: None | float | str | Mapping = None,
    tolerance: float | None = None,
    kink_tolerance: None | float | Mapping = None,
    coordinates: Mapping | None = None,
    names: Iterable[str] | None = None,
    sampler: str = "structured",
    progress: Callable[[int, int], None] | None = None,
    jobs: int | None = None,
) -> GradientCheckReport:
    """Check named parameter arrays against their analytic gradients.

    Parameters
    ----------
    objective : callable Mapping[str, np.ndarray] -> float
        Called as ``objective(parameters)`` with the very mapping given here, whose arrays
        hold the probe. Deterministic, side-effect-free, and smooth across every probe.
    parameters : Mapping[str, np.ndarray]
        Writable float64, float32 or bfloat16 arrays of any shape (views too); perturbed in
        place and bit-identical afterwards on every path, exceptions and KeyboardInterrupt
        included.
    gradients : Mapping[str, np.ndarray]
        The analytic gradient of each checked parameter, same shape, any real dtype.
    samples : int or "all", default 16
        Coordinates per parameter (min(samples, N)), or ``"all"``.
    step : float, "auto" or Mapping[str, float], optional
        The requested step h for every coordinate, or per parameter by name; ``"auto"``
        advises each parameter's step first (about 70 calls per parameter). Default: the
        dtype's ε^(1/3)·max(1, |θ|) per coordinate.
    tolerance : float, optional
        The relative tolerance. Default: the dtype's ε^(1/3).
    kink_tolerance : float or Mapping[str, float], optional
        Tolerance on the one-sided slopes' scaled gap. Default: :func:`kink_tolerance_for_step`.
    coordinates : Mapping[str, iterable of index tuples], optional
        Explicit coordinates for some parameters; the others are selected by ``sampler``.
    names : iterable of str, optional
        Check only these parameters (the problem's order is kept).
    sampler : "structured" or "chapter", default "structured"
        The structured selection (spread over every axis, mirrored pairs, the largest
        |analytic| entries) or the chapter's flat offsets ⌊k(N−1)/(S−1)⌋.
    progress : callable (done, total) -> None, optional
        Called with (0, total) before the first objective call and after every coordinate
        (with ``jobs``, after every chunk of coordinates).
    jobs : int or concurrent.futures.Executor, optional
        Worker processes for the coordinates' probes at their first step: None or 1 probes
        here, N ≥ 2 in N workers, 0 in one per usable core, an Executor (dask's
        ``Client.get_executor()``, mpi4py's ``MPIPoolExecutor``, loky) in its workers, and
        never shut down here; the report is the serial one, bit for bit, for an objective that
        is a function of its parameters. The objective and parameters are pickled to the
        workers (a module-level function, not a lambda), unless :func:`check_problem` is given
        a problem loaded by reference. See docs/parallel.md.

    Returns
    -------
    GradientCheckReport

    Raises
    ------
    GradCheckError
        Before any objective call, for anything wrong with the request (wrapped in
        AtParameter, and AtCoordinate where a coordinate is at fault). During the check, a
        non-finite or non-scalar objective value at a coordinate's step. Exceptions raised by
        the objective propagate unchanged, with every array restored.
    """
    plan = _plan(
        objective, parameters, gradients, samples, step, tolerance, kink_tolerance, coordinates, names, sampler
    )
    if progress is not None and not callable(progress):
        raise InvalidArgument(argument="progress", value=type(progress).__name__, expected="callable")
    workers = None if _serial(jobs) else _parallel().workers_for(jobs, objective, parameters)
    counted = _Objective(objective, parameters, {planned.name: planned.array for planned in plan})
    try:
        return _checked(plan, counted, step, progress, workers)
    except BaseException:
        counted.restore()  # whatever the objective changed beside the probe, on every path
        raise


def _checked(plan: list, counted: _Objective, step, progress, workers) -> GradientCheckReport:
    """The check itself, once everything is validated: probes, purity, verdicts, the report."""
    total = sum(len(planned.columns) for planned in plan)
    if progress is not None:
        progress(0, total)
    step_advice = None
    if _is_auto(step):
        step_advice = advise_parameter_steps(counted, counted.parameters, [planned.name for planned in plan])
        plan = [_probed_at(planned, step_advice.steps[planned.name]) for planned in plan]
    with contextlib.nullcontext() if workers is None else _parallel().probing(workers, plan) as pool:
        probed = _first_pass(plan, counted, progress, total, pool)
    purity = _purity(counted.centers, min(planned.dtype.epsilon for planned in plan))
    direction_scales = [_direction_scale(item) for item in probed]
    largest = (max([0.0] + [_largest_gradient(item) for item in probed]), max([0.0, *direction_scales]))
    checks = [
        _judge_parameter(item, counted, purity.spread, largest, scale) for item, scale in zip(probed, direction_scales)
    ]
    counted.unchanged()  # the confirmations and directional probes may not have changed θ either
    return _report(checks, purity, step_advice, counted.calls)


def _first_pass(plan: list, counted: _Objective, progress, total: int, pool=None) -> list:
    """f(θ), each coordinate's two probes at h, each direction's two probes; f(θ) again at checkpoints.

    With a ``pool`` (parallel.py) the coordinates' probes are made in worker processes, and
    everything else here, in the same order.
    """
    center = counted.center()
    checkpoints = sorted({max(1, math.ceil(total * part / 3)) for part in (1, 2)})
    probed, done = [], 0
    for index, planned in enumerate(plan):
        columns, minus, plus = planned.columns, [], []
        if pool is not None:
            done = pool.collect(index, counted, minus, plus, done, checkpoints, progress, total)
        else:
            start = 0
            while start < len(columns):
                due = [point - done for point in checkpoints if done < point <= done + len(columns) - start]
                stop = start + due[0] if due else len(columns)
                _probe_segment(planned, start, stop, counted, minus, plus, progress, done - start, total)
                done += stop - start
                start = stop
                if done in checkpoints:
                    counted.center()
                if progress is not None:  # the segment's last coordinate: after the checkpoint's f(θ)
                    progress(done, total)
        minus_values, plus_values = np.array(minus, dtype=np.float64), np.array(plus, dtype=np.float64)
        slopes = slope_columns(columns, minus_values, center, plus_values)
        if not slopes.finite.all():
            _difference(planned, int(np.argmin(slopes.finite)), minus_values, center, plus_values)
        saved, displacement, scale = (
            counted.snapshots[planned.name],
            _direction_displacement(planned),
            _scale(columns.offsets, slopes),
        )
        direction = _probe_direction(planned, saved, displacement, 1.0, counted, scale)
        item = _Probed(planned, minus_values, plus_values, slopes, saved, displacement, direction)
        item.direction_scale = scale.value(int(planned.array.size)) if direction is not None else 0.0
        probed.append(item)
    counted.center()
    return probed


def _probe_segment(planned, start, stop, counted: _Objective, minus, plus, progress, base: int, total: int):
    """Coordinates start:stop of ``planned`` probed at h (their calls counted); typed errors in AtParameter."""
    after = None if progress is None else (lambda k: progress(base + k, total) if k < stop else None)
    try:
        probe_values(
            planned.array,
            planned.columns,
            start,
            stop,
            counted.objective,
            counted.parameters,
            minus,
            plus,
            after,
            center=counted.centers[0],
        )
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=error) from error
    counted.calls += 2 * (stop - start)


def _difference(planned, k: int, minus_values, center: float, plus_values) -> CentralDifference:
    """Coordinate k's CentralDifference at h (the chapter's typed error in AtParameter if it has one)."""
    try:
        return difference_at(planned.columns, k, float(minus_values[k]), center, float(plus_values[k]))
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=error) from error


def _two_probes(array: np.ndarray, index: tuple, geometry, counted: _Objective) -> tuple:
    evaluate = probing_objective(array, index, counted)
    minus = evaluated_value("minus", evaluate(geometry.minus_point))
    plus = evaluated_value("plus", evaluate(geometry.plus_point))
    return minus, plus


def _probe_direction(
    planned: _PlannedParameter, saved, displacement, multiplier: float, counted: _Objective, scale=None
):
    """The direction's probes at ``multiplier``; at 1 (the first pass) f must be finite there, as at a coordinate.

    The array must still be θ (it is restored from ``saved``, its snapshot, which would undo a
    change the objective made unseen)."""
    counted.unchanged(planned.name)
    try:
        return probe_direction(
            planned.array,
            saved,
            planned.gradient,
            displacement,
            multiplier,
            counted,
            required=multiplier == 1.0,
            scale=scale,
        )
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=error) from error


def _direction_displacement(planned: _PlannedParameter) -> Direction:
    """h_i·s_i/√N: each coordinate's step along the ±1 direction, scaled so that ‖Δ‖ is about one step."""
    return Direction(step=planned.step, step_factor=planned.dtype.step_factor, elements=int(planned.array.size))


def _confirmation_differences(planned, index: tuple, difference: CentralDifference, counted: _Objective) -> list:
    """The coordinate's differences at h·factor for each confirmation factor whose probes are usable."""
    differences, point = [], difference.point
    for factor in CONFIRMATION_FACTORS:
        step = difference.requested_step * factor
        try:
            geometry = dtype_perturbations(point, step, planned.dtype)
            minus, plus = _two_probes(planned.array, index, geometry, counted)
            differences.append(difference_from_values(point, step, geometry, minus, difference.center_value, plus))
        except GradCheckError:
            continue  # a probe that collapses, overflows or meets a non-finite value: not this step
    return differences


def _confirmations(item: _Probed, k: int, center: float, counted: _Objective) -> list:
    """Coordinate k's CentralDifferences at h and at each usable confirmation step."""
    planned = item.planned
    difference = _difference(planned, k, item.minus_values, center, item.plus_values)
    return [difference, *_confirmation_differences(planned, planned.columns.coordinate(k), difference, counted)]


def _judge_coordinate(
    item: _Probed,
    k: int,
    center: float,
    differences,
    jitter: float,
    resolution: Resolution,
    primary: PrimaryColumns,
    noise: ObservedNoise | None = None,
) -> CoordinateCheck:
    """Coordinate k's record, read from the ``primary`` columns at h when it passes there
    (``differences`` None); else judged from its ``differences`` at every step (:func:`_confirmations`),
    every bar carrying the parameter's observed ``noise``."""
    planned = item.planned
    index = planned.columns.coordinate(k)
    difference = differences[0] if differences else _difference(planned, k, item.minus_values, center, item.plus_values)
    analytic = float(planned.columns.analytic[k])
    try:
        comparison = compare_gradients(analytic, difference.derivative, planned.tolerance)
        kink_tolerance = float(_kink_tolerances(planned, difference.requested_step, difference.point))
        slopes = compare_one_sided_slopes(difference, kink_tolerance)
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=at_coordinate(index, error)) from error
    estimates = (primary.estimate(k),)
    floor = float(primary.floor[k])
    if differences is None:
        judgement = Judgement(verdict=PASSED, decided_at=0, reason=agreement(estimates[0], planned.tolerance, floor))
    else:
        noise = noise or ObservedNoise(epsilon=planned.dtype.epsilon, units=0.0)
        if noise.units:
            epsilons = value_epsilons(
                [difference.minus_value], center, [difference.plus_value], noise.epsilon, _points(difference)
            )
            factor = floor_factor(planned.columns.analytic, planned.dtype)
            step, point = difference.requested_step, difference.point
            floor = float(sensitivity_floors(step, point, epsilons, planned.tolerance, factor)[0])
        confirmations = stencil_estimates(
            differences,
            analytic,
            epsilon=noise.epsilon,
            jitter=jitter,
            kink_tolerance=_kink_tolerances(
                planned, np.array([d.requested_step for d in differences]), difference.point
            ),
        )
        first = estimates if not noise.units else ()
        estimates = with_step_sensitivity(
            [*first, *(confirmations.estimate(j) for j in range(len(first), len(differences)))]
        )
        judgement = judge_confirmed(
            estimates,
            planned.tolerance,
            resolution,
            floor=floor,
            collapsed=[other.minus_value == other.center_value == other.plus_value for other in differences],
            precision=planned.dtype.name,
            values_precision=_values_precision(planned, difference),
            noise=noise.units,
            rounding_zero=_rounding_zero(item, center, resolution),
        )
    between = min(slopes.left, slopes.right) <= analytic <= max(slopes.left, slopes.right)
    return CoordinateCheck(
        flat_index=int(planned.columns.offsets[k]),
        coordinate=index,
        difference=difference,
        comparison=comparison,
        kink=KinkVerdict(suspected=not slopes.consistent, analytic_between_slopes=between, slopes=slopes),
        **_verdict_fields(estimates, judgement),
    )


def _rounding_zero(item: _Probed, center: float, resolution: Resolution) -> float:
    """Where every first-step probe of the parameter left f bit-identical (a stale copy, a lower
    precision), the largest |analytic| that is zero up to rounding beside the gradients that matter:
    all that its collapsed estimates can pass. Elsewhere (one coordinate's collapse beside others
    that move f) a collapsed estimate bounds |f′| by its bar: no limit (inf)."""
    if np.any(item.minus_values != center) or np.any(item.plus_values != center):
        return math.inf
    return ROUNDING_FACTOR * item.planned.dtype.epsilon * max(resolution.gradient, resolution.check)


def _values_precision(planned: _PlannedParameter, difference: CentralDifference) -> str | None:
    """float32 or bfloat16 when f's three values at h are all numbers of that less precise dtype."""
    values = ([difference.minus_value], difference.center_value, [difference.plus_value])
    epsilon = float(value_epsilons(*values, planned.dtype.epsilon, _points(difference))[0])
    if epsilon == planned.dtype.epsilon:
        return None
    return "bfloat16" if epsilon == 2.0**-7 else "float32"


def _points(difference: CentralDifference) -> tuple:
    """The difference's θ−h, θ, θ+h as one-element columns (for value_epsilons)."""
    return ([difference.minus_point], [difference.point], [difference.plus_point])


def _verdict_fields(estimates: tuple, judgement: Judgement) -> dict:
    """The fields every judged record shares: the estimates, which one decided, the verdict and why."""
    return {
        "estimates": estimates,
        "decided_at": judgement.decided_at,
        "verdict": judgement.verdict,
        "reason": judgement.reason,
        "passed": judgement.verdict == PASSED,
    }


def _judge_direction(
    item: _Probed, counted: _Objective, jitter: float, resolution: Resolution, noise: ObservedNoise
) -> DirectionalCheck:
    """The directional test's verdict: at multiplier 1, confirmed at the other multipliers if needed,
    every bar carrying the value ``noise`` the parameter's coordinates showed."""
    planned = item.planned
    epsilon = noise.epsilon
    center = counted.centers[0]
    kink_tolerance = float(_kink_tolerances(planned, 0.0 if planned.step is None else planned.step, 0.0))

    def estimate(probe):
        scale = max(resolution.gradient, resolution.check) or 1.0  # all zero: the chapter's floor
        return directional_estimate(probe, center, epsilon, jitter, kink_tolerance, scale, resolution.gradient)

    probes = [item.direction] if item.direction is not None else []
    floor, judgement = planned.tolerance, None
    if probes:
        floor = _direction_floor(planned, probes[0], center, epsilon)
        judgement = judge_primary(estimate(probes[0]), planned.tolerance, resolution, "multiplier", floor=floor)
    if judgement is None:
        for factor in CONFIRMATION_FACTORS:
            probe = _probe_direction(planned, item.original, item.displacement, factor, counted)
            if probe is not None:
                probes.append(probe)
        noise = _direction_noise(probes, center, noise, planned.dtype.epsilon)
        if noise.epsilon > epsilon:  # the direction's own estimates show f's lower precision
            epsilon = noise.epsilon
            floor = _direction_floor(planned, probes[0], center, epsilon)
    estimates = tuple(estimate(probe) for probe in probes)
    if judgement is None and not estimates:
        judgement = Judgement(
            verdict=INCONCLUSIVE, decided_at=0, reason="the direction's probes round back to θ or overflow"
        )
    elif judgement is None:
        estimates = with_step_sensitivity(estimates)
        judgement = judge_confirmed(
            estimates,
            planned.tolerance,
            resolution,
            "multiplier",
            floor=floor,
            collapsed=[probe.minus_value == center == probe.plus_value for probe in probes],
            precision=planned.dtype.name,
            noise=noise.units,
            rounding_zero=_rounding_zero(item, center, resolution),
        )
    first = probes[0] if probes else None
    return DirectionalCheck(
        elements=int(planned.array.size),
        moved=first.moved if first else 0,
        minus_value=first.minus_value if first else math.nan,
        plus_value=first.plus_value if first else math.nan,
        **_verdict_fields(estimates, judgement),
    )


def _direction_floor(planned: _PlannedParameter, probe, center: float, epsilon: float) -> float:
    """The directional test's sensitivity floor at multiplier 1, f's values carrying ``epsilon``."""
    step = planned.dtype.default_step(0.0) if planned.step is None else planned.step
    epsilons = value_epsilons([probe.minus_value], center, [probe.plus_value], epsilon)
    factor = floor_factor(planned.columns.analytic, planned.dtype)
    return float(sensitivity_floors(step, 0.0, epsilons, planned.tolerance, factor)[0])


def _direction_noise(probes: list, center: float, noise: ObservedNoise, epsilon: float) -> ObservedNoise:
    """The larger of the parameter's observed ``noise`` and the one the direction's own estimates
    show, beyond the rounding of the dtype's ``epsilon``."""
    moved = [probe for probe in probes if not probe.minus_value == center == probe.plus_value]
    series = [
        (
            probe.multiplier,
            (probe.plus_value - probe.minus_value) / (2 * probe.multiplier),
            1.0 / probe.multiplier,
            max(abs(probe.minus_value), abs(center), abs(probe.plus_value)),
        )
        for probe in moved
    ]
    own = series_noise([series], epsilon)
    return own if own.epsilon > noise.epsilon else noise


def _largest_gradient(item: _Probed) -> float:
    """The largest |numerical| at the checked coordinates: neither an unchecked entry nor the
    analytic side under test (a bug that scales it up) sets the tolerance of the others."""
    return max(0.0, float(np.max(np.abs(item.slopes.derivative))))


def _kink_tolerances(planned: _PlannedParameter, steps, theta):
    """The one-sided slopes' tolerance at requested ``steps`` at ``theta``: a number, or a column.

    The given one; at the default step ε^(1/6) (at every confirmation step too); else
    :func:`kink_tolerance_for_step`'s rule.
    """
    if planned.kink_tolerance is not None:
        return planned.kink_tolerance
    if planned.step is None:
        return planned.dtype.kink_tolerance
    return _step_kink_tolerances(steps, theta, planned.dtype)


def _scale(offsets: np.ndarray, slopes: SlopeColumns) -> DirectionScale:
    """The direction scale's weights: |a| capped at the checked coordinates' largest one-sided slope
    magnitude (at least |numerical|; at a corner, the corner's slope), those magnitudes there."""
    with np.errstate(all="ignore"):
        resolved = np.maximum(np.abs(slopes.left), np.abs(slopes.right))
    return DirectionScale(offsets, resolved, float(np.max(resolved, initial=0.0)))


def _direction_scale(item: _Probed) -> float:
    """‖ĝ∘Δ‖₂ of the direction Δ (:class:`~gradcheck_cli.directional.DirectionScale`): what the
    estimates resolve, so that a gradient scaled up by a bug does not raise its own bar (0
    without a direction)."""
    return 0.0 if item.direction is None else item.direction_scale


def _judge_parameter(
    item: _Probed, counted: _Objective, jitter: float, largest: tuple, direction_scale: float
) -> ParameterCheck:
    planned, columns = item.planned, item.planned.columns
    resolution = Resolution(gradient=_largest_gradient(item), check=largest[0])
    kink_tolerances = _kink_tolerances(planned, columns.step, columns.theta)
    primary = primary_columns(
        columns,
        item.minus_values,
        counted.centers[0],
        item.plus_values,
        item.slopes,
        epsilon=planned.dtype.epsilon,
        jitter=jitter,
        tolerance=planned.tolerance,
        kink_tolerance=kink_tolerances,
        resolution=resolution.gradient,
        floor_factor=floor_factor(columns.analytic, planned.dtype),
    )
    center = counted.centers[0]
    confirmed = {k: _confirmations(item, k, center, counted) for k in np.flatnonzero(~primary.passed).tolist()}
    noise = observed_noise(confirmed.values(), planned.dtype.epsilon)
    judged = {
        k: _judge_coordinate(item, k, center, differences, jitter, resolution, primary, noise)
        for k, differences in confirmed.items()
    }
    # The records are built from what they show, not from the arrays: the report keeps no copy of θ.
    slim = _Probed(
        dataclasses.replace(planned, array=None, gradient=None), item.minus_values, item.plus_values, item.slopes
    )
    checks = CoordinateChecks(slim, center, jitter, resolution, primary, judged)
    resolution = Resolution(gradient=direction_scale, check=largest[1])
    directional = _judge_direction(item, counted, jitter, resolution, noise)
    verdict = verdict_of(checks.verdicts() | {directional.verdict})
    unique = np.unique(kink_tolerances) if isinstance(kink_tolerances, np.ndarray) else [kink_tolerances]
    diagnosis = diagnose_parameter(
        checks.failed(),
        checks.passing_index_columns(),
        directional,
        np.asarray(planned.gradient, dtype=np.float64) if checks.failed() else planned.gradient,  # read if failed
        _directional_gap(item, directional, planned.tolerance),
        checks.verdict_count(INCONCLUSIVE),
    )
    if diagnosis is None and verdict != PASSED and _unchanged(item, center, directional):
        diagnosis = unchanged_diagnosis(planned.name, planned.dtype.name)
    return ParameterCheck(
        name=planned.name,
        dtype=planned.dtype.name,
        shape=tuple(planned.array.shape),
        selection=planned.selection,
        requested_samples=planned.requested_samples,
        step=planned.step,
        tolerance=planned.tolerance,
        kink_tolerance=float(unique[0]) if len(unique) == 1 else None,
        verdict=verdict,
        passed=verdict == PASSED,
        checks=checks,
        directional=directional,
        diagnosis=diagnosis,
    )


def _unchanged(item: _Probed, center: float, directional: DirectionalCheck) -> bool:
    """f bit-identical to f(θ) at both probes of every coordinate's first step and of the direction."""
    moved = np.any(item.minus_values != center) or np.any(item.plus_values != center)
    return not moved and directional.minus_value == center == directional.plus_value


def _directional_gap(item: _Probed, directional: DirectionalCheck, tolerance: float) -> DirectionalGap | None:
    """A failed directional test's gap, for the diagnosis to explain (None unless it failed)."""
    if directional.verdict != FAILED or item.displacement is None:
        return None
    estimate = directional.estimates[directional.decided_at]
    return DirectionalGap(
        shifts=item.displacement.shifts(item.original),
        gap=estimate.analytic - estimate.numerical,
        limit=max(FAIL_MARGIN * estimate.error_bar.total, tolerance * estimate.scale),
    )


def _report(checks: list, purity: PurityVerdict, step_advice, evaluations: int) -> GradientCheckReport:
    verdict = verdict_of((check.verdict for check in checks), purity.stateful)
    return GradientCheckReport(
        verdict=verdict,
        passed=verdict == PASSED,
        checked=sum(len(check.checks) for check in checks),
        failed=sum(check.checks.verdict_count(FAILED) for check in checks),
        inconclusive=sum(
            check.checks.verdict_count(INCONCLUSIVE) + check.checks.verdict_count(KINK) for check in checks
        ),
        failing_parameters=tuple(check.name for check in checks if not check.passed),
        purity=purity,
        parameters=tuple(checks),
        step_advice=step_advice,
        evaluations=evaluations,
        diagnosis=diagnose_report([check.diagnosis for check in checks]),
    )


def _purity(centers: list, epsilon: float) -> PurityVerdict:
    """The spread of f(θ) over its evaluations at the restored point, and what it means."""
    reference = centers[0]
    distinct = len({float_bits(value) for value in centers})
    spread = max(centers) - min(centers)
    stateful = spread > JITTER_LIMIT * epsilon * max(abs(value) for value in centers)
    if distinct == 1:
        message = f"all {len(centers)} evaluations of f(θ) are bit-identical"
    elif stateful:
        message = (
            f"the objective is nondeterministic or stateful: f(θ) took {distinct} different values in "
            f"{len(centers)} evaluations with every parameter restored (spread {spread:.2e}), far beyond "
            "rounding jitter; no comparison built on it is evidence"
        )
    else:
        message = (
            f"f(θ) took {distinct} different values in {len(centers)} evaluations (spread {spread:.2e}): "
            "rounding jitter, counted in every error bar"
        )
    return PurityVerdict(
        pure=distinct == 1,
        stateful=stateful,
        evaluations=len(centers),
        distinct=distinct,
        reference_value=reference,
        spread=spread,
        message=message,
    )


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
    return float(_step_kink_tolerances(np.float64(validate_step(step)), np.float64(point), dtype))


def _step_kink_tolerances(steps, theta, dtype: ProbeDtype):
    """max(ε^(1/6), √(h / max(1, |θ|))) of each requested step h at θ (numbers or columns)."""
    with np.errstate(all="ignore"):
        return np.maximum(dtype.kink_tolerance, np.sqrt(steps / np.maximum(1.0, np.abs(theta))))


def check_problem(problem: GradientProblem, **options) -> GradientCheckReport:
    """:func:`check_gradients` on a :class:`~gradcheck_cli.problem.GradientProblem` (same options).

    With ``jobs``, the worker processes load a problem that :func:`~gradcheck_cli.problem.load_problem`
    loaded by its reference, and unpickle any other.
    """
    objective = problem.objective
    if problem.reference is not None and callable(objective) and not _serial(options.get("jobs")):
        objective = _parallel().ByReference(objective, problem.reference)
    return check_gradients(objective, problem.parameters, problem.gradients, **options)


def _serial(jobs) -> bool:
    """Whether ``jobs`` asks for no workers (None or 1): then parallel.py and concurrent.futures are not imported."""
    return jobs is None or (type(jobs) is int and jobs == 1)


def _parallel():
    from .. import parallel

    return parallel


def _is_auto(step) -> bool:
    return isinstance(step, str) and step == AUTO_STEP


# Validation: everything below runs before the first objective call, except _probed_at, which
# validates the probes at the advised steps after the advice and before the first checked coordinate.


def _plan(
    objective, parameters, gradients, samples, step, tolerance, kink_tolerance, coordinates, names, sampler
) -> list:
    if not callable(objective):
        raise InvalidArgument(argument="objective", value=type(objective).__name__, expected="callable")
    _validate_mapping("parameters", "arrays", parameters)
    _validate_mapping("gradients", "arrays", gradients)
    for name in gradients:
        if name not in parameters:
            raise UnexpectedGradient(name=name)
    steps = AUTO_STEP if _is_auto(step) else _per_parameter("step", step, validate_step, parameters)
    if tolerance is not None:
        tolerance = validate_tolerance(tolerance)
    kink_tolerances = _per_parameter("kink_tolerance", kink_tolerance, validate_tolerance, parameters)
    samples = _validated_samples(samples)
    if not (isinstance(sampler, str) and sampler in SAMPLERS):
        raise UnknownSampler(sampler=repr(sampler), available=list(SAMPLERS))
    selected = selected_names(parameters, gradients, names)
    if coordinates is None:
        coordinates = {}
    _validate_mapping("coordinates", "lists of coordinates", coordinates)
    for name in coordinates:
        if name not in parameters:
            raise UnknownParameter(name=name, available=list(parameters))

    plan = []
    for name in selected:
        try:
            plan.append(
                _plan_parameter(
                    name,
                    parameters[name],
                    gradients[name],
                    samples,
                    coordinates.get(name),
                    steps.get(name) if isinstance(steps, dict) else steps,
                    tolerance,
                    kink_tolerances.get(name) if isinstance(kink_tolerances, dict) else kink_tolerances,
                    sampler,
                )
            )
        except GradCheckError as error:
            raise AtParameter(parameter=name, source=error) from error
    reject_shared_memory(parameters, selected)
    return plan


def _validate_mapping(role: str, values: str, mapping) -> None:
    if not isinstance(mapping, Mapping):
        raise InvalidArgument(
            argument=role, value=type(mapping).__name__, expected=f"a mapping from parameter names to {values}"
        )
    for key in mapping:
        if not isinstance(key, str):
            raise InvalidParameterName(name=repr(key), type_name=type(key).__name__)


def _per_parameter(role: str, value, validate: Callable, parameters: Mapping):
    """None, one validated value, or a dict name → validated value (names checked against ``parameters``)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        return validate(value, role)
    _validate_mapping(role, "numbers", value)
    validated = {}
    for name, item in value.items():
        if name not in parameters:
            raise UnknownParameter(name=name, available=list(parameters))
        try:
            validated[name] = validate(item, role)
        except GradCheckError as error:
            raise AtParameter(parameter=name, source=error) from error
    return validated


def _validated_samples(samples) -> Samples:
    if isinstance(samples, str) and samples == ALL_COORDINATES:
        return ALL_COORDINATES
    return validate_samples(samples, role="samples per parameter", expected='a positive whole number or "all"')


def _selection(shape: tuple, gradient, samples, listed, sampler) -> tuple:
    """(selection, requested samples or None, flat offsets) of one parameter, as a check selects them."""
    if listed is not None:
        return "explicit", None, [sample.flat_index for sample in _explicit_coordinates(listed, shape)]
    count = element_count(shape)
    if count == 0:
        raise EmptyTensor()
    if samples == ALL_COORDINATES:
        validate_selection(count, coordinate_bytes=CHECKED_COORDINATE_BYTES)
        return "all", None, np.arange(count, dtype=np.intp)
    validate_selection(min(samples, count), coordinate_bytes=CHECKED_COORDINATE_BYTES)
    return sampler, samples, select_offsets(shape, samples, gradient, sampler)


def selected_coordinates(
    parameters: Mapping,
    gradients: Mapping,
    *,
    samples: Samples = CHECK_SAMPLES,
    sampler: str = "structured",
    names=None,
) -> tuple:
    """The coordinates ``check_gradients`` with these options probes, one ParameterSample per parameter.

    Nothing is evaluated: the selection needs only the shapes and, for the structured sampler,
    the analytic gradients (their largest entries are among the coordinates).
    """
    samples = _validated_samples(samples)
    if not (isinstance(sampler, str) and sampler in SAMPLERS):
        raise UnknownSampler(sampler=repr(sampler), available=list(SAMPLERS))
    chosen = []
    for name in selected_names(parameters, gradients, names):
        try:
            dtype, gradient = parameter_and_gradient(parameters[name], gradients[name])
            shape = tuple(parameters[name].shape)
            selection, requested, offsets = _selection(shape, gradient, samples, None, sampler)
        except GradCheckError as error:
            raise AtParameter(parameter=name, source=error) from error
        coordinates = tuple(SampledCoordinate(int(k), coordinate_from_offset(shape, int(k))) for k in offsets)
        chosen.append(ParameterSample(name, dtype.name, shape, selection, requested, coordinates))
    return tuple(chosen)


def _plan_parameter(
    name, array, gradient, samples, listed, step, tolerance, kink_tolerance, sampler
) -> _PlannedParameter:
    dtype, gradient = parameter_and_gradient(array, gradient)
    array = plain_view(array)
    reject_non_finite(array, gradient)
    selection, requested, offsets = _selection(array.shape, gradient, samples, listed, sampler)

    if _is_auto(step):
        # The probes wait for the advised step; θ must be finite where the advice will probe too.
        planned = plan_columns(array, gradient, offsets, dtype, None, probes=False)
        representative = representative_coordinate(array.shape)
        try:
            finite_point(array, representative)
        except GradCheckError as error:
            raise at_coordinate(representative, error) from error
    else:
        planned = plan_columns(array, gradient, offsets, dtype, step)

    return _PlannedParameter(
        name=name,
        array=array,
        gradient=gradient,
        dtype=dtype,
        selection=selection,
        requested_samples=requested,
        step=step,
        tolerance=dtype.tolerance if tolerance is None else tolerance,
        kink_tolerance=kink_tolerance,
        columns=planned,
    )


def _probed_at(planned: _PlannedParameter, step: float) -> _PlannedParameter:
    """``planned`` at the advised ``step``, its probes validated (AtParameter if one is invalid)."""
    try:
        columns = with_probes(planned.columns, planned.dtype, step)
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=error) from error
    return dataclasses.replace(planned, step=step, columns=columns)


def _explicit_coordinates(listed, shape: tuple) -> list:
    if isinstance(listed, (str, bytes)) or not isinstance(listed, Iterable):
        raise InvalidCoordinate(coordinate=repr(listed), shape=list(shape))
    selected, seen = [], set()
    for item in listed:
        coordinate = _index_tuple(item, shape)
        if coordinate in seen:
            raise DuplicateCoordinate(coordinate=list(coordinate))
        seen.add(coordinate)
        selected.append(SampledCoordinate(offset_from_coordinate(shape, coordinate), coordinate))
    if not selected:
        raise ZeroSamples()
    return selected


def _index_tuple(item, shape: tuple) -> tuple:
    """A row-major index tuple into ``shape``; an int stands for (int,) in 1-D."""
    try:
        if isinstance(item, bool):
            raise TypeError
        if len(shape) == 1 and not isinstance(item, (tuple, list, np.ndarray)):
            coordinate = (operator.index(item),)
        else:
            coordinate = tuple(operator.index(position) for position in item)
            if any(isinstance(position, bool) for position in item):
                raise TypeError
    except TypeError:
        raise InvalidCoordinate(coordinate=repr(item), shape=list(shape)) from None
    in_range = len(coordinate) == len(shape) and all(0 <= p < extent for p, extent in zip(coordinate, shape))
    if not in_range:
        raise InvalidCoordinate(coordinate=rust_list(coordinate), shape=list(shape))
    return coordinate
