"""Check several named parameter arrays of one model against their analytic gradients.

:func:`check_gradients` perturbs each array in place, one selected coordinate at a time (and
once along a whole-parameter direction), with probes rounded into the array's own dtype, and
writes the exact original bits back after every call, on every path. Everything is validated
before the objective is called once. Each estimate carries an error bar, and each coordinate,
parameter and report gets one of three verdicts: passed, failed, inconclusive. How a verdict
is decided is docs/method.md ("Verdicts").
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from .advice import ProblemStepAdvice, advise_parameter_steps, representative_coordinate
from .defaults import CHECK_SAMPLES
from .diagnosis import Diagnosis, diagnose_parameter, diagnose_report
from .directional import DirectionalCheck, direction_signs, directional_estimate, probe_direction
from .dtypes import ProbeDtype, dtype_perturbations, probe_dtype
from .errors import (
    ArrayMadeReadOnly,
    AtParameter,
    DuplicateCoordinate,
    EmptyTensor,
    GradCheckError,
    InvalidCoordinate,
    InvalidParameterName,
    NotAMapping,
    NotCallable,
    ParameterChanged,
    UnexpectedGradient,
    UnknownParameter,
    UnknownSampler,
    ZeroSamples,
)
from .estimator import (
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
from .formatting import rust_list
from .judge import (
    CONFIRMATION_FACTORS,
    FAILED,
    INCONCLUSIVE,
    KINK,
    PASSED,
    Judgement,
    Resolution,
    judge_confirmed,
    judge_primary,
    stencil_gain,
    step_estimate,
    value_epsilon,
    with_step_sensitivity,
)
from .problem import GradientProblem, reject_non_finite, reject_shared_memory, selected_names
from .records import Record, float_bits
from .sampling import offset_from_coordinate, validate_samples
from .selection import SAMPLERS, select_coordinates
from .tensors import (
    SampledCoordinate,
    at_coordinate,
    element_count,
    finite_point,
    parameter_and_gradient,
    plan_coordinates,
    probing_objective,
    sample_tensor_coordinates,
    write_back,
)

__all__ = [
    "DEFAULT_SAMPLES",
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
]

#: Coordinates per parameter unless told otherwise.
DEFAULT_SAMPLES = CHECK_SAMPLES
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
    checks : tuple of CoordinateCheck, in row-major order
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
        return [(check.name, record) for check in self.parameters for record in check.checks if not record.passed]


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
    coordinates: tuple


@dataclass
class _Probed:
    """A parameter after the first pass: each coordinate's difference at h, the direction's probe."""

    planned: _PlannedParameter
    differences: list
    original: np.ndarray
    displacement: np.ndarray
    direction: object


class _Objective:
    """The user's objective, called as ``objective(parameters)`` and counted; f(θ) kept."""

    def __init__(self, objective: Callable, parameters: Mapping, checked: dict):
        self.objective, self.parameters, self.calls, self.centers = objective, parameters, 0, []
        self.checked = checked
        self.snapshots = {name: np.array(array, copy=True) for name, array in checked.items()}

    def __call__(self, _parameters=None):
        self.calls += 1
        return self.objective(self.parameters)

    def center(self) -> float:
        """f(θ) with every array restored, validated and recorded for the purity measurement."""
        value = evaluated_value("center", self())
        self.unchanged()
        self.centers.append(value)
        return value

    def unchanged(self) -> None:
        """Every checked array is still the one given, writable and bit-identical to the original:
        else it is restored and the objective's change is a typed error."""
        for name, array in self.checked.items():
            if not array.flags.writeable:
                raise ArrayMadeReadOnly(role="parameters")
            if self.parameters.get(name) is not array:
                raise ParameterChanged(parameter=name, change="replaced or removed")
            if np.array(array, copy=False).tobytes() != self.snapshots[name].tobytes():
                write_back(array, Ellipsis, self.snapshots[name])
                raise ParameterChanged(parameter=name, change="modified in place")


