"""Every way gradcheck shows a result: chapter-style text lines, strict JSON, rich tables.

A command hands the library's results to one of the section builders below
(:func:`quadratic`, :func:`scan`, :func:`nll`, ...); :func:`write` then prints
the sections in the requested format. Nothing here computes a derivative.

- ``text``: ``label: key=value ...`` lines in the chapter's number formats
  (``{:.12}`` for values, slopes and gradients, ``{:.17e}`` for requested
  steps, spacings and weights, ``{:.12e}`` for errors and tolerances, ``{:?}``
  for probe points and lists, ``pass=true|false``); no colour, stable for
  golden diffs.
- ``json``: one strict JSON document, ``{section key: to_dict() of its
  results}``, written by :func:`write_json` and nothing else.
- ``table``: rich tables for people. This is the only module that imports
  rich, and only inside the table functions (and :class:`ProgressBar`), so
  text and JSON output never pay for it.
"""

import math
import os
import sys
from typing import Callable, Mapping, Sequence

from .formatting import rust_debug, rust_exp, rust_fixed, rust_list
from .records import json_ready

__all__ = [
    "FORMATS",
    "Section",
    "write",
    "write_json",
    "write_error",
    "error_line",
    "difference_lines",
    "comparison_line",
    "check_lines",
    "slopes_line",
    "compact_scientific",
    "scalar_check",
    "quadratic",
    "identity",
    "kink",
    "scan",
    "nll",
    "sample",
    "rejected",
    "check",
    "step_advice",
    "taylor",
    "write_interrupted",
    "ProgressBar",
]

FORMATS = ("text", "json", "table")


class Section:
    """One part of a command's output: its JSON key, its results, and how to draw them.

    ``results`` is a library result (anything with ``to_dict()``), or a list
    or dict of them; ``lines`` and ``table`` draw the same results as text
    lines and as a rich renderable. (A plain class, not a dataclass: creating
    a dataclass costs start-up time that every command would pay.)
    """

    __slots__ = ("key", "results", "lines", "table")

    def __init__(self, key: str, results, lines: Callable[[], list], table: Callable[[], object]):
        self.key, self.results, self.lines, self.table = key, results, lines, table


# ---------------------------------------------------------------- writers


def write(sections: Sequence[Section], output_format: str, stream=None) -> None:
    """Print ``sections`` to ``stream`` (stdout by default) as text, JSON or tables."""
    stream = sys.stdout if stream is None else stream
    if output_format == "json":
        write_json({section.key: section.results for section in sections}, stream)
    elif output_format == "table":
        console = _console(stream)
        for section in sections:
            console.print(section.table())
    else:
        for section in sections:
            for line in section.lines():
                stream.write(line + "\n")


def write_json(document, stream=None) -> None:
    """The one function that writes JSON: strict RFC 8259, floats as their repr.

    ``document`` may hold library results; they are converted with
    ``to_dict()`` (non-finite floats become "NaN", "inf", "-inf"), and
    ``allow_nan=False`` guarantees that no NaN or Infinity token escapes.
    """
    import json

    stream = sys.stdout if stream is None else stream
    stream.write(json.dumps(json_ready(document), indent=2, allow_nan=False) + "\n")


def error_line(error) -> str:
    """The one-line message for a rejected request (click's ``Error:`` prefix)."""
    return "Error: " + " ".join(str(error).splitlines())


def write_error(error, output_format: str, stdout=None, stderr=None) -> None:
    """Report a rejected request: one line on stderr, and ``{"error": to_dict()}`` for JSON."""
    stderr = sys.stderr if stderr is None else stderr
    stderr.write(error_line(error) + "\n")
    if output_format == "json":
        write_json({"error": error}, stdout)


#: What an interrupted command (Ctrl-C) prints on stderr, whatever the output format.
INTERRUPTED = "Error: interrupted"


def write_interrupted(stderr=None) -> None:
    """Report Ctrl-C: one line on stderr; stdout gets nothing, not even a partial result."""
    (sys.stderr if stderr is None else stderr).write(INTERRUPTED + "\n")


