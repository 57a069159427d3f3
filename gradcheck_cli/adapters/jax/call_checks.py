"""The checks of a JAX derivative's calls, made once before any finite difference: the vjp called twice
with the same cotangent (determinism, within ``nondet_tol``: a ``custom_vjp`` backward is Python, run
again at each call outside ``jit``), and, with ``batched=True``, the vjp (or jvp) under ``jax.vmap`` over
a batch of cotangents (tangents) against the loop of single calls (a ``custom_vjp`` backward or a
``custom_vmap`` rule batched wrongly). The rules are docs/method.md's "The derivative calls"."""

from __future__ import annotations

import functools

import numpy as np

from ...check import Options
from ...check.derivatives import (
    BATCH,
    BATCHING,
    DETERMINISM,
    agreement_check,
    call_tolerance,
    determinism_check,
    raised_check,
    relative_limits,
    selected,
)
from ...engine.cotangents import tangent
from .calls import Call, Cotangents, host_float64, jax, jnp

__all__ = ["reverse_call_checks", "forward_call_checks"]


def reverse_call_checks(call: Call, outputs, pullback, first, options: Options, seed: int, text: str) -> tuple:
    """``(the call checks, the observed variation)`` of the vjp ``pullback`` that gave the gradients
    ``first`` with the cotangents of ``seed`` (:class:`~gradcheck_cli.adapters.jax.calls.Cotangents`).
    A fast check does not call a vjp twice that is XLA's alone on the CPU (:func:`xla_alone`)."""
    checks, variation = [], 0.0
    if not (options.fast and xla_alone(pullback, first)):
        names = list(selected(options, call.origins))  # the inputs the check is asked about
        cotangent_tree = Cotangents(outputs, seed, text).tree  # the same u, rebuilt: the vjp is called with it again
        expected = {name: host_float64(grad) for name, grad in zip(call.names, first) if name in names}
        try:
            second = pullback(cotangent_tree)
            second = {name: host_float64(grad) for name, grad in zip(call.names, second) if name in names}
        except Exception as error:  # noqa: BLE001 (the second call raising is the finding)
            checks = [raised_check(DETERMINISM, names[0], error, "the vjp called a second time")]
        else:
            determinism, variation = determinism_check(expected, second, options.nondet_tol)
            checks = [determinism]
    if options.batched:
        batches = [Cotangents(outputs, seed + 1 + b, text).tree for b in range(BATCH)]
        checks.append(
            batched_check(call, pullback, batches, options, f"the vjp under jax.vmap over {BATCH} cotangents")
        )
    return tuple(checks), variation


#: What the primitives that run Python at each call of a vjp are named with (a ``custom_vjp`` backward's
#: ``custom_lin``, ``pure_callback``, ``io_callback``): a linear program holding none is XLA's alone.
PYTHON_AT_EACH_CALL = ("custom", "callback")


def xla_alone(pullback, gradients) -> bool:
    """Whether the vjp ``pullback`` is a fixed XLA program run on the CPU, so that a second call with the
    same cotangent gives the same bits: its linear jaxpr holds no primitive that runs Python at each call
    (:data:`PYTHON_AT_EACH_CALL`, sub-programs included), and its ``gradients`` are on the CPU (where
    XLA's operations are deterministic; a GPU's scatter-add is not). False wherever that cannot be told:
    JAX keeps the jaxpr in the pullback's closure, not in its API, and a version that keeps it elsewhere
    gets the second call."""
    leaves = jax.tree_util.tree_leaves(gradients)
    on_cpu = all(isinstance(leaf, jax.Array) and {d.platform for d in leaf.devices()} == {"cpu"} for leaf in leaves)
    programs = list(_closed_jaxprs(pullback))
    return on_cpu and len(programs) == 1 and not _runs_python(programs[0])


def _closed_jaxprs(value, depth: int = 0):
    """The jaxprs a pullback closes over: in its (functools or jax.tree_util) partials' functions and arguments."""
    if hasattr(value, "eqns") and hasattr(value, "invars"):
        yield value
    elif depth < 6 and isinstance(value, (functools.partial, jax.tree_util.Partial)):
        for inner in (value.func, *value.args, *(value.keywords or {}).values()):
            yield from _closed_jaxprs(inner, depth + 1)
    elif depth < 6 and hasattr(value, "fun"):  # JAX's hashable wrapper of a partial
        yield from _closed_jaxprs(value.fun, depth + 1)


def _runs_python(jaxpr) -> bool:
    """Whether a primitive of ``jaxpr``, or of a program among its equations' parameters, runs Python."""
    for equation in jaxpr.eqns:
        if any(word in equation.primitive.name for word in PYTHON_AT_EACH_CALL):
            return True
        for parameter in equation.params.values():
            for inner in parameter if isinstance(parameter, (tuple, list)) else (parameter,):
                inner = getattr(inner, "jaxpr", inner)  # a ClosedJaxpr's own
                if hasattr(inner, "eqns") and _runs_python(inner):
                    return True
    return False


def batched_check(call: Call, function, batches: list, options: Options, what: str, blamed: str | None = None):
    """``function`` under ``jax.vmap`` over the stacked ``batches`` against its loop over them: leaf by
    leaf, one per checked input (a vjp), or, ``blamed`` naming the input, all leaves together (a jvp)."""

    def flat(tree, batch_axes: int) -> list:
        leaves = [host_float64(leaf) for leaf in jax.tree_util.tree_leaves(tree)]
        if blamed is None:
            return leaves
        return [np.concatenate([leaf.reshape(leaf.shape[:batch_axes] + (-1,)) for leaf in leaves], axis=-1)]

    names = call.names if blamed is None else [blamed]
    chosen = selected(options, dict.fromkeys(names))
    looped = [flat(function(batch), 0) for batch in batches]
    expected = {name: np.stack([leaves[k] for leaves in looped]) for k, name in enumerate(names) if name in chosen}
    try:
        stacked = jax.tree_util.tree_map(lambda *leaves: jnp.stack(leaves), *batches)
        got = dict(zip(names, flat(jax.vmap(function)(stacked), 1)))
    except Exception as error:  # noqa: BLE001 (a rule that breaks under vmap is the finding)
        return raised_check(BATCHING, next(iter(chosen)), error, what)
    tolerances = {name: call_tolerance(options, call.origins[name].dtype) for name in expected}
    limits = relative_limits(expected, tolerances)
    return agreement_check(BATCHING, expected, got, limits, f"{what} and the loop of single calls")


def forward_call_checks(call: Call, g, options: Options, seed: int) -> tuple:
    """With ``batched=True``, per leaf, g's jvp under ``jax.vmap`` over BATCH tangents of that leaf
    (every other leaf's tangent zero); the worst of them."""
    if not options.batched:
        return ()
    primals, chosen = tuple(call.primals()), selected(options, call.origins)
    checks = []
    for index, name in enumerate(call.names):
        if name not in chosen:
            continue
        origin = call.origins[name]
        zeros = [jnp.zeros(other.shape, other.dtype) for other in call.origins.values()]

        def pushed(t, index=index, zeros=zeros):
            return jax.jvp(g, primals, tuple(t if k == index else z for k, z in enumerate(zeros)))[1]

        batches = [jnp.array(tangent(origin, index, seed + 1 + b).astype(origin.dtype)) for b in range(BATCH)]
        what = f"the jvp under jax.vmap over {BATCH} tangents of {name}"
        checks.append(batched_check(call, pushed, batches, options, what, name))
    return (min(checks, key=lambda check: (check.passed, -_excess(check))),)


def _excess(check) -> float:
    return np.inf if check.difference is None else check.difference - check.tolerance
