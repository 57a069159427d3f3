"""A torch function's derivatives of every order and mode, as functions of its checked inputs.

:class:`Bound` is ``fn`` with its checked input tensors replaceable (``xs``, one per checked input, in
order). A derivative is again a function of ``xs`` returning a list of tensors, so that derivatives
compose along a path of modes (:func:`derivative_function`): reverse mode is ``torch.autograd.grad``
with the cotangents u, through ``create_graph=True``; forward mode is torch's forward AD (dual
numbers, which run a Function's ``jvp``) along one tangent per input. torch's forward AD does not nest,
so a forward derivative of a function that already holds one is the Jacobian-vector product by reverse
mode (the double-backward trick of ``torch.autograd.functional.jvp``). Everything runs with grad mode
on, as the user's code expects (tensor hooks), and what is read is detached.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ...engine.blocks import same_array_bits
from ...engine.cotangents import tangent
from ...errors import InvalidCall
from .calls import checked_inputs, differentiable, outputs_of
from .outputs import inner_product as output_inner_product
from .outputs import output_cotangent
from .views import dense_copies, torch, written

__all__ = [
    "Bound",
    "derivative_function",
    "kept_outputs",
    "cotangents_of",
    "pulled_back",
    "forward_derivative",
    "inner_product",
]


class Bound:
    """``fn`` at ``inputs`` with the checked tensors replaceable: ``base(xs)`` returns its outputs.

    ``names``, ``xs`` (the checked tensors themselves, probed in place through ``views``), ``origins``
    (copies of their values in their own dtype) and ``call_text``. With ``random_seed`` set (a check
    with ``nondet_tol`` > 0), every evaluation draws torch's random numbers from that seed.
    """

    random_seed = None

    def __init__(self, fn, inputs):
        named, self.call_text, _, self.checked, self.views = checked_inputs(fn, inputs, dense_copies=True)
        self.names, self.xs = list(self.checked), list(self.checked.values())
        self.origins = {name: np.array(view, copy=True) for name, view in self.views.items()}
        keyword = self.call_text == "fn(**inputs)"
        copies = dense_copies(self.checked, self.views)  # an mkldnn input is probed through a dense copy

        def base(xs):
            values = {**named, **dict(zip(self.names, xs))}
            with written(copies):
                returned = fn(**values) if keyword else fn(*values.values())
            return outputs_of(returned, self.call_text)

        self.base = base

    def at_origins(self) -> bool:
        """Whether every checked input holds its original values, bit for bit."""
        return all(same_array_bits(self.views[name], origin) for name, origin in self.origins.items())

    def tangents(self, seed: int, only: int | None = None) -> list:
        """Each input's tangent (:func:`~gradcheck_cli.engine.cotangents.tangent`) as a float64 tensor;
        with ``only``, that input's alone and zeros for the others."""
        return [
            torch.from_numpy(tangent(origin, index, seed) if only in (None, index) else np.zeros(origin.shape))
            for index, origin in enumerate(self.origins.values())
        ]


def evaluated(g: Callable, xs: list, random_seed: int | None = None) -> list:
    """``g(xs)`` with grad mode on; with ``random_seed``, torch's generator forked and seeded with it,
    so that a function allowed to be random (``nondet_tol``) is one function to its finite differences."""
    if random_seed is None:
        with torch.enable_grad():
            return g(xs)
    with torch.random.fork_rng(devices=[]), torch.enable_grad():
        torch.manual_seed(random_seed)
        return g(xs)


def kept_outputs(outputs: list, call_text: str) -> list:
    """The indices of the outputs ⟨u, ·⟩ takes in: those that require grad; when none does, every
    floating-point output, whose derivative is then zero and the finite differences say whether it is."""
    kept = [index for index, output in enumerate(outputs) if differentiable(output, index, call_text)]
    return kept or [index for index, output in enumerate(outputs) if is_inexact(output)]


def is_inexact(tensor) -> bool:
    """Whether a tensor holds floating-point or complex numbers (what has a derivative)."""
    return tensor.is_floating_point() or tensor.is_complex()


def cotangents_of(outputs: list, kept: list, seed: int) -> dict:
    """u of each kept output (:func:`~.outputs.output_cotangent`): float64, complex128 for a complex output."""
    return {index: output_cotangent(outputs[index], index, seed) for index in kept}


def pulled_back(outputs: list, u: dict, xs: list, call_text: str, create_graph: bool = False) -> list:
    """``torch.autograd.grad`` of the outputs with cotangents ``u`` (index → tensor) with respect to
    ``xs``, the graph kept; an unused input's gradient is zeros, a sparse one dense."""
    used = []
    for index, u_index in u.items():
        output = outputs[index]
        if tuple(output.shape) != tuple(u_index.shape):
            problem = f"output {index} had shape {list(u_index.shape)}, then {list(output.shape)}"
            raise InvalidCall(call=call_text, problem=problem)
        if output.requires_grad:
            used.append(index)
    grads = [None] * len(xs)
    if used:
        grads = torch.autograd.grad(
            [outputs[index] for index in used],
            xs,
            grad_outputs=[u[index].to(outputs[index].dtype) for index in used],
            allow_unused=True,
            retain_graph=True,
            create_graph=create_graph,
        )
    return [torch.zeros(tuple(x.shape), dtype=x.dtype) if grad is None else dense(grad) for grad, x in zip(grads, xs)]


