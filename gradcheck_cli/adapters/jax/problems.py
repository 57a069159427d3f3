"""The JAX problems: a function's vjp (:func:`function_problem`, of order 1, 2 or 3), its jvp
(:func:`forward_problem`), the ones a check's ``order`` and ``modes`` pick (:func:`function_problems`:
every path of adapters/jax/derivatives.py),
a problem holding JAX arrays (:func:`array_problem`) and what ``gradcheck check FILE.py:FUNCTION`` does
with a returned ``(fn, inputs)`` (:func:`jax_problem`)."""

from __future__ import annotations

import numpy as np

from ...check import Options
from ...check.derivatives import derivative_paths
from ...check.options import ORDERS
from ...core.defaults import SEED
from ...engine.problem import GradientProblem, as_problem
from ...errors import InvalidCall
from .calls import Call, holds_an_array, host_gradient, jax
from .derivatives import derivative_problem

__all__ = ["function_problem", "forward_problem", "function_problems", "array_problem", "jax_problem"]


def function_problem(fn, inputs, *, seed: int = SEED, order: int = 1) -> GradientProblem:
    """``fn`` at ``inputs`` as a GradientProblem: ⟨u, fn(*inputs)⟩ over their floating leaves.

    Parameters
    ----------
    fn : callable
        Any JAX-differentiable function of ``inputs`` returning a pytree of
        arrays; output leaves that are not floating point or complex are left out of ⟨u, ·⟩,
        a complex one counts as its real and imaginary parts.
    inputs : tuple of pytrees
        The arguments, as ``jax.test_util.check_grads(f, args)`` takes them (one array
        stands for a 1-tuple). Leaves that are arrays (JAX or numpy) of float64, float32,
        float16, bfloat16, complex128 or complex64, or Python floats (JAX's default float
        dtype), are checked; everything else is passed as is (close over what should not
        be checked).
    seed : int
        The cotangents' seed (:func:`~gradcheck_cli.engine.cotangents.cotangent`).
    order : 1, 2 or 3
        1: the vector-Jacobian product ``jax.vjp(fn, *inputs)[1](u)``. 2: the
        objective is ⟨v, g⟩ with g that product (v = cotangent(shape, k,
        seed + 1) for the k-th checked leaf), the analytic side the vjp of g;
        3: the same once more (the path ``("rev",) * order``).

    Returns
    -------
    GradientProblem
        Parameters: writable host copies of the checked leaves, by pytree
        path. Gradients: float64 arrays (complex128, conjugated out of JAX's
        convention into gradcheck's, docs/jax.md "Complex numbers"). The objective rebuilds ``inputs``
        from the copies at every call.

    Raises
    ------
    GradCheckError
        Before ``fn`` is first called, for an input that cannot be checked
        (UnsupportedJaxInput, X64Disabled); for outputs that cannot be
        checked, InvalidCall. Exceptions raised by ``fn`` propagate unchanged.
    """
    if order not in ORDERS:
        raise InvalidCall(call="check_function", problem=f"order must be 1, 2 or 3, got {order!r}")
    return derivative_problem(Call(fn, inputs), ("rev",) * order, seed=seed)


def forward_problem(fn, inputs, *, seed: int = SEED) -> GradientProblem:
    """``fn``'s forward rule as a GradientProblem: per checked leaf, ε ↦ ⟨u, fn(x + ε·t)⟩ at ε = 0.

    The tangent t of the k-th checked leaf is
    :func:`~gradcheck_cli.engine.cotangents.tangent` (seed + 1, index k); the
    analytic side is ⟨u, ṫ⟩ with ṫ the output tangent of ``jax.jvp`` along t
    alone. Arguments and errors as :func:`function_problem`'s; each parameter
    is a 0-d ε in its leaf's dtype, named as the leaf.
    """
    return derivative_problem(Call(fn, inputs), ("fwd",), seed=seed)


def array_problem(problem: GradientProblem) -> GradientProblem:
    """A problem whose parameters or gradients are JAX arrays, with writable host copies and float64 arrays.

    The objective is called with the mapping of copies (JAX functions take
    numpy arrays); numpy values are kept as they are. A complex JAX gradient
    is in JAX's convention (what ``jax.grad`` returns) and is conjugated
    into gradcheck's; a numpy one is taken as gradcheck's.
    """
    parameters = {}
    for name, value in problem.parameters.items():
        parameters[name] = np.array(value, copy=True) if isinstance(value, jax.Array) else value
    gradients = {}
    for name, value in problem.gradients.items():
        gradients[name] = host_gradient(value) if isinstance(value, jax.Array) else value  # JAX's convention
    user_objective = problem.objective

    def objective(arrays):
        value = user_objective(arrays)
        return np.asarray(value) if isinstance(value, jax.Array) else value

    return GradientProblem(objective, parameters, gradients)


def jax_problem(returned, reference: str = "the problem"):
    """What a problem function returned, as a GradientProblem when it is JAX code; anything else unchanged.

    ``(fn, inputs)`` (``inputs`` a tuple or list of pytrees holding a JAX or numpy array)
    is :func:`function_problem` over every argument, and a GradientProblem or
    ``(objective, parameters, gradients)`` holding JAX arrays :func:`array_problem`.
    """
    if isinstance(returned, (tuple, list)) and len(returned) == 2:
        fn, args = returned
        if callable(fn) and isinstance(args, (tuple, list)) and holds_an_array(args):
            return function_problem(fn, tuple(args))
        return returned
    if isinstance(returned, GradientProblem) or (isinstance(returned, (tuple, list)) and len(returned) == 3):
        problem = as_problem(returned, reference)
        if any(isinstance(value, jax.Array) for value in (*problem.parameters.values(), *problem.gradients.values())):
            return array_problem(problem)
    return returned


def function_problems(fn, inputs, options: Options) -> list:
    """The :class:`~gradcheck_cli.check.derivatives.DerivativeProblem` of each path that ``options.order``
    and ``options.modes`` ask for (:func:`~gradcheck_cli.check.derivatives.derivative_paths`), as
    ``jax.test_util.check_grads`` recurses."""
    call = Call(fn, inputs)
    return [derivative_problem(call, path, options) for path in derivative_paths(options.order, options.modes)]
