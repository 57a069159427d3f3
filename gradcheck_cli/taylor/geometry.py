"""The Taylor test's direction and steps: the splitmix64 unit direction (or the caller's) and hₖ = s·2⁻ᵏ.

The rules are in docs/method.md, "The Taylor-remainder test"; :mod:`gradcheck_cli.taylor.remainder` walks along
them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from collections.abc import Mapping as AnyMapping

import numpy as np

from ..core.defaults import SEED
from ..core.formatting import short_repr
from ..core.splitmix import MASK64, splitmix64, splitmix64_array
from ..engine.dtypes import probe_dtype
from ..errors import GradientShapeMismatch, InvalidArgument, ZeroDirection

__all__ = ["taylor_direction", "default_taylor_steps"]


def _fnv1a64(text: str) -> int:
    value = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x100000001B3) & MASK64
    return value


def taylor_direction(parameters: Mapping[str, np.ndarray], names: Sequence[str], seed: int = SEED) -> dict:
    """The deterministic unit direction over the named parameters (float64 arrays).

    See the module docstring for the construction; the result's entries,
    over all names together, have Euclidean norm 1.
    """
    return normalized_direction(_seeded_pieces(parameters, names, seed))


def _seeded_pieces(parameters: Mapping[str, np.ndarray], names: Sequence[str], seed: int) -> dict:
    """Each named parameter's 2u − 1 entries (float64, not yet normalized): independent of the other names."""
    raw = {}
    for name in names:
        shape = np.shape(parameters[name])
        key = splitmix64(_fnv1a64(name) ^ (int(seed) & MASK64))
        count = math.prod(shape)
        states = np.arange(count, dtype=np.uint64) + np.uint64(key)
        unit = (splitmix64_array(states) >> np.uint64(11)).astype(np.float64) * 2.0**-53
        raw[name] = (2.0 * unit - 1.0).reshape(shape)
    return raw


def normalized_direction(direction: dict) -> dict:
    norm = euclidean_norm(list(direction.values()))
    if not (math.isfinite(norm) and norm > 0.0):
        raise ZeroDirection(norm=norm)
    return {name: values / norm for name, values in direction.items()}


def default_taylor_steps(parameters: Mapping[str, np.ndarray], names: Sequence[str]) -> tuple:
    """hₖ = s·2⁻ᵏ, k = 0 … ⌈¾·log₂(1/ε)⌉, s = max(1, ‖x‖₂), ε of the least precise dtype."""
    epsilon = max(probe_dtype(parameters[name].dtype).epsilon for name in names)
    scale = max(1.0, euclidean_norm([parameters[name].astype(np.float64) for name in names]))
    last = math.ceil(0.75 * math.log2(1.0 / epsilon))
    return tuple(math.ldexp(scale, -k) for k in range(last + 1))


def euclidean_norm(arrays) -> float:
    """The Euclidean norm over several arrays, scaled first so that no square overflows."""
    largest = max((float(np.max(np.abs(values))) for values in arrays if values.size), default=0.0)
    if largest == 0.0 or not math.isfinite(largest):
        return largest
    return largest * math.sqrt(math.fsum(float(np.sum(np.square(values / largest))) for values in arrays))


def direction_pieces(parameters: Mapping, names: tuple, seed: int, direction) -> tuple:
    """(direction pieces, how they were made, the seed recorded): the seeded splitmix64 ones, or ``direction``'s.

    The pieces are not normalized; normalized over any subset of names, they give that subset's direction.
    """
    if direction is None:
        return _seeded_pieces(parameters, names, seed), "splitmix64", seed
    return _given_pieces(direction, parameters, names), "given", -1


def _given_pieces(direction, parameters: Mapping, names: Sequence[str]) -> dict:
    """The caller's direction over ``names``, as float64 arrays of the parameters' shapes, not yet normalized."""
    if not isinstance(direction, AnyMapping):
        raise InvalidArgument(
            argument="direction", value=type(direction).__name__, expected="a mapping from parameter names to arrays"
        )
    unit = {}
    for name in names:
        values = direction.get(name)
        if values is not None:
            try:
                values = np.asarray(values)
            except (TypeError, ValueError, OverflowError, RecursionError):
                values = np.asarray(None)
            if values.dtype.kind not in "fiu" and values.dtype.name != "bfloat16":
                expected = "an array of real numbers for each parameter"
                given = f"{short_repr(direction[name])} for {name!r}"
                raise InvalidArgument(argument="direction", value=given, expected=expected)
            values = values.astype(np.float64)
        if values is None or values.shape != parameters[name].shape:
            raise GradientShapeMismatch(
                parameters=list(parameters[name].shape),
                analytic=[] if values is None else list(values.shape),
            )
        unit[name] = values
    return unit
