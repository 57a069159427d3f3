"""rich tables for people (``--format table``); with :mod:`progress`, the only modules importing rich.

Imported only when a table or a bar is drawn: :mod:`render`'s sections call
in here for their ``table`` side, and text and JSON output never load this
module (or rich). Every value shown is the library's, in the chapter's
number formats where the chapter prints it (:mod:`formatting`), shortened
to twelve significant digits or three (:func:`compact_scientific`) where a
person reads a column of them.
"""

import math
import os

from ..core.formatting import rust_debug, rust_fixed, rust_list
from ..verdict.words import DEFAULT_STEP, FAILED, PASSED, check_summary, coordinate_verdict, diagnosis_text
from .output import terminal_columns

__all__ = [
    "PIPE_WIDTH",
    "console",
    "render",
    "compact_scientific",
    "quadratic",
    "scalar",
    "kink",
    "scan",
    "sample",
    "nll",
    "check",
    "step_advice",
    "taylor",
    "rejected",
]

#: Width of tables written to a file or pipe (rich would otherwise assume 80 columns).
PIPE_WIDTH = 120


#: The narrowest width a table is drawn at: ``COLUMNS=0`` (what ``tput cols`` gives outside a
#: terminal) or a tiny terminal gets PIPE_WIDTH instead of nothing.
MIN_WIDTH = 40


def table_width(stream, isatty: bool) -> int:
    """$COLUMNS, else a terminal's own width, else PIPE_WIDTH; PIPE_WIDTH too for one below MIN_WIDTH."""
    try:
        width = int(os.environ.get("COLUMNS", ""))
    except ValueError:
        width = terminal_columns(PIPE_WIDTH) if isatty else PIPE_WIDTH
    return width if width >= MIN_WIDTH else PIPE_WIDTH


def console(stream, file=None):
    """A rich console for ``stream``: its width and colour, writing to ``file`` (``stream`` by default)."""
    from rich.console import Console

    # rich drops colour by itself for NO_COLOR and for a stdout that is not a
    # terminal; a terminal's own width (or $COLUMNS) still wins.
    isatty = getattr(stream, "isatty", lambda: False)()
    return Console(
        file=stream if file is None else file,
        width=table_width(stream, isatty),
        force_terminal=isatty,
        highlight=False,
        emoji=False,
        markup=False,
    )


def render(renderables, stream) -> str:
    """``renderables`` drawn for ``stream`` (its width and colour) into one string, written by the caller."""
    import io

    buffer = io.StringIO()
    drawing = console(stream, buffer)
    for renderable in renderables:
        drawing.print(renderable)
    import re

    # rich pads every row to the table's width; the padding after the last cell is noise in a diff or a pipe.
    return re.sub(r" +((?:\x1b\[[0-9;]*m)*)$", r"\1", buffer.getvalue(), flags=re.MULTILINE)


def _text(content, style: str = None):
    from rich.text import Text

    # Text, not str: rich would read "[2]" in a message as markup.
    return Text(str(content), style=style or "")


def _verdict(passed: bool):
    return _text("✓", "bold green") if passed else _text("✗", "bold red")


def _short(number: float) -> str:
    """Values for people: twelve significant digits, as the chapter's figure rounds them."""
    return rust_debug(float(f"{number:.12g}"))


def _spacings(minus: float, plus: float) -> str:
    return rust_debug(minus) if minus == plus else f"{rust_debug(minus)} / {rust_debug(plus)}"


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def compact_scientific(number: float) -> str:
    """Three significant digits, as the chapter's figure shows scaled errors: 2.10×10⁻¹¹."""
    if not math.isfinite(number):
        return rust_debug(number)
    if number == 0.0:
        return "0"
    mantissa, exponent = f"{number:.2e}".split("e")
    exponent = int(exponent)
    return mantissa if exponent == 0 else f"{mantissa}×10{str(exponent).translate(_SUPERSCRIPT)}"


def _table(title: str, *columns, caption: str = None):
    from rich import box
    from rich.table import Table

    table = Table(title=title, caption=caption, box=box.SIMPLE_HEAD, title_justify="left", caption_justify="left")
    for column in columns:
        left = column in ("", "regime", "request", "error", "message")
        table.add_column(column, justify="left" if left else "right", overflow="fold")
    return table


