"""Whole-array passes in blocks: bounded temporaries, and gradcheck's own order of summation.

A pass over a parameter reads (and writes) it a block of at most :data:`BLOCK` elements at a
time, in row-major order, whatever its strides, so that its temporaries stay in cache and its
peak stays a few blocks. A sum over a parameter is taken in one order, whatever its layout and
dtype: the blocks are the leaves of a halving tree (:func:`block_bounds`: a run of n > BLOCK
elements splits at ⌊n/2⌋ rounded down to a multiple of 8), each block is summed contiguous in
float64 by ``np.add.reduce``, and the blocks' sums are added up the same tree (:func:`tree_sum`).
The same values give the same bits, block by block; within a block the order is numpy's, so the
last bits may differ between numpy versions, each within the bound of docs/method.md ("Sums").
"""

from __future__ import annotations

import functools
import threading

import numpy as np

__all__ = [
    "BLOCK",
    "block_bounds",
    "tree_sum",
    "as_float64",
    "FlatBlocks",
    "scratch",
    "scratches",
    "scratch_pass",
    "same_array_bits",
    "byte_comparison",
]

#: Elements a block holds at most: a float64 temporary of 512 KiB.
BLOCK = 1 << 16
#: Arrays of at most this many bytes are compared as bytes objects (:func:`same_array_bits`).
SMALL_BYTES = 1 << 12


_SCRATCH = threading.local()  # each thread's block temporaries, by pass depth, name and dtype


def scratch(name: str, count: int, dtype=np.float64) -> np.ndarray:
    """A temporary of min(``count``, BLOCK) elements, the same memory at each call with these ``name``
    and ``dtype`` in this thread and at this :func:`scratch_pass` depth: a pass reuses the pages of the
    last one instead of having fresh ones mapped (a few MiB a thread, kept)."""
    return scratches((name,), count, dtype)[0]


def scratches(names: tuple, count: int, dtype=np.float64) -> tuple:
    """:func:`scratch` of each of ``names`` (a tuple), found at once: what a pass over a small array
    costs is mostly such look-ups, so the views of each size asked for are kept too."""
    size = min(BLOCK, count)
    local = _SCRATCH.__dict__
    buffers = local.get("buffers")
    if buffers is None:
        buffers = local["buffers"] = {}
    key = (local.get("depth", 0), names, dtype if isinstance(dtype, np.dtype) else np.dtype(dtype))
    kept = buffers.get(key)
    if kept is None or len(kept[0][0]) < size:  # (the memory, its views by size)
        memory = tuple(np.empty(max(size, min(BLOCK, 1 << 12)), dtype=dtype) for _ in names)
        kept = buffers[key] = (memory, {})
    memory, views = kept
    found = views.get(size)
    if found is None:
        if len(views) >= _KEPT_VIEWS:
            views.clear()
        found = views[size] = tuple([buffer[:size] for buffer in memory])
    return found


_KEPT_VIEWS = 64  # views of so many sizes kept for each set of temporaries


class scratch_pass:  # noqa: N801 (used as a context manager, as contextlib's would be)
    """A whole-array pass's hold on this thread's temporaries. A pass calls no user code, but a signal
    handler or a finalizer can run a check in its middle, in the same thread: that check's passes are
    one level deeper and get temporaries of their own."""

    __slots__ = ()

    def __enter__(self):
        local = _SCRATCH.__dict__
        local["depth"] = local.get("depth", 0) + 1

    def __exit__(self, *exception) -> None:
        _SCRATCH.__dict__["depth"] -= 1


def block_bounds(count: int, block: int = BLOCK) -> list:
    """(start, stop) of each block of ``count`` elements, in order: the leaves of the halving tree,
    where a run of more than ``block`` elements (``block`` ≥ 16: no half is empty) splits at half
    its length rounded down to a multiple of 8."""
    bounds = []
    pending = [(0, count)]
    while pending:
        start, size = pending.pop()
        if size <= block:
            bounds.append((start, start + size))
            continue
        half = size // 2
        half -= half % 8
        pending.append((start + half, size - half))  # the right half after the left one
        pending.append((start, half))
    return bounds


def tree_sum(values, count: int, block: int = BLOCK) -> float:
    """The blocks' sums ``values`` (in the order of :func:`block_bounds`) added up the halving tree:
    at each split, the left half's sum plus the right half's."""
    values = iter(values)

    def subtree(size: int) -> float:
        if size <= block:
            return next(values)
        half = size // 2
        half -= half % 8
        left = subtree(half)
        return left + subtree(size - half)

    return subtree(count)


