"""The whole-parameter directional test: every coordinate moved at once along a fixed ±1 direction.

An error at a coordinate the selection left out still changes ⟨analytic, Δ⟩. The rules are in
docs/method.md ("The directional test").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .blocks import BLOCK, FlatBlocks, block_bounds, tree_sum
from .chapter.estimator import evaluated_value
from .errors import NonFiniteEvaluation, ReadOnlyArray
from .estimates import estimate_columns, value_epsilons
from .judge import ROUNDING_FACTOR, JudgedEstimate, slopes_agree
from .records import Record, same_array_bits
from .splitmix import splitmix64_array
from .tensors import write_back

__all__ = [
    "DIRECTION_SEED",
    "Direction",
    "DirectionScale",
    "DirectionalCheck",
    "direction_signs",
    "DirectionalProbe",
    "probe_direction",
]

#: The seed of every direction: sign_i is the top bit of splitmix64(DIRECTION_SEED + i).
DIRECTION_SEED = 0x5EED_13


@dataclass(frozen=True)
class DirectionalCheck(Record):
    """The directional test of one parameter.

    The probes are θ ± m·h_i·s_i/√N rounded into the parameter's dtype (s_i = ±1 from
    :func:`direction_signs`, h_i each coordinate's step, m the multiplier of each estimate),
    and Δ± the actual displacements. The numerical value is (f(θ+Δ₊) − f(θ−Δ₋)) / 2m, the
    analytic one Σ a_i (Δ₊ + Δ₋)_i / 2m, their scale max(|a|, |n|, ‖a∘Δ‖₂ / 2m).
    ``estimates`` holds each multiplier tried, the first m = 1; ``decided_at`` the one the
    verdict rests on.
    """

    elements: int
    moved: int
    minus_value: float
    plus_value: float
    estimates: tuple
    decided_at: int
    verdict: str
    reason: str
    passed: bool


def direction_signs(count: int, seed: int = DIRECTION_SEED) -> np.ndarray:
    """±1.0 for each of ``count`` elements: the top bit of splitmix64(seed + i), platform-independent."""
    with np.errstate(over="ignore"):
        z = splitmix64_array(np.arange(count, dtype=np.uint64) + np.uint64(seed))
    return np.where(z >> np.uint64(63) == 0, 1.0, -1.0)


@functools.lru_cache(maxsize=2)
def negative_signs(count: int) -> np.ndarray:
    """The elements whose sign in :func:`direction_signs` is −1, one bit each (``np.packbits``):
    N/8 bytes, computed once per size in blocks and kept for the next check of that size."""
    packed = np.empty((count + 7) // 8, dtype=np.uint8)
    offsets = np.arange(min(BLOCK, count), dtype=np.uint64)
    states = np.empty_like(offsets)
    for start in range(0, count, BLOCK):  # BLOCK is a multiple of 8: each block packs into whole bytes
        block = states[: min(BLOCK, count - start)]
        np.add(offsets[: len(block)], np.uint64(start + DIRECTION_SEED), out=block)
        top = np.right_shift(splitmix64_array(block, out=block), np.uint64(63), out=block)
        packed[start // 8 : (start + len(block) + 7) // 8] = np.packbits(top.astype(np.uint8))
    packed.flags.writeable = False
    return packed


@dataclass(frozen=True, slots=True)
class DirectionalProbe(Record):
    """What one multiplier's two probes gave: values, displacements' products with a, moved count."""

    multiplier: float
    minus_value: float
    plus_value: float
    analytic: float
    scale: float
    moved: int


@dataclass(frozen=True)
class Direction:
    """The direction's displacement Δ_i = h_i·s_i/√N of one parameter, made a block at a time.

    ``step`` is the requested step of every coordinate, or None for the dtype's default
    ε^(1/3)·max(1, |θ_i|) (``step_factor`` = ε^(1/3)); ``elements`` is N. Nothing of the size
    of the array is kept: the displacement of elements start:stop is computed from their θ.
    """

    step: float | None
    step_factor: float
    elements: int

    def magnitudes(self, exact: np.ndarray, out: np.ndarray) -> np.ndarray:
        """|Δ_i| = h_i/√N of the elements whose float64 values are ``exact`` (into ``out``)."""
        if self.step is None:
            np.abs(exact, out=out)
            np.maximum(out, 1.0, out=out)
            np.multiply(self.step_factor, out, out=out)
        else:
            out.fill(self.step)
        return np.divide(out, math.sqrt(self.elements), out=out)

    def displacement(self, exact: np.ndarray, start: int, out: np.ndarray, bits: np.ndarray) -> np.ndarray:
        """Δ_i of elements start:start+len(exact), whose float64 values are ``exact`` (into ``out``;
        ``bits`` is a uint64 block to work in).

        h_i·s_i/√N with s_i = ±1 is h_i/√N with the sign bit set where s_i = −1: the same bits."""
        self.magnitudes(exact, out)
        first, stop = start - start % 8, start + len(exact)
        negative = np.unpackbits(negative_signs(self.elements)[first // 8 : (stop + 7) // 8], count=stop - first)
        bits = bits[: len(exact)]
        np.copyto(bits, negative[start - first :])
        np.left_shift(bits, np.uint64(63), out=bits)
        magnitudes = out.view(np.uint64)
        return np.bitwise_or(magnitudes, bits, out=magnitudes).view(np.float64)

    def shifts(self, exact: np.ndarray) -> np.ndarray:
        """Δ of the whole parameter, flat, from its float64 values (what a failed test's diagnosis reads)."""
        exact = np.asarray(exact, dtype=np.float64).reshape(-1)
        return self.displacement(exact, 0, np.empty(exact.shape), np.empty(exact.shape, dtype=np.uint64))


class DirectionScale:
    """‖ĝ∘Δ‖₂ of the direction Δ, taken during the first probes' passes (docs/method.md, "The
    directional test").

    ĝ is |a| capped at ``cap`` (the largest one-sided slope at the checked coordinates), with
    those slopes' magnitudes ``resolved`` at their flat ``offsets``: what the estimates resolve.
    The largest product ĝ_i·|Δ_i| is taken in the plus probe's pass, the sum of the squares
    scaled by it in the minus probe's (numpy's pairwise sum of the whole array, bit for bit).
    """

    __slots__ = ("offsets", "resolved", "cap", "maxima", "squares")

    def __init__(self, offsets: np.ndarray, resolved: np.ndarray, cap: float):
        order = np.argsort(offsets, kind="stable")
        self.offsets, self.resolved, self.cap = offsets[order], resolved[order], cap
        self.maxima, self.squares = [], []

    def products(self, gradient: FlatBlocks, start: int, stop: int, magnitudes, out: np.ndarray) -> np.ndarray:
        """ĝ_i·|Δ_i| of elements start:stop, given their |Δ_i| (into ``out``)."""
        weight = np.abs(gradient.float64(start, stop, out), out=out[: stop - start])
        np.fmin(weight, self.cap, out=weight)
        low, high = np.searchsorted(self.offsets, (start, stop))
        weight[self.offsets[low:high] - start] = self.resolved[low:high]
        return np.multiply(weight, magnitudes, out=weight)

    def largest(self) -> float:
        """The largest product, once the plus probe's pass is over."""
        return float(np.max(self.maxima)) if self.maxima else 0.0

    def value(self, count: int) -> float:
        """‖ĝ∘Δ‖₂, once the minus probe's pass is over (inf or 0 as the largest product is)."""
        largest = self.largest()
        if not largest > 0.0 or not math.isfinite(largest):
            return largest if largest > 0.0 else 0.0
        return largest * math.sqrt(tree_sum(self.squares, count))


def probe_direction(
    array: np.ndarray,
    saved: np.ndarray,
    analytic: np.ndarray,
    direction: Direction,
    multiplier: float,
    evaluate: Callable[[], float],
    required: bool = False,
    scale: DirectionScale | None = None,
    changed: BaseException | None = None,
) -> DirectionalProbe | None:
    """Evaluate f at the rounded θ ± multiplier·Δ; None when those probes are unusable.

    ``saved`` is a copy of ``array`` (same dtype and values, any layout), from which ``array``
    is restored after each call, on every path. Unusable: a probe overflows the dtype, no element
    moves, or f is not finite there (NonFiniteEvaluation when ``required``: the first pass's probes,
    like a coordinate's own); a value that is not one real number is NonScalarEvaluation. With
    ``scale`` (multiplier 1), its ‖ĝ∘Δ‖₂ is taken in the same passes. With ``changed``, ``array``
    must still hold ``saved``'s bits, compared block by block in the plus probe's pass before each
    block is written: where they differ, ``array`` is restored and ``changed`` raised. Every
    pass goes a block at a time (:mod:`gradcheck_cli.blocks`): beside the arrays, a few blocks.
    """
    count = array.size
    bounds = block_bounds(count)
    try:
        sums = _written_plus(array, saved, analytic, direction, multiplier, bounds, scale, changed is not None)
        if sums is _CHANGED:
            write_back(array, Ellipsis, saved)
            raise changed
        if sums is None:
            write_back(array, Ellipsis, saved)
            return None
        plus_value = evaluate()
    except BaseException:
        write_back(array, Ellipsis, saved)
        raise
    if not array.flags.writeable:
        write_back(array, Ellipsis, saved)
        raise ReadOnlyArray(role="parameters", during_check=True)
    try:
        plus_value = evaluated_value("plus", plus_value)
        _write_minus(array, saved, analytic, direction, multiplier, bounds, scale)
        minus_value = evaluate()
    except NonFiniteEvaluation:
        write_back(array, Ellipsis, saved)
        if required:
            raise
        return None
    except BaseException:
        write_back(array, Ellipsis, saved)
        raise
    if not write_back(array, Ellipsis, saved):
        raise ReadOnlyArray(role="parameters", during_check=True)
    try:
        minus_value = evaluated_value("minus", minus_value)
    except NonFiniteEvaluation:
        if required:
            raise
        return None
    dot, squares, moved = sums
    return DirectionalProbe(
        multiplier=multiplier,
        minus_value=minus_value,
        plus_value=plus_value,
        analytic=dot / (2 * multiplier),
        scale=math.sqrt(squares) / (2 * multiplier),
        moved=moved,
    )


class _Buffers:
    """The float64 (and dtype) temporaries of one pass, a block each, made once per pass."""

    __slots__ = ("exact", "step", "bits", "plus", "minus", "plus_own", "minus_own", "magnitudes", "weights")

    def __init__(self, count: int, dtype):
        size = min(BLOCK, count)
        self.exact, self.step, self.plus, self.minus = (np.empty(size) for _ in range(4))
        self.magnitudes, self.weights = np.empty(size), np.empty(size)
        self.bits = np.empty(size, dtype=np.uint64)
        own = dtype != np.float64
        self.plus_own, self.minus_own = (np.empty(size, dtype=dtype) if own else None for _ in range(2))


def _probes(exact, direction: Direction, multiplier: float, start: int, buffers: _Buffers, plus=True) -> tuple:
    """The probes θ + m·Δ and θ − m·Δ of one block in float64, and rounded into the dtype (the plus
    probe's None unless ``plus``)."""
    n = len(exact)
    step = direction.displacement(exact, start, buffers.step[:n], buffers.bits)
    if multiplier != 1.0:  # 1·x is x, bit for bit
        np.multiply(multiplier, step, out=step)
    minus = np.subtract(exact, step, out=buffers.minus[:n])
    plus = np.add(exact, step, out=buffers.plus[:n]) if plus else None
    if buffers.plus_own is None:
        return plus, minus, plus, minus
    plus_own, minus_own = (None if plus is None else buffers.plus_own[:n]), buffers.minus_own[:n]
    if plus is not None:
        np.copyto(plus_own, plus, casting="unsafe")  # astype's rounding, into a block made once
    np.copyto(minus_own, minus, casting="unsafe")
    return plus, minus, plus_own, minus_own


_CHANGED = object()  # what _written_plus returns when the array no longer holds the snapshot's bits


def _written_plus(
    array, saved, analytic, direction: Direction, multiplier: float, bounds: list, scale=None, compare=False
):
    """θ + m·Δ written into ``array`` block by block, and (Σ a·(Δ₊ + Δ₋), Σ (a·(Δ₊ + Δ₋))², moved);
    None, part written, when a probe overflows or no element moves; with ``compare``, _CHANGED,
    part written, when a block of ``array`` differs from ``saved`` in its bits before it is written."""
    target, source, gradient = FlatBlocks(array), FlatBlocks(saved), FlatBlocks(analytic)
    buffers = _Buffers(array.size, array.dtype)
    dots, squares, moved = [], [], 0
    for start, stop in bounds:
        if compare and not same_array_bits(target.read(start, stop), source.read(start, stop)):
            return _CHANGED
        exact = source.float64(start, stop, buffers.exact)
        plus, minus, plus_own, minus_own = _probes(exact, direction, multiplier, start, buffers)
        if scale is not None:
            shifts = np.abs(buffers.step[: stop - start], out=buffers.magnitudes[: stop - start])
            scale.maxima.append(np.max(scale.products(gradient, start, stop, shifts, buffers.weights)))
        target.write(start, stop, plus_own)
        if plus_own is not plus:  # the rounded probes' exact float64 values
            np.copyto(plus, plus_own)
            np.copyto(minus, minus_own)
        plus_shift = np.subtract(plus, exact, out=plus)
        minus_shift = np.subtract(exact, minus, out=minus)
        moved += int(np.count_nonzero(plus_shift) + np.count_nonzero(minus_shift))
        with np.errstate(all="ignore"):  # a gradient near the float limit overflows to inf, not to a warning
            products = np.add(plus_shift, minus_shift, out=plus_shift)  # a·(Δ₊ + Δ₋), then its squares
            # Δ₊ and Δ₋ have the sign of Δ (or are 0): their sum is ±inf, never NaN, where either is
            # not finite, so one test of the sum is the test of both.
            if not np.all(np.isfinite(products)):
                return None
            np.multiply(gradient.read(start, stop), products, out=products)
            # numpy's pairwise sums (of the whole array, blocks.tree_sum): their rounding, about
            # log₂N·ε·Σ|a·Δ|, is far inside every bar.
            dots.append(float(np.sum(products, dtype=np.float64)))
            squares.append(float(np.sum(np.multiply(products, products, out=products), dtype=np.float64)))
    if moved == 0:
        return None
    with np.errstate(all="ignore"):
        return tree_sum(dots, array.size), tree_sum(squares, array.size), moved


def _write_minus(array, saved, analytic, direction: Direction, multiplier: float, bounds: list, scale=None):
    """θ − m·Δ written into ``array`` block by block (over whatever the last probe left there);
    with ``scale``, the sum of its squared products scaled by the largest, a block at a time."""
    target, source, gradient = FlatBlocks(array), FlatBlocks(saved), FlatBlocks(analytic)
    buffers = _Buffers(array.size, array.dtype)
    largest = scale.largest() if scale is not None else 0.0
    weigh = largest > 0.0 and math.isfinite(largest)
    for start, stop in bounds:
        exact = source.float64(start, stop, buffers.exact)
        target.write(start, stop, _probes(exact, direction, multiplier, start, buffers, plus=False)[3])
        if weigh:
            with np.errstate(all="ignore"):
                shifts = np.abs(buffers.step[: stop - start], out=buffers.magnitudes[: stop - start])
                scaled = np.divide(scale.products(gradient, start, stop, shifts, buffers.weights), largest, out=shifts)
                scale.squares.append(float(np.sum(np.square(scaled, out=scaled))))


def directional_estimate(
    probe: DirectionalProbe,
    center: float,
    epsilon: float,
    jitter: float,
    kink_tolerance: float,
    scale: float,
    own_scale: float,
) -> JudgedEstimate:
    """The probe's JudgedEstimate: per unit multiplier, bar from |f| and the jitter, slopes against f(θ).

    ``scale`` is the largest directional scale of the check, against which the slopes are compared;
    ``own_scale`` this direction's ‖g∘Δ‖₂ read from the numerical side (docs/method.md, "The
    directional test"), what the tolerance is relative to beside max(|a|, |n|).
    """
    m = probe.multiplier
    numerical = (probe.plus_value - probe.minus_value) / (2 * m)
    left, right = (center - probe.minus_value) / m, (probe.plus_value - center) / m
    largest = max(abs(probe.minus_value), abs(center), abs(probe.plus_value))
    epsilon = float(value_epsilons([probe.minus_value], center, [probe.plus_value], epsilon)[0])
    noise = 4 * (ROUNDING_FACTOR * epsilon * largest + jitter) / m
    consistent = slopes_agree(left, right, kink_tolerance, max(scale, own_scale), noise)
    return estimate_columns(
        m,
        probe.analytic,
        numerical,
        largest_value=largest,
        epsilons=epsilon,
        jitter=jitter,
        gain=1.0 / m,
        consistent=consistent,
        scale=max(abs(probe.analytic), abs(numerical), own_scale),
    ).estimate(())