def _group(*renderables):
    from rich.console import Group

    return Group(*renderables)


def _difference_table(title: str, difference):
    d = difference
    table = _table(
        title,
        "",
        "minus",
        "center",
        "plus",
        caption=(
            f"requested h = {rust_debug(d.requested_step)} · stencil {d.stencil} · numerical {_short(d.derivative)}"
        ),
    )
    table.add_row("probe θ", rust_debug(d.minus_point), rust_debug(d.point), rust_debug(d.plus_point))
    table.add_row("f(θ)", _short(d.minus_value), _short(d.center_value), _short(d.plus_value))
    table.add_row("actual spacing", rust_debug(d.minus_spacing), "", rust_debug(d.plus_spacing))
    table.add_row("one-sided slope", _short(d.left_slope), "", _short(d.right_slope))
    table.add_row("weight", rust_debug(d.left_weight), "", rust_debug(d.right_weight))
    return table


def _candidates_table(labels, checks):
    table = _table("Candidates", "", "analytic", "numerical", "scaled error", "tolerance", "pass")
    for label, check in zip(labels, checks):
        c = check.comparison
        table.add_row(
            label,
            _short(c.analytic),
            _short(c.numerical),
            compact_scientific(c.scaled_error),
            rust_debug(c.tolerance),
            _verdict(c.passed),
        )
    return table


def quadratic(checks, labels):
    return _group(_difference_table("Quadratic q(θ) = θ²", checks[0].difference), _candidates_table(labels, checks))


def scalar(title, check):
    return _group(_difference_table(title, check.difference), _candidates_table(["candidate"], [check]))


def kink(diagnostic):
    check, slopes = diagnostic.check, diagnostic.slopes
    false_pass = check.comparison.passed and not slopes.consistent
    slope_table = _table(
        "One-sided slopes",
        "left",
        "right",
        "scaled gap",
        "tolerance",
        "consistent",
        caption=(
            "The candidate passes although the one-sided slopes disagree: a false pass at a kink, "
            "outside the method's differentiable-point scope."
            if false_pass
            else "Agreement cannot establish differentiability; disagreement can mean a kink, "
            "a step too large for the curvature, or rounding."
        ),
    )
    slope_table.add_row(
        _short(slopes.left),
        _short(slopes.right),
        compact_scientific(slopes.scaled_gap),
        rust_debug(slopes.tolerance),
        _verdict(slopes.consistent),
    )
    return _group(
        _difference_table("Kink f(x) = |x|", check.difference), _candidates_table(["candidate"], [check]), slope_table
    )


def scan(records, advice=None):
    from .plotting import scan_text_chart

    key = "● scaled error (analytic)"
    if advice is not None:
        key += "   ○ estimated error (no analytic)   ◆ advised step"
    rejected = [_text(f"h = {rust_debug(r.requested_step)} rejected: {r.error}") for r in records if r.check is None]
    return _group(_scan_records_table(records), *rejected, _chart(scan_text_chart(records, advice), key))


def _chart(chart: str, key: str):
    return _group(_text(chart), _text(key, "dim"), _text(""))


def _scan_records_table(records):
    title = "Step scan of g(θ) = θ³ − 2θ"
    checked = [record for record in records if record.check is not None]
    if checked:
        first = checked[0].check
        title += (
            f" at θ = {rust_debug(first.difference.point)}: analytic {_short(first.comparison.analytic)}, "
            f"tolerance {rust_debug(first.comparison.tolerance)}"
        )
    table = _table(
        title,
        "requested h",
        "actual h₋ / h₊",
        "numerical",
        "scaled error",
        "pass",
        "regime",
        caption="Each h is requested; the estimate uses the actual spacings. The regime rule: gradcheck scan --help.",
    )
    for record in records:
        if record.check is None:
            table.add_row(rust_debug(record.requested_step), "—", "—", "—", _verdict(False), _text(record.regime))
            continue
        d, c = record.check.difference, record.check.comparison
        table.add_row(
            rust_debug(d.requested_step),
            _spacings(d.minus_spacing, d.plus_spacing),
            _short(d.derivative),
            compact_scientific(c.scaled_error),
            _verdict(c.passed),
            _text(record.regime, "bold" if record.regime == "trusted range" else None),
        )
    return table