def as_float64(values: np.ndarray, out: np.ndarray) -> np.ndarray:
    """``values`` (1-D) as float64: themselves, or converted into ``out``'s first elements (float32,
    bfloat16, integers: exact in float64, as astype makes them)."""
    if values.dtype == np.float64:
        return values
    out = out[: len(values)]
    np.copyto(out, values, casting="unsafe")
    return out


class FlatBlocks:
    """Row-major blocks of one array of any strides: read as 1-D arrays, written from them.

    A C-contiguous array is read and written through one flat view of it; any other layout
    through ``ndarray.flat`` (a copy on reading). A subclass (np.matrix, a masked array, a
    memmap) is taken as the plain ndarray over its memory. The view is made anew by each
    instance, so an array made read-only since is refused on writing (ValueError), as numpy
    refuses a write into it.
    """

    __slots__ = ("array", "_flat")

    def __init__(self, array: np.ndarray):
        array = array if type(array) is np.ndarray else np.ndarray.view(array, np.ndarray)  # np.matrix is 2-D
        self.array = array
        self._flat = np.ndarray.reshape(array, -1) if array.flags.c_contiguous else None

    def read(self, start: int, stop: int) -> np.ndarray:
        """Elements start:stop in row-major order (a view when the array is C-contiguous)."""
        if self._flat is not None:
            return self._flat[start:stop]
        return self.array.flat[start:stop]

    def view(self, start: int, stop: int) -> np.ndarray | None:
        """Elements start:stop as a writable view when the array is C-contiguous, else None."""
        return None if self._flat is None else self._flat[start:stop]

    def float64(self, start: int, stop: int, out: np.ndarray) -> np.ndarray:
        """Elements start:stop as float64: a view of a contiguous float64 array, else converted into ``out``."""
        return as_float64(self.read(start, stop), out)

    def write(self, start: int, stop: int, values: np.ndarray) -> None:
        """Elements start:stop (row-major) set to ``values``, converted to the array's dtype."""
        if self._flat is not None:
            np.ndarray.__setitem__(self._flat, slice(start, stop), values)
        else:
            self.array.flat[start:stop] = values


def same_array_bits(first, second, offsets=None) -> bool:
    """Whether two numpy arrays of one shape and dtype hold bit-identical elements (as :func:`~gradcheck_cli.core.record.same_bits`);
    with ``offsets``, at those row-major offsets only."""
    if first.shape != second.shape or first.dtype != second.dtype:
        return False
    if offsets is None and first.flags.c_contiguous and second.flags.c_contiguous:
        if first.nbytes <= SMALL_BYTES:  # copied out and compared: cheaper than finding the addresses
            return first.tobytes() == second.tobytes()
        if byte_comparison() is not None:
            return byte_comparison()(first.ctypes.data, second.ctypes.data, first.nbytes) == 0  # at memory speed
    if offsets is not None and first.nbytes <= SMALL_BYTES and first.tobytes() == second.tobytes():
        return True  # every element bit-identical, those at the offsets too: cheaper than finding them
    as_bits = np.dtype(f"u{first.dtype.itemsize}")
    if offsets is not None:
        offsets = np.asarray(offsets, dtype=np.intp)
        if offsets.size == 0:  # nothing to compare
            return True
        first = np.ndarray.flat.__get__(np.ndarray.view(first, np.ndarray))[offsets]
        second = np.ndarray.flat.__get__(np.ndarray.view(second, np.ndarray))[offsets]
        return bool(np.equal(first.view(as_bits), second.view(as_bits)).all())
    first, second = FlatBlocks(first), FlatBlocks(second)
    for start, stop in block_bounds(first.array.size):  # a block at a time: no temporary of the array's size
        if not np.array_equal(first.read(start, stop).view(as_bits), second.read(start, stop).view(as_bits)):
            return False
    return True


@functools.lru_cache(maxsize=1)
def byte_comparison():
    """The C library's memcmp(address, address, count) through ctypes (0: the same bytes), or None where
    there is none to load (numpy compares then)."""
    try:
        import ctypes

        memcmp = ctypes.CDLL(None).memcmp
    except Exception:  # no C library of the process to find (Windows): the numpy comparison
        return None
    memcmp.restype = ctypes.c_int
    memcmp.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    return memcmp
