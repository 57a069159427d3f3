"""Everything a check validates before its first objective call: the plan of each parameter."""

from __future__ import annotations

import dataclasses
import math
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

import numpy as np

from ..advice.steps import representative_coordinate
from ..core.defaults import CHECK_SAMPLES
from ..core.formatting import rust_list
from ..engine.blocks import FlatBlocks, block_bounds
from ..engine.complex_parts import part_coordinates, real_parts
from ..engine.dtypes import ProbeDtype
from ..engine.estimator import validate_step, validate_tolerance
from ..engine.problem import reject_non_finite, reject_shared_memory, selected_names, sharing_memory
from ..engine.sampling import (
    CHECKED_COORDINATE_BYTES,
    ParameterSample,
    SampledCoordinate,
    coordinate_from_offset,
    offset_from_coordinate,
    validate_samples,
    validate_selection,
)
from ..engine.sweep import ProbeColumns, plan_columns, with_probes
from ..engine.tensors import at_coordinate, element_count, finite_point, parameter_and_gradient, plain_view
from ..errors import (
    AtParameter,
    DuplicateCoordinate,
    EmptyTensor,
    GradCheckError,
    InvalidArgument,
    InvalidCoordinate,
    InvalidParameterName,
    UnexpectedGradient,
    UnknownParameter,
    UnknownSampler,
    ZeroSamples,
)
from .options import ALL_COORDINATES, AUTO_STEP, Options, Samples, is_auto
from .selection import SAMPLERS, largest_count, largest_entries, select_offsets

#: The selection of a fast check's parameter: no coordinate (docs/method.md, "The fast check").
FAST_SELECTION = "fast"


@dataclass(frozen=True)
class PlannedParameter:
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
    snapshot: np.ndarray | None = None  # θ's copy, taken in the pass that checks θ is finite
    gradient_peak: float = math.inf  # the largest |analytic| entry, read in the pass that checks them
    unit_blocks: frozenset = frozenset()  # the starts of θ's blocks where every |θ_i| ≤ 1, read in that pass
    seed: int = 0  # the directional test's signs
    complex_dtype: str | None = None  # a complex parameter's dtype: ``array`` is its real view (complex_parts.py)

    @property
    def shown_dtype(self) -> str:
        """The dtype of the parameter as given: a complex one's, else the probed one's."""
        return self.complex_dtype or self.dtype.name

    @property
    def shown_shape(self) -> tuple:
        """The shape of the parameter as given (a complex one's real view has one more axis)."""
        return tuple(self.array.shape[:-1] if self.complex_dtype else self.array.shape)


# Validation: everything below runs before the first objective call, except probed_at, which
# validates the probes at the advised steps after the advice and before the first checked coordinate.


def plan_check(objective, parameters, gradients, options: Options) -> list:
    """One PlannedParameter per selected parameter, every argument validated (before any call)."""
    if not callable(objective):
        raise InvalidArgument(argument="objective", value=type(objective).__name__, expected="callable")
    _validate_mapping("parameters", "arrays", parameters)
    _validate_mapping("gradients", "arrays", gradients)
    for name in gradients:
        if name not in parameters:
            raise UnexpectedGradient(name=name)
    options = _validated(options, parameters)
    selected = selected_names(parameters, gradients, options.names)
    options = dataclasses.replace(options, coordinates=_validated_coordinates(options.coordinates, parameters))
    plan = []
    for name in selected:
        try:
            plan.append(_plan_parameter(name, parameters[name], gradients[name], options))
        except GradCheckError as error:
            raise AtParameter(parameter=name, source=error) from error
    reject_shared_memory(parameters, selected)
    return _gradients_apart(plan, parameters)


def _gradients_apart(plan: list, parameters: Mapping) -> list:
    """The plan with each analytic gradient that shares memory with a parameter array copied: it is the
    gradient at θ (f = ½‖w‖² has gradient w, and the very array may be handed as both), and the probes
    write into θ."""
    shared = sharing_memory({planned.name: planned.gradient for planned in plan}, parameters)
    return [
        dataclasses.replace(planned, gradient=np.array(planned.gradient, copy=True))
        if planned.name in shared
        else planned
        for planned in plan
    ]


def _validated(options: Options, parameters: Mapping) -> Options:
    """``options`` validated but for the coordinates: a step and a kink tolerance are one value, or a dict name → value."""
    step = options.step
    steps = AUTO_STEP if is_auto(step) else _per_parameter("step", step, validate_step, parameters)
    tolerance = options.tolerance if options.tolerance is None else validate_tolerance(options.tolerance)
    kink_tolerances = _per_parameter("kink_tolerance", options.kink_tolerance, validate_tolerance, parameters)
    samples = _validated_samples(options.samples)
    sampler = options.sampler
    if not (isinstance(sampler, str) and sampler in SAMPLERS):
        raise UnknownSampler(sampler=repr(sampler), available=list(SAMPLERS))
    return dataclasses.replace(
        options, samples=samples, step=steps, tolerance=tolerance, kink_tolerance=kink_tolerances
    )


def _validated_coordinates(coordinates, parameters: Mapping) -> Mapping:
    """The explicit coordinates' mapping (None: none), its names checked against ``parameters``."""
    coordinates = {} if coordinates is None else coordinates
    _validate_mapping("coordinates", "lists of coordinates", coordinates)
    for name in coordinates:
        if name not in parameters:
            raise UnknownParameter(name=name, available=list(parameters))
    return coordinates


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