def sample(coordinates):
    table = _table("Sampled coordinates", "k", "flat offset", "coordinate")
    for number, sample in enumerate(coordinates):
        table.add_row(str(number), str(sample.flat_index), rust_list(sample.coordinate))
    return table


def parameter_samples(samples):
    tables = []
    for chosen in samples:
        caption = f"{chosen.dtype} {rust_list(chosen.shape)}, {chosen.selection}"
        table = _table(f"Coordinates check probes in {chosen.name}", "k", "flat offset", "coordinate", caption=caption)
        for number, sampled in enumerate(chosen.coordinates):
            table.add_row(str(number), str(sampled.flat_index), rust_list(sampled.coordinate))
        tables.append(table)
    return _group(*tables)


def nll(example):
    check = example.check
    restored = "yes, exactly" if example.restored_exactly else "NO"
    table = _table(
        f"Indexed mean NLL: shape {rust_list(example.shape)}, targets {rust_list(example.targets)}, "
        f"loss {rust_fixed(example.loss, 12)}",
        "flat → coordinate",
        "analytic",
        "numerical",
        "scaled error",
        "pass",
        caption=f"Analytic path: {example.analytic_path}. Original bits restored: {restored}.",
    )
    for coordinate_check in check.checks:
        c = coordinate_check.comparison
        table.add_row(
            f"{coordinate_check.flat_index} → {rust_list(coordinate_check.coordinate)}",
            _short(c.analytic),
            _short(c.numerical),
            compact_scientific(c.scaled_error),
            _verdict(c.passed),
        )
    return table


def _coordinate_verdict_cell(record):
    style = None if record.passed else ("red" if record.verdict == FAILED else "yellow")
    return _text(coordinate_verdict(record, short=True), style)


def _parameter_table(parameter):
    if parameter.requested_samples is not None:
        selection = f"{len(parameter.checks)} {parameter.selection} coordinates (R = {parameter.requested_samples})"
    else:
        selection = f"{len(parameter.checks)} coordinates ({parameter.selection})"
    step = DEFAULT_STEP if parameter.step is None else rust_debug(parameter.step)
    table = _table(
        f"{parameter.name}: {parameter.dtype} {rust_list(parameter.shape)}, {selection}, step {step}, "
        f"tolerance {compact_scientific(parameter.tolerance)}",
        "coordinate",
        "analytic",
        "numerical",
        "relative error",
        "error bar",
        "step",
        "verdict",
        caption=f"Directional test: {parameter.directional.verdict}; {parameter.directional.reason}."
        + ("" if parameter.diagnosis is None else f"\nDiagnosis: {diagnosis_text(parameter.diagnosis)}."),
    )
    from ..engine.complex_parts import coordinate_text  # a check's report: numpy is loaded already

    for record in parameter.checks:
        decided = record.estimates[record.decided_at]  # every number of the row from the step it rests on
        table.add_row(
            coordinate_text(record.coordinate, parameter.dtype),
            _short(decided.analytic),
            _short(decided.numerical),
            compact_scientific(decided.relative_error),
            compact_scientific(decided.error_bar.total),
            rust_debug(decided.step),
            _coordinate_verdict_cell(record),
        )
    return table


def check(report):
    summary = _text(
        ("✓ " if report.passed else f"✗ {report.verdict}: ") + check_summary(report),
        "bold " + ("green" if report.passed else "red"),
    )
    notes = [_text(f"Purity: {report.purity.message}.", "bold red" if report.purity.stateful else None)]
    advice = [] if report.step_advice is None else [_problem_step_advice_table(report.step_advice)]
    return _group(*advice, *(_parameter_table(parameter) for parameter in report.parameters), *notes, summary)


