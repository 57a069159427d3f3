"""The structured coordinate selection of ``check``: spread over every axis, mirrored, largest gradients.

Deterministic and platform-independent (integer arithmetic and a stable order); why these
coordinates is in docs/method.md ("Which coordinates").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import numpy as np

from ..engine.blocks import FlatBlocks, block_bounds, scratch, scratch_pass
from ..engine.sampling import (
    CHECKED_COORDINATE_BYTES,
    SampledCoordinate,
    coordinate_from_offset,
    element_count,
    sample_tensor_coordinates,
    sampled_offsets,
)

__all__ = [
    "SAMPLERS",
    "largest_count",
    "largest_offsets",
    "structured_coordinates",
    "structured_offsets",
    "select_offsets",
]

#: ``sampler=`` values: the structured selection (the default) and the chapter's flat offsets.
SAMPLERS = ("structured", "chapter")

_ONE = 1 << 64


@functools.lru_cache(maxsize=16)
def _recurrence_multipliers(rank: int) -> tuple:
    """The R_d low-discrepancy sequence's steps α_j = φ_d^−(j+1) as 64-bit fixed-point integers."""
    root = 2.0
    for _ in range(64):  # Newton on x^(d+1) = x + 1; converges to the double nearest φ_d
        root -= (root ** (rank + 1) - root - 1) / ((rank + 1) * root**rank - 1)
    return tuple(int(math.ldexp(root ** -(axis + 1), 64)) for axis in range(rank))


def _spread_offsets(shape: tuple, multipliers: tuple, first: int, count: int, square: bool) -> np.ndarray:
    """The flat offsets of R_d points first … first+count−1 (offset ½) on ``shape``'s index grid, each
    even-numbered off-diagonal point followed by its mirror when ``square``: exact 64-bit fixed point.

    Point k's index on an axis of extent e is ⌊((2⁶³ + k·α) mod 2⁶⁴)·e / 2⁶⁴⌋, the 128-bit product
    taken in 32-bit limbs.
    """
    k = np.arange(first, first + count, dtype=np.uint64)
    low = np.uint64(0xFFFFFFFF)
    thirty_two = np.uint64(32)
    indices = []
    with np.errstate(over="ignore"):
        for step, extent in zip(multipliers, shape):
            fraction = np.uint64(1 << 63) + k * np.uint64(step)  # mod 2⁶⁴ by wrapping
            high_f, low_f = fraction >> thirty_two, fraction & low
            high_e, low_e = np.uint64(extent >> 32), np.uint64(extent & 0xFFFFFFFF)
            cross_one, cross_two = high_f * low_e, low_f * high_e
            carry = (cross_one & low) + (cross_two & low) + ((low_f * low_e) >> thirty_two)
            index = high_f * high_e + (cross_one >> thirty_two) + (cross_two >> thirty_two) + (carry >> thirty_two)
            indices.append(index.astype(np.int64))
    offsets = _flat(indices, shape)
    if not square:
        return offsets
    mirrored = indices[:-2] + [indices[-1], indices[-2]]
    paired = (k % np.uint64(2) == 0) & (indices[-1] != indices[-2])
    both = np.stack([offsets, np.where(paired, _flat(mirrored, shape), -1)], axis=1).reshape(-1)
    return both[both >= 0]


def _flat(indices: list, shape: tuple) -> np.ndarray:
    """Row-major flat offsets of per-axis index columns."""
    offsets = np.zeros(len(indices[0]) if indices else 1, dtype=np.int64)
    for index, extent in zip(indices, shape):
        offsets = offsets * extent + index
    return offsets


def largest_offsets(gradient: np.ndarray, count: int, non_finite: Callable | None = None) -> list:
    """:func:`largest_entries`' offsets."""
    return largest_entries(gradient, count, non_finite)[0]


def largest_entries(gradient: np.ndarray, count: int, non_finite: Callable | None = None) -> tuple:
    """(offsets, the largest |gradient|, NaN if one is): flat offsets of the ``count`` largest |gradient| entries (ties: lowest offset), nonzero only,
    ascending. One pass a block at a time, keeping the best ``count`` so far; ``non_finite()``, if
    given, is called at the first block that holds a NaN or an infinity (the pass that selects is the
    one that checks the gradient: ``count`` 0 only checks)."""
    with scratch_pass():
        return _largest_entries(FlatBlocks(gradient), int(gradient.size), count, non_finite)


