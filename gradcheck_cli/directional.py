"""The whole-parameter directional test: every coordinate moved at once along a fixed ±1 direction.

An error at a coordinate the selection left out still changes ⟨analytic, Δ⟩. The rules are in
docs/method.md ("The directional test").
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .errors import NonFiniteEvaluation, ReadOnlyArray
from .estimator import evaluated_value
from .judge import ROUNDING_FACTOR, StepEstimate, slopes_agree
from .records import Record
from .splitmix import splitmix64_array
from .sweep import estimate_columns, value_epsilons
from .tensors import write_back

__all__ = ["DIRECTION_SEED", "DirectionalCheck", "direction_signs", "DirectionalProbe", "probe_direction"]

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


@dataclass(frozen=True, slots=True)
class DirectionalProbe(Record):
    """What one multiplier's two probes gave: values, displacements' products with a, moved count."""

    multiplier: float
    minus_value: float
    plus_value: float
    analytic: float
    scale: float
    moved: int


def probe_direction(
    array: np.ndarray,
    original: np.ndarray,
    analytic: np.ndarray,
    displacement: np.ndarray,
    multiplier: float,
    evaluate: Callable[[], float],
    required: bool = False,
) -> DirectionalProbe | None:
    """Evaluate f at the rounded θ ± multiplier·displacement; None when those probes are unusable.

    ``original`` is a float64 copy of ``array``'s values; ``array`` is restored from it (a
    float64 array) or from a copy in its own dtype after each call, on every path. Unusable: a probe overflows the dtype, no element
    moves, or f is not finite there (NonFiniteEvaluation when ``required``: the first pass's probes,
    like a coordinate's own); a value that is not one real number is NonScalarEvaluation.
    """
    exact = original
    step = displacement if multiplier == 1.0 else multiplier * displacement  # 1·x is x, bit for bit
    plus = (exact + step).astype(array.dtype, copy=False)
    minus = (exact - step).astype(array.dtype, copy=False)
    plus_shift = np.asarray(plus.astype(np.float64, copy=False) - exact)  # an array also at 0-d
    minus_shift = np.asarray(exact - minus.astype(np.float64, copy=False))
    if not (np.all(np.isfinite(plus_shift)) and np.all(np.isfinite(minus_shift))):
        return None
    moved = int(np.count_nonzero(plus_shift) + np.count_nonzero(minus_shift))
    if moved == 0:
        return None
    # A float64 array's exact values are ``original`` already: no second copy to restore it from.
    saved = original if array.dtype == np.float64 else np.array(array, copy=True)
    try:
        plus_value = _evaluated_at(array, plus, saved, "plus", evaluate)
        minus_value = _evaluated_at(array, minus, saved, "minus", evaluate)
    except NonFiniteEvaluation:
        if required:
            raise
        return None
    del plus, minus
    with np.errstate(all="ignore"):  # a gradient near the float limit overflows to inf, not to a warning
        products = np.add(plus_shift, minus_shift, out=plus_shift)  # in place: a·(Δ₊ + Δ₋), then its squares
        del minus_shift
        np.multiply(analytic, products, out=products)
        # numpy's pairwise sums: their rounding, about log₂N·ε·Σ|a·Δ|, is far inside every bar.
        dot = float(np.sum(products, dtype=np.float64))
        norm = math.sqrt(float(np.sum(np.multiply(products, products, out=products), dtype=np.float64)))
    return DirectionalProbe(
        multiplier=multiplier,
        minus_value=minus_value,
        plus_value=plus_value,
        analytic=dot / (2 * multiplier),
        scale=norm / (2 * multiplier),
        moved=moved,
    )


def _evaluated_at(array: np.ndarray, probe: np.ndarray, saved: np.ndarray, side: str, evaluate: Callable) -> float:
    """f with ``probe`` written into ``array``, which is restored from ``saved`` on every path."""
    try:
        np.ndarray.__setitem__(array, Ellipsis, probe)
        value = evaluate()
    except BaseException:
        write_back(array, Ellipsis, saved)
        raise
    if not write_back(array, Ellipsis, saved):
        raise ReadOnlyArray(role="parameters", during_check=True)
    return evaluated_value(side, value)


def directional_estimate(
    probe: DirectionalProbe,
    center: float,
    epsilon: float,
    jitter: float,
    kink_tolerance: float,
    scale: float,
    own_scale: float,
) -> StepEstimate:
    """The probe's StepEstimate: per unit multiplier, bar from |f| and the jitter, slopes against f(θ).

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
