"""torch code as gradient problems, for :mod:`gradcheck_cli.torch` (the public face) to check.

Each problem's parameters are numpy views of the tensors' own storage, in their own dtype (no copy):
the probes are written through those views, so torch sees them, and the check writes the original bits
back after every call, on every path. The user's guide, with how the cotangent u is built and the plan
for CUDA, is docs/torch.md.

* :func:`function_problem`: ``fn(*inputs)`` returns a tensor or a tuple of tensors; the objective is
  ⟨u, fn(*inputs)⟩ in float64 under ``torch.no_grad()``, the analytic side ``torch.autograd.grad`` with
  the same u (:func:`~gradcheck_cli.engine.cotangents.cotangent`). Every input tensor that requires grad
  is checked, leaf or not. :func:`double_backward_problem` (order 2) and :func:`forward_problem` (a
  Function's ``jvp``) are built on the same call; :func:`function_problems` picks them by order and modes.
* :func:`module_problem`: ``loss_fn(module)`` returns a scalar; every parameter of
  ``module.named_parameters()`` that requires grad is checked, under torch's name, and the module's
  buffers are written back after every call.
* :func:`torch_problem`: what ``gradcheck check FILE.py:FUNCTION`` does with a returned ``(fn,
  inputs)``, ``(module, loss_fn)``, or a problem whose parameters are tensors.

No ``.grad`` is written (``torch.autograd.grad``, never ``.backward()``), the module's training mode is
left as the user set it, and every tensor is checked before the first call: CPU only
(:class:`UnsupportedDevice`), dense, no element sharing memory with another, no two tensors sharing memory.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ..check import Options
from ..core.defaults import SEED
from ..core.splitmix import MASK64
from ..engine.cotangents import cotangent
from ..engine.problem import GradientProblem, as_problem
from ..errors import InvalidArgument, InvalidCall, NotAProblem
from .torch_views import gradient_array, probe_views, require_cpu, same_bits, torch

__all__ = [
    "cotangent",
    "function_problem",
    "module_problem",
    "tensor_problem",
    "torch_problem",
    "function_problems",
    "double_backward_problem",
    "forward_problem",
]


def function_problem(fn, inputs, *, seed: int = SEED) -> GradientProblem:
    """``fn`` at ``inputs`` as a GradientProblem: ⟨u, fn(*inputs)⟩ over the inputs that require grad.

    Parameters
    ----------
    fn : callable
        ``fn(*inputs)`` (``fn(**inputs)`` for a mapping) returns a tensor or
        a tuple or list of tensors. Outputs that are not floating point or
        do not require grad are left out of ⟨u, ·⟩.
    inputs : tensor, sequence or mapping
        A tensor stands for ``(tensor,)``. Input tensors that require grad
        (float64, float32 or bfloat16) are checked, named ``inputs[i]`` (or
        by their key); everything else is passed as is.
    seed : int
        The cotangents' seed (:func:`cotangent`).

    Returns
    -------
    GradientProblem
        Parameters: numpy views of the checked tensors. Gradients: float64
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
    named, call_text, call, checked, views = _checked_inputs(fn, inputs)

    outputs, cotangents, grads = _vector_jacobian(call, call_text, checked, seed)
    differentiable = list(cotangents)
    shapes = {index: outputs[index].shape for index in differentiable}
    count = len(outputs)
    del outputs

    def objective(_views):
        with torch.no_grad():
            returned = _outputs(call(), call_text)
        if len(returned) != count:
            raise InvalidCall(call=call_text, problem=f"returned {len(returned)} outputs, then {count}")
        total = 0.0
        for index, u in cotangents.items():
            output = returned[index].detach()
            if output.shape != shapes[index]:
                problem = f"output {index} had shape {list(shapes[index])}, then {list(output.shape)}"
                raise InvalidCall(call=call_text, problem=problem)
            total += float(torch.sum(output.to(torch.float64) * u))
        return total

    gradients = {name: gradient_array(grad, tensor) for (name, tensor), grad in zip(checked.items(), grads)}
    return GradientProblem(objective, views, gradients)


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
            loss = _scalar_loss(loss_fn(module), call_text, analytic=True)
            grads = torch.autograd.grad(loss, list(checked.values()), allow_unused=True)
    finally:
        restore_buffers()  # after the backward, which may need the buffers the forward saved
    del loss

    def objective(_views):
        try:
            with torch.no_grad():
                return float(_scalar_loss(loss_fn(module), call_text).to(torch.float64))
        finally:
            restore_buffers()

    gradients = {name: gradient_array(grad, tensor) for (name, tensor), grad in zip(checked.items(), grads)}
    return GradientProblem(objective, views, gradients)


