"""Check several named parameter arrays of one model against their analytic gradients.

:func:`check_gradients` is the chapter's sampled tensor check for a whole
model: an objective ``objective(parameters) -> float``, a mapping of named
parameter arrays, and a mapping of their analytic gradients. Each array is
perturbed in place, one selected coordinate at a time, with probes rounded
once into the array's own dtype (:mod:`gradcheck_cli.dtypes`), and the
exact original bits are written back after every call, on every path. The
arrays, the coordinates and the probing are the chapter's tensor check's own
(:func:`~gradcheck_cli.tensors.parameter_and_gradient`,
:func:`~gradcheck_cli.tensors.plan_coordinates`,
:func:`~gradcheck_cli.tensors.probe_coordinate`).

Everything is validated — the mappings, dtypes, shapes, the selected
coordinates, every probe and every analytic value, that no two parameters
share memory — before the objective is called once, so a bad request is a
typed :class:`~gradcheck_cli.errors.GradCheckError` and never a partial
report. With ``step="auto"`` the probes depend on the advised steps, so they
alone are validated after the step advice; everything else comes first.

Verdicts
--------
Every selected coordinate gets the chapter's :class:`CentralDifference` and
:class:`GradientComparison`, plus two verdicts no single comparison gives:

* **Kink.** The chapter's :func:`compare_one_sided_slopes` runs at the kink
  tolerance. By default it goes with each coordinate's step
  (:func:`kink_tolerance_for_step`): the dtype's ε^(1/6) at the default
  step (see :mod:`gradcheck_cli.dtypes`), max(ε^(1/6), √(h / max(1, |θ|)))
  at a given or advised step h, so that a larger step's curvature is not
  taken for a kink. When the slopes disagree the coordinate is a *suspected
  kink*: a corner, a step too large for the local curvature, or rounding
  damage. The record says whether the analytic value lies between the two
  slopes (consistent with a subgradient) or outside them. A kink is never
  evidence that the gradient is right: the coordinate does not pass,
  whatever the comparison says, so ``passed`` (and the CLI's exit code)
  report a failure. Choose other coordinates or another step to get
  evidence there.
* **Purity.** The center value f(θ) is evaluated once per coordinate with
  every array restored, so all center values must be bit-identical. The
  first one that differs (within a parameter, and across parameters) makes
  the check fail, naming both coordinates and values: the objective is
  nondeterministic or stateful, and no comparison built on it is evidence.

A coordinate passes when its comparison passes and no kink is suspected; a
parameter passes when all its coordinates pass and its center values agree;
the report passes when every parameter passes and the center values agree
across parameters. Passing is evidence for the selected coordinates, probes,
steps and tolerances only — not a proof of the whole gradient.
"""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Callable, Iterable, Optional, Union

import numpy as np

from .advice import ProblemStepAdvice, advise_parameter_steps, representative_coordinate
from .chapter import CHECK_SAMPLES
from .dtypes import ProbeDtype, probe_dtype
from .errors import (
    AtParameter,
    DuplicateCoordinate,
    EmptyTensor,
    GradCheckError,
    InvalidCoordinate,
    InvalidParameterName,
    NotAMapping,
    NotCallable,
    UnexpectedGradient,
    UnknownParameter,
    ZeroSamples,
)
from .estimator import (
    CentralDifference,
    GradientComparison,
    OneSidedSlopeComparison,
    compare_gradients,
    compare_one_sided_slopes,
    validate_step,
    validate_tolerance,
)
from .formatting import rust_debug, rust_list
from .problem import GradientProblem, reject_shared_memory, selected_names
from .records import Record, record, same_bits
from .sampling import validate_samples
from .tensors import (
    SampledCoordinate,
    at_coordinate,
    element_count,
    finite_point,
    parameter_and_gradient,
    plan_coordinates,
    probe_coordinate,
    sample_tensor_coordinates,
)

