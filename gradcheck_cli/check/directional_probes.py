"""The direction of a parameter's directional test and its passes, a block at a time: the ±1 signs
and the displacement Δ, θ₊ written and measured, θ₋ written from it, the norms of the displacements'
products (docs/method.md, "The directional test").

Every pass holds a few block temporaries (:mod:`gradcheck_cli.engine.blocks`) beside the arrays. Σ a·s and
Σ (a·s)² are summed in the blocks' order (block sums added up their halving tree); the direction
scale's sum adds its blocks' sums exactly (math.fsum); where a sum of squares cannot be trusted,
each norm is taken again, scaled by its largest term.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ..core.splitmix import MASK64, splitmix64_array
from ..engine.blocks import (
    BLOCK,
    SMALL_BYTES,
    FlatBlocks,
    as_float64,
    block_bounds,
    byte_comparison,
    same_array_bits,
    scratch_pass,
    scratches,
    tree_sum,
)
from ..engine.tensors import write_back

__all__ = [
    "CHANGED",
    "trusted_squares",
    "DIRECTION_SEED",
    "Direction",
    "DirectionalProbing",
    "DirectionScale",
    "PlusSums",
    "SIGN_PERIOD",
    "direction_signs",
    "dtype_epsilon",
    "minus_pass",
    "norms",
    "plus_pass",
]


#: The stream of every direction's signs: sign_i is the top bit of splitmix64((DIRECTION_SEED XOR seed) + i),
#: the seed the check's (0 unless told otherwise).
DIRECTION_SEED = 0x5EED_13

#: The period of the direction's signs: the prime 2¹⁶ + 1, above a block, so that no power-of-two
#: layout of a parameter lines up with it.
SIGN_PERIOD = 65537


def direction_signs(count: int, seed: int = DIRECTION_SEED) -> np.ndarray:
    """±1.0 for each of ``count`` elements: s_i is the top bit of splitmix64(seed + (i mod
    :data:`SIGN_PERIOD`)), platform-independent."""
    period = min(count, SIGN_PERIOD)
    with np.errstate(over="ignore"):
        z = splitmix64_array(np.arange(period, dtype=np.uint64) + np.uint64(seed))
    return np.resize(np.where(z >> np.uint64(63) == 0, 1.0, -1.0), count)


@functools.lru_cache(maxsize=4)
def _signed_units(unit: float, count: int, dtype=np.float64, seed: int = 0) -> np.ndarray:
    """±``unit`` by :func:`direction_signs` for min(count, 2·SIGN_PERIOD) elements, kept (≤ 1 MiB each):
    elements start:start+n of any block (n ≤ BLOCK < SIGN_PERIOD) are its entries start mod
    SIGN_PERIOD onwards."""
    signs = _kept_signs(seed)[: min(count, 2 * SIGN_PERIOD)]
    units = np.multiply(signs, unit).astype(dtype, copy=False)
    units.flags.writeable = False
    return units


@functools.lru_cache(maxsize=2)
def _kept_signs(seed: int) -> np.ndarray:
    """:func:`direction_signs` of 2·SIGN_PERIOD elements for the check's ``seed``, kept (1 MiB): every
    parameter's signs are a prefix."""
    signs = direction_signs(2 * SIGN_PERIOD, (DIRECTION_SEED ^ seed) & MASK64)
    signs.flags.writeable = False
    return signs


