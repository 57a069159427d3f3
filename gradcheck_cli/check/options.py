"""The options of a check that need no problem, validated by themselves: the command line has them
validated here before it loads the user's problem (whose code then never runs for a bad value), and
hands them on to :func:`~gradcheck_cli.check.check_problem` as they come back."""

from __future__ import annotations

from collections.abc import Mapping

from ..engine.estimator import validate_step, validate_tolerance
from .plan import is_auto

__all__ = ["is_serial", "request_options"]


def is_serial(jobs) -> bool:
    """Whether ``jobs`` asks for no workers (None or 1): then parallel.py and concurrent.futures are not imported."""
    return jobs is None or (type(jobs) is int and jobs == 1)


def request_options(*, step=None, tolerance=None, jobs=None, **options) -> dict:
    """:func:`~gradcheck_cli.check.check_gradients`' keywords, ``step``, ``tolerance`` and ``jobs``
    refused as it refuses them (InvalidStep, InvalidTolerance, InvalidArgument naming the parameter),
    before there is a problem; a step per parameter waits for the parameters. The other
    ``options`` pass unchanged."""
    if not (step is None or is_auto(step) or isinstance(step, Mapping)):
        validate_step(step)
    if tolerance is not None:
        validate_tolerance(tolerance)
    if not is_serial(jobs):
        from .parallel import worker_count

        worker_count(jobs)
    return {**options, "step": step, "tolerance": tolerance, "jobs": jobs}