__all__ = [
    "DEFAULT_SAMPLES",
    "ALL_COORDINATES",
    "AUTO_STEP",
    "KinkVerdict",
    "CoordinateCheck",
    "PurityVerdict",
    "ParameterCheck",
    "GradientCheckReport",
    "check_gradients",
    "check_problem",
    "kink_tolerance_for_step",
]

#: Coordinates per parameter unless told otherwise (the deterministic sampler's R).
DEFAULT_SAMPLES = CHECK_SAMPLES
#: ``samples=ALL_COORDINATES`` checks every coordinate, in row-major order.
ALL_COORDINATES = "all"
#: ``step=AUTO_STEP`` checks each parameter at the step advised for one representative coordinate.
AUTO_STEP = "auto"

Samples = Union[int, str]


@record
class KinkVerdict(Record):
    """The one-sided slopes at the kink tolerance; a suspected kink is never evidence.

    ``analytic_between_slopes`` is ``min(left, right) ≤ analytic ≤ max(left, right)``:
    at a suspected kink, True means the candidate is consistent with a
    subgradient, False that it lies outside both one-sided slopes.
    """

    suspected: bool
    analytic_between_slopes: bool
    slopes: OneSidedSlopeComparison


@record
class CoordinateCheck(Record):
    """One coordinate of one parameter: the chapter's records and the verdicts.

    ``verdict`` is ``"passed"``, ``"failed"`` (the scaled error exceeds the
    tolerance) or ``"suspected kink"`` (the one-sided slopes disagree; then
    ``passed`` is False whatever the comparison says).
    """

    flat_index: int
    coordinate: tuple
    difference: CentralDifference
    comparison: GradientComparison
    kink: KinkVerdict
    verdict: str
    passed: bool


@record
class PurityVerdict(Record):
    """Whether every center value f(θ) came out bit-identical.

    ``reference_*`` is the first center value compared; ``differing_*`` the
    first one whose bits differ from it (None when pure).
    """

    pure: bool
    compared: int
    reference_parameter: Optional[str]
    reference_coordinate: Optional[tuple]
    reference_value: Optional[float]
    differing_parameter: Optional[str]
    differing_coordinate: Optional[tuple]
    differing_value: Optional[float]
    message: str


@record
class ParameterCheck(Record):
    """Every selected coordinate of one named parameter.

    Attributes
    ----------
    name, dtype : str
    shape : tuple of int
    selection : str
        ``"sampled"`` (the chapter's deterministic sampler with
        ``requested_samples``), ``"all"`` or ``"explicit"``.
    requested_samples : int or None
        R for ``"sampled"``; None otherwise.
    step : float or None
        The requested step of every coordinate of this parameter (given, or
        advised with ``step="auto"``), or None for the dtype's default
        ε^(1/3)·max(1, |θ|) (each record holds its own
        ``difference.requested_step``).
    tolerance : float
        As used (given, or the dtype's default).
    kink_tolerance : float or None
        The one-sided slopes' tolerance shared by every coordinate (given,
        or the default that goes with the step, see
        :func:`kink_tolerance_for_step`); None when the default differs
        between coordinates (a given or advised step at coordinates of
        different |θ| > 1). Each record holds its own in
        ``kink.slopes.tolerance``.
    passed : bool
        Every coordinate passed and the center values are bit-identical.
    purity : PurityVerdict
    checks : tuple of CoordinateCheck, in selection order
    """

    name: str
    dtype: str
    shape: tuple
    selection: str
    requested_samples: Optional[int]
    step: Optional[float]
    tolerance: float
    kink_tolerance: Optional[float]
    passed: bool
    purity: PurityVerdict
    checks: tuple


