"""A check's report: its verdict from its parameters', the purity of f(θ), and one report of
several checks (a torch or JAX function in several modes or orders)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..core.record import float_bits
from ..verdict.diagnosis import diagnose_report
from ..verdict.rules import verdict_of
from ..verdict.terms import FAILED, INCONCLUSIVE, KINK, PASSED
from .probe import JITTER_LIMIT
from .records import GradientCheckReport, PurityVerdict


def report_of(
    checks: list, purity: PurityVerdict, step_advice, evaluations: int, calls: tuple = ()
) -> GradientCheckReport:
    """The report of the parameters' ``checks`` and the derivative ``calls``' checks (torch and JAX)."""
    verdict = verdict_of([*(check.verdict for check in checks), *(call.verdict for call in calls)], purity.stateful)
    failing = [check.name for check in checks if not check.passed]
    failing += [call.parameter for call in calls if not call.passed]
    return GradientCheckReport(
        verdict=verdict,
        passed=verdict == PASSED,
        checked=sum(len(check.checks) for check in checks),
        failed=sum(check.checks.verdict_count(FAILED) for check in checks),
        inconclusive=sum(
            check.checks.verdict_count(INCONCLUSIVE) + check.checks.verdict_count(KINK) for check in checks
        ),
        failing_parameters=tuple(dict.fromkeys(failing)),
        purity=purity,
        parameters=tuple(checks),
        step_advice=step_advice,
        evaluations=evaluations,
        diagnosis=diagnose_report([check.diagnosis for check in checks]),
        calls=tuple(calls),
    )


def merged_report(reports: Mapping) -> GradientCheckReport:
    """One report of several checks by label (a torch or JAX function in several modes or orders): each
    parameter's and call check's name followed by its label in parentheses, the least pure purity,
    every evaluation counted."""
    checks = [
        dataclasses.replace(check, name=f"{check.name} ({label})")
        for label, report in reports.items()
        for check in report.parameters
    ]
    calls = [
        dataclasses.replace(call, parameter=f"{call.parameter} ({label})")
        for label, report in reports.items()
        for call in report.calls
    ]
    purity = max((report.purity for report in reports.values()), key=lambda purity: (purity.stateful, not purity.pure))
    return report_of(checks, purity, None, sum(report.evaluations for report in reports.values()), tuple(calls))


def purity_of(centers: list, epsilon: float) -> PurityVerdict:
    """The spread of f(θ) over its evaluations at the restored point, and what it means."""
    reference = centers[0]
    distinct = len({float_bits(value) for value in centers})
    spread = max(centers) - min(centers)
    stateful = spread > JITTER_LIMIT * epsilon * max(abs(value) for value in centers)
    if distinct == 1:
        message = f"all {len(centers)} evaluations of f(θ) are bit-identical"
    elif stateful:
        message = (
            f"the objective is nondeterministic or stateful: f(θ) took {distinct} different values in "
            f"{len(centers)} evaluations with every parameter restored (spread {spread:.2e}), far beyond "
            "rounding jitter; no comparison built on it is evidence"
        )
    else:
        message = (
            f"f(θ) took {distinct} different values in {len(centers)} evaluations (spread {spread:.2e}): "
            "rounding jitter, counted in every error bar"
        )
    return PurityVerdict(
        pure=distinct == 1,
        stateful=stateful,
        evaluations=len(centers),
        distinct=distinct,
        reference_value=reference,
        spread=spread,
        message=message,
    )
