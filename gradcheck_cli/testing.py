"""The pytest helper: ``assert_gradients`` raises AssertionError with a small table unless the check passed.

    from gradcheck_cli.testing import assert_gradients

    def test_backward():
        assert_gradients(problem())                       # a GradientProblem
        assert_gradients(model.loss, parameters, gradients, samples="all")

It takes what :func:`~gradcheck_cli.check.check_problem` takes (a
:class:`~gradcheck_cli.problem.GradientProblem`) or what
:func:`~gradcheck_cli.check.check_gradients` takes (objective, parameters, gradients), and the same
options (:class:`~gradcheck_cli.check.options.Options`); ``gradcheck_cli.torch.assert_gradients``
and ``gradcheck_cli.jax.assert_gradients`` are the same helper for functions. A failing check raises
``AssertionError`` whose message (:func:`failure_table`) lists the coordinates that did not pass
(parameter, coordinate, verdict, analytic, numerical, relative error and error bar at the step the
verdict rests on), the tolerances in force, the directional tests that did not pass, and any
impurity. A bad request (a dtype, a shape, a non-finite value, an unknown option) is not an
assertion failure: its typed :class:`~gradcheck_cli.errors.GradCheckError` propagates as is.
Plain text only: this module never imports rich.
"""

from __future__ import annotations

from .check import GradientCheckReport, check_gradients, check_problem
from .errors import InvalidArgument
from .verdict.failure import MAX_ROWS, failure_table, raise_unless_passed

__all__ = ["assert_gradients", "failure_table", "MAX_ROWS"]


def assert_gradients(problem, parameters=None, gradients=None, /, **options) -> GradientCheckReport:
    """Check ``problem`` (or ``objective, parameters, gradients``); raise AssertionError unless it passed.

    Returns the report when it passed, so a test can look further.
    """
    __tracebackhide__ = True  # pytest shows the assertion, not this frame
    if parameters is None and gradients is None:
        report = check_problem(problem, **options)
    elif parameters is None or gradients is None:
        raise InvalidArgument(
            argument="assert_gradients' arguments",
            value="an objective and parameters without gradients" if gradients is None else "gradients alone",
            expected="a GradientProblem, or objective, parameters and gradients",
        )
    else:
        report = check_gradients(problem, parameters, gradients, **options)
    return raise_unless_passed(report)
