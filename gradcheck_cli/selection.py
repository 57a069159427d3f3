"""The structured coordinate selection of ``check``: spread over every axis, mirrored, largest gradients.

Deterministic and platform-independent (integer arithmetic and a stable order); why these
coordinates is in docs/method.md ("Which coordinates").
"""

from __future__ import annotations

import math

import numpy as np

from .sampling import (
    SampledCoordinate,
    coordinate_from_offset,
    element_count,
    offset_from_coordinate,
    sample_tensor_coordinates,
)

__all__ = ["SAMPLERS", "structured_coordinates", "select_coordinates"]

#: ``sampler=`` values: the structured selection (the default) and the chapter's flat offsets.
SAMPLERS = ("structured", "chapter")

_ONE = 1 << 64


def _recurrence_multipliers(rank: int) -> tuple:
    """The R_d low-discrepancy sequence's steps α_j = φ_d^−(j+1) as 64-bit fixed-point integers."""
    root = 2.0
    for _ in range(64):  # Newton on x^(d+1) = x + 1; converges to the double nearest φ_d
        root -= (root ** (rank + 1) - root - 1) / ((rank + 1) * root**rank - 1)
    return tuple(int(math.ldexp(root ** -(axis + 1), 64)) for axis in range(rank))


def _spread_point(shape: tuple, multipliers: tuple, k: int) -> tuple:
    """The k-th point of the R_d sequence (offset ½) scaled onto ``shape``'s index grid."""
    return tuple((((_ONE >> 1) + k * step) % _ONE) * extent >> 64 for step, extent in zip(multipliers, shape))


def _largest(gradient: np.ndarray, count: int) -> list:
    """Flat offsets of the ``count`` largest |gradient| entries (ties: lowest offset), nonzero only."""
    magnitudes = np.abs(np.asarray(gradient, dtype=np.float64)).ravel()
    count = min(count, int(np.count_nonzero(magnitudes)))
    if count == 0:
        return []
    threshold = np.partition(magnitudes, magnitudes.size - count)[magnitudes.size - count]
    above = np.flatnonzero(magnitudes > threshold)
    at = np.flatnonzero(magnitudes == threshold)[: count - above.size]
    return sorted(int(offset) for offset in np.concatenate([above, at]))


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
    chosen = dict.fromkeys(_largest(gradient, max(1, samples // 4)))
    square = len(shape) >= 2 and shape[-1] == shape[-2] > 1
    multipliers = _recurrence_multipliers(len(shape))
    k = 0
    while len(chosen) < samples and k < 8 * samples + 64:
        point = _spread_point(shape, multipliers, k)
        chosen.setdefault(offset_from_coordinate(shape, point))
        if square and k % 2 == 0 and point[-1] != point[-2] and len(chosen) < samples:
            chosen.setdefault(offset_from_coordinate(shape, (*point[:-2], point[-1], point[-2])))
        k += 1
    for fallback in sample_tensor_coordinates(shape, samples):  # only for extents too narrow to spread
        if len(chosen) >= samples:
            break
        chosen.setdefault(fallback.flat_index)
    return [SampledCoordinate(offset, coordinate_from_offset(shape, offset)) for offset in sorted(chosen)]


def select_coordinates(shape: tuple, samples: int, gradient: np.ndarray, sampler: str) -> list:
    """The coordinates ``sampler`` selects: ``"structured"`` or the chapter's ``"chapter"``."""
    if sampler == "chapter":
        return sample_tensor_coordinates(shape, samples)
    return structured_coordinates(shape, samples, gradient)