@dataclass(frozen=True)
class Direction:
    """The direction's displacement Δ_i = s_i·u·max(1, |θ_i|) of one parameter, made a block at a time.

    s_i = ±1 (:func:`direction_signs`) and u = ε^(1/3)/√N (``step_factor`` = ε^(1/3), ``elements`` = N),
    so that ‖Δ‖ is about one step ε^(1/3)·max(1, |θ_i|); or, with a requested ``step`` for every
    coordinate, Δ_i = s_i·step/√N. Computed in float32 for a float32 θ (u rounded to float32 first),
    in float64 otherwise. Nothing of the size of the array is kept: the displacement of elements
    start:stop is computed from their θ.
    """

    step: float | None
    step_factor: float
    elements: int
    unit_blocks: frozenset = frozenset()  # the starts of the blocks where every |θ_i| ≤ 1: Δ_i = s_i·u there
    seed: int = 0  # the check's seed: which ±1 signs

    def unit(self, multiplier: float = 1.0) -> float:
        """m·u: the step of every coordinate (or its factor ε^(1/3)) over √N, times the multiplier."""
        unit = (self.step_factor if self.step is None else self.step) / math.sqrt(self.elements)
        return unit if multiplier == 1.0 else unit * multiplier  # 1·x is x, bit for bit

    def signed_units(self, multiplier: float, dtype) -> np.ndarray:
        """±m·u by :func:`direction_signs` (kept), in ``dtype``: what Δ is, where max(1, |θ_i|) is 1."""
        return _signed_units(self.unit(multiplier), self.elements, dtype, self.seed)

    def displacement(self, exact: np.ndarray, start: int, out: np.ndarray, multiplier: float = 1.0) -> np.ndarray:
        """m·Δ_i of elements start:start+len(exact), whose values are ``exact`` (float32 or float64; into
        ``out``, of that dtype, or a kept array when it does not depend on θ)."""
        offset = start % SIGN_PERIOD
        signed = self.signed_units(multiplier, exact.dtype)[offset : offset + len(exact)]
        if self.step is not None or start in self.unit_blocks:  # max(1, |θ_i|)·x is 1·x, x bit for bit
            return signed
        out = np.abs(exact, out=out[: len(exact)])
        return np.multiply(np.maximum(out, 1.0, out=out), signed, out=out)

    def moves_everywhere(self, multiplier: float, epsilon: float) -> bool:
        """Whether every probe θ_i ± m·Δ_i rounds to a value other than θ_i in a dtype of machine
        epsilon ``epsilon``, whatever θ: at the default step |m·Δ_i| ≥ m·u·max(1, |θ_i|) (less two
        roundings), which exceeds 2·ulp(θ_i) ≤ 2ε·max(1, |θ_i|) with a margin of 4."""
        return self.step is None and self.unit(multiplier) >= 8 * epsilon

    def shifts(self, exact: np.ndarray) -> np.ndarray:
        """Δ of the whole parameter, flat, in float64, from its values (what a failed test's diagnosis reads)."""
        exact = np.asarray(exact).reshape(-1)
        exact = exact if exact.dtype == np.float32 else exact.astype(np.float64)
        shifts, work = np.empty(exact.size), np.empty(min(exact.size, BLOCK), dtype=exact.dtype)
        for start, stop in block_bounds(exact.size):  # a block at a time, as the passes make it
            shifts[start:stop] = self.displacement(exact[start:stop], start, work)
        return shifts


@dataclass(frozen=True, slots=True)
class DirectionalProbing:
    """What every probe of a parameter's directional test writes and reads: the parameter's
    ``array`` (θ, probed in place), ``saved``, its copy (same dtype and values, any layout) from
    which ``array`` is restored after each call, the ``analytic`` gradient, the ``direction`` Δ,
    ``evaluate``, f at whatever ``array`` holds, and ``peak``, the largest |a| (inf if unknown)."""

    array: np.ndarray
    saved: np.ndarray
    analytic: np.ndarray
    direction: Direction
    evaluate: Callable[[], float]
    peak: float = math.inf