def check_gradients(
    objective: Callable[[Mapping], float],
    parameters: Mapping,
    gradients: Mapping,
    *,
    samples: Samples = DEFAULT_SAMPLES,
    step: None | float | str | Mapping = None,
    tolerance: float | None = None,
    kink_tolerance: None | float | Mapping = None,
    coordinates: Mapping | None = None,
    names: Iterable[str] | None = None,
    sampler: str = "structured",
    progress: Callable[[int, int], None] | None = None,
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
        Called with (0, total) before the first objective call and after every coordinate.

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
        raise NotCallable(role="progress", type_name=type(progress).__name__)
    counted = _Objective(objective, parameters, {planned.name: planned.array for planned in plan})
    total = sum(len(planned.coordinates) for planned in plan)
    if progress is not None:
        progress(0, total)
    step_advice = None
    if _is_auto(step):
        step_advice = advise_parameter_steps(counted, parameters, [planned.name for planned in plan])
        plan = [_probed_at(planned, step_advice.steps[planned.name]) for planned in plan]
    probed = _first_pass(plan, counted, progress, total)
    purity = _purity(counted.centers, min(planned.dtype.epsilon for planned in plan))
    largest = _resolution(probed)
    checks = [_judge_parameter(item, counted, purity.spread, largest) for item in probed]
    return _report(checks, purity, step_advice, counted.calls)


def _first_pass(plan: list, counted: _Objective, progress, total: int) -> list:
    """f(θ), each coordinate's two probes at h, each direction's two probes; f(θ) again at checkpoints."""
    center = counted.center()
    checkpoints = {max(1, math.ceil(total * part / 3)) for part in (1, 2)}
    probed, done = [], 0
    for planned in plan:
        differences = []
        for coordinate in planned.coordinates:
            differences.append(_primary_difference(planned, coordinate, counted, center))
            done += 1
            if done in checkpoints:
                counted.center()
            if progress is not None:
                progress(done, total)
        original = np.asarray(planned.array, dtype=np.float64).copy()
        displacement = _direction_displacement(planned, original)
        direction = _probe_direction(planned, original, displacement, 1.0, counted)
        probed.append(_Probed(planned, differences, original, displacement, direction))
    counted.center()
    return probed


def _primary_difference(planned: _PlannedParameter, coordinate, counted: _Objective, center: float):
    """The coordinate's central difference at h, with the shared f(θ); typed errors in AtParameter."""
    index = coordinate.sample.coordinate
    try:
        try:
            minus, plus = _two_probes(planned.array, index, coordinate.geometry, counted)
            return difference_from_values(coordinate.point, coordinate.step, coordinate.geometry, minus, center, plus)
        except GradCheckError as error:
            raise at_coordinate(index, error) from error
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=error) from error


def _two_probes(array: np.ndarray, index: tuple, geometry, counted: _Objective) -> tuple:
    evaluate = probing_objective(array, index, counted)
    minus = evaluated_value("minus", evaluate(geometry.minus_point))
    plus = evaluated_value("plus", evaluate(geometry.plus_point))
    return minus, plus


def _probe_direction(planned: _PlannedParameter, original, displacement, multiplier: float, counted: _Objective):
    """The direction's probes at ``multiplier``; at 1 (the first pass) f must be finite there, as at a coordinate."""
    try:
        return probe_direction(
            planned.array, original, planned.gradient, displacement, multiplier, counted, required=multiplier == 1.0
        )
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=error) from error


def _direction_displacement(planned: _PlannedParameter, original: np.ndarray) -> np.ndarray:
    """h_i·s_i/√N: each coordinate's step along the ±1 direction, scaled so that ‖Δ‖ is about one step."""
    if planned.step is None:
        steps = planned.dtype.step_factor * np.maximum(1.0, np.abs(original))
    else:
        steps = np.full(original.shape, float(planned.step))
    return steps * direction_signs(original.size).reshape(original.shape) / math.sqrt(original.size)


def _kink_tolerance(planned: _PlannedParameter, step: float, point: float) -> float:
    if planned.kink_tolerance is not None:
        return planned.kink_tolerance
    if planned.step is None:
        return planned.dtype.kink_tolerance  # exactly ε^(1/6) at the default step
    return kink_tolerance_for_step(step, point, planned.dtype)


def _coordinate_estimate(planned, difference: CentralDifference, analytic: float, jitter: float, scale: float) -> tuple:
    """The StepEstimate of one difference, and its chapter-style slope comparison.

    ε is the precision f's values carry (float32's for an objective computed in float32).
    """
    d = difference
    kink_tolerance = _kink_tolerance(planned, d.requested_step, d.point)
    slopes = compare_one_sided_slopes(d, kink_tolerance)
    values = (d.minus_value, d.center_value, d.plus_value)
    epsilon = value_epsilon(values, planned.dtype.epsilon)
    estimate = step_estimate(
        d.requested_step,
        analytic,
        d.derivative,
        largest_value=max(abs(value) for value in values),
        epsilon=epsilon,
        jitter=jitter,
        gain=stencil_gain(d.minus_spacing, d.plus_spacing, d.left_weight, d.right_weight),
        slopes_consistent=slopes.consistent,
    )
    return estimate, slopes


