"""The Taylor test's localization: after a first-order failure, Taylor tests over bisected subsets of the
parameters name the wrong ones (docs/method.md, "The Taylor-remainder test", "Localization")."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.record import Record
from ..verdict.words import FAILED, INCONCLUSIVE, PASSED
from .geometry import default_taylor_steps, normalized_direction

__all__ = ["LocalizationTest", "failing_names"]


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalizationTest(Record):
    """One Taylor test over a subset of the parameters, made to localize a failure.

    ``evaluations`` counts its objective calls (f(x) twice and every evaluated step).
    """

    parameters: tuple
    order: float
    verdict: str
    reason: str
    evaluations: int


def failing_names(measure, problem, names: tuple, gradients: dict, direction: tuple, steps) -> tuple:
    """(the failing names in problem order, the LocalizationTests made to find them) after a first-order failure.

    ``measure(problem, subset, gradients, (unit, description, seed), steps)`` is the Taylor test over a
    subset; ``direction`` is the unnormalized ``(pieces, description, seed)``; ``steps`` the caller's, or
    None for each subset's default.
    """
    tests = []
    subset_test = _subset_tester(measure, problem, gradients, direction, steps, tests)
    pieces = direction[0]
    moved = tuple(name for name in names if np.any(pieces[name] != 0.0))
    failing = _bisect(moved, subset_test, failed=moved == names)
    return tuple(name for name in names if name in failing), tuple(tests)


def _subset_tester(measure, problem, gradients: dict, direction: tuple, steps, tests: list):
    """A function running the Taylor test over a subset of names (appending its LocalizationTest to ``tests``)."""
    pieces, description, seed = direction

    def subset_test(subset: tuple) -> str:
        """``failed``, ``passed`` or ``inconclusive``: whether the subset carries a first-order error along d."""
        unit = normalized_direction({name: pieces[name] for name in subset})
        subset_steps = default_taylor_steps(problem.parameters, subset) if steps is None else steps
        subset_gradients = {name: gradients[name] for name in subset}
        result = measure(problem, subset, subset_gradients, (unit, description, seed), subset_steps)
        test = LocalizationTest(
            parameters=subset,
            order=result.order,
            verdict=result.verdict,
            reason=result.reason,
            evaluations=result.evaluations,
        )
        tests.append(test)
        if result.verdict == FAILED and result.reason != "first order":
            return INCONCLUSIVE  # a nondeterministic objective says nothing about where the gradient is wrong
        return result.verdict

    return subset_test


def _bisect(names: tuple, subset_test, failed: bool) -> tuple:
    """The single names whose own test fails, found by bisecting ``names`` (which failed, or carry the error).

    A half is searched when its own test fails or its sibling's passes (the
    second half is then not tested); a single name is named only when its
    own test fails (``failed`` says it already did).
    """
    if len(names) == 1:
        return names if failed or subset_test(names) == FAILED else ()
    middle = (len(names) + 1) // 2
    first, second = names[:middle], names[middle:]
    first_verdict = subset_test(first)
    if first_verdict == PASSED:
        return _bisect(second, subset_test, failed=False)
    second_verdict = subset_test(second)
    found = ()
    if first_verdict == FAILED or second_verdict == PASSED:
        found += _bisect(first, subset_test, failed=first_verdict == FAILED)
    if second_verdict == FAILED:
        found += _bisect(second, subset_test, failed=True)
    return found
