"""The torch problems of first order: a function's backward (:func:`function_problem`), a module's
parameters (:func:`module_problem`), a problem holding tensors (:func:`tensor_problem`), and what
``gradcheck check FILE.py:FUNCTION`` does with what a problem function returns (:func:`torch_problem`)."""

from __future__ import annotations

from ...core.defaults import SEED
from ...engine.problem import GradientProblem, as_problem
from ...errors import InvalidArgument, InvalidCall, NotAProblem
from .calls import holds_a_tensor, scalar_loss
from .derivatives import Bound
from .orders import derivative_problem
from .views import gradient_array, probe_views, require_cpu, same_bits, torch

__all__ = ["function_problem", "module_problem", "tensor_problem", "torch_problem"]


def function_problem(fn, inputs, *, seed: int = SEED) -> GradientProblem:
    """``fn`` at ``inputs`` as a GradientProblem: ⟨u, fn(*inputs)⟩ over the inputs that require grad.

    Parameters
    ----------
    fn : callable
        ``fn(*inputs)`` (``fn(**inputs)`` for a mapping) returns a tensor or
        a tuple or list of tensors. Outputs that are not floating point or
        do not require grad are left out of ⟨u, ·⟩; when no output requires
        grad, every floating-point output is in, with a zero gradient.
    inputs : tensor, sequence or mapping
        A tensor stands for ``(tensor,)``. Input tensors that require grad
        (float64, float32, float16, bfloat16, complex128 or complex64: dense,
        sparse COO or CSR, or mkldnn) are checked, named ``inputs[i]`` (or
        by their key); everything else is passed as is.
    seed : int
        The cotangents' seed (:func:`cotangent`).

    Returns
    -------
    GradientProblem
        Parameters: numpy views of the checked tensors (a sparse tensor's
        stored values; an mkldnn tensor's dense copy, written into it before
        each call and its own values back after). Gradients: float64 (complex128)
        arrays of autograd's vector-Jacobian product with u (zeros where
        autograd returns None). The objective ignores its argument and calls
        ``fn`` on ``inputs`` themselves, which the views write into.

    Raises
    ------
    GradCheckError
        Before ``fn`` is first called, for an input that cannot be probed;
        after the analytic call, for outputs that cannot be checked
        (InvalidCall). Exceptions raised by ``fn`` propagate unchanged.
    """
    return derivative_problem(Bound(fn, inputs), ("rev",), seed=seed)


def module_problem(module, loss_fn) -> GradientProblem:
    """``loss_fn(module)`` as a GradientProblem over the parameters that require grad.

    The objective is the loss itself (no cotangent); the parameters are
    numpy views named as ``module.named_parameters()`` names them, and every
    buffer is written back after each call of ``loss_fn``. Raises as
    :func:`function_problem` does.
    """
    if not isinstance(module, torch.nn.Module):
        raise InvalidCall(call="check_module", problem=f"needs a torch.nn.Module, got {type(module).__name__}")
    if not callable(loss_fn):
        raise InvalidArgument(argument="loss_fn", value=type(loss_fn).__name__, expected="callable")
    call_text = "loss_fn(module)"
    everything = dict(module.named_parameters())
    checked = {name: parameter for name, parameter in everything.items() if parameter.requires_grad}
    if not checked:
        raise InvalidCall(call=call_text, problem="has no module parameter that requires grad: nothing to check")
    everything.update(module.named_buffers())
    views = probe_views(checked, everything)
    saved_buffers = [(buffer, buffer.detach().clone()) for buffer in module.buffers()]

    def restore_buffers():
        with torch.no_grad():
            for buffer, saved in saved_buffers:
                if not same_bits(buffer, saved):  # an untouched buffer keeps its version counter
                    buffer.copy_(saved)

    try:
        with torch.enable_grad():
            loss = scalar_loss(loss_fn(module), call_text, analytic=True)
            grads = torch.autograd.grad(loss, list(checked.values()), allow_unused=True)
    finally:
        restore_buffers()  # after the backward, which may need the buffers the forward saved
    del loss

    def objective(_views):
        try:
            with torch.no_grad():
                return float(scalar_loss(loss_fn(module), call_text).to(torch.float64))
        finally:
            restore_buffers()

    gradients = {name: gradient_array(grad, tensor) for (name, tensor), grad in zip(checked.items(), grads)}
    return GradientProblem(objective, views, gradients)


def tensor_problem(problem: GradientProblem) -> GradientProblem:
    """A problem whose parameters or gradients are torch tensors, with numpy views and arrays instead.

    Every tensor parameter is probed through a view of its own storage (a
    sparse one's stored values); the objective is still called with the
    original mapping of tensors. Tensor gradients become float64 (complex128)
    arrays, read at a sparse parameter's stored indices. Numpy values are
    kept as they are.
    """
    tensors = {name: value for name, value in problem.parameters.items() if isinstance(value, torch.Tensor)}
    views = probe_views(tensors, tensors)
    parameters = {name: views.get(name, value) for name, value in problem.parameters.items()}
    gradients = {}
    for name, gradient in problem.gradients.items():
        if isinstance(gradient, torch.Tensor):
            require_cpu(f"gradients[{name!r}]", gradient)
            gradient = gradient_array(gradient, tensors.get(name, gradient))  # a sparse one's at its stored values
        gradients[name] = gradient
    original, user_objective = problem.parameters, problem.objective

    def objective(_arrays):
        with torch.no_grad():
            value = user_objective(original)
        return value.detach() if isinstance(value, torch.Tensor) else value

    return GradientProblem(objective, parameters, gradients)


def torch_problem(returned, reference: str = "the problem"):
    """What a problem function returned, as a GradientProblem when it is torch code; anything else unchanged.

    ``(fn, inputs)`` (the second a tensor, or a tuple, list or mapping holding
    one) is :func:`function_problem`, ``(module, loss_fn)`` (the second callable)
    :func:`module_problem`, and a GradientProblem or ``(objective,
    parameters, gradients)`` holding tensors :func:`tensor_problem`.
    """
    if isinstance(returned, (tuple, list)) and len(returned) == 2:
        first, second = returned
        if isinstance(first, torch.nn.Module) and callable(second):
            return module_problem(first, second)
        if holds_a_tensor(second):
            return function_problem(first, second)
        return returned
    if isinstance(returned, (tuple, list)) and len(returned) not in (0, 2) and isinstance(returned[0], torch.nn.Module):
        names = ", ".join(type(item).__name__ for item in returned)
        raise NotAProblem(
            reference=reference, returned=f"a {len(returned)}-tuple ({names}): a module's problem is (module, loss_fn)"
        )
    if isinstance(returned, GradientProblem) or (isinstance(returned, (tuple, list)) and len(returned) == 3):
        problem = as_problem(returned, reference)
        values = [*problem.parameters.values(), *problem.gradients.values()]
        if any(isinstance(value, torch.Tensor) for value in values):
            return tensor_problem(problem)
    return returned