def step_advice(title: str, advice):
    table = _table(
        title,
        "requested h",
        "numerical",
        "truncation est.",
        "rounding floor",
        "scaled est. error",
        "regime",
        caption=(
            f"Advised h = {rust_debug(advice.advised_step)}: numerical {_short(advice.derivative)}, "
            f"estimated scaled error {compact_scientific(advice.scaled_estimated_error)}"
            + (" (at the edge of the steps tried)" if advice.advised_at_edge else "")
            + ("" if advice.deterministic else "; the center values differ: the objective is not deterministic")
            + ". No analytic value is used."
        ),
    )
    for estimate in advice.estimates:
        table.add_row(
            compact_scientific(estimate.requested_step),
            _short(estimate.difference.derivative),
            compact_scientific(estimate.truncation_estimate),
            compact_scientific(estimate.rounding_floor),
            compact_scientific(estimate.scaled_estimated_error),
            _text(estimate.regime, "bold" if estimate.regime == "advised" else None),
        )
    for rejected in advice.rejected:
        table.add_row(compact_scientific(rejected.requested_step), "", "", "", "", _text(f"rejected: {rejected.error}"))
    return table


def _problem_step_advice_table(problem_advice):
    table = _table(
        "Step advice (--step auto): one representative coordinate per parameter",
        "parameter",
        "coordinate",
        "θ",
        "advised h",
        "scaled est. error",
        "at edge",
        "deterministic",
    )
    for record in problem_advice.parameters:
        advice = record.advice
        table.add_row(
            _text(record.name),
            rust_list(record.coordinate),
            _short(advice.point),
            rust_debug(advice.advised_step),
            compact_scientific(advice.scaled_estimated_error),
            "yes" if advice.advised_at_edge else "no",
            _verdict(advice.deterministic),
        )
    return table


_TAYLOR_CHART_KEY = "· evaluated   ● usable (above 10× the rounding floor)   ◆ fitted"


def taylor(result):
    from .plotting import taylor_text_chart

    verdict_style = {PASSED: "bold green", FAILED: "bold red"}.get(result.verdict, "bold yellow")
    table = _table(
        f"Taylor remainder R(h) = f(x + Δ) − f(x) − g·Δ over {', '.join(result.parameters)} "
        f"(direction {result.direction}, seed {result.seed})",
        "h",
        "‖Δ‖",
        "|R(h)|",
        "10·ρ",
        "usable",
        "fit",
        caption="R shrinks like h² when the gradient is right and like h when it is wrong along the direction.",
    )
    for point in result.points:
        evaluated = point.state == "ok"
        table.add_row(
            compact_scientific(point.step),
            compact_scientific(point.displacement_norm),
            compact_scientific(point.absolute_remainder) if evaluated else _text(point.state),
            compact_scientific(result.rounding_margin * point.rounding_floor) if evaluated else "",
            "✓" if point.usable else "",
            "◆" if point.in_fit else "",
        )
    verdict = _text(
        f"{result.verdict}: {result.reason}, fitted order {_short(result.order)} over {result.fit_points} points"
        + _taylor_localization(result),
        verdict_style,
    )
    return _group(table, _chart(taylor_text_chart(result), _TAYLOR_CHART_KEY), verdict)


def _taylor_localization(result) -> str:
    if not result.localization and not result.failing_parameters:
        return ""
    wrong = ", ".join(result.failing_parameters) or "none localized"
    tests = len(result.localization)
    return (
        f"; wrong: {wrong} ({tests} subset test{'' if tests == 1 else 's'}, "
        f"{result.localization_evaluations} extra objective calls)"
    )


def rejected(errors, labels=None):
    labels = labels or {}
    table = _table("Rejected requests", "request", "error", "message")
    for request, error in errors.items():
        table.add_row(_text(labels.get(request, request)), _text(type(error).__name__, "bold red"), _text(error))
    return table


def schema_list(entries):
    table = _left(_table("JSON documents (gradcheck schema NAME)", "name", "description"))
    for entry in entries:
        table.add_row(entry["name"], entry["description"])
    return table


def schema_fields(name: str):
    from ..schemas import definitions, schema

    tables = []
    errors = () if name == "error" else set(schema("error")["$defs"])  # listed by gradcheck schema error
    for title, description, fields in definitions(name, schema(name)):
        if title in errors:
            continue
        table = _left(_table(title, "field", "type", "description", caption=description))
        for field in fields:
            table.add_row(*field)
        tables.append(table)
    return _group(*tables)


def _left(table):
    for column in table.columns:
        column.justify = "left"
    return table