def _selection(shape: tuple, gradient, samples, listed, sampler, largest=None) -> tuple:
    """(selection, requested samples or None, flat offsets) of one parameter, as a check selects them
    (``largest``: the gradient's largest entries, when the structured sampler's are already known)."""
    if listed is not None:
        return "explicit", None, [sample.flat_index for sample in _explicit_coordinates(listed, shape)]
    count = element_count(shape)
    if count == 0:
        raise EmptyTensor()
    if samples == ALL_COORDINATES:
        validate_selection(count, coordinate_bytes=CHECKED_COORDINATE_BYTES)
        return "all", None, np.arange(count, dtype=np.intp)
    validate_selection(min(samples, count), coordinate_bytes=CHECKED_COORDINATE_BYTES)
    return sampler, samples, select_offsets(shape, samples, gradient, sampler, largest)


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
            array, gradient, complex_dtype = real_parts(parameters[name], gradients[name])
            dtype, gradient = parameter_and_gradient(array, gradient)
            shape = tuple(array.shape)
            selection, requested, offsets = _selection(shape, gradient, samples, None, sampler)
        except GradCheckError as error:
            raise AtParameter(parameter=name, source=error) from error
        coordinates = tuple(SampledCoordinate(int(k), coordinate_from_offset(shape, int(k))) for k in offsets)
        shown = (complex_dtype, shape[:-1]) if complex_dtype else (dtype.name, shape)
        chosen.append(ParameterSample(name, *shown, selection, requested, coordinates))
    return tuple(chosen)


def _plan_parameter(name: str, array, gradient, options: Options) -> PlannedParameter:
    step, kink_tolerance = (
        value.get(name) if isinstance(value, dict) else value for value in (options.step, options.kink_tolerance)
    )
    samples, listed, tolerance = options.samples, options.coordinates.get(name), options.tolerance
    array, gradient, complex_dtype = real_parts(array, gradient)
    if complex_dtype is not None and listed is not None:
        listed = part_coordinates(listed, array.shape)
    dtype, gradient = parameter_and_gradient(array, gradient)
    array = plain_view(array)
    snapshot, unit_blocks = _finite_snapshot(array, gradient)
    sampled = listed is None and not options.fast
    largest, peak = _finite_largest(array, gradient, samples if sampled else None, options.sampler)
    if options.fast:  # the directional test alone: no coordinate until it does not pass
        if element_count(array.shape) == 0:
            raise EmptyTensor()
        selection, requested, offsets = FAST_SELECTION, None, np.empty(0, dtype=np.intp)
    else:
        selection, requested, offsets = _selection(array.shape, gradient, samples, listed, options.sampler, largest)

    if is_auto(step):
        # The probes wait for the advised step; θ must be finite where the advice will probe too.
        planned = plan_columns(array, gradient, offsets, dtype, None, probes=False)
        representative = representative_coordinate(array.shape)
        try:
            finite_point(array, representative)
        except GradCheckError as error:
            raise at_coordinate(representative, error) from error
    else:
        planned = plan_columns(array, gradient, offsets, dtype, step)

    return PlannedParameter(
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
        snapshot=snapshot,
        unit_blocks=unit_blocks,
        gradient_peak=peak,
        seed=options.seed,
        complex_dtype=complex_dtype,
    )


def _finite_snapshot(array: np.ndarray, gradient: np.ndarray) -> tuple:
    """(θ's copy, what every restoration writes back; the starts of the blocks where every |θ_i| ≤ 1,
    where the direction's step is its unit), taken a block at a time in the pass that checks that θ
    is finite (else reject_non_finite's error: θ's first non-finite value)."""
    contiguous = array.flags.c_contiguous
    snapshot = np.empty_like(array) if contiguous else np.array(array, copy=True)
    source, copy, unit_blocks = FlatBlocks(array), FlatBlocks(snapshot), set()
    for start, stop in block_bounds(array.size):
        block = source.read(start, stop)
        if contiguous:
            np.copyto(copy.view(start, stop), block)
        if block.dtype != np.float32:  # float32 is tested as it is; bfloat16 and the rest in float64
            block = block.astype(np.float64, copy=False)
        high, low = (
            float(np.maximum.reduce(block, initial=-math.inf)),
            float(np.minimum.reduce(block, initial=math.inf)),
        )
        if math.isnan(high) or math.isnan(low) or high == math.inf or low == -math.inf:
            reject_non_finite(array, gradient)
        if low >= -1.0 and high <= 1.0:
            unit_blocks.add(start)
    return snapshot, frozenset(unit_blocks)


def _finite_largest(array: np.ndarray, gradient: np.ndarray, samples, sampler: str) -> tuple:
    """(the gradient's largest entries the structured selection of ``samples`` takes, None when it takes
    none; the largest |entry|), read in the pass that checks that the gradient is finite (else
    reject_non_finite's error)."""
    count = element_count(array.shape)
    selects = sampler == "structured" and isinstance(samples, int) and 0 < samples < count
    largest, peak = largest_entries(
        gradient, largest_count(samples) if selects else 0, lambda: reject_non_finite(array, gradient)
    )
    return (largest if selects else None), peak


def with_coordinates(planned: PlannedParameter, options: Options) -> PlannedParameter:
    """A fast check's ``planned`` with the coordinates the default check of ``options`` selects: what
    localizes and diagnoses a directional test that did not pass."""
    selection, requested, offsets = _selection(
        planned.array.shape, planned.gradient, _validated_samples(options.samples), None, options.sampler
    )
    columns = plan_columns(planned.array, planned.gradient, offsets, planned.dtype, planned.step)
    return dataclasses.replace(planned, selection=selection, requested_samples=requested, columns=columns)


def probed_at(planned: PlannedParameter, step: float) -> PlannedParameter:
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