@record
class GradientCheckReport(Record):
    """The whole check: every parameter, the cross-parameter purity verdict, ``passed``.

    Attributes
    ----------
    passed : bool
        Every parameter passed and their center values agree.
    checked, failed : int
        Coordinates checked, and those that did not pass.
    failing_parameters : tuple of str
        Names of the parameters that did not pass, in problem order.
    purity : PurityVerdict
        The first center value of each parameter compared across parameters.
    parameters : tuple of ParameterCheck, in problem order
    step_advice : ProblemStepAdvice or None
        With ``step="auto"``, the advice each parameter's step came from
        (:func:`~gradcheck_cli.advice.advise_problem_steps`'s record); None
        otherwise.
    """

    passed: bool
    checked: int
    failed: int
    failing_parameters: tuple
    purity: PurityVerdict
    parameters: tuple
    step_advice: Optional[ProblemStepAdvice]

    def parameter(self, name: str) -> ParameterCheck:
        """The :class:`ParameterCheck` named ``name``."""
        for check in self.parameters:
            if check.name == name:
                return check
        raise KeyError(name)

    def failures(self) -> list:
        """``(parameter name, CoordinateCheck)`` for every coordinate that did not pass."""
        return [(check.name, record) for check in self.parameters for record in check.checks if not record.passed]

    def impurities(self) -> list:
        """Every PurityVerdict that failed: per parameter, then across parameters."""
        verdicts = [check.purity for check in self.parameters] + [self.purity]
        return [verdict for verdict in verdicts if not verdict.pure]


@dataclass(frozen=True)
class _PlannedParameter:
    """One selected parameter, validated: its arrays, coordinates and tolerances.

    ``step`` is the given step, None for the dtype's default, or AUTO_STEP
    until the advice replaces it (and then ``coordinates`` have no probes
    yet). ``kink_tolerance`` is the given one, or None for the default that
    goes with each coordinate's step.
    """

    name: str
    array: np.ndarray
    gradient: np.ndarray
    dtype: ProbeDtype
    selection: str
    requested_samples: Optional[int]
    step: Union[None, float, str]
    tolerance: float
    kink_tolerance: Optional[float]
    coordinates: tuple