# ------------------------------------------------------------- text lines


def _value(number: float) -> str:
    """Values, slopes, gradients: Rust ``{:.12}``."""
    return rust_fixed(number, 12)


def _spacing(number: float) -> str:
    """Requested steps, spacings, weights: Rust ``{:.17e}``."""
    return rust_exp(number, 17)


def _error(number: float) -> str:
    """Errors and tolerances: Rust ``{:.12e}``."""
    return rust_exp(number, 12)


def _bool(flag: bool) -> str:
    return "true" if flag else "false"


def difference_lines(label: str, difference) -> list:
    """A CentralDifference as the chapter's ``quadratic:`` line plus a probes line."""
    d = difference
    return [
        f"{label}: theta={_value(d.point)} requested_h={_spacing(d.requested_step)} "
        f"actual_h_minus={_spacing(d.minus_spacing)} actual_h_plus={_spacing(d.plus_spacing)} "
        f"f_minus={_value(d.minus_value)} f_center={_value(d.center_value)} f_plus={_value(d.plus_value)} "
        f"left_slope={_value(d.left_slope)} right_slope={_value(d.right_slope)} "
        f"left_weight={_spacing(d.left_weight)} right_weight={_spacing(d.right_weight)} "
        f"numerical={_value(d.derivative)}",
        # {:?}, not {:.12}: the probes are where the rounding shows (1.0000000000000002 is not 1.0).
        f"{label} probes: theta_minus={rust_debug(d.minus_point)} theta_plus={rust_debug(d.plus_point)} "
        f"stencil={d.stencil}",
    ]


def comparison_line(label: str, comparison) -> str:
    """A GradientComparison as the chapter's ``wrong candidate:`` line."""
    c = comparison
    return (
        f"{label}: analytic={_value(c.analytic)} scaled_error={_error(c.scaled_error)} "
        f"tolerance={_error(c.tolerance)} pass={_bool(c.passed)}"
    )


def check_lines(label: str, check, candidate_label: str = None) -> list:
    """A ScalarGradientCheck: its difference lines, then its candidate line."""
    return [
        *difference_lines(label, check.difference),
        comparison_line(candidate_label or f"{label} candidate", check.comparison),
    ]


def slopes_line(label: str, slopes) -> str:
    """A OneSidedSlopeComparison: both slopes, their scaled gap, and whether they agree."""
    return (
        f"{label}: left={_value(slopes.left)} right={_value(slopes.right)} "
        f"scaled_gap={_error(slopes.scaled_gap)} tolerance={_error(slopes.tolerance)} "
        f"consistent={_bool(slopes.consistent)}"
    )


def _quadratic_lines(checks, labels) -> list:
    lines, shown = [], None
    for check, label in zip(checks, labels):
        # Every candidate is compared with the same central difference; print it once.
        if check.difference != shown:
            lines += difference_lines("quadratic", check.difference)
            shown = check.difference
        lines.append(comparison_line(label, check.comparison))
    return lines


def _kink_lines(diagnostic) -> list:
    return [*check_lines("kink", diagnostic.check), slopes_line("kink one-sided slopes", diagnostic.slopes)]


def _scan_lines(records) -> list:
    lines = []
    for number, record in enumerate(records, start=1):
        label = f"scan step {number}"
        lines += check_lines(label, record.check)
        lines.append(f"{label} regime: {record.phase}")
    return lines


def _sample_lines(coordinates) -> list:
    return [
        f"sampled flat offsets: {rust_list([sample.flat_index for sample in coordinates])}",
        f"sampled coordinates: {rust_list([sample.coordinate for sample in coordinates])}",
    ]