def _largest_entries(blocks: FlatBlocks, size: int, count: int, non_finite: Callable | None) -> tuple:
    values, offsets = np.zeros(0), np.zeros(0, dtype=np.int64)
    buffer = scratch("magnitudes", size)
    threshold = 0.0 if count > 0 else math.inf  # an entry must exceed it: nonzero, then the count-th best so far
    largest = 0.0
    for start, stop in block_bounds(size):
        block = blocks.read(start, stop)
        if block.dtype != np.float32:  # |float32| is exact in float64, cast by np.abs into the buffer
            block = block.astype(np.float64, copy=False)
        high, low = (
            float(np.maximum.reduce(block, initial=-math.inf)),
            float(np.minimum.reduce(block, initial=math.inf)),
        )
        peak = max(high, -low, 0.0) if not (math.isnan(high) or math.isnan(low)) else math.nan  # NaN: NaN
        if non_finite is not None and not math.isfinite(peak):
            non_finite()
        largest = peak if not peak <= largest else largest
        if peak <= threshold:
            continue
        magnitudes = np.abs(block, out=buffer[: stop - start])
        hits = np.flatnonzero(magnitudes > threshold)
        if hits.size == 0:
            continue
        found, at = _top(magnitudes[hits], hits + start, count)
        if values.size:  # the best of the blocks before and of this one
            found, at = _top(np.concatenate([values, found]), np.concatenate([offsets, at]), count)
        values, offsets = found, at
        if values.size == count:
            threshold = float(values.min())
    return offsets.tolist(), largest


def _top(values: np.ndarray, offsets: np.ndarray, count: int) -> tuple:
    """The ``count`` largest ``values`` and their ``offsets`` (ascending, so ties keep the lowest)."""
    if values.size <= count:
        return values, offsets
    threshold = np.partition(values, values.size - count)[values.size - count]
    keep = values > threshold
    keep[np.flatnonzero(values == threshold)[: count - int(np.count_nonzero(keep))]] = True
    return values[keep], offsets[keep]


def structured_coordinates(shape: tuple, samples: int, gradient: np.ndarray) -> list:
    """min(samples, N) distinct coordinates of ``shape``, in row-major order.

    A quarter of them (at least one) are the entries of largest |gradient|; the rest follow
    the R_d sequence over the index grid, so that every axis is spread and no diagonal, row
    or column takes them all; when the last two extents are equal, every other point off the
    diagonal comes with its mirror (i, j) → (j, i). With samples ≥ N every coordinate.
    """
    shape = tuple(shape)
    elements = element_count(shape)
    if samples >= elements:
        return sample_tensor_coordinates(shape, elements)
    chosen = structured_offsets(shape, samples, gradient)
    return [SampledCoordinate(offset, coordinate_from_offset(shape, offset)) for offset in chosen]


def _fractions(multiplier: int, count: int) -> np.ndarray:
    """(2⁶³ + k·α) mod 2⁶⁴ for k < count: the R_d sequence's fractions on one axis, as uint64."""
    k = np.arange(count, dtype=np.uint64)
    with np.errstate(over="ignore"):
        return np.uint64(1 << 63) + k * np.uint64(multiplier)