def check_gradients(
    objective: Callable[[Mapping], float],
    parameters: Mapping,
    gradients: Mapping,
    *,
    samples: Samples = DEFAULT_SAMPLES,
    step: Union[None, float, str, Mapping] = None,
    tolerance: Optional[float] = None,
    kink_tolerance: Union[None, float, Mapping] = None,
    coordinates: Optional[Mapping] = None,
    names: Optional[Iterable[str]] = None,
    progress: Optional[Callable[[int, int], None]] = None,
) -> GradientCheckReport:
    """Check named parameter arrays against their analytic gradients, coordinate by coordinate.

    Parameters
    ----------
    objective : callable Mapping[str, np.ndarray] -> float
        Called as ``objective(parameters)`` with the very mapping given here,
        whose arrays hold the probe. Deterministic, side-effect-free, and
        smooth across every probe interval.
    parameters : Mapping[str, np.ndarray]
        Writable float64, float32 or bfloat16 arrays of any shape (views
        too, e.g. ``torch_tensor.detach().numpy()``); perturbed in place and
        bit-identical afterwards on every path, exceptions and
        KeyboardInterrupt included.
    gradients : Mapping[str, np.ndarray]
        The analytic gradient of each checked parameter, same shape, any real
        dtype (bfloat16 included; a real scalar for a 0-d parameter). A name
        without a parameter is an error.
    samples : int or "all", default 16
        Coordinates per parameter: R for the chapter's deterministic sampler
        (min(R, N) coordinates), or ``"all"`` for every coordinate.
    step : float, "auto" or Mapping[str, float], optional
        The requested step h for every coordinate, or a mapping from
        parameter name to the step for that parameter's coordinates (a
        parameter the mapping leaves out gets the default). ``"auto"``: once
        the request is validated, each parameter's step is advised at one
        representative coordinate
        (:func:`~gradcheck_cli.advice.advise_problem_steps`; about 70
        objective calls per parameter) and the report keeps the advice in
        ``step_advice``. Default: the dtype's ε^(1/3)·max(1, |θ|) per
        coordinate.
    tolerance : float, optional
        Tolerance on the chapter's scaled error. Default: the dtype's ε^(1/3).
    kink_tolerance : float or Mapping[str, float], optional
        Tolerance on the one-sided slopes' scaled gap, for every parameter or
        by name like ``step``. Default: the one that goes with each
        coordinate's step, :func:`kink_tolerance_for_step` (the dtype's
        ε^(1/6) at the default step).
    coordinates : Mapping[str, iterable of index tuples], optional
        Explicit coordinates for some parameters (in the given order; an int
        is accepted for a 1-D parameter); the others are sampled.
    names : iterable of str, optional
        Check only these parameters (the problem's order is kept).
    progress : callable (done, total) -> None, optional
        Called with (0, total) before the first objective call (and so
        before any step advice) and after every checked coordinate.

    Returns
    -------
    GradientCheckReport

    Raises
    ------
    GradCheckError
        Before any objective call, for anything wrong with the request
        (wrapped in AtParameter, and AtCoordinate where a coordinate is at
        fault); with ``step="auto"``, a probe that the advised step makes
        invalid is refused after the advice, before the first check. During
        the check, a non-finite or non-scalar objective value is
        AtParameter(AtCoordinate(...)). Exceptions raised by the objective
        propagate unchanged, with every array restored.
    """
    plan = _plan(objective, parameters, gradients, samples, step, tolerance, kink_tolerance, coordinates, names)
    if progress is not None and not callable(progress):
        raise NotCallable(role="progress", type_name=type(progress).__name__)

    def evaluate_objective(_array):
        return objective(parameters)

    total = sum(len(planned.coordinates) for planned in plan)
    done = 0
    if progress is not None:
        progress(done, total)
    step_advice = None
    if _is_auto(step):
        step_advice = advise_parameter_steps(objective, parameters, [planned.name for planned in plan])
        plan = [_probed_at(planned, step_advice.steps[planned.name]) for planned in plan]

    parameter_checks = []
    for planned in plan:
        records = []
        for coordinate in planned.coordinates:
            try:
                records.append(_check_coordinate(planned, coordinate, evaluate_objective))
            except GradCheckError as error:
                raise AtParameter(parameter=planned.name, source=error) from error
            done += 1
            if progress is not None:
                progress(done, total)
        purity = _purity([(planned.name, record) for record in records])
        kink_tolerances = {record.kink.slopes.tolerance for record in records}
        parameter_checks.append(
            ParameterCheck(
                name=planned.name,
                dtype=planned.dtype.name,
                shape=tuple(planned.array.shape),
                selection=planned.selection,
                requested_samples=planned.requested_samples,
                step=planned.step,
                tolerance=planned.tolerance,
                kink_tolerance=kink_tolerances.pop() if len(kink_tolerances) == 1 else None,
                passed=purity.pure and all(record.passed for record in records),
                purity=purity,
                checks=tuple(records),
            )
        )

    across = _purity([(check.name, check.checks[0]) for check in parameter_checks])
    failing = tuple(check.name for check in parameter_checks if not check.passed)
    return GradientCheckReport(
        passed=across.pure and not failing,
        checked=total,
        failed=sum(1 for check in parameter_checks for record in check.checks if not record.passed),
        failing_parameters=failing,
        purity=across,
        parameters=tuple(parameter_checks),
        step_advice=step_advice,
    )


