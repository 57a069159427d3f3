"""The torch problems a check's ``order`` and ``modes`` pick (:func:`function_problems`): one per path
of ``check_grads``' recursion, reverse mode (a backward: :func:`reverse_problem`) or forward mode (a
``jvp``: :func:`forward_problem_of`) of fn's derivative along the modes before it, each with the checks
of its calls (adapters/torch/call_checks.py)."""

from __future__ import annotations

import numpy as np

from ...check import Options
from ...check.derivatives import DerivativeProblem, derivative_paths
from ...core.defaults import SEED
from ...engine.cotangents import tangent_problem
from ...engine.problem import GradientProblem
from ...engine.tensors import write_back
from .call_checks import forward_call_checks, reverse_call_checks
from .derivatives import (
    Bound,
    cotangents_of,
    derivative_function,
    evaluated,
    forward_derivative,
    inner_product,
    kept_outputs,
    pulled_back,
)
from .views import gradient_array, refuse_other_layouts

__all__ = ["function_problems", "derivative_problem", "double_backward_problem", "forward_problem"]


def function_problems(fn, inputs, options: Options) -> list:
    """The :class:`~gradcheck_cli.check.derivatives.DerivativeProblem` of each path that ``options.order``
    and ``options.modes`` ask for (:func:`~gradcheck_cli.check.derivatives.derivative_paths`)."""
    bound = Bound(fn, inputs)
    if options.nondet_tol > 0:
        bound.random_seed = options.seed  # a function allowed to vary: its finite differences see one of its draws
    return [derivative_problem(bound, path, options) for path in derivative_paths(options.order, options.modes)]


def derivative_problem(bound: Bound, path: tuple, options: Options | None = None, seed: int = SEED):
    """The problem of ``path``: its last mode applied to fn's derivative along the modes before it; with
    ``options`` a DerivativeProblem with its call checks, else the GradientProblem alone."""
    seed = seed if options is None else options.seed
    if len(path) > 1:  # the derivatives beyond the first move dense tensors: a sparse or mkldnn input is not one
        refuse_other_layouts(bound.checked, f"order {len(path)}", "at order 1")
    elif path == ("fwd",):
        refuse_other_layouts(bound.checked, "forward mode", "in reverse mode (modes=('rev',))")
    g, forward = derivative_function(bound, path[:-1], seed)
    depth = len(path) - 1
    if path[-1] == "rev":
        problem, calls, variation = reverse_problem(bound, g, seed + depth, options)
    else:
        problem, calls, variation = *forward_problem_of(bound, g, seed + depth, forward, options), 0.0
    return problem if options is None else DerivativeProblem(tuple(path), problem, calls, variation)


def reverse_problem(bound: Bound, g, seed: int, options: Options | None) -> tuple:
    """``(GradientProblem of ⟨u, g(xs)⟩ with autograd's gradient, its call checks, their variation)``."""
    outputs = evaluated(g, bound.xs, bound.random_seed)
    u = cotangents_of(outputs, kept_outputs(outputs, bound.call_text), seed)
    grads = pulled_back(outputs, u, bound.xs, bound.call_text)
    calls, variation = ((), 0.0) if options is None else reverse_call_checks(bound, outputs, u, grads, options, seed)
    count = len(outputs)
    at_theta = [inner_product(outputs, u, count, bound.call_text)]  # this call's value: the check's first f(θ)
    del outputs

    def objective(_views):
        if at_theta and bound.at_origins():
            return at_theta.pop()
        at_theta.clear()
        return inner_product(evaluated(g, bound.xs, bound.random_seed), u, count, bound.call_text)

    gradients = {name: gradient_array(grad, x) for name, grad, x in zip(bound.names, grads, bound.xs)}
    return GradientProblem(objective, bound.views, gradients), calls, variation


def forward_problem_of(bound: Bound, g, seed: int, nested: bool, options: Options | None) -> tuple:
    """``(the tangent problem of g's forward derivative, one ε per input, its call checks)``.

    The analytic side is ⟨u, ṫ⟩ with ṫ g's output tangents along input k's tangent alone (every input
    dual, zero tangents for the others); no reverse pass is run to learn g's outputs."""
    outputs = evaluated(g, bound.xs, bound.random_seed)
    kept = kept_outputs(outputs, bound.call_text)
    u, count = cotangents_of(outputs, kept, seed), len(outputs)
    del outputs
    tangents = {name: t.numpy() for name, t in zip(bound.names, bound.tangents(seed))}
    directional = {}
    for index, name in enumerate(bound.names):
        moved = forward_derivative(g, bound.tangents(seed, only=index), nested)(bound.xs)
        directional[name] = inner_product(moved, u, count, bound.call_text)
    calls = () if options is None else forward_call_checks(bound, g, nested, kept, options, seed)
    views, origins = bound.views, bound.origins

    def evaluate(points):
        try:
            for name, point in points.items():
                np.ndarray.__setitem__(views[name], Ellipsis, point)
            return inner_product(evaluated(g, bound.xs, bound.random_seed), u, count, bound.call_text)
        finally:
            for name in points:
                write_back(views[name], Ellipsis, origins[name])

    return tangent_problem(origins, tangents, evaluate, directional), calls


def double_backward_problem(fn, inputs, *, seed: int = SEED) -> GradientProblem:
    """``fn``'s double backward as a GradientProblem: the gradient of ⟨v, g⟩, g = ∇⟨u, fn(*inputs)⟩.

    As torch's ``gradgradcheck`` does: g is ``torch.autograd.grad`` with the
    cotangents u (:func:`~gradcheck_cli.engine.cotangents.cotangent`), v_k = cotangent(shape, k, seed + 1)
    for the k-th checked input; the analytic side differentiates ⟨v, g⟩ through
    ``create_graph=True``, the numerical side is ⟨v, g⟩ at the probes. A g
    that does not depend on the inputs differentiably (a backward outside
    autograd) has a zero analytic gradient. Arguments, names and errors as
    :func:`~gradcheck_cli.adapters.torch.function_problem`'s; the path ``("rev", "rev")``.
    """
    return derivative_problem(Bound(fn, inputs), ("rev", "rev"), seed=seed)


def forward_problem(fn, inputs, *, seed: int = SEED) -> GradientProblem:
    """``fn``'s forward-mode rule (a Function's ``jvp``) as a GradientProblem, one 0-d ε per checked input.

    Per checked input x_k, the tangent t_k is
    :func:`~gradcheck_cli.engine.cotangents.tangent` (seed + 1, index k); the
    analytic side is ⟨u, ṫ⟩ with ṫ the output tangents of ``fn`` at the duals
    x_k + t_k·ε and x_j + 0·ε (``torch.autograd.forward_ad``), the numerical side
    ε ↦ ⟨u, fn(x + ε·t_k)⟩ with x_k's storage probed in place and restored.
    Arguments, names and errors as :func:`~gradcheck_cli.adapters.torch.function_problem`'s; the path ``("fwd",)``.
    """
    return derivative_problem(Bound(fn, inputs), ("fwd",), seed=seed)
