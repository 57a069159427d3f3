"""A JAX function's derivatives of every order and mode, as ``jax.test_util.check_grads`` recurses, and
the problem of each: reverse mode (its vjp, against ⟨u, ·⟩'s differences) or forward mode (its jvp, one
ε per input).

A derivative is again a function of the checked leaves: ``leaves ↦ vjp(g)(u)`` (one gradient per leaf)
or ``leaves ↦ jvp(g, leaves, t)`` (the output tangents), so that they compose along a path of modes
(:func:`derivative_function`); JAX nests both modes, forward over forward included (a rule inside
``lax.while_loop``, which has no reverse mode). The derivative at depth d draws its u or tangents from
``seed + d``.
"""

from __future__ import annotations

import numpy as np

from ...check import Options
from ...check.derivatives import DerivativeProblem, FirstValueUnconfirmed, path_label
from ...core.defaults import SEED
from ...engine.blocks import same_array_bits
from ...engine.cotangents import tangent, tangent_problem
from ...engine.problem import GradientProblem
from .call_checks import forward_call_checks, reverse_call_checks
from .calls import Call, Cotangents, host_gradient, jax, jnp

__all__ = ["derivative_function", "derivative_problem", "leaf_tangents"]


def leaf_tangents(call: Call, seed: int, only: int | None = None) -> tuple:
    """Each checked leaf's tangent (:func:`~gradcheck_cli.engine.cotangents.tangent`) in its dtype;
    with ``only``, that leaf's alone and zeros for the others."""
    return tuple(
        jnp.array(tangent(origin, index, seed).astype(origin.dtype))
        if only in (None, index)
        else jnp.zeros(origin.shape, origin.dtype)
        for index, origin in enumerate(call.origins.values())
    )


def call_text(modes: tuple) -> str:
    """How messages name the function a path's last mode differentiates."""
    return "fn(*inputs)" if not modes else f"the {path_label(modes)} derivative of fn"


def derivative_function(call: Call, modes: tuple, seed: int):
    """``leaves ↦`` the derivative of fn along ``modes``, a pytree."""
    g, primals = call, call.primals() if modes else []  # JAX copies of θ: made where a mode needs them
    for depth, mode in enumerate(modes):
        if mode == "rev":
            u = Cotangents(g(*primals), seed + depth, call_text(modes[:depth])).tree
            g = _pulled_back(g, u)
        else:
            g = _pushed_forward(g, leaf_tangents(call, seed + depth))
    return g


def _pulled_back(g, u):
    return lambda *leaves: jax.vjp(g, *leaves)[1](u)


def _pushed_forward(g, tangents):
    return lambda *leaves: jax.jvp(g, leaves, tangents)[1]


def derivative_problem(call: Call, path: tuple, options: Options | None = None, seed: int = SEED):
    """The problem of ``path``: its last mode applied to fn's derivative along the modes before it; with
    ``options`` a DerivativeProblem with its call checks, else the GradientProblem alone."""
    seed = seed if options is None else options.seed
    depth, below = len(path) - 1, tuple(path[:-1])
    g = derivative_function(call, below, seed)
    if path[-1] == "rev":
        problem, calls, variation = reverse_problem(call, g, seed + depth, call_text(below), options)
    else:
        problem, calls, variation = *forward_problem_of(call, g, seed + depth, call_text(below), options), 0.0
    return problem if options is None else DerivativeProblem(tuple(path), problem, calls, variation)


def reverse_problem(call: Call, g, seed: int, text: str, options: Options | None) -> tuple:
    """``(GradientProblem of ⟨u, g(leaves)⟩ with its vjp, the call checks, their variation)``."""
    outputs, pullback = jax.vjp(g, *call.traced_primals())
    first = Cotangents(outputs, seed, text)
    grads = pullback(first.tree)
    checks, variation = (), 0.0
    if options is not None:
        checks, variation = reverse_call_checks(call, outputs, pullback, grads, options, seed, text)
    gradients = dict(zip(call.names, (host_gradient(grad) for grad in grads)))  # conjugated out of JAX's convention
    parameters = {name: np.array(origin, copy=True) for name, origin in call.origins.items()}
    arrays = [parameters[name] for name in call.names]
    deferred = options is not None and options.fast  # a check that can be run again (check_problems)
    evaluate = evaluated_outputs(g, arrays, [call.origins[name] for name in call.names], outputs, deferred)

    def objective(_copies):
        return first.inner(evaluate())

    return GradientProblem(objective, parameters, gradients), checks, variation