def kink_tolerance_for_step(step: float, point: float, dtype) -> float:
    """The kink tolerance that goes with requested step h at θ: max(ε^(1/6), √(h / max(1, |θ|))).

    At a smooth point the one-sided slopes differ by about |f″|·h; across a
    kink they differ by the jump in slope, of order 1. The dtype's default
    ε^(1/6) is the geometric midpoint of the two at the default step
    ε^(1/3)·max(1, |θ|); at another step the midpoint is √(h / max(1, |θ|)).
    Never tighter than the default, so only a step larger than the default
    loosens it. :func:`check_gradients` uses it for every coordinate whose
    kink tolerance is not given: a given step far above the default, or an
    advised one (a parameter whose loss is quadratic is advised the largest
    step tried), would otherwise have its curvature taken for a kink.

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
    """:func:`check_gradients` on a :class:`~gradcheck_cli.problem.GradientProblem` (same options).

    ``check_problem(problem, step="auto")`` is ``gradcheck check --step auto``.
    """
    return check_gradients(problem.objective, problem.parameters, problem.gradients, **options)


def _is_auto(step) -> bool:
    return isinstance(step, str) and step == AUTO_STEP


def _check_coordinate(planned: _PlannedParameter, coordinate, evaluate_objective) -> CoordinateCheck:
    """Probe one planned coordinate and give its verdicts; errors come wrapped in AtCoordinate."""
    difference = probe_coordinate(planned.array, coordinate, evaluate_objective)
    if planned.kink_tolerance is not None:
        kink_tolerance = planned.kink_tolerance
    elif planned.step is None:
        kink_tolerance = planned.dtype.kink_tolerance  # exactly ε^(1/6) at the default step
    else:
        kink_tolerance = kink_tolerance_for_step(coordinate.step, coordinate.point, planned.dtype)
    try:
        comparison = compare_gradients(coordinate.analytic, difference.derivative, planned.tolerance)
        slopes = compare_one_sided_slopes(difference, kink_tolerance)
    except GradCheckError as error:
        raise at_coordinate(coordinate.sample.coordinate, error) from error
    return _coordinate_check(coordinate.sample, difference, comparison, slopes)


def _coordinate_check(sample, difference, comparison, slopes) -> CoordinateCheck:
    analytic = comparison.analytic
    between = min(slopes.left, slopes.right) <= analytic <= max(slopes.left, slopes.right)
    kink = KinkVerdict(suspected=not slopes.consistent, analytic_between_slopes=between, slopes=slopes)
    if kink.suspected:
        verdict = "suspected kink"
    else:
        verdict = "passed" if comparison.passed else "failed"
    return CoordinateCheck(
        flat_index=sample.flat_index,
        coordinate=sample.coordinate,
        difference=difference,
        comparison=comparison,
        kink=kink,
        verdict=verdict,
        passed=verdict == "passed",
    )


def _where(parameter: str, coordinate: tuple) -> str:
    return f"{parameter}{rust_list(coordinate)}"


def _purity(entries: list) -> PurityVerdict:
    """Compare the center values of ``(parameter, CoordinateCheck)`` entries bit for bit."""
    reference_parameter, reference = entries[0]
    reference_value = reference.difference.center_value
    differing_parameter = differing_coordinate = differing_value = None
    for parameter, entry in entries[1:]:
        if not same_bits(entry.difference.center_value, reference_value):
            differing_parameter, differing_coordinate = parameter, entry.coordinate
            differing_value = entry.difference.center_value
            break
    if differing_parameter is not None:
        message = (
            "the objective is nondeterministic or stateful: with every parameter restored, "
            f"f at {_where(reference_parameter, reference.coordinate)} was {rust_debug(reference_value)} "
            f"but f at {_where(differing_parameter, differing_coordinate)} was {rust_debug(differing_value)}"
        )
    elif len(entries) == 1:
        message = "one center value: nothing to compare"
    else:
        message = f"all {len(entries)} center values are bit-identical"
    return PurityVerdict(
        pure=differing_parameter is None,
        compared=len(entries),
        reference_parameter=reference_parameter,
        reference_coordinate=reference.coordinate,
        reference_value=reference_value,
        differing_parameter=differing_parameter,
        differing_coordinate=differing_coordinate,
        differing_value=differing_value,
        message=message,
    )


# Validation: everything below runs before the first objective call, except _probed_at, which
# validates the probes at the advised steps after the advice and before the first checked coordinate.


def _plan(objective, parameters, gradients, samples, step, tolerance, kink_tolerance, coordinates, names) -> list:
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


def _plan_parameter(name, array, gradient, samples, listed, step, tolerance, kink_tolerance) -> _PlannedParameter:
    dtype, gradient = parameter_and_gradient(array, gradient)
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
        selection, requested = "sampled", samples
        samples_selected = sample_tensor_coordinates(array.shape, samples)

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
        flat_index = 0
        for position, extent in zip(coordinate, shape):
            flat_index = flat_index * extent + position
        selected.append(SampledCoordinate(flat_index, coordinate))
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
