"""How the torch adapter calls the user's function: its inputs bound and checked, and its outputs read
(adapters/torch/derivatives.py differentiates them)."""

from __future__ import annotations

from collections.abc import Mapping

from ...errors import InvalidArgument, InvalidCall
from .views import probe_views, require_cpu, torch

__all__ = [
    "holds_a_tensor",
    "bound_inputs",
    "outputs_of",
    "differentiable",
    "scalar_loss",
    "checked_inputs",
]


def holds_a_tensor(inputs) -> bool:
    if isinstance(inputs, Mapping):
        inputs = list(inputs.values())
    elif not isinstance(inputs, (tuple, list)):
        inputs = [inputs]
    return any(isinstance(value, torch.Tensor) for value in inputs)


def bound_inputs(fn, inputs) -> tuple:
    """``(name → input, call text, call)``: a tensor or sequence is passed positionally, a mapping by keyword."""
    if isinstance(inputs, torch.Tensor):
        inputs = (inputs,)
    if isinstance(inputs, Mapping):
        named = dict(inputs)
        for key in named:
            if not isinstance(key, str):
                raise InvalidCall(call="fn(**inputs)", problem=f"needs string keys, got {key!r}")
        return named, "fn(**inputs)", lambda: fn(**named)
    if not isinstance(inputs, (tuple, list)):
        problem = f"needs inputs as a tensor, a tuple, a list or a mapping, got {type(inputs).__name__}"
        raise InvalidCall(call="fn(*inputs)", problem=problem)
    positional = tuple(inputs)
    return {f"inputs[{index}]": value for index, value in enumerate(positional)}, "fn(*inputs)", lambda: fn(*positional)


def outputs_of(returned, call_text: str) -> list:
    if isinstance(returned, torch.Tensor):
        return [returned]
    if not isinstance(returned, (tuple, list)):
        problem = f"must return a tensor or a tuple of tensors, got {type(returned).__name__}"
        raise InvalidCall(call=call_text, problem=problem)
    for index, output in enumerate(returned):
        if not isinstance(output, torch.Tensor):
            problem = f"must return a tensor or a tuple of tensors, got {type(output).__name__} as output {index}"
            raise InvalidCall(call=call_text, problem=problem)
    return list(returned)


def differentiable(output, index: int, call_text: str) -> bool:
    """Whether ⟨u, ·⟩ takes in this output (a complex one as its real and imaginary parts); an output of
    another layout than dense that requires grad is refused, as torch's gradcheck refuses it."""
    if output.requires_grad and output.layout != torch.strided:
        problem = f"returned output {index} with layout {output.layout}, which gradcheck does not check: return .to_dense() of it"
        raise InvalidCall(call=call_text, problem=problem)
    if output.requires_grad and (output.is_floating_point() or output.is_complex()):
        require_cpu(f"output {index}", output)
        return True
    return False


def scalar_loss(loss, call_text: str, analytic: bool = False):
    wanted = "a floating-point tensor with one element" + (" that requires grad" if analytic else "")
    if not isinstance(loss, torch.Tensor):
        raise InvalidCall(call=call_text, problem=f"must return {wanted}, got {type(loss).__name__}")
    usable = loss.is_floating_point() and loss.numel() == 1 and (loss.requires_grad or not analytic)
    if not usable:
        got = f"{loss.dtype} of shape {list(loss.shape)}" + (
            ", requires_grad=False" if analytic and not loss.requires_grad else ""
        )
        raise InvalidCall(call=call_text, problem=f"must return {wanted}, got {got}")
    require_cpu("the loss", loss)
    return loss.detach().reshape(()) if not analytic else loss.reshape(())


def checked_inputs(fn, inputs, dense_copies: bool = False) -> tuple:
    """``(name → input, call text, call, name → checked tensor, name → probe view)``, before any call
    (``dense_copies``: an mkldnn input's view is a dense copy, :func:`~.views.probe_views`)."""
    if not callable(fn):
        raise InvalidArgument(argument="fn", value=type(fn).__name__, expected="callable")
    named, call_text, call = bound_inputs(fn, inputs)
    tensors = {name: value for name, value in named.items() if isinstance(value, torch.Tensor)}
    checked = {name: tensor for name, tensor in tensors.items() if tensor.requires_grad}
    if not checked:
        raise InvalidCall(call=call_text, problem="has no input tensor that requires grad: nothing to check")
    return named, call_text, call, checked, probe_views(checked, tensors, dense_copies)