def _nll_lines(example) -> list:
    check = example.check
    values = "omitted" if example.logits is None else rust_list(example.logits)
    lines = [
        f"nll logits: shape={rust_list(example.shape)} values={values} "
        f"targets={rust_list(example.targets)} loss={_value(example.loss)}",
        f"nll analytic path: {example.analytic_path}",
        *_sample_lines(check.checks),
    ]
    for coordinate_check in check.checks:
        lines += check_lines(f"coordinate {rust_list(coordinate_check.coordinate)}", coordinate_check)
    lines += [
        f"nll check: shape={rust_list(check.shape)} requested_samples={check.requested_samples} "
        f"pass={_bool(check.passed)}",
        f"tensor restored exactly: {_bool(example.restored_exactly)}",
    ]
    return lines


def _rejected_lines(errors) -> list:
    return [f"rejected {request}: {error}" for request, error in errors.items()]


def _names(names) -> str:
    """Names as Rust's ``{:?}`` prints a Vec<String>: ``["W1", "b1"]``."""
    return "[" + ", ".join(f'"{name}"' for name in names) + "]"


def _coordinate_label(name: str, coordinate) -> str:
    """``W1[0, 3]``: how the library's purity messages name a coordinate."""
    return f"{name}{rust_list(coordinate)}"


#: How a parameter checked at each coordinate's default step names that step.
DEFAULT_STEP = "ε^(1/3)·max(1, |θ|)"


def coordinate_verdict(record, short: bool = False) -> str:
    """A coordinate's verdict; at a suspected kink, where the analytic value lies against the slopes."""
    if not record.kink.suspected:
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
        return f"all {report.checked} coordinates passed"
    reasons = []
    if report.failed:
        reasons.append(f"{report.failed} of {report.checked} coordinates did not pass")
    if report.impurities():
        reasons.append("the objective is not pure (its center values differ)")
    return f"{' and '.join(reasons)} in {', '.join(report.failing_parameters) or 'the check across parameters'}"


def kink_tolerance_text(parameter, number=None) -> str:
    """A parameter's kink tolerance, or ``per-coordinate`` when each coordinate's step sets its own."""
    if parameter.kink_tolerance is None:
        return "per-coordinate"
    return (number or _error)(parameter.kink_tolerance)


def _purity_line(label: str, purity) -> str:
    return f"{label}: pure={_bool(purity.pure)} compared={purity.compared}; {purity.message}"


def _parameter_line(parameter) -> str:
    selection = f"selection={parameter.selection}"
    if parameter.requested_samples is not None:
        selection += f" requested_samples={parameter.requested_samples}"
    step = "default" if parameter.step is None else _spacing(parameter.step)
    return (
        f"parameter {parameter.name}: dtype={parameter.dtype} shape={rust_list(parameter.shape)} {selection} "
        f"step={step} tolerance={_error(parameter.tolerance)} kink_tolerance={kink_tolerance_text(parameter)}"
    )


def _check_lines(report) -> list:
    lines = [] if report.step_advice is None else _problem_step_advice_lines(report.step_advice)
    for parameter in report.parameters:
        lines.append(_parameter_line(parameter))
        for record in parameter.checks:
            label = _coordinate_label(parameter.name, record.coordinate)
            lines += check_lines(label, record)
            if record.kink.suspected:
                lines.append(slopes_line(f"{label} one-sided slopes", record.kink.slopes))
            lines.append(f"{label} verdict: {coordinate_verdict(record)}")
        failed = sum(1 for record in parameter.checks if not record.passed)
        lines.append(_purity_line(f"{parameter.name} purity", parameter.purity))
        lines.append(
            f"{parameter.name} check: checked={len(parameter.checks)} failed={failed} pass={_bool(parameter.passed)}"
        )
    lines.append(_purity_line("purity across parameters", report.purity))
    lines.append(
        f"check: checked={report.checked} failed={report.failed} "
        f"failing_parameters={_names(report.failing_parameters)} pass={_bool(report.passed)}"
    )
    return lines