class DirectionScale:
    """‖ĝ∘(Δ₊ + Δ₋)‖₂/2 of the direction's displacements (docs/method.md, "The directional test"),
    taken in the plus probe's pass from the products a·(Δ₊ + Δ₋) that pass computes anyway.

    ĝ is |a| capped at ``cap`` (the largest one-sided slope at the checked coordinates), with those
    slopes' magnitudes ``resolved`` at their flat ``offsets``: what the estimates resolve. Where no
    |a| exceeds the cap (``peak``, the largest |a|, when known), ĝ differs from |a| only at the
    offsets, and the pass's Σ(a·s)² is corrected there; else ĝ·s is weighed a block at a time.
    """

    __slots__ = ("offsets", "resolved", "cap", "capped", "zero", "squares", "corrections", "norm")

    def __init__(self, offsets: np.ndarray, resolved: np.ndarray, cap: float, peak: float = math.inf):
        order = np.argsort(offsets, kind="stable")
        self.offsets, self.resolved, self.cap = offsets[order], resolved[order], cap
        self.capped = not peak <= cap  # ``peak``, the largest |a| (if known): no |a| above the cap, nothing to cap
        self.zero = peak == 0.0 and not np.any(resolved)  # ĝ = 0: the norm is 0, however its sums round
        self.squares, self.corrections, self.norm = [], [], math.nan

    def weighted(self, gradient: FlatBlocks, start: int, shifts: np.ndarray, out: np.ndarray) -> np.ndarray:
        """ĝ·s of elements start:start+len(shifts), given their shifts s = Δ₊ + Δ₋ (into ``out``)."""
        stop = start + len(shifts)
        values = gradient.read(start, stop)
        if values.dtype not in (np.float64, np.float32):  # |float32| is exact in float64, cast on output
            values = gradient.float64(start, stop, out)
        weight = np.abs(values, out=out[: len(shifts)])
        if self.capped:
            np.fmin(weight, self.cap, out=weight)
        low, high = np.searchsorted(self.offsets, (start, stop))
        weight[self.offsets[low:high] - start] = self.resolved[low:high]
        return np.multiply(weight, shifts, out=weight)

    def add(self, gradient: FlatBlocks, start: int, shifts: np.ndarray, products: np.ndarray, out: np.ndarray):
        """The share of elements start:start+len(shifts), given their shifts s and products a·s."""
        if self.capped:
            weighted = self.weighted(gradient, start, shifts, out)
            self.squares.append(float(np.add.reduce(np.square(weighted, out=weighted))))
            return
        if not self.offsets.size or not (start <= self.offsets[-1] and self.offsets[0] < start + len(shifts)):
            return  # no checked coordinate in this block: nothing to correct
        low, high = np.searchsorted(self.offsets, (start, start + len(shifts)))
        if high > low:
            at = self.offsets[low:high] - start
            self.corrections.extend(np.square(self.resolved[low:high] * shifts[at]) - np.square(products[at]))

    def value(self, squares: float) -> float:
        """The norm, given the pass's Σ(a·s)² ``squares`` (what an uncapped ĝ corrects); NaN when
        the sums cannot be trusted (overflowed, underflowed or cancelled): then recomputed, scaled."""
        if self.zero:
            return 0.0
        if self.capped:
            total = math.fsum(self.squares)
        else:
            correction = math.fsum(self.corrections)
            total = squares + correction if correction >= -0.5 * squares else math.nan
        return math.sqrt(total) / 2 if trusted_squares(total) else math.nan


class _Buffers:
    """The ``target`` of one pass (the probed array, a block at a time) and the pass's float64 (and
    dtype) temporaries, a block each (:func:`~gradcheck_cli.engine.blocks.scratch`)."""

    __slots__ = ("target", "exact", "step", "plus", "shift", "minus", "shifts", "products", "weights", "own", "other")

    def __init__(self, target: FlatBlocks):
        count, dtype = target.array.size, target.array.dtype
        self.target = target
        self.exact, self.plus, self.minus, self.shifts, self.products, self.weights = scratches(_FLOAT64_NAMES, count)
        work = np.float32 if dtype == np.float32 else np.float64  # what Δ and θ₊ − θ are computed in
        self.step, self.shift = scratches(("step", "shift"), count, work)
        own = dtype != np.float64
        self.own, self.other = scratches(("own", "other"), count, dtype) if own else (None, None)


_FLOAT64_NAMES = ("exact", "plus", "minus", "shifts", "products", "weights")