def dense(tensor):
    """A sparse gradient (``nn.Embedding(sparse=True)``) as the dense tensor it stands for, and forward
    AD's ZeroTensor (a derivative known to be zero, which has no memory) as zeros."""
    if torch._is_zerotensor(tensor):
        return torch.zeros(tuple(tensor.shape), dtype=tensor.dtype)
    return tensor if tensor.layout == torch.strided else tensor.to_dense()


def reverse_derivative(g: Callable, bound: Bound, seed: int) -> Callable:
    """``xs ↦ ∇⟨u, g(xs)⟩``, one gradient per input, differentiable again (u from ``seed``)."""
    outputs = evaluated(g, bound.xs, bound.random_seed)
    u = cotangents_of(outputs, kept_outputs(outputs, bound.call_text), seed)
    del outputs

    def derivative(xs):
        with torch.enable_grad():
            return pulled_back(g(xs), u, xs, bound.call_text, create_graph=True)

    return derivative


def forward_derivative(g: Callable, tangents: list, nested: bool) -> Callable:
    """``xs ↦`` the output tangents of ``g`` along ``tangents`` (zeros where an output has none):
    forward AD, or by reverse mode when ``nested`` (``g`` holds a forward derivative already)."""

    def derivative(xs):
        if nested:
            return reverse_jvp(g, xs, tangents)
        with torch.enable_grad(), torch.autograd.forward_ad.dual_level():
            duals = [torch.autograd.forward_ad.make_dual(x, t.to(x.dtype)) for x, t in zip(xs, tangents)]
            return [output_tangent(output) for output in g(duals)]

    return derivative


def output_tangent(output):
    if not is_inexact(output):
        return output
    found = torch.autograd.forward_ad.unpack_dual(output).tangent
    return torch.zeros(tuple(output.shape), dtype=output.dtype) if found is None else dense(found)


def reverse_jvp(g: Callable, xs: list, tangents: list) -> list:
    """The Jacobian-vector product of ``g`` along ``tangents`` through two backward passes: with
    w ↦ Jᵀw linear, J·t is its own vector-Jacobian product with t, differentiable again."""
    with torch.enable_grad():
        outputs = g(xs)
        moving = [index for index, output in enumerate(outputs) if is_inexact(output) and output.requires_grad]
        result = [
            torch.zeros(tuple(output.shape), dtype=output.dtype) if is_inexact(output) else output for output in outputs
        ]
        if not moving:
            return result
        dummies = [torch.zeros(tuple(outputs[i].shape), dtype=outputs[i].dtype, requires_grad=True) for i in moving]
        grads = torch.autograd.grad([outputs[i] for i in moving], xs, dummies, allow_unused=True, create_graph=True)
        pairs = [(grad, t) for grad, t in zip(grads, tangents) if grad is not None and grad.requires_grad]
        if not pairs:
            return result
        products = torch.autograd.grad(
            [grad for grad, _ in pairs],
            dummies,
            [t.to(grad.dtype) for grad, t in pairs],
            allow_unused=True,
            create_graph=True,
        )
    for index, product in zip(moving, products):
        if product is not None:
            result[index] = dense(product)
    return result


def derivative_function(bound: Bound, modes: tuple, seed: int) -> tuple:
    """``(xs ↦ the derivative of fn along modes, whether a forward derivative is among them)``; the
    derivative at depth d draws its u or tangents from ``seed + d``."""
    g, forward = bound.base, False
    for depth, mode in enumerate(modes):
        if mode == "rev":
            g = reverse_derivative(g, bound, seed + depth)
        else:
            g = forward_derivative(g, bound.tangents(seed + depth), nested=forward)
            forward = True
    return g, forward


def inner_product(returned: list, u: dict, count: int, call_text: str) -> float:
    """⟨u, returned⟩ in float64 (a complex output as its real and imaginary parts), from the outputs
    detached, after checking their number and shapes."""
    if len(returned) != count:
        raise InvalidCall(call=call_text, problem=f"returned {len(returned)} outputs, then {count}")
    total = 0.0
    for index, u_index in u.items():
        output = returned[index].detach()
        if tuple(output.shape) != tuple(u_index.shape):
            problem = f"output {index} had shape {list(u_index.shape)}, then {list(output.shape)}"
            raise InvalidCall(call=call_text, problem=problem)
        total += output_inner_product(output, u_index)
    return total