def _advice_line(label: str, advice, coordinate=None) -> str:
    """A StepAdvice's verdict on one line (``coordinate`` for a tensor coordinate's advice)."""
    where = "" if coordinate is None else f"coordinate={rust_list(coordinate)} "
    return (
        f"{label}: {where}point={_value(advice.point)} dtype={advice.dtype} "
        f"advised_step={_spacing(advice.advised_step)} derivative={_value(advice.derivative)} "
        f"estimated_error={_error(advice.estimated_error)} "
        f"scaled_estimated_error={_error(advice.scaled_estimated_error)} "
        f"advised_at_edge={_bool(advice.advised_at_edge)} deterministic={_bool(advice.deterministic)}"
    )


def _step_advice_lines(label: str, advice) -> list:
    lines = []
    for number, estimate in enumerate(advice.estimates, start=1):
        step_label = f"{label} step {number}"
        lines += difference_lines(step_label, estimate.difference)
        lines.append(
            f"{step_label} estimate: truncation_estimate={_error(estimate.truncation_estimate)} "
            f"rounding_floor={_error(estimate.rounding_floor)} estimated_error={_error(estimate.estimated_error)} "
            f"scaled_estimated_error={_error(estimate.scaled_estimated_error)} regime={estimate.regime}"
        )
    for rejected in advice.rejected:
        lines.append(f"{label} rejected step: requested_h={_spacing(rejected.requested_step)} error={rejected.error}")
    lines.append(_advice_line(label, advice))
    return lines


def _problem_step_advice_lines(problem_advice) -> list:
    return [
        _advice_line(f"step advice {record.name}", record.advice, record.coordinate)
        for record in problem_advice.parameters
    ]


def _taylor_lines(result) -> list:
    lines = [
        f"taylor: parameters={_names(result.parameters)} dtypes={_names(result.dtypes)} "
        f"direction={result.direction} seed={result.seed} center_value={_value(result.center_value)} "
        f"directional_derivative={_value(result.directional_derivative)} epsilon={_error(result.epsilon)}"
    ]
    for number, point in enumerate(result.points, start=1):
        lines.append(
            f"taylor step {number}: step={_spacing(point.step)} displacement_norm={_spacing(point.displacement_norm)} "
            f"value={_value(point.value)} linear_term={_error(point.linear_term)} "
            f"remainder={_error(point.remainder)} rounding_floor={_error(point.rounding_floor)} "
            f"state={point.state} usable={_bool(point.usable)} in_fit={_bool(point.in_fit)}"
        )
    lines += [
        f"taylor fit: fit_points={result.fit_points} order={_value(result.order)} "
        f"pass_order={_value(result.pass_order)} fail_order={_value(result.fail_order)} "
        f"rounding_margin={_value(result.rounding_margin)} detection_limit={_error(result.detection_limit)} "
        f"deterministic={_bool(result.deterministic)}",
        f"taylor verdict: {result.verdict} ({result.reason}) pass={_bool(result.passed)}",
    ]
    return lines


# ----------------------------------------------------------------- tables


#: Width of tables written to a file or pipe (rich would otherwise assume 80 columns).
PIPE_WIDTH = 120


def _console(stream):
    from rich.console import Console

    # rich drops colour by itself for NO_COLOR and for a stdout that is not a
    # terminal; a terminal's own width (or $COLUMNS) still wins.
    isatty = getattr(stream, "isatty", lambda: False)()
    width = None if isatty or os.environ.get("COLUMNS") else PIPE_WIDTH
    return Console(file=stream, width=width, highlight=False, emoji=False, markup=False)


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
            f"requested h = {rust_debug(d.requested_step)} · stencil {d.stencil} · "
            f"numerical {_short(d.derivative)}"
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


def _quadratic_table(checks, labels):
    return _group(
        _difference_table("Quadratic q(θ) = θ²", checks[0].difference), _candidates_table(labels, checks)
    )


def _scalar_table(title, check):
    return _group(_difference_table(title, check.difference), _candidates_table(["candidate"], [check]))


def _kink_table(diagnostic):
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


