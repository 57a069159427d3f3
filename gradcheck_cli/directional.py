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

from .blocks import BLOCK, FlatBlocks, block_bounds, scratch, scratch_pass, tree_sum
from .chapter.estimator import evaluated_value
from .chapter.tensors import write_back
from .errors import NonFiniteEvaluation, ReadOnlyArray
from .estimates import NoiseModel, estimate_columns, value_epsilons
from .judge_terms import ROUNDING_FACTOR, JudgedEstimate, slopes_agree
from .records import Record, same_array_bits
from .splitmix import splitmix64_array

__all__ = [
    "DIRECTION_SEED",
    "Direction",
    "DirectionScale",
    "DirectionalCheck",
    "direction_signs",
    "DirectionalProbe",
    "DirectionalProbing",
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


@functools.lru_cache(maxsize=2)
def sign_bits(count: int) -> np.ndarray:
    """The sign bit (2⁶³) of each element whose sign in :func:`direction_signs` is −1, else 0, as uint64:
    8 bytes an element, kept for a parameter of at most one block (≤ 512 KiB) so that its passes
    set the signs in one operation."""
    bits = np.unpackbits(negative_signs(count), count=count).astype(np.uint64)
    np.left_shift(bits, np.uint64(63), out=bits)
    bits.flags.writeable = False
    return bits


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

    def signed(self, start: int, out: np.ndarray, bits: np.ndarray) -> np.ndarray:
        """``out``, the |Δ_i| of elements start:start+len(out), made Δ_i in place: its sign bit set where
        s_i = −1 (``bits`` is a uint64 block to work in). h_i·s_i/√N, bit for bit."""
        magnitudes = out.view(np.uint64)
        if self.elements <= BLOCK:  # one block: its sign bits are kept whole
            return np.bitwise_or(magnitudes, sign_bits(self.elements)[start : start + len(out)], out=magnitudes).view(
                np.float64
            )
        first, stop = start - start % 8, start + len(out)
        negative = np.unpackbits(negative_signs(self.elements)[first // 8 : (stop + 7) // 8], count=stop - first)
        bits = bits[: len(out)]
        np.copyto(bits, negative[start - first :])
        np.left_shift(bits, np.uint64(63), out=bits)
        return np.bitwise_or(magnitudes, bits, out=magnitudes).view(np.float64)  # in place: numpy's fast loop

    def displacement(self, exact: np.ndarray, start: int, out: np.ndarray) -> np.ndarray:
        """Δ_i of elements start:start+len(exact), whose float64 values are ``exact`` (into ``out``)."""
        return self.signed(start, self.magnitudes(exact, out), np.empty(len(exact), dtype=np.uint64))

    def moves_everywhere(self, multiplier: float, epsilon: float) -> bool:
        """Whether every probe θ_i ± m·Δ_i rounds to a value other than θ_i in a dtype of machine
        epsilon ``epsilon``, whatever θ: at the default step |m·Δ_i| ≥ m·ε^(1/3)·max(1, |θ_i|)/√N
        (less two roundings), which exceeds 2·ulp(θ_i) ≤ 2ε·max(1, |θ_i|) with a margin of 4."""
        return self.step is None and multiplier * self.step_factor / math.sqrt(self.elements) >= 8 * epsilon

    def shifts(self, exact: np.ndarray) -> np.ndarray:
        """Δ of the whole parameter, flat, from its float64 values (what a failed test's diagnosis reads)."""
        exact = np.asarray(exact, dtype=np.float64).reshape(-1)
        return self.displacement(exact, 0, np.empty(exact.shape))


class DirectionScale:
    """‖ĝ∘Δ‖₂ of the direction Δ, taken during the first probes' passes (docs/method.md, "The
    directional test").

    ĝ is |a| capped at ``cap`` (the largest one-sided slope at the checked coordinates), with
    those slopes' magnitudes ``resolved`` at their flat ``offsets``: what the estimates resolve.
    The largest product ĝ_i·|Δ_i| is taken in the plus probe's pass, the sum of the squares
    scaled by it in the minus probe's (numpy's pairwise sum of the whole array, bit for bit).
    """

    __slots__ = ("offsets", "resolved", "cap", "capped", "maxima", "squares")

    def __init__(self, offsets: np.ndarray, resolved: np.ndarray, cap: float, peak: float = math.inf):
        order = np.argsort(offsets, kind="stable")
        self.offsets, self.resolved, self.cap = offsets[order], resolved[order], cap
        self.capped = not peak <= cap  # ``peak``, the largest |a| (if known): no |a| above the cap, nothing to cap
        self.maxima, self.squares = [], []

    def products(self, gradient: FlatBlocks, start: int, stop: int, magnitudes, out: np.ndarray) -> np.ndarray:
        """ĝ_i·|Δ_i| of elements start:stop, given their |Δ_i| (into ``out``)."""
        values = gradient.read(start, stop)
        if values.dtype not in (np.float64, np.float32):  # |float32| is exact in float64, cast on output
            values = gradient.float64(start, stop, out)
        weight = np.abs(values, out=out[: stop - start])
        if self.capped:
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


@dataclass(frozen=True, slots=True)
class DirectionalProbing:
    """What every probe of a parameter's directional test writes and reads: the parameter's
    ``array`` (θ, probed in place), ``saved``, its copy (same dtype and values, any layout) from
    which ``array`` is restored after each call, the ``analytic`` gradient, the ``direction`` Δ,
    and ``evaluate``, f at whatever ``array`` holds."""

    array: np.ndarray
    saved: np.ndarray
    analytic: np.ndarray
    direction: Direction
    evaluate: Callable[[], float]


def probe_direction(
    probing: DirectionalProbing,
    multiplier: float,
    required: bool = False,
    scale: DirectionScale | None = None,
    changed: BaseException | None = None,
) -> DirectionalProbe | None:
    """Evaluate f at the rounded θ ± multiplier·Δ; None when those probes are unusable.

    The array is restored from the saved copy after each call, on every path. Unusable: a probe overflows the dtype, no element
    moves, or f is not finite there (NonFiniteEvaluation when ``required``: the first pass's probes,
    like a coordinate's own); a value that is not one real number is NonScalarEvaluation. With
    ``scale`` (multiplier 1), its ‖ĝ∘Δ‖₂ is taken in the same passes. With ``changed``, ``array``
    must still hold ``saved``'s bits, compared block by block in the plus probe's pass before each
    block is written: where they differ, ``array`` is restored and ``changed`` raised. Every
    pass goes a block at a time (:mod:`gradcheck_cli.blocks`): beside the arrays, a few blocks.
    """
    array, saved, evaluate = probing.array, probing.saved, probing.evaluate
    bounds = block_bounds(array.size)
    try:
        sums = _written_plus(probing, multiplier, bounds, scale, changed is not None)
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
        _write_minus(probing, multiplier, bounds, scale)
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
    """The ``target`` of one pass (the probed array, a block at a time) and the pass's float64 (and
    dtype) temporaries, a block each (:func:`~gradcheck_cli.blocks.scratch`)."""

    __slots__ = ("target", "exact", "step", "plus", "minus", "weights", "bits", "own")

    def __init__(self, target: FlatBlocks):
        count, dtype = target.array.size, target.array.dtype
        self.target = target
        self.exact, self.step, self.plus, self.minus, self.weights = (
            scratch(name, count) for name in ("exact", "step", "plus", "minus", "weights")
        )
        self.bits = scratch("bits", count, np.uint64)
        self.own = None if dtype == np.float64 else scratch("own", count, dtype)


def _epsilon(dtype) -> float:
    """The machine epsilon of a parameter's dtype (inf for one numpy has no finfo of: nothing is assumed)."""
    return float(np.finfo(dtype).eps) if dtype in (np.float64, np.float32) else math.inf


def _magnitudes(exact, direction: Direction, multiplier: float, out: np.ndarray) -> np.ndarray:
    """m·|Δ_i| of one block (into ``out``); m·(±x) is ±(m·x), so the sign may be set after."""
    magnitudes = direction.magnitudes(exact, out[: len(exact)])
    if multiplier != 1.0:  # 1·x is x, bit for bit
        np.multiply(multiplier, magnitudes, out=magnitudes)
    return magnitudes


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


_CHANGED = object()  # what _written_plus returns when the array no longer holds the snapshot's bits


def _written_plus(probing: DirectionalProbing, multiplier: float, bounds: list, scale=None, compare=False):
    """θ + m·Δ written into the array block by block, and (Σ a·(Δ₊ + Δ₋), Σ (a·(Δ₊ + Δ₋))², moved);
    None, part written, when a probe overflows or no element moves; with ``compare``, _CHANGED,
    part written, when a block of the array differs from the saved copy in its bits before it is written."""
    array, direction = probing.array, probing.direction
    target, source, gradient = FlatBlocks(array), FlatBlocks(probing.saved), FlatBlocks(probing.analytic)
    counting = not direction.moves_everywhere(multiplier, _epsilon(array.dtype))
    dots, squares, moved = [], [], 0 if counting else 2 * array.size
    # A probe or a gradient near the float limit overflows to inf, not to a warning.
    with np.errstate(all="ignore"), scratch_pass():
        buffers = _Buffers(target)
        for start, stop in bounds:
            if compare and not same_array_bits(target.read(start, stop), source.read(start, stop)):
                return _CHANGED
            n = stop - start
            exact = source.float64(start, stop, buffers.exact)
            step = _magnitudes(exact, direction, multiplier, buffers.step)
            if scale is not None:
                scale.maxima.append(np.max(scale.products(gradient, start, stop, step, buffers.weights)))
            step = direction.signed(start, step, buffers.bits)
            plus_shift = np.subtract(_written(buffers, start, np.add, exact, step), exact, out=buffers.plus[:n])
            minus = _rounded(
                np.subtract, exact, step, None if buffers.own is None else buffers.own[:n], buffers.minus[:n]
            )
            minus_shift = np.subtract(exact, minus, out=buffers.minus[:n])
            if counting:
                moved += int(np.count_nonzero(plus_shift) + np.count_nonzero(minus_shift))
            sums = _block_sums(
                np.add(plus_shift, minus_shift, out=plus_shift), gradient.read(start, stop), buffers.minus[:n]
            )
            if sums is None:
                return None
            dots.append(sums[0])
            squares.append(sums[1])
    if moved == 0:
        return None
    with np.errstate(all="ignore"):
        return tree_sum(dots, array.size), tree_sum(squares, array.size), moved


def _block_sums(shifts: np.ndarray, gradient: np.ndarray, out: np.ndarray):
    """(Σ a·(Δ₊ + Δ₋), Σ (a·(Δ₊ + Δ₋))²) of one block, numpy's pairwise sums; None when a shift is not finite.

    Δ₊ and Δ₋ have the sign of Δ (or are 0): their sum ``shifts`` is ±inf, never NaN, where either
    is not finite, and a·±inf is ±inf or NaN, so a finite Σ a·(Δ₊ + Δ₋) is the test of every shift;
    only where it is not (a shift, or a product near the float limit) are the shifts tested one by one.
    The sums' rounding, about log₂N·ε·Σ|a·Δ|, is far inside every bar."""
    products = np.multiply(gradient, shifts, out=out)
    dot = float(np.sum(products, dtype=np.float64))
    if not math.isfinite(dot) and not np.all(np.isfinite(shifts)):
        return None
    return dot, float(np.sum(np.multiply(products, products, out=products), dtype=np.float64))


def _write_minus(probing: DirectionalProbing, multiplier: float, bounds: list, scale=None):
    """θ − m·Δ written into the array block by block (over whatever the last probe left there);
    with ``scale``, the sum of its squared products scaled by the largest, a block at a time."""
    direction, source, gradient = probing.direction, FlatBlocks(probing.saved), FlatBlocks(probing.analytic)
    largest = scale.largest() if scale is not None else 0.0
    weigh = largest > 0.0 and math.isfinite(largest)
    with np.errstate(all="ignore"), scratch_pass():
        buffers = _Buffers(FlatBlocks(probing.array))
        for start, stop in bounds:
            exact = source.float64(start, stop, buffers.exact)
            step = _magnitudes(exact, direction, multiplier, buffers.step)
            if weigh:
                scaled = np.divide(
                    scale.products(gradient, start, stop, step, buffers.weights),
                    largest,
                    out=buffers.weights[: stop - start],
                )
                scale.squares.append(float(np.sum(np.square(scaled, out=scaled))))
            _written(buffers, start, np.subtract, exact, direction.signed(start, step, buffers.bits))


def directional_estimate(
    probe: DirectionalProbe, center: float, noise: NoiseModel, scale: float, own_scale: float
) -> JudgedEstimate:
    """The probe's JudgedEstimate: per unit multiplier, bar from |f| (at the ``noise``'s ε) and its
    jitter, slopes against f(θ) at its kink tolerance.

    ``scale`` is the largest directional scale of the check, against which the slopes are compared;
    ``own_scale`` this direction's ‖g∘Δ‖₂ read from the numerical side (docs/method.md, "The
    directional test"), what the tolerance is relative to beside max(|a|, |n|).
    """
    m = probe.multiplier
    numerical = (probe.plus_value - probe.minus_value) / (2 * m)
    left, right = (center - probe.minus_value) / m, (probe.plus_value - center) / m
    largest = max(abs(probe.minus_value), abs(center), abs(probe.plus_value))
    epsilon = float(value_epsilons([probe.minus_value], center, [probe.plus_value], noise.epsilon)[0])
    jitter = noise.jitter
    slope_noise = 4 * (ROUNDING_FACTOR * epsilon * largest + jitter) / m
    consistent = slopes_agree(left, right, noise.kink_tolerance, max(scale, own_scale), slope_noise)
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