def evaluated_outputs(g, arrays: list, origins: list, outputs, deferred: bool = False):
    """``evaluate()``: g's outputs at what the host ``arrays`` hold. g is called with those arrays
    themselves (θ's probes written into them) where it gives its ``outputs`` at θ bit for bit from
    them, so that nothing is converted per call but what JAX's operations convert as they read them
    (docs/jax.md, "What is evaluated"); else with a JAX copy of each, made at every call. The first
    call finds out which: at θ (``origins``' bits) it is that call itself, whose outputs are then f's
    there; elsewhere a call at host copies of θ comes first.

    ``deferred`` (a fast check, which check_problems can run again): a first call at θ is answered with
    ``outputs``, what the vjp's forward computed, and the host arrays are taken provisionally (JAX
    copies once they raise); the next call at θ calls g and must give those bits, else it raises
    FirstValueUnconfirmed, and from then on g is called as without ``deferred``."""
    state = {"decided": None, "provisional": deferred}

    def at_theta() -> bool:
        return all(same_array_bits(array, origin) for array, origin in zip(arrays, origins))

    def called(host: bool):
        return g(*(arrays if host else [jnp.array(array) for array in arrays]))

    def evaluate():
        if state["provisional"]:
            return provisional()
        if state["decided"] is None:
            theta = at_theta()
            trial = arrays if theta else [np.array(origin, copy=True) for origin in origins]
            try:
                got = g(*trial)
                same = same_outputs(got, outputs)
            except Exception:  # a function that takes JAX arrays only (``x.at[...]``): copies
                same = False
            state["decided"] = same
            if same and theta:
                return got
        return called(state["decided"])

    def provisional():
        theta = at_theta()
        if state["decided"] is None:
            if theta:
                state["decided"] = True  # host arrays, until a call raises or f(θ) says otherwise
                return outputs
            state["provisional"] = False  # a first call elsewhere: decided as without ``deferred``
            return evaluate()
        if not theta:
            if not state["decided"]:
                return called(False)
            try:
                return called(True)
            except Exception:  # noqa: BLE001 (JAX copies from now on; their own exception propagates)
                state["decided"] = False
                return called(False)
        got = called(state["decided"])
        if not same_outputs(got, outputs):
            state.update(decided=None, provisional=False)
            raise FirstValueUnconfirmed()
        state["provisional"] = False
        return got

    return evaluate


def same_outputs(first, second) -> bool:
    """Whether two output pytrees have one structure and leaves of one dtype, shape and bits."""
    first_leaves, first_structure = jax.tree_util.tree_flatten(first)
    second_leaves, second_structure = jax.tree_util.tree_flatten(second)
    if first_structure != second_structure:
        return False
    pairs = [(np.asarray(one), np.asarray(other)) for one, other in zip(first_leaves, second_leaves)]
    return all(
        one.dtype == other.dtype and one.shape == other.shape and one.tobytes() == other.tobytes()
        for one, other in pairs
    )


def forward_problem_of(call: Call, g, seed: int, text: str, options: Options | None) -> tuple:
    """``(the tangent problem of g's jvp along each leaf's tangent alone, the call checks)``."""
    primals = call.primals()
    first = Cotangents(g(*primals), seed, text)
    tangents, directional = {}, {}
    for index, name in enumerate(call.names):
        tangents[name] = tangent(call.origins[name], index, seed)
        _, output_tangents = jax.jvp(g, tuple(primals), leaf_tangents(call, seed, only=index))
        directional[name] = first.inner(output_tangents)
    checks = () if options is None else forward_call_checks(call, g, options, seed)

    def evaluate(points):
        return first.inner(g(*(jnp.array(points.get(name, call.origins[name])) for name in call.names)))

    return tangent_problem(call.origins, tangents, evaluate, directional), checks