@dataclass(frozen=True, slots=True)
class PlusSums:
    """What the plus probe's pass took: Σ a·s and Σ (a·s)² (s = θ₊ − θ₋), the moved count, and a
    checksum of each block of θ₊ as written (what the minus probe's pass finds there, or a change)."""

    dot: float
    squares: float
    moved: int
    checksums: list


@functools.lru_cache(maxsize=16)
def dtype_epsilon(dtype) -> float:
    """The machine epsilon of a parameter's dtype (inf for one numpy has no finfo of: nothing is assumed)."""
    return float(np.finfo(dtype).eps) if dtype in (np.float64, np.float32) else math.inf


def trusted_squares(squares: float) -> bool:
    """Whether a sum of squares neither overflowed nor may have lost its terms to underflow."""
    return _SMALLEST_TRUSTED <= squares < math.inf


_SMALLEST_TRUSTED = 2.0**-900  # a sum of squares below it may hold terms that underflowed


def _rounded(operation, exact, step, own, buffer) -> np.ndarray:
    """θ ± Δ computed in float64 and rounded into ``own``'s dtype (into ``buffer`` when that is float64,
    ``own`` is None): astype's rounding."""
    if own is None:
        return operation(exact, step, out=buffer)
    if own.dtype == np.float32:  # the float64 loop, its result cast on output
        return operation(exact, step, out=own, casting="same_kind")
    np.copyto(own, operation(exact, step, out=buffer), casting="unsafe")
    return own


def _written(buffers: _Buffers, start: int, operation, exact, step) -> np.ndarray:
    """The probe θ ± Δ (``operation`` of the block's ``exact`` θ and ``step``) of elements
    start:start+size written into the pass's target, rounded into its dtype: the values written (a
    view of the array where it is C-contiguous, computed straight into it)."""
    target, size = buffers.target, len(exact)
    view = target.view(start, start + size)
    if view is not None and view.dtype in (np.float64, np.float32):
        return operation(exact, step, out=view, casting="same_kind")
    own = None if buffers.own is None else buffers.own[:size]
    values = _rounded(operation, exact, step, own, buffers.minus[:size])
    target.write(start, start + size, values)
    return target.read(start, start + size)


def _checksum(values: np.ndarray) -> int:
    """The wrapping sum of a block's bit patterns: what a change of any one element changes."""
    return int(np.add.reduce(values.view(f"u{values.dtype.itemsize}"), dtype=np.uint64))


def _exact(source: FlatBlocks, start: int, stop: int, buffers: _Buffers) -> np.ndarray:
    """θ of elements start:stop, what the probes are computed from: float32 as it is (computed in
    float32), any other dtype as float64."""
    values = source.read(start, stop)
    return values if values.dtype == np.float32 else source.float64(start, stop, buffers.exact)


def _shift(buffers: _Buffers, exact: np.ndarray, plus: np.ndarray) -> np.ndarray:
    """θ₊ − θ of one block (into ``buffers.shift``), from its θ₊ values, in θ's float32 or float64:
    θ₋ = θ − (θ₊ − θ) rounded into the dtype is what the plus probe's pass measures and the minus
    probe's pass writes."""
    if plus.dtype not in (np.float64, np.float32):
        plus = as_float64(plus, buffers.plus)
    return np.subtract(plus, exact, out=buffers.shift[: len(exact)])


def _reflection(buffers: _Buffers, exact: np.ndarray, plus: np.ndarray) -> np.ndarray:
    """θ₋ = θ − (θ₊ − θ) of one block rounded into the dtype (float64 for float64), not written."""
    own = None if buffers.other is None else buffers.other[: len(exact)]
    return _rounded(np.subtract, exact, _shift(buffers, exact, plus), own, buffers.minus[: len(exact)])


