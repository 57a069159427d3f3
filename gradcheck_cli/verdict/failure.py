"""The failure message of a check that did not pass: the AssertionError every ``assert_gradients``
raises (numpy, torch, JAX), a plain-text table (this module never imports rich)."""

from __future__ import annotations

from ..engine.complex_parts import coordinate_text
from .words import DEFAULT_STEP, SUSPECTED_KINK, check_summary, coordinate_verdict, diagnosis_text, kink_tolerance_text

__all__ = ["MAX_ROWS", "failure_table", "raise_unless_passed"]

#: Rows shown before the table is cut short with "... and N more".
MAX_ROWS = 20

_HEADER = ("parameter", "coordinate", "verdict", "analytic", "numerical", "relative error", "error bar", "step")
_NUMERIC = {"analytic", "numerical", "relative error", "error bar", "step"}


def raise_unless_passed(report):
    """``report`` if it passed, else AssertionError with :func:`failure_table` as its message."""
    __tracebackhide__ = True  # pytest shows the assertion, not this frame
    if not report.passed:
        raise AssertionError(failure_table(report))
    return report


def failure_table(report, max_rows: int = MAX_ROWS) -> str:
    """The failing coordinates of a GradientCheckReport as a plain-text table, with tolerances and purity."""
    failures = report.failures()
    lines = [f"gradient check {report.verdict}: {check_summary(report)}"]
    lines += [f"{check.name}: {diagnosis_text(check.diagnosis)}" for check in report.parameters if check.diagnosis]
    if report.diagnosis is not None:
        lines.append(f"the whole check: {diagnosis_text(report.diagnosis)}")
    lines += [f"{call.parameter}: {call.kind}: {call.message}" for call in report.calls if not call.passed]
    if failures:
        dtypes = {check.name: check.dtype for check in report.parameters}
        rows = [_row(name, record, dtypes[name]) for name, record in failures[:max_rows]]
        lines.append("")
        lines.extend(_aligned([_HEADER, *rows]))
        if len(failures) > max_rows:
            lines.append(f"... and {len(failures) - max_rows} more")
    lines.append("")
    for check in report.parameters:
        if not check.passed:
            step = DEFAULT_STEP if check.step is None else f"{check.step:.3e}"
            lines.append(
                f"{check.name}: {check.dtype}, step {step}, tolerance {check.tolerance:.3e}, "
                f"kink tolerance {kink_tolerance_text(check, lambda number: f'{number:.3e}')}"
            )
    for check in report.parameters:
        if not check.directional.passed:
            lines.append(f"{check.name} directional test: {check.directional.verdict}; {check.directional.reason}")
    if any(record.verdict == SUSPECTED_KINK for _, record in failures):
        lines.append(
            "suspected kink: the one-sided slopes disagree (a corner, a step too large for the "
            "curvature, or rounding); it never counts as evidence that the gradient is right"
        )
    if not report.purity.pure:
        lines.append(report.purity.message)
    return "\n".join(lines)


def _row(name, record, dtype: str) -> tuple:
    estimate = record.estimates[record.decided_at]
    return (
        name,
        coordinate_text(record.coordinate, dtype),
        coordinate_verdict(record, short=True),
        f"{estimate.analytic:.10g}",
        f"{estimate.numerical:.10g}",
        f"{estimate.relative_error:.3e}",
        f"{estimate.error_bar.total:.3e}",
        f"{estimate.step:.3e}",
    )


def _aligned(rows: list) -> list:
    widths = [max(len(row[column]) for row in rows) for column in range(len(_HEADER))]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if header in _NUMERIC else cell.ljust(width)
            for cell, width, header in zip(row, widths, _HEADER)
        ]
        lines.append("  ".join(cells).rstrip())
    return lines
