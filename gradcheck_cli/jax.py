"""Check JAX code directly: ``custom_vjp`` and ``custom_jvp`` rules, jitted or not, over pytrees.

    import jax, jax.numpy as jnp
    from gradcheck_cli.jax import check_function

    params = {"dense": {"kernel": jnp.ones((3, 2)), "bias": jnp.zeros(2)}}
    report = check_function(model, (params, x))
    assert report.passed, report.failing_parameters  # ("params['dense']['kernel']",) when wrong

``inputs`` is a tuple of pytrees, as ``jax.test_util.check_grads(f, args)`` takes them, and every
option is one of :class:`~gradcheck_cli.check.options.Options`, the same as ``check_gradients``' and
the torch adapter's: ``samples``, ``step``, ``tolerance``, ``seed``, ``jobs``, ``order`` (1, 2 or 3:
every order up to it, as ``check_grads`` recurses), ``modes`` (JAX's words: ``("rev",)`` the vjp,
``("fwd",)`` the jvp, or both), ``batched`` and ``nondet_tol``. Every floating leaf of the inputs is
checked, named by its argument and pytree path; close over what should not be checked. The report is a
:class:`~gradcheck_cli.check.records.GradientCheckReport`; with several derivatives each parameter's
name ends in its path, `` (rev)``, `` (fwd)``, `` (fwd∘rev)``. How the problem is built is
:mod:`gradcheck_cli.adapters.jax` and docs/jax.md.
"""

from __future__ import annotations

from .adapters.jax import array_problem, forward_problem, function_problem, function_problems, jax_problem
from .check import GradientCheckReport, check_problems, options_of
from .verdict.failure import raise_unless_passed

__all__ = ["check_function", "assert_gradients", "function_problem", "forward_problem", "array_problem", "jax_problem"]


def check_function(fn, inputs, **options) -> GradientCheckReport:
    """Check ``fn``'s derivatives at ``inputs`` (a tuple of pytrees): its vjp (``modes=("rev",)``, the
    default), its jvp (``modes=("fwd",)``) or both, of every order up to ``order`` (1, 2 or 3).

    ``options``: :class:`~gradcheck_cli.check.options.Options`. Nothing of the inputs is modified.
    """
    options = options_of("check_function", options, functions=True)
    return check_problems(function_problems(fn, inputs, options), options)


def assert_gradients(fn, inputs, **options) -> GradientCheckReport:
    """:func:`check_function`, raising AssertionError with the failure table unless the check passed
    (the message every ``assert_gradients`` raises, :mod:`gradcheck_cli.testing`)."""
    __tracebackhide__ = True  # pytest shows the assertion, not this frame
    return raise_unless_passed(check_function(fn, inputs, **options))