def _shifts(buffers: _Buffers, plus: np.ndarray, minus: np.ndarray) -> np.ndarray:
    """s = θ₊ − θ₋ of one block in float64 (into ``buffers.shifts``)."""
    if plus.dtype not in (np.float64, np.float32):
        plus, minus = as_float64(plus, buffers.plus), as_float64(minus, buffers.minus)
    return np.subtract(plus, minus, out=buffers.shifts[: len(plus)], dtype=np.float64)


def _unmoved(exact: np.ndarray, *probes: np.ndarray) -> int:
    """How many elements of the ``probes`` equal θ (``exact``)."""
    return sum(int(np.count_nonzero(np.equal(np.asarray(probe, dtype=np.float64), exact))) for probe in probes)


CHANGED = object()  # what plus_pass returns when the array no longer holds the snapshot's bits


def plus_pass(probing: DirectionalProbing, multiplier: float, bounds: list, scale=None, compare=False):
    """θ₊ = θ + m·Δ written into the array block by block, and its :class:`PlusSums`; None, part
    written, when a probe overflows or no element moves; with ``compare``, CHANGED, part written,
    when a block of the array differs from the saved copy in its bits before it is written."""
    array, direction = probing.array, probing.direction
    target, source, gradient = FlatBlocks(array), FlatBlocks(probing.saved), FlatBlocks(probing.analytic)
    counting = not direction.moves_everywhere(multiplier, dtype_epsilon(array.dtype))
    dots, squares, checksums, moved = [], [], [], 0 if counting else 2 * array.size
    same = _block_comparison(target, source) if compare else None
    # A probe or a gradient near the float limit overflows to inf, not to a warning.
    with np.errstate(all="ignore"), scratch_pass():
        buffers = _Buffers(target)
        for start, stop in bounds:
            if compare and not same(start, stop):
                return CHANGED
            exact = _exact(source, start, stop, buffers)
            step = direction.displacement(exact, start, buffers.step, multiplier)
            plus = _written(buffers, start, np.add, exact, step)
            checksums.append(_checksum(plus))
            minus = _reflection(buffers, exact, plus)
            if counting:
                moved += 2 * (stop - start) - _unmoved(exact, plus, minus)
            sums = _block_sums(_shifts(buffers, plus, minus), gradient, start, buffers, scale)
            if sums is None:
                return None
            dots.append(sums[0])
            squares.append(sums[1])
    if moved == 0:
        return None
    with np.errstate(all="ignore"):
        return PlusSums(tree_sum(dots, array.size), tree_sum(squares, array.size), moved, checksums)


def _block_comparison(target: FlatBlocks, source: FlatBlocks) -> Callable[[int, int], bool]:
    """same(start, stop): whether elements start:stop of ``target`` hold ``source``'s bits, memcmp at
    the blocks' addresses where both arrays are C-contiguous (the same dtype), else block by block."""
    memcmp = byte_comparison()
    contiguous = target.array.flags.c_contiguous and source.array.flags.c_contiguous
    if memcmp is None or not contiguous or target.array.nbytes <= SMALL_BYTES:
        return lambda start, stop: same_array_bits(target.read(start, stop), source.read(start, stop))
    first, second, size = target.array.ctypes.data, source.array.ctypes.data, target.array.itemsize
    return lambda start, stop: memcmp(first + start * size, second + start * size, (stop - start) * size) == 0


def _block_sums(shifts: np.ndarray, gradient: FlatBlocks, start: int, buffers: _Buffers, scale=None):
    """(Σ a·s, Σ (a·s)²) of one block of shifts s = θ₊ − θ₋, each ``np.add.reduce`` (and the block's
    share of ``scale``); None when a shift is not finite.

    s has the sign of Δ (or is 0), ±inf, never NaN, where a probe is not finite, and a·±inf is ±inf
    or NaN, so a finite Σ a·s is the test of every shift; only where it is not (a shift, or a
    product near the float limit) are the shifts tested one by one."""
    products = np.multiply(gradient.read(start, start + len(shifts)), shifts, out=buffers.products[: len(shifts)])
    dot = float(np.add.reduce(products))
    if not math.isfinite(dot) and not np.all(np.isfinite(shifts)):
        return None
    if scale is not None:
        scale.add(gradient, start, shifts, products, buffers.weights)
    return dot, float(np.add.reduce(np.multiply(products, products, out=products)))