def _confirmation_differences(planned, coordinate, difference: CentralDifference, counted: _Objective) -> list:
    """The coordinate's differences at h·factor for each confirmation factor whose probes are usable."""
    differences = []
    for factor in CONFIRMATION_FACTORS:
        step = difference.requested_step * factor
        try:
            geometry = dtype_perturbations(coordinate.point, step, planned.dtype)
            minus, plus = _two_probes(planned.array, coordinate.sample.coordinate, geometry, counted)
            center = difference.center_value
            differences.append(difference_from_values(coordinate.point, step, geometry, minus, center, plus))
        except GradCheckError:
            continue  # a probe that collapses, overflows or meets a non-finite value: not this step
    return differences


def _judge_coordinate(
    planned, coordinate, difference, counted, jitter: float, resolution: Resolution
) -> CoordinateCheck:
    analytic = coordinate.analytic
    try:
        comparison = compare_gradients(analytic, difference.derivative, planned.tolerance)
        primary, slopes = _coordinate_estimate(planned, difference, analytic, jitter, resolution.gradient)
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=at_coordinate(coordinate.sample.coordinate, error)) from error
    estimates = (primary,)
    judgement = judge_primary(primary, planned.tolerance, resolution)
    if judgement is None:
        more = _confirmation_differences(planned, coordinate, difference, counted)
        estimates = with_step_sensitivity(
            [
                primary,
                *(_coordinate_estimate(planned, other, analytic, jitter, resolution.gradient)[0] for other in more),
            ]
        )
        judgement = judge_confirmed(estimates, planned.tolerance, resolution)
    between = min(slopes.left, slopes.right) <= analytic <= max(slopes.left, slopes.right)
    return CoordinateCheck(
        flat_index=coordinate.sample.flat_index,
        coordinate=coordinate.sample.coordinate,
        difference=difference,
        comparison=comparison,
        kink=KinkVerdict(suspected=not slopes.consistent, analytic_between_slopes=between, slopes=slopes),
        **_verdict_fields(estimates, judgement),
    )


def _verdict_fields(estimates: tuple, judgement: Judgement) -> dict:
    """The fields every judged record shares: the estimates, which one decided, the verdict and why."""
    return {
        "estimates": estimates,
        "decided_at": judgement.decided_at,
        "verdict": judgement.verdict,
        "reason": judgement.reason,
        "passed": judgement.verdict == PASSED,
    }


def _judge_direction(item: _Probed, counted: _Objective, jitter: float, resolution: Resolution) -> DirectionalCheck:
    """The directional test's verdict: at multiplier 1, confirmed at the other multipliers if needed."""
    planned = item.planned
    center = counted.centers[0]
    kink_tolerance = _kink_tolerance(planned, 0.0 if planned.step is None else planned.step, 0.0)

    def estimate(probe):
        scale = max(resolution.gradient, resolution.check) or 1.0  # all zero: the chapter's floor
        return directional_estimate(probe, center, planned.dtype.epsilon, jitter, kink_tolerance, scale)

    probes = [item.direction] if item.direction is not None else []
    judgement = judge_primary(estimate(probes[0]), planned.tolerance, resolution, "multiplier") if probes else None
    if judgement is None:
        for factor in CONFIRMATION_FACTORS:
            probe = _probe_direction(planned, item.original, item.displacement, factor, counted)
            if probe is not None:
                probes.append(probe)
    estimates = tuple(estimate(probe) for probe in probes)
    if judgement is None and not estimates:
        judgement = Judgement(
            verdict=INCONCLUSIVE, decided_at=0, reason="the direction's probes round back to θ or overflow"
        )
    elif judgement is None:
        estimates = with_step_sensitivity(estimates)
        judgement = judge_confirmed(estimates, planned.tolerance, resolution, "multiplier")
    first = probes[0] if probes else None
    return DirectionalCheck(
        elements=int(planned.array.size),
        moved=first.moved if first else 0,
        minus_value=first.minus_value if first else math.nan,
        plus_value=first.plus_value if first else math.nan,
        **_verdict_fields(estimates, judgement),
    )


def _resolution(probed: list) -> tuple:
    """The largest |analytic| or |numerical| of the whole check: of a coordinate, and of a direction."""
    coordinates, directions = [0.0], [0.0]
    for item in probed:
        coordinates.append(_largest_gradient(item))
        if item.direction is not None:
            directions.append(item.direction.scale)
    return max(coordinates), max(directions)


def _largest_gradient(item: _Probed) -> float:
    """The largest |analytic| or |numerical| at the checked coordinates (an unchecked entry, maybe
    wrong, never sets the tolerance of the others)."""
    analytic = [abs(coordinate.analytic) for coordinate in item.planned.coordinates]
    return max([0.0] + analytic + [abs(difference.derivative) for difference in item.differences])


