"""Deterministic tensor coordinates: pure integer arithmetic, no numpy.

The sampler never allocates the tensor, so it answers at once for shapes far
larger than memory, and ``gradcheck sample`` starts without importing numpy.
"""

from __future__ import annotations

import contextlib
import math
import operator
import os
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.record import Record
from ..errors import (
    AtCoordinate,
    EmptyTensor,
    GradCheckError,
    InvalidArgument,
    InvalidShape,
    ShapeOverflow,
    TooManySamples,
    ZeroSamples,
)

__all__ = [
    "MAX_ELEMENTS",
    "COORDINATE_BYTES",
    "available_memory",
    "validate_selection",
    "SampledCoordinate",
    "ParameterSample",
    "validate_samples",
    "element_count",
    "coordinate_from_offset",
    "offset_from_coordinate",
    "at_coordinate",
    "sample_tensor_coordinates",
    "sampled_offsets",
]

#: The largest element count a shape may have: numpy's (and torch's) signed 64-bit index.
MAX_ELEMENTS = 2**63 - 1
#: The most one selected coordinate costs in memory, from its sample to its rendered result:
#: 12.5 KB measured for `gradcheck check --samples all --json` (20 000 coordinates), rounded up.
COORDINATE_BYTES = 16 * 1024
#: What one coordinate of `check_gradients` costs, kept as columns (docs/performance.md, "A million
#: coordinates": 230 bytes measured at 10^6 coordinates, its output streamed), rounded up.
CHECKED_COORDINATE_BYTES = 512
#: Selections up to this many coordinates (64 MB of records) are not measured against free memory.
_UNMEASURED_SELECTION = 4096


@dataclass(frozen=True, slots=True)
class SampledCoordinate(Record):
    """One selected coordinate: its row-major flat offset and its index tuple."""

    flat_index: int
    coordinate: tuple


@dataclass(frozen=True, slots=True)
class ParameterSample(Record):
    """The coordinates a check selects in one parameter (``gradcheck sample PROBLEM``).

    ``selection`` is the sampler's name (with ``requested_samples``) or ``"all"``.
    """

    name: str
    dtype: str
    shape: tuple
    selection: str
    requested_samples: int | None
    coordinates: tuple


def validate_samples(samples, role: str = "requested samples", expected: str = "a positive whole number") -> int:
    """``samples`` as a Python int R ≥ 1, else a typed error.

    Anything ``operator.index`` accepts counts (``np.int64(3)`` too, returned
    as the int 3, so that results stay JSON-ready and the sampler's integer
    arithmetic exact), except a bool. Zero is the chapter's ZeroSamples;
    anything else, negative numbers included, is InvalidArgument naming
    ``role`` and ``expected``.
    """
    if isinstance(samples, bool):
        raise InvalidArgument(argument=role, value=repr(samples), expected=expected)
    try:
        count = operator.index(samples)
    except TypeError:
        raise InvalidArgument(argument=role, value=repr(samples), expected=expected) from None
    if count == 0:
        raise ZeroSamples()
    if count < 0:
        raise InvalidArgument(argument=role, value=repr(count), expected=expected)
    return count


def available_memory() -> int | None:
    """Bytes this process may still allocate, or None where that cannot be told.

    The kernel's MemAvailable (else the free physical pages), and, when an
    address-space limit is set (``ulimit -v``), what is left of it.
    """
    limits = []
    try:
        with open("/proc/meminfo") as meminfo:
            limits += [int(line.split()[1]) * 1024 for line in meminfo if line.startswith("MemAvailable:")]
    except (OSError, ValueError, IndexError):
        pass
    if not limits:
        with contextlib.suppress(AttributeError, OSError, ValueError):
            limits.append(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            with open("/proc/self/statm") as statm:
                used = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
            limits.append(max(0, soft - used))
    except (ImportError, OSError, ValueError, IndexError, AttributeError):
        pass
    return min(limits) if limits else None


def validate_selection(count: int, role: str = "requested samples", coordinate_bytes: int = COORDINATE_BYTES) -> int:
    """``count`` selected coordinates, or TooManySamples when their records (``coordinate_bytes``
    each) could not fit in memory."""
    if count <= _UNMEASURED_SELECTION:
        return count
    memory = available_memory()
    if memory is not None and count > memory // coordinate_bytes:
        raise TooManySamples(role=role, count=count, limit=memory // coordinate_bytes)
    return count


def _validated_shape(shape: Sequence[int]) -> tuple:
    try:
        extents = tuple(operator.index(extent) for extent in shape)
    except TypeError:
        raise InvalidShape(shape=[str(extent) for extent in shape]) from None
    if any(extent < 0 for extent in extents):
        raise InvalidShape(shape=list(extents))
    return extents


def element_count(shape: Sequence[int]) -> int:
    """The number of elements of ``shape``; ShapeOverflow past a signed 64-bit count."""
    count = math.prod(_validated_shape(shape))
    if count > MAX_ELEMENTS:
        raise ShapeOverflow()
    return count


def offset_from_coordinate(shape: Sequence[int], coordinate: Sequence[int]) -> int:
    """The row-major flat offset of ``coordinate`` in ``shape``: the inverse of coordinate_from_offset."""
    flat = 0
    for position, extent in zip(coordinate, shape):
        flat = flat * extent + position
    return flat


def coordinate_from_offset(shape: Sequence[int], flat_index: int) -> tuple:
    """The row-major coordinate of ``flat_index`` in ``shape`` (last axis fastest)."""
    coordinate = []
    for extent in reversed(shape):
        flat_index, position = divmod(flat_index, extent)
        coordinate.append(position)
    return tuple(reversed(coordinate))


def at_coordinate(coordinate, error: GradCheckError) -> AtCoordinate:
    """Wrap ``error`` with the coordinate it happened at."""
    return AtCoordinate(coordinate=list(coordinate), source=error)


def sample_tensor_coordinates(shape: Sequence[int], max_samples: int) -> list:
    """Select unique, ordered coordinates without randomness or hidden state.

    With N elements and R = ``max_samples``, S = min(R, N) coordinates are
    chosen: the flat offsets ⌊k(N−1)/(S−1)⌋ for k = 0, …, S−1, or ⌊N/2⌋ when
    S = 1. Costs O(S·rank) time and memory whatever N is.

    Parameters
    ----------
    shape : sequence of int
        The tensor's extents, rank ≥ 0.
    max_samples : int
        R ≥ 1 (see :func:`validate_samples`).

    Returns
    -------
    list of SampledCoordinate, length S, flat offsets strictly ascending.

    Raises
    ------
    GradCheckError
        For a bad shape or count, and TooManySamples when S coordinates'
        records would not fit in the memory available
        (:func:`validate_selection`).
    """
    offsets = sampled_offsets(shape, max_samples)  # the count validated first, then the shape, as ever
    shape = _validated_shape(shape)
    return [SampledCoordinate(offset, coordinate_from_offset(shape, offset)) for offset in offsets]


def sampled_offsets(shape: Sequence[int], max_samples: int, coordinate_bytes: int = COORDINATE_BYTES) -> list:
    """The flat offsets :func:`sample_tensor_coordinates` selects (same validation, a coordinate
    costing ``coordinate_bytes``), as ints."""
    max_samples = validate_samples(max_samples)
    shape = _validated_shape(shape)
    elements = element_count(shape)
    if elements == 0:
        raise EmptyTensor()
    samples = validate_selection(min(max_samples, elements), coordinate_bytes=coordinate_bytes)
    if samples == 1:
        return [elements // 2]
    return [k * (elements - 1) // (samples - 1) for k in range(samples)]
