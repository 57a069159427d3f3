"""The torch problems a check's ``order`` and ``modes`` pick (:func:`function_problems`): the double
backward (order 2, as ``gradgradcheck``) and a Function's forward-mode rule (``modes=("fwd",)``)."""

from __future__ import annotations

import numpy as np

from ...check import Options
from ...core.defaults import SEED
from ...core.splitmix import MASK64
from ...engine.problem import GradientProblem
from ...errors import InvalidCall
from .calls import checked_inputs, outputs_of, vector_jacobian
from .outputs import inner_product, output_cotangent, real_inner
from .problems import function_problem
from .views import gradient_array, refuse_other_layouts, torch

__all__ = ["function_problems", "double_backward_problem", "forward_problem"]


def function_problems(fn, inputs, options: Options) -> dict:
    """The problems a check of ``fn`` at ``inputs`` with ``options`` checks, by mode: ``"rev"`` the
    backward (:func:`function_problem`, or :func:`double_backward_problem` at ``order=2``), ``"fwd"`` the
    forward-mode rule (:func:`forward_problem`)."""
    if "fwd" in options.modes and options.order != 1:
        problem = f"checks order={options.order} in reverse mode only, got modes={options.modes!r}"
        raise InvalidCall(call="check_function", problem=problem)
    problems = {}
    for mode in options.modes:  # fwd before rev, as jax.test_util.check_grads checks them
        if mode == "fwd":
            problems[mode] = forward_problem(fn, inputs, seed=options.seed)
        else:
            build = function_problem if options.order == 1 else double_backward_problem
            problems[mode] = build(fn, inputs, seed=options.seed)
    return problems


def double_backward_problem(fn, inputs, *, seed: int = SEED) -> GradientProblem:
    """``fn``'s double backward as a GradientProblem: the gradient of ⟨v, g⟩, g = ∇⟨u, fn(*inputs)⟩.

    As torch's ``gradgradcheck`` does: g is ``torch.autograd.grad`` with the
    cotangents u (:func:`cotangent`), v_k = cotangent(shape, k, seed + 1) for
    the k-th checked input; the analytic side differentiates ⟨v, g⟩ through
    ``create_graph=True``, the numerical side is ⟨v, g⟩ from g alone (no
    graph) at the probes. A g that does not depend on the inputs
    differentiably (a backward outside autograd) has a zero analytic
    gradient. Arguments, names and errors as :func:`function_problem`'s.
    """
    named, call_text, call, checked, views = checked_inputs(fn, inputs)
    refuse_other_layouts(checked, "order 2", "at order 1")
    directions = [output_cotangent(tensor, index, (seed + 1) & MASK64) for index, tensor in enumerate(checked.values())]

    _, _, grads = vector_jacobian(call, call_text, checked, seed, create_graph=True)
    with torch.enable_grad():
        terms = [real_inner(g, v) for g, v in zip(grads, directions) if g is not None and g.requires_grad]
        if terms:
            second = torch.autograd.grad(sum(terms[1:], terms[0]), list(checked.values()), allow_unused=True)
        else:
            second = [None] * len(checked)
    del grads, terms

    def objective(_views):
        grads = vector_jacobian(call, call_text, checked, seed)[2]
        return sum(inner_product(g, v) for g, v in zip(grads, directions) if g is not None)

    gradients = {name: gradient_array(grad, tensor) for (name, tensor), grad in zip(checked.items(), second)}
    return GradientProblem(objective, views, gradients)


def forward_problem(fn, inputs, *, seed: int = SEED) -> GradientProblem:
    """``fn``'s forward-mode rule (a Function's ``jvp``) as a GradientProblem, one 0-d ε per checked input.

    Per checked input x_k, the tangent t_k is
    :func:`~gradcheck_cli.engine.cotangents.tangent` (seed + 1, index k); the
    analytic side is ⟨u, ṫ⟩ with ṫ the output tangents of ``fn`` at the dual
    x_k + t_k·ε (``torch.autograd.forward_ad``), the numerical side
    ε ↦ ⟨u, fn(x + ε·t_k)⟩ with x_k's storage probed in place and restored.
    Arguments, names and errors as :func:`function_problem`'s.
    """
    from torch.autograd import forward_ad

    from ...engine.cotangents import tangent, tangent_problem
    from ...engine.tensors import write_back

    named, call_text, call, checked, views = checked_inputs(fn, inputs)
    refuse_other_layouts(checked, "forward mode", "in reverse mode (modes=('rev',))")
    outputs, cotangents, _ = vector_jacobian(call, call_text, checked, seed)
    shapes = {index: tuple(outputs[index].shape) for index in cotangents}
    del outputs
    origins = {name: np.array(view, copy=True) for name, view in views.items()}
    tangents = {name: tangent(origin, index, seed) for index, (name, origin) in enumerate(origins.items())}

    def inner(returned, tangent_of=lambda output: output) -> float:
        returned = outputs_of(returned, call_text)
        total = 0.0
        for index, u in cotangents.items():
            value = tangent_of(returned[index])
            if value is None:
                continue
            if tuple(value.shape) != shapes[index]:
                problem = f"output {index} had shape {list(shapes[index])}, then {list(value.shape)}"
                raise InvalidCall(call=call_text, problem=problem)
            total += inner_product(value, u)
        return total

    directional = {}
    for name, tensor in checked.items():
        with torch.no_grad(), forward_ad.dual_level():
            t = torch.from_numpy(tangents[name]).to(tensor.dtype)
            dual = forward_ad.make_dual(tensor.detach(), t)
            values = [dual if key == name else value for key, value in named.items()]
            returned = fn(**dict(zip(named, values))) if call_text == "fn(**inputs)" else fn(*values)
            directional[name] = inner(returned, lambda output: forward_ad.unpack_dual(output).tangent)

    def evaluate(points):
        try:
            for name, point in points.items():
                np.ndarray.__setitem__(views[name], Ellipsis, point)
            with torch.no_grad():
                return inner(call())
        finally:
            for name in points:
                write_back(views[name], Ellipsis, origins[name])

    return tangent_problem(origins, tangents, evaluate, directional)
