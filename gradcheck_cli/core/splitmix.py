"""SplitMix64, the package's one pseudo-random mixer: integer arithmetic modulo 2⁶⁴, the same everywhere.

The Taylor test's direction (:mod:`gradcheck_cli.taylor.remainder`) and the torch
adapter's cotangents (:mod:`gradcheck_cli.adapters.torch`) are built from it, so
that both are functions of their seed alone: no generator state, and the
same bits on every platform and numpy version.
"""

from __future__ import annotations

import numpy as np

__all__ = ["MASK64", "GOLDEN", "splitmix64", "splitmix64_array"]

MASK64 = (1 << 64) - 1
#: SplitMix64's increment, ⌊2⁶⁴/φ⌋ rounded to odd.
GOLDEN = 0x9E3779B97F4A7C15


def splitmix64(state: int) -> int:
    """The SplitMix64 output after ``state`` (the mixer of state + γ, modulo 2⁶⁴)."""
    z = (state + GOLDEN) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def splitmix64_array(states: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """:func:`splitmix64` of every element of a uint64 array (into ``out``, which may be ``states``)."""
    # uint64 array arithmetic wraps modulo 2⁶⁴, as splitmix64 needs; in place, one temporary.
    z = np.add(states, np.uint64(GOLDEN), out=out)
    shifted = np.empty_like(z)
    for shift, multiplier in ((30, 0xBF58476D1CE4E5B9), (27, 0x94D049BB133111EB)):
        np.bitwise_xor(z, np.right_shift(z, np.uint64(shift), out=shifted), out=z)
        np.multiply(z, np.uint64(multiplier), out=z)
    return np.bitwise_xor(z, np.right_shift(z, np.uint64(31), out=shifted), out=z)
