"""The verdicts, defined once (:class:`Verdict`), and a check's verdicts in words, shared by the text
lines (render), the tables and the pytest helpers' failure message."""

import enum

from ..core.formatting import rust_exp

__all__ = [
    "Verdict",
    "PASSED",
    "FAILED",
    "INCONCLUSIVE",
    "SUSPECTED_KINK",
    "CALL_KINDS",
    "DEFAULT_STEP",
    "coordinate_verdict",
    "check_summary",
    "diagnosis_text",
    "kink_tolerance_text",
]


class Verdict(str, enum.Enum):
    """What a comparison, a coordinate, a directional test, a parameter or a whole check concluded.

    A str: it equals, hashes, prints and is written to JSON as its value (``"passed"``), the word the
    text and the JSON documents use.
    """

    PASSED = "passed"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"
    SUSPECTED_KINK = "suspected kink"  # a coordinate's: the one-sided slopes disagree

    __str__ = str.__str__
    __format__ = str.__format__
    __hash__ = str.__hash__


PASSED, FAILED, INCONCLUSIVE, SUSPECTED_KINK = Verdict

#: The kinds of check of a torch or JAX derivative's calls (check/records.py's CallCheck), and what a
#: failure of each says in a check's summary.
CALL_KINDS = {
    "determinism": "a backward is nondeterministic",
    "undefined gradients": "a backward mishandles an undefined output gradient",
    "batching": "a derivative differs under vmap",
}


def _error(number: float) -> str:
    """Errors and tolerances: Rust ``{:.12e}``, as render prints them."""
    return rust_exp(number, 12)


#: How a parameter checked at each coordinate's default step names that step.
DEFAULT_STEP = "ε^(1/3)·max(1, |θ|)"


def coordinate_verdict(record, short: bool = False) -> str:
    """A coordinate's verdict; at a suspected kink, where the analytic value lies against the slopes."""
    if record.verdict != SUSPECTED_KINK:
        return record.verdict
    between = record.kink.analytic_between_slopes
    where = "between" if between else "outside"
    if short:
        return f"kink, {where} slopes"
    return f"{record.verdict}, analytic {where} the one-sided slopes" + (
        " (consistent with a subgradient)" if between else ""
    )


def check_summary(report) -> str:
    """A GradientCheckReport's outcome in one clause (the table's last line, the pytest helper's first)."""
    if report.passed:
        return f"all {report.checked} coordinates and every directional test passed"
    reasons = []
    if report.failed:
        reasons.append(f"{report.failed} of {report.checked} coordinates failed")
    if report.inconclusive:
        reasons.append(f"{report.inconclusive} of {report.checked} were inconclusive")
    if any(not check.directional.passed for check in report.parameters):
        reasons.append("a directional test did not pass")
    if report.purity.stateful:
        reasons.append("the objective is nondeterministic or stateful")
    failed_kinds = dict.fromkeys(call.kind for call in getattr(report, "calls", ()) if not call.passed)
    reasons += [CALL_KINDS[kind] for kind in failed_kinds]
    listed = ", ".join(reasons[:-1]) + (" and " if len(reasons) > 1 else "") + reasons[-1]
    where = f" in {', '.join(report.failing_parameters)}" if report.failing_parameters else ""
    return listed + where


def kink_tolerance_text(parameter, number=None) -> str:
    """A parameter's kink tolerance, or ``per-coordinate`` when each coordinate's step sets its own."""
    if parameter.kink_tolerance is None:
        return "per-coordinate"
    return (number or _error)(parameter.kink_tolerance)


def diagnosis_text(diagnosis) -> str:
    """``scale ×8: analytic = 8 × numerical ...``: the kind, its factor or place, and why."""
    detail = f" ×{diagnosis.factor:g}" if diagnosis.kind == "scale" else ""
    detail += f" at {diagnosis.where}" if diagnosis.kind == "localized" else ""
    return f"{diagnosis.kind}{detail}: {diagnosis.message}"