def _strata(ranks: np.ndarray, extent: int, count: int) -> np.ndarray:
    """⌊rank·extent/count⌋ exactly: ``count`` strata of an axis, each rank in its own (count ≤ extent)."""
    if extent < (1 << 62) // max(1, count):
        return ranks.astype(np.int64) * extent // count
    return np.array([rank * extent // count for rank in ranks.tolist()], dtype=np.int64)


def _ranks(fractions: np.ndarray) -> np.ndarray:
    """Each point's rank in the order of its fraction (ties cannot occur: α is irrational)."""
    ranks = np.empty(len(fractions), dtype=np.int64)
    ranks[np.argsort(fractions, kind="stable")] = np.arange(len(fractions))
    return ranks


def _mirrored_cycles(values: np.ndarray) -> tuple:
    """Rows and columns of points (x, π(x)) for a permutation π of ``values`` (in their given order)
    made of 2-cycles, whose points are mirrored pairs, alternating with 3-cycles: every value is
    one point's row and one point's column."""
    count = len(values)
    cycle = np.arange(count // 2 + 1)
    starts = (cycle // 2) * 5 + 2 * (cycle % 2)  # lengths 2, 3, 2, 3, … while more than 4 values are left
    starts = starts[count - starts >= 5].tolist()
    last = starts[-1] + (2 if len(starts) % 2 else 3) if starts else 0
    starts += [last, last + 2] if count - last == 4 else ([last] if count > last else [])  # then 1–3, or 2 and 2
    rows = np.asarray(values, dtype=np.int64)
    following = np.arange(1, count + 1)  # each cycle's value after its own, the first after its last
    following[np.array(starts[1:] + [count], dtype=np.intp)[: len(starts)] - 1] = starts
    return rows, rows[following]


def _stratified_offsets(shape: tuple, count: int, square: bool) -> np.ndarray:
    """``count`` points, on every axis of extent e in min(count, e) distinct strata ⌊rank·e/count⌋,
    the ranks the order of the R_d sequence's fractions on that axis; when ``square``, the last two
    axes take one permutation of the same strata made of mirrored pairs and 3-cycles."""
    multipliers = _recurrence_multipliers(len(shape))
    indices = [_strata(_ranks(_fractions(step, count)), extent, count) for step, extent in zip(multipliers, shape)]
    if square:
        values = np.sort(indices[-2])[_ranks(_fractions(multipliers[-1], count))]
        rows, columns = _mirrored_cycles(values)
        indices[-2], indices[-1] = rows, columns
    return _flat(indices, shape)


def largest_count(samples: int) -> int:
    """How many of ``samples`` structured coordinates are the entries of largest |gradient|."""
    return max(1, samples // 4)


def structured_offsets(shape: tuple, samples: int, gradient: np.ndarray, largest: list | None = None) -> list:
    """The flat offsets :func:`structured_coordinates` selects, ascending (samples < N); ``largest``, when
    given, is :func:`largest_offsets` of the gradient for :func:`largest_count` of ``samples``."""
    shape = tuple(shape)  # a key of the kept point sets
    if largest is None:
        largest = largest_offsets(gradient, largest_count(samples))
    square = len(shape) >= 2 and shape[-1] == shape[-2] > 1
    multipliers = _recurrence_multipliers(len(shape))
    needed, limit, first = samples - len(largest), 8 * samples + 64, 0
    taken = set(largest)
    new = _fresh(_kept(needed, _stratified_offsets, shape, needed, square) if needed > 0 else [], taken)
    while len(new) < needed and first < limit:  # R_d points until enough distinct ones
        count = min(limit - first, max(64, 2 * (needed - len(new))))
        new = _fresh(new + _kept(count, _spread_offsets, shape, multipliers, first, count, square), taken)[:needed]
        first += count
    chosen = [*largest, *new]
    if len(chosen) < samples:  # only for extents too narrow to spread
        chosen = dict.fromkeys(chosen)
        for fallback in sampled_offsets(shape, samples):
            if len(chosen) >= samples:
                break
            chosen.setdefault(fallback)
    return sorted(chosen)


#: The most points whose offsets :func:`_kept` keeps (a check's default 16 samples take 12).
KEPT_POINTS = 1024


def _kept(count: int, points: Callable, *arguments) -> list:
    """``points(*arguments)``' offsets of ``count`` points, as a list: kept where ``count`` is at most
    KEPT_POINTS, since they depend on the shape and counts alone and a check of the same shapes
    selects them again."""
    if count > KEPT_POINTS:
        return points(*arguments).tolist()
    return list(_kept_points(points, *arguments))


@functools.lru_cache(maxsize=64)
def _kept_points(points: Callable, *arguments) -> tuple:
    """``points(*arguments)``' offsets as a tuple, made once for each set of arguments."""
    return tuple(points(*arguments).tolist())


def _fresh(offsets: list, taken: set) -> list:
    """``offsets`` each where it first comes, but for the ``taken`` ones."""
    return [offset for offset in dict.fromkeys(offsets) if offset not in taken]


def select_offsets(shape: tuple, samples: int, gradient: np.ndarray, sampler: str, largest: list | None = None) -> list:
    """The flat offsets ``sampler`` selects for a check, ascending: ``"structured"`` or the chapter's
    ``"chapter"`` (whose count is validated at what a check's coordinate costs); ``largest`` as for
    :func:`structured_offsets`."""
    if sampler == "chapter":
        return sampled_offsets(shape, samples, CHECKED_COORDINATE_BYTES)
    shape = tuple(shape)
    if samples >= element_count(shape):
        return list(range(element_count(shape)))
    return structured_offsets(shape, samples, gradient, largest)
