"""Deterministic cotangents and tangents, and the tangent problem of a forward-mode check.

The framework adapters (:mod:`gradcheck_cli.adapters.torch`, :mod:`gradcheck_cli.adapters.jax`)
reduce a function with array outputs to the scalar objective ⟨u, fn(x)⟩ with
the cotangents u of :func:`cotangent`. A forward-mode rule (a JVP) is checked
through :func:`tangent_problem`: one scalar parameter ε per input, the
objective ⟨u, fn(x + ε·t)⟩, and the rule's ⟨u, J·t⟩ as its analytic
gradient, so that check_gradients judges it with its usual verdicts.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping

import numpy as np

from ..core.defaults import SEED
from ..core.splitmix import MASK64, splitmix64, splitmix64_array
from .problem import GradientProblem

__all__ = ["cotangent", "complex_cotangent", "tangent", "tangent_problem"]


def cotangent(shape, output_index: int, seed: int = SEED) -> np.ndarray:
    """The cotangent u of output ``output_index``: float64, odd multiples of 1/256 in [−255/256, 255/256].

    Element k (row-major) is u = (2·⌊z/2⁵⁶⌋ − 255) / 256 with
    z = splitmix64(a + k) and a = splitmix64(splitmix64(seed) XOR j), j the
    output's position in what ``fn`` returns, all modulo 2⁶⁴
    (:func:`~gradcheck_cli.core.splitmix.splitmix64`). Integer arithmetic only, so
    the same on every platform; never zero, so every output element counts;
    and 8 significant bits, so u is exact in float64, float32, float16 and
    bfloat16 and autograd's vector-Jacobian product uses the very u of the
    objective.

    Parameters
    ----------
    shape : tuple of int
    output_index : int
        j ≥ 0.
    seed : int
        Taken modulo 2⁶⁴.

    Returns
    -------
    np.ndarray of float64, shape ``shape``
    """
    key = splitmix64(splitmix64(operator.index(seed) & MASK64) ^ operator.index(output_index))
    count = int(np.prod(shape, dtype=np.int64))
    states = np.arange(count, dtype=np.uint64) + np.uint64(key)
    top_byte = (splitmix64_array(states) >> np.uint64(56)).astype(np.float64)
    return ((2.0 * top_byte - 255.0) / 256.0).reshape(shape)


def complex_cotangent(shape, index: int, seed: int = SEED) -> np.ndarray:
    """The cotangent of a complex output (or tangent of a complex input): ``cotangent(shape + (2,))`` read
    as the real and imaginary parts of a complex128 array, so that ⟨u, y⟩ = Σ Re u·Re y + Im u·Im y takes
    the real and imaginary parts of y as two real outputs."""
    parts = cotangent(tuple(shape) + (2,), index, seed)
    return np.asarray(parts[..., 0] + 1j * parts[..., 1])  # a 0-d array for a 0-d output, not a scalar


def tangent(values: np.ndarray, input_index: int, seed: int = SEED) -> np.ndarray:
    """The tangent t of input ``input_index``: cotangent(shape, index, seed + 1)·max(1, |x|), in x's dtype.

    Scaled like the default step (ε^(1/3)·max(1, |θ|)), so that every element
    moves by about the same relative amount; rounded into ``values``' dtype,
    so that the rule and the probes use the same t. Returned as float64.

    Parameters
    ----------
    values : np.ndarray
        The input x, any float dtype and shape.
    input_index, seed : int

    Returns
    -------
    np.ndarray of float64 (complex128 for a complex input, whose real and imaginary parts both move),
    the shape of ``values``
    """
    seed = (operator.index(seed) + 1) & MASK64
    if values.dtype.kind == "c":
        return (
            (complex_cotangent(values.shape, input_index, seed) * np.maximum(1.0, np.abs(values)))
            .astype(values.dtype)
            .astype(np.complex128)
        )
    scale = np.maximum(1.0, np.abs(values.astype(np.float64)))
    u = cotangent(values.shape, input_index, seed)
    return (u * scale).astype(values.dtype).astype(np.float64)


def tangent_problem(
    origins: Mapping[str, np.ndarray],
    tangents: Mapping[str, np.ndarray],
    evaluate: Callable[[Mapping[str, np.ndarray]], float],
    directional: Mapping[str, float],
) -> GradientProblem:
    """A JVP rule as a GradientProblem: per input a 0-d parameter ε, f(ε) = evaluate(x + ε·t).

    Parameters
    ----------
    origins : Mapping[str, np.ndarray]
        Each input x in its own dtype (float64, float32, float16, bfloat16, complex128 or complex64).
    tangents : Mapping[str, np.ndarray]
        Each input's t (:func:`tangent`), float64, x's shape.
    evaluate : callable Mapping[str, np.ndarray] -> float
        The objective ⟨u, fn(·)⟩ with the named inputs moved to the given
        points (in their own dtype) and every other input at its origin.
    directional : Mapping[str, float]
        The rule's ⟨u, J·t⟩ per input: the analytic gradient of f at ε = 0.

    Returns
    -------
    GradientProblem
        Parameters ``ε`` (0-d arrays of zero in each input's dtype, a complex input's in the dtype of
        its parts, so the dtype's defaults and bars apply), named as the inputs are.
    """
    parameters = {name: np.zeros((), dtype=origin.real.dtype) for name, origin in origins.items()}
    exact = {name: origin.astype(np.result_type(origin.dtype, np.float64)) for name, origin in origins.items()}

    def objective(epsilons):
        moved = {}
        for name, epsilon in epsilons.items():
            amount = float(epsilon)
            if amount != 0.0:
                moved[name] = (exact[name] + amount * tangents[name]).astype(origins[name].dtype)
        return evaluate(moved)

    gradients = {name: np.asarray(float(directional[name])) for name in origins}
    return GradientProblem(objective, parameters, gradients)
