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
(:class:`UnsupportedDevice`), dense (or sparse COO and CSR, probed in their stored values; mkldnn through
a dense copy), no element sharing memory with another, no two tensors sharing memory.
"""

from ...engine.cotangents import cotangent
from .calls import bound_inputs
from .orders import double_backward_problem, forward_problem, function_problems
from .problems import function_problem, module_problem, tensor_problem, torch_problem
from .views import refuse_dense_check

__all__ = [
    "cotangent",
    "function_problem",
    "module_problem",
    "tensor_problem",
    "torch_problem",
    "function_problems",
    "double_backward_problem",
    "forward_problem",
    "bound_inputs",
    "refuse_dense_check",
]
