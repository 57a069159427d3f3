"""Every way gradcheck shows a result: chapter-style text lines, strict JSON, rich tables.

A command hands the library's results to one of the section builders below
(:func:`quadratic`, :func:`scan`, :func:`nll`, ...); :func:`write` then prints
the sections in the requested format. Nothing here computes a derivative.

- ``text``: ``label: key=value ...`` lines in the chapter's number formats
  (``{:.12}`` for values, slopes and gradients, ``{:.17e}`` for requested
  steps, spacings and weights, ``{:.12e}`` for errors and tolerances, ``{:?}``
  for lists, ``pass=true|false``); no colour, stable for golden diffs.
- ``json``: one strict JSON document, ``{section key: to_dict() of its
  results}``, written by :func:`write_json` and nothing else.
- ``table``: rich tables for people. This is the only module that imports
  rich, and only inside the table functions, so text and JSON output never
  pay for it.
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
        f"{label} probes: theta_minus={_value(d.minus_point)} theta_plus={_value(d.plus_point)} stencil={d.stencil}",
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


def _scan_table(records):
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


def scan(records: Sequence) -> Section:
    """StepScanRecords, each with its error regime."""
    records = list(records)
    return Section("scan", records, lambda: _scan_lines(records), lambda: _scan_table(records))


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