def minus_pass(probing: DirectionalProbing, bounds: list, checksums: list) -> bool:
    """θ₋ = θ − (θ₊ − θ) written into the array block by block, from the θ₊ it holds; False, with the
    array restored, where a block no longer holds the θ₊ the plus probe's pass wrote."""
    target, source = FlatBlocks(probing.array), FlatBlocks(probing.saved)
    with np.errstate(all="ignore"), scratch_pass():
        buffers = _Buffers(target)
        for (start, stop), checksum in zip(bounds, checksums):
            plus = target.read(start, stop)
            if _checksum(plus) != checksum:
                write_back(probing.array, Ellipsis, probing.saved)
                return False
            exact = _exact(source, start, stop, buffers)
            _written(buffers, start, np.subtract, exact, _shift(buffers, exact, plus))
    return True


def norms(probing: DirectionalProbing, multiplier: float, sums: PlusSums, scale) -> float:
    """‖a∘s‖₂ from the plus pass's sums, and ``scale.norm`` set; both recomputed with scaling
    (:func:`_scaled_norms`) where a sum of squares cannot be trusted (the gradient not all 0)."""
    norm = math.sqrt(sums.squares) if trusted_squares(sums.squares) or probing.peak == 0.0 else math.nan
    weighted = None if scale is None else scale.value(sums.squares)
    if math.isnan(norm) or (weighted is not None and math.isnan(weighted)):
        norm, weighted = _scaled_norms(probing, multiplier, scale)
    if scale is not None:
        scale.norm = weighted
    return norm


class _Norm:
    """A Euclidean norm summed a block at a time, scaled by its largest term so far (LAPACK's dnrm2)."""

    __slots__ = ("largest", "scaled")

    def __init__(self):
        self.largest, self.scaled = 0.0, 0.0

    def add(self, values: np.ndarray) -> None:
        largest = float(np.max(np.abs(values), initial=0.0))
        if not largest > 0.0:
            return
        if not math.isfinite(largest):
            self.largest = math.inf
            return
        block = float(np.sum(np.square(values / largest)))
        if largest > self.largest:
            self.scaled = self.scaled * (self.largest / largest) ** 2 + block
            self.largest = largest
        else:
            self.scaled += block * (largest / self.largest) ** 2

    def value(self) -> float:
        return self.largest * math.sqrt(self.scaled) if math.isfinite(self.largest) else math.inf


def _scaled_norms(probing: DirectionalProbing, multiplier: float, scale) -> tuple:
    """(‖a∘s‖₂, ‖ĝ∘s‖₂/2 or None without ``scale``), s = θ₊ − θ₋ computed again from the saved θ as
    the passes compute it, each norm summed scaled (:class:`_Norm`): where the passes' plain sums of
    squares overflowed, underflowed or cancelled. Nothing is written into the array."""
    direction, source, gradient = probing.direction, FlatBlocks(probing.saved), FlatBlocks(probing.analytic)
    own, weighted = _Norm(), _Norm()
    with np.errstate(all="ignore"), scratch_pass():
        buffers = _Buffers(FlatBlocks(probing.array))
        for start, stop in block_bounds(probing.array.size):
            n = stop - start
            exact = _exact(source, start, stop, buffers)
            step = direction.displacement(exact, start, buffers.step, multiplier)
            plus = _rounded(np.add, exact, step, None if buffers.own is None else buffers.own[:n], buffers.weights[:n])
            shifts = _shifts(buffers, plus, _reflection(buffers, exact, plus))
            own.add(np.multiply(gradient.read(start, stop), shifts, out=buffers.products[:n]))
            if scale is not None:
                weighted.add(scale.weighted(gradient, start, shifts, buffers.weights))
    return own.value(), (None if scale is None else weighted.value() / 2)