def _scan_table(records, advice=None):
    from .plotting import scan_text_chart

    key = "● scaled error (analytic)"
    if advice is not None:
        key += "   ○ estimated error (no analytic)   ◆ advised step"
    return _group(_scan_records_table(records), _chart(scan_text_chart(records, advice), key))


def _chart(chart: str, key: str):
    return _group(_text(chart), _text(key, "dim"), _text(""))


def _scan_records_table(records):
    title = "Step scan of g(θ) = θ³ − 2θ"
    if records:
        first = records[0].check
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
        d, c = record.check.difference, record.check.comparison
        table.add_row(
            rust_debug(d.requested_step),
            _spacings(d.minus_spacing, d.plus_spacing),
            _short(d.derivative),
            compact_scientific(c.scaled_error),
            _verdict(c.passed),
            _text(record.phase, "bold" if record.phase == "trusted range" else None),
        )
    return table


def _sample_table(coordinates):
    table = _table("Sampled coordinates", "k", "flat offset", "coordinate")
    for number, sample in enumerate(coordinates):
        table.add_row(str(number), str(sample.flat_index), rust_list(sample.coordinate))
    return table


def _nll_table(example):
    check = example.check
    restored = "yes, exactly" if example.restored_exactly else "NO"
    table = _table(
        f"Indexed mean NLL: shape {rust_list(example.shape)}, targets {rust_list(example.targets)}, "
        f"loss {_value(example.loss)}",
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
    style = "yellow" if record.kink.suspected else (None if record.passed else "red")
    return _text(coordinate_verdict(record, short=True), style)


def _parameter_table(parameter):
    if parameter.selection == "sampled":
        selection = f"{len(parameter.checks)} sampled coordinates (R = {parameter.requested_samples})"
    else:
        selection = f"{len(parameter.checks)} coordinates ({parameter.selection})"
    step = DEFAULT_STEP if parameter.step is None else rust_debug(parameter.step)
    table = _table(
        f"{parameter.name}: {parameter.dtype} {rust_list(parameter.shape)}, {selection}, step {step}, "
        f"tolerance {compact_scientific(parameter.tolerance)}",
        "coordinate",
        "analytic",
        "numerical",
        "scaled error",
        "actual h₋ / h₊",
        "pass",
        "verdict",
        caption=f"Center values: {parameter.purity.message}.",
    )
    for record in parameter.checks:
        d, c = record.difference, record.comparison
        table.add_row(
            rust_list(record.coordinate),
            _short(c.analytic),
            _short(c.numerical),
            compact_scientific(c.scaled_error),
            _spacings(d.minus_spacing, d.plus_spacing),
            _verdict(record.passed),
            _coordinate_verdict_cell(record),
        )
    return table


def _check_table(report):
    summary = _text(("✓ " if report.passed else "✗ ") + check_summary(report), "bold " + ("green" if report.passed else "red"))
    notes = [_text(f"Across parameters: {report.purity.message}.")]
    notes += [_text(purity.message, "bold red") for purity in report.impurities()]
    advice = [] if report.step_advice is None else [_problem_step_advice_table(report.step_advice)]
    return _group(*advice, *(_parameter_table(parameter) for parameter in report.parameters), *notes, summary)


def _step_estimates_table(title: str, advice):
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


def _taylor_table(result):
    from .plotting import taylor_text_chart

    verdict_style = {"pass": "bold green", "fail": "bold red"}.get(result.verdict, "bold yellow")
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
        f"{result.verdict}: {result.reason}, fitted order {_short(result.order)} over {result.fit_points} points",
        verdict_style,
    )
    return _group(table, _chart(taylor_text_chart(result), _TAYLOR_CHART_KEY), verdict)


def _rejected_table(errors):
    table = _table("Rejected requests", "request", "error", "message")
    for request, error in errors.items():
        table.add_row(_text(request), _text(type(error).__name__, "bold red"), _text(error))
    return table


# -------------------------------------------------------- section builders