def tensor_problem(problem: GradientProblem) -> GradientProblem:
    """A problem whose parameters or gradients are torch tensors, with numpy views and arrays instead.

    Every tensor parameter is probed through a view of its own storage; the
    objective is still called with the original mapping of tensors. Tensor
    gradients become float64 arrays. Numpy values are kept as they are.
    """
    tensors = {name: value for name, value in problem.parameters.items() if isinstance(value, torch.Tensor)}
    views = probe_views(tensors, tensors)
    parameters = {name: views.get(name, value) for name, value in problem.parameters.items()}
    gradients = {}
    for name, gradient in problem.gradients.items():
        if isinstance(gradient, torch.Tensor):
            require_cpu(f"gradients[{name!r}]", gradient)
            gradient = gradient.detach().to(torch.float64).numpy()
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
        if _holds_a_tensor(second):
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


def _holds_a_tensor(inputs) -> bool:
    if isinstance(inputs, Mapping):
        inputs = list(inputs.values())
    elif not isinstance(inputs, (tuple, list)):
        inputs = [inputs]
    return any(isinstance(value, torch.Tensor) for value in inputs)


def _bound_inputs(fn, inputs) -> tuple:
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


def _outputs(returned, call_text: str) -> list:
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


def _differentiable(output, index: int, call_text: str) -> bool:
    """Whether ⟨u, ·⟩ takes in this output; a complex output that requires grad is refused."""
    if output.is_complex() and output.requires_grad:
        problem = f"returned complex output {index} ({output.dtype}): return torch.view_as_real of it instead"
        raise InvalidCall(call=call_text, problem=problem)
    if output.requires_grad and output.is_floating_point():
        require_cpu(f"output {index}", output)
        return True
    return False


def _scalar_loss(loss, call_text: str, analytic: bool = False):
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


# Second order and forward mode: check_function(..., order=2) and check_function(..., modes=("fwd",)).


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
    named, call_text, call, checked, views = _checked_inputs(fn, inputs)
    directions = [
        torch.from_numpy(cotangent(tuple(tensor.shape), index, (seed + 1) & MASK64))
        for index, tensor in enumerate(checked.values())
    ]

    _, _, grads = _vector_jacobian(call, call_text, checked, seed, create_graph=True)
    with torch.enable_grad():
        terms = [torch.sum(g * v.to(g.dtype)) for g, v in zip(grads, directions) if g is not None and g.requires_grad]
        if terms:
            second = torch.autograd.grad(sum(terms[1:], terms[0]), list(checked.values()), allow_unused=True)
        else:
            second = [None] * len(checked)
    del grads, terms

    def objective(_views):
        grads = _vector_jacobian(call, call_text, checked, seed)[2]
        return sum(
            float(torch.sum(g.detach().to(torch.float64) * v)) for g, v in zip(grads, directions) if g is not None
        )

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

    from ..engine.cotangents import tangent, tangent_problem
    from ..engine.tensors import write_back

    named, call_text, call, checked, views = _checked_inputs(fn, inputs)
    outputs, cotangents, _ = _vector_jacobian(call, call_text, checked, seed)
    shapes = {index: tuple(outputs[index].shape) for index in cotangents}
    del outputs
    origins = {name: np.array(view, copy=True) for name, view in views.items()}
    tangents = {name: tangent(origin, index, seed) for index, (name, origin) in enumerate(origins.items())}

    def inner(returned, tangent_of=lambda output: output) -> float:
        returned = _outputs(returned, call_text)
        total = 0.0
        for index, u in cotangents.items():
            value = tangent_of(returned[index])
            if value is None:
                continue
            if tuple(value.shape) != shapes[index]:
                problem = f"output {index} had shape {list(shapes[index])}, then {list(value.shape)}"
                raise InvalidCall(call=call_text, problem=problem)
            total += float(torch.sum(value.detach().to(torch.float64) * u))
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


def _vector_jacobian(call, call_text: str, checked: Mapping, seed: int, create_graph: bool = False) -> tuple:
    """``(outputs, cotangents by output index, autograd's gradients of ⟨u, outputs⟩)`` at one call of ``fn``."""
    with torch.enable_grad():
        outputs = _outputs(call(), call_text)
        differentiable = [index for index, output in enumerate(outputs) if _differentiable(output, index, call_text)]
        if not differentiable:
            raise InvalidCall(call=call_text, problem="returned no floating-point output that requires grad")
        cotangents = {index: torch.from_numpy(cotangent(outputs[index].shape, index, seed)) for index in differentiable}
        grads = torch.autograd.grad(
            [outputs[index] for index in differentiable],
            list(checked.values()),
            grad_outputs=[cotangents[index].to(outputs[index].dtype) for index in differentiable],
            allow_unused=True,
            create_graph=create_graph,
        )
    return outputs, cotangents, grads


def _checked_inputs(fn, inputs) -> tuple:
    """``(name → input, call text, call, name → checked tensor, name → probe view)``, before any call."""
    if not callable(fn):
        raise InvalidArgument(argument="fn", value=type(fn).__name__, expected="callable")
    named, call_text, call = _bound_inputs(fn, inputs)
    tensors = {name: value for name, value in named.items() if isinstance(value, torch.Tensor)}
    checked = {name: tensor for name, tensor in tensors.items() if tensor.requires_grad}
    if not checked:
        raise InvalidCall(call=call_text, problem="has no input tensor that requires grad: nothing to check")
    return named, call_text, call, checked, probe_views(checked, tensors)