def _judge_parameter(item: _Probed, counted: _Objective, jitter: float, largest: tuple) -> ParameterCheck:
    planned = item.planned
    resolution = Resolution(gradient=_largest_gradient(item), check=largest[0])
    checks = tuple(
        _judge_coordinate(planned, coordinate, difference, counted, jitter, resolution)
        for coordinate, difference in zip(planned.coordinates, item.differences)
    )
    # The direction's values are changes of f per unit multiplier: its scale is ‖a∘Δ‖₂/2.
    own = 0.0 if item.direction is None else item.direction.scale
    directional = _judge_direction(item, counted, jitter, Resolution(gradient=own, check=largest[1]))
    verdicts = {check.verdict for check in checks} | {directional.verdict}
    verdict = FAILED if FAILED in verdicts else (PASSED if verdicts == {PASSED} else INCONCLUSIVE)
    kink_tolerances = {check.kink.slopes.tolerance for check in checks}
    return ParameterCheck(
        name=planned.name,
        dtype=planned.dtype.name,
        shape=tuple(planned.array.shape),
        selection=planned.selection,
        requested_samples=planned.requested_samples,
        step=planned.step,
        tolerance=planned.tolerance,
        kink_tolerance=kink_tolerances.pop() if len(kink_tolerances) == 1 else None,
        verdict=verdict,
        passed=verdict == PASSED,
        checks=checks,
        directional=directional,
        diagnosis=diagnose_parameter(checks, directional, np.asarray(planned.gradient, dtype=np.float64)),
    )


def _report(checks: list, purity: PurityVerdict, step_advice, evaluations: int) -> GradientCheckReport:
    verdicts = {check.verdict for check in checks}
    if FAILED in verdicts:
        verdict = FAILED
    elif verdicts == {PASSED} and not purity.stateful:
        verdict = PASSED
    else:
        verdict = INCONCLUSIVE
    coordinates = [record for check in checks for record in check.checks]
    return GradientCheckReport(
        verdict=verdict,
        passed=verdict == PASSED,
        checked=len(coordinates),
        failed=sum(1 for record in coordinates if record.verdict == FAILED),
        inconclusive=sum(1 for record in coordinates if record.verdict in (INCONCLUSIVE, KINK)),
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
    relative = validate_step(step) / max(1.0, abs(float(point)))
    return max(dtype.kink_tolerance, math.sqrt(relative))


def check_problem(problem: GradientProblem, **options) -> GradientCheckReport:
    """:func:`check_gradients` on a :class:`~gradcheck_cli.problem.GradientProblem` (same options)."""
    return check_gradients(problem.objective, problem.parameters, problem.gradients, **options)


def _is_auto(step) -> bool:
    return isinstance(step, str) and step == AUTO_STEP


# Validation: everything below runs before the first objective call, except _probed_at, which
# validates the probes at the advised steps after the advice and before the first checked coordinate.


def _plan(
    objective, parameters, gradients, samples, step, tolerance, kink_tolerance, coordinates, names, sampler
) -> list:
    if not callable(objective):
        raise NotCallable(role="objective", type_name=type(objective).__name__)
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
        raise NotAMapping(role=role, values=values, type_name=type(mapping).__name__)
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


def _plan_parameter(
    name, array, gradient, samples, listed, step, tolerance, kink_tolerance, sampler
) -> _PlannedParameter:
    dtype, gradient = parameter_and_gradient(array, gradient)
    reject_non_finite(array, gradient)
    if listed is not None:
        selection, requested = "explicit", None
        samples_selected = _explicit_coordinates(listed, array.shape)
    elif samples == ALL_COORDINATES:
        selection, requested = "all", None
        count = element_count(array.shape)
        if count == 0:
            raise EmptyTensor()
        samples_selected = sample_tensor_coordinates(array.shape, count)
    else:
        selection, requested = sampler, samples
        if element_count(array.shape) == 0:
            raise EmptyTensor()
        samples_selected = select_coordinates(array.shape, samples, gradient, sampler)

    if _is_auto(step):
        # The probes wait for the advised step; θ must be finite where the advice will probe too.
        planned = plan_coordinates(array, gradient, samples_selected, dtype, probes=False)
        representative = representative_coordinate(array.shape)
        try:
            finite_point(array, representative)
        except GradCheckError as error:
            raise at_coordinate(representative, error) from error
    else:
        planned = plan_coordinates(array, gradient, samples_selected, dtype, step)

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
        coordinates=planned,
    )


def _probed_at(planned: _PlannedParameter, step: float) -> _PlannedParameter:
    """``planned`` at the advised ``step``, its probes validated (AtParameter if one is invalid)."""
    samples = [coordinate.sample for coordinate in planned.coordinates]
    try:
        coordinates = plan_coordinates(planned.array, planned.gradient, samples, planned.dtype, step)
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=error) from error
    return dataclasses.replace(planned, step=step, coordinates=coordinates)


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