def quadratic(checks: Sequence, labels: Sequence[str]) -> Section:
    """Quadratic checks (ScalarGradientCheck), one label per candidate line."""
    checks, labels = list(checks), list(labels)
    return Section(
        "quadratic", checks, lambda: _quadratic_lines(checks, labels), lambda: _quadratic_table(checks, labels)
    )


def scalar_check(key: str, check, title: str = None) -> Section:
    """Any ScalarGradientCheck, under ``key`` in JSON and as the label of its text lines."""
    return Section(key, check, lambda: check_lines(key, check), lambda: _scalar_table(title or key, check))


def identity(check) -> Section:
    """The rounded identity's ScalarGradientCheck."""
    return scalar_check("identity", check, "Rounded identity f(x) = x")


def kink(diagnostic) -> Section:
    """The |x| KinkDiagnostic: the check and the one-sided slope comparison."""
    return Section("kink", diagnostic, lambda: _kink_lines(diagnostic), lambda: _kink_table(diagnostic))


def scan(records: Sequence, advice=None) -> Section:
    """StepScanRecords, each with its error regime; the table's chart also shows ``advice`` if given."""
    records = list(records)
    return Section("scan", records, lambda: _scan_lines(records), lambda: _scan_table(records, advice))


def nll(example) -> Section:
    """The NllGradientExample: inputs, loss, sampled coordinate checks, restoration."""
    return Section("nll", example, lambda: _nll_lines(example), lambda: _nll_table(example))


def sample(coordinates: Sequence) -> Section:
    """SampledCoordinates from the deterministic sampler."""
    coordinates = list(coordinates)
    return Section("sample", coordinates, lambda: _sample_lines(coordinates), lambda: _sample_table(coordinates))


def rejected(errors: Mapping[str, Exception]) -> Section:
    """Rejected requests: request name → the GradCheckError it raised."""
    errors = dict(errors)
    return Section("rejected", errors, lambda: _rejected_lines(errors), lambda: _rejected_table(errors))


def check(report) -> Section:
    """A GradientCheckReport: the step advice (``--step auto``), every coordinate's records and verdict, purity, and the summary."""
    return Section("check", report, lambda: _check_lines(report), lambda: _check_table(report))


def step_advice(advice, key: str = "advice", title: str = "Step advice") -> Section:
    """A StepAdvice: every requested step's estimate and regime, then the advised step."""
    return Section(key, advice, lambda: _step_advice_lines(key, advice), lambda: _step_estimates_table(title, advice))


def taylor(result) -> Section:
    """A TaylorResult: the setting, every step's remainder, the fit and the verdict."""
    return Section("taylor", result, lambda: _taylor_lines(result), lambda: _taylor_table(result))


# ------------------------------------------------------------ progress bar

#: A check shows its progress bar only once it has run this long (seconds).
PROGRESS_DELAY = 1.0


class ProgressBar:
    """``progress(done, total)`` for :func:`~gradcheck_cli.check.check_gradients`: a bar on stderr.

    Drawn only when ``stream`` is a terminal, and only once ``delay``
    seconds have passed since the bar was created, so a quick check (and any
    redirected run) prints nothing. rich is imported when the bar first
    appears. Use as a context manager, so the bar is removed whatever
    happens (Ctrl-C included).
    """

    def __init__(self, description: str, stream=None, delay: float = PROGRESS_DELAY, clock=None):
        import time

        self.stream = sys.stderr if stream is None else stream
        self.description, self.delay = description, delay
        self.clock = time.monotonic if clock is None else clock
        self.started = self.clock()
        self.interactive = getattr(self.stream, "isatty", lambda: False)()
        self.bar, self.task = None, None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if not self.interactive or self.clock() - self.started < self.delay:
                return
            self._start(done, total)
        self.bar.update(self.task, completed=done, total=total)

    def _start(self, done: int, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        console = Console(file=self.stream, highlight=False, emoji=False, markup=False)
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.task = self.bar.add_task(self.description, total=total, completed=done)
        self.bar.start()

    def close(self) -> None:
        """Remove the bar, if it was ever drawn."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
        return False
