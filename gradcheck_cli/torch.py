"""Check torch code directly: autograd Functions and modules, in float64, float32, float16 and bfloat16,
complex128 and complex64, dense, sparse or mkldnn.

    import torch
    from gradcheck_cli.torch import check_function

    x = torch.randn(4, 8, dtype=torch.float32, requires_grad=True)
    report = check_function(MyGelu.apply, (x,))
    assert report.passed, report.failing_parameters

``inputs`` is a tuple, as ``torch.autograd.gradcheck(fn, inputs)`` takes it (a single tensor, a list
or a mapping of keyword arguments too), and every option is one of
:class:`~gradcheck_cli.check.options.Options`, the same as ``check_gradients``' and the JAX
adapter's: ``samples``, ``step``, ``tolerance``, ``seed``, ``jobs``, ``order`` (1, 2 or 3: every order
up to it), ``modes`` (``("rev",)`` the backward, ``("fwd",)`` a Function's ``jvp``, or both),
``batched``, ``nondet_tol`` and ``masked`` (a sparse input's stored values; ``False`` is refused).
The report is a :class:`~gradcheck_cli.check.records.GradientCheckReport`;
with several derivatives each parameter's name ends in its path, `` (rev)``, `` (fwd)``, `` (fwd∘rev)``,
and its ``calls`` hold the checks of the backward's calls (determinism, undefined output gradients,
batching). Every input is bit-identical afterwards, and no ``.grad`` is written.
How the problem is built (the cotangent u, views of the tensors' memory) is
:mod:`gradcheck_cli.adapters.torch` and docs/torch.md.
"""

from __future__ import annotations

from .adapters.torch import (
    bound_inputs,
    cotangent,
    function_problem,
    function_problems,
    module_problem,
    refuse_dense_check,
    tensor_problem,
    torch_problem,
)
from .check import GradientCheckReport, check_problems, check_with, options_of
from .verdict.failure import raise_unless_passed

__all__ = [
    "check_function",
    "check_module",
    "assert_gradients",
    "function_problem",
    "module_problem",
    "tensor_problem",
    "torch_problem",
    "cotangent",
]


def check_function(fn, inputs, **options) -> GradientCheckReport:
    """Check ``fn``'s derivatives at ``inputs``: its backward (``modes=("rev",)``, the default), a
    Function's ``jvp`` (``modes=("fwd",)``) or both, of every order up to ``order`` (1, 2 or 3), with
    the checks of the backward's calls (docs/torch.md).

    Parameters
    ----------
    fn : callable
        ``fn(*inputs)`` (``fn(**inputs)`` for a mapping) returns a tensor or a tuple of tensors.
    inputs : tuple of tensors and other values
        Every floating tensor that requires grad is checked, named ``inputs[i]`` (or by its key).
    **options
        :class:`~gradcheck_cli.check.options.Options`.

    Returns
    -------
    GradientCheckReport
    """
    options = options_of("check_function", options, functions=True)
    if options.masked is False:
        refuse_dense_check(bound_inputs(fn, inputs)[0])
    return check_problems(function_problems(fn, inputs, options), options)


def check_module(module, loss_fn, **options) -> GradientCheckReport:
    """Check a module's parameter gradients of ``loss_fn(module)``, a scalar.

    Parameters are reported under torch's names (``l1.weight``); their values, ``.grad``, the buffers
    and ``module.training`` are as they were afterwards. ``options``: :class:`~gradcheck_cli.check.options.Options`.
    """
    options = options_of("check_module", options)
    if options.masked is False:
        refuse_dense_check(dict(getattr(module, "named_parameters", dict)()))
    return check_with(module_problem(module, loss_fn), options)


def assert_gradients(fn, inputs, **options) -> GradientCheckReport:
    """:func:`check_function`, raising AssertionError with the failure table unless the check passed.

    The message is the one every ``assert_gradients`` raises (:mod:`gradcheck_cli.testing`); a bad
    request is its typed GradCheckError. Returns the report when it passed.
    """
    __tracebackhide__ = True  # pytest shows the assertion, not this frame
    return raise_unless_passed(check_function(fn, inputs, **options))
