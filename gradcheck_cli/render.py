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
- ``table``: rich tables for people, drawn by :mod:`tables` (the only
  module importing rich), which is imported only when a table is drawn, so
  text and JSON output never pay for it.
"""

from __future__ import annotations

import codecs
import contextlib
import dataclasses
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from .formatting import rust_debug, rust_exp, rust_fixed, rust_list
from .records import Record
from .verdicts import DEFAULT_STEP, check_summary, coordinate_verdict, diagnosis_text, kink_tolerance_text

__all__ = [
    "FORMATS",
    "DEFAULT_STEP",
    "check_summary",
    "coordinate_verdict",
    "kink_tolerance_text",
    "Section",
    "render",
    "write",
    "emit",
    "json_text",
    "write_json",
    "ascii_spelling",
    "spell_unencodable_in_ascii",
    "StdoutUnavailable",
    "write_error",
    "error_line",
    "difference_lines",
    "comparison_line",
    "check_lines",
    "slopes_line",
    "scalar_check",
    "quadratic",
    "identity",
    "kink",
    "scan",
    "nll",
    "sample",
    "parameter_samples",
    "rejected",
    "check",
    "step_advice",
    "taylor",
    "schema_list",
    "schema_document",
    "write_interrupted",
]

FORMATS = ("text", "json", "table")


class Section(NamedTuple):
    """One part of a command's output: its JSON key, its results, and how to draw them.

    ``results`` is a library result (anything with ``to_dict()``), or a list
    or dict of them; ``lines`` and ``table`` draw the same results as text
    lines and as a rich renderable.
    """

    key: str
    results: object
    lines: Callable[[], list]
    table: Callable[[], object]


# ---------------------------------------------------------------- writers


def _tables():
    """The table side of every section: :mod:`tables`, imported on first use (it loads rich)."""
    from . import tables

    return tables


def render(sections: Sequence[Section], output_format: str, stream=None) -> str:
    """The whole output of ``sections`` as text, JSON or tables, as one string.

    Rendered completely before anything is written, so an interruption or a
    failure while rendering leaves stdout empty. ``stream`` is where the
    output will go (a terminal's tables get its width and colour).
    """
    return "".join(render_chunks(sections, output_format, stream))


def render_chunks(sections: Sequence[Section], output_format: str, stream=None):
    """The output of ``sections`` as an iterator of strings, made as they are asked for.

    JSON and text are produced piece by piece (a parameter's coordinates are turned into records,
    dictionaries and lines one at a time), so an output far larger than memory can be written as
    it is made; tables are one piece.
    """
    if output_format == "json":
        return json_chunks({section.key: section.results for section in sections})
    if output_format == "table":
        return iter(
            [_tables().render([section.table() for section in sections], sys.stdout if stream is None else stream)]
        )
    return (line + "\n" for section in sections for line in section.lines())


#: Output up to this many characters is rendered whole before the first byte is written (so Ctrl-C
#: or a failure while rendering leaves stdout empty); a longer one is written as it is rendered.
STREAM_THRESHOLD = 16 * 1024 * 1024


def gathered(chunks, limit: int) -> tuple:
    """(the text of ``chunks`` up to about ``limit`` characters, the iterator of the rest or None if
    that was all), and a batching of the rest into pieces of about a megabyte."""
    head, size = [], 0
    for chunk in chunks:
        head.append(chunk)
        size += len(chunk)
        if size > limit:
            return "".join(head), _batched(chunks, 1 << 20)
    return "".join(head), None


def _batched(chunks, size: int):
    batch, length = [], 0
    for chunk in chunks:
        batch.append(chunk)
        length += len(chunk)
        if length >= size:
            yield "".join(batch)
            batch, length = [], 0
    if batch:
        yield "".join(batch)


def write(sections: Sequence[Section], output_format: str, stream=None) -> None:
    """Print ``sections`` to ``stream`` (stdout by default) as text, JSON or tables, in one write."""
    emit(render(sections, output_format, stream), stream)


def json_text(document) -> str:
    """The one place JSON is made: strict RFC 8259, floats as their repr, one document and a newline.

    ``document`` may hold library results; they are converted with
    ``to_dict()`` (non-finite floats become "NaN", "inf", "-inf"), and
    ``allow_nan=False`` guarantees that no NaN or Infinity token escapes.
    """
    return "".join(json_chunks(document))


def json_chunks(document):
    """:func:`json_text` of ``document`` as an iterator of strings, converted as it is encoded.

    Byte for byte ``json.dumps(json_ready(document), indent=2, allow_nan=False)`` and a newline,
    but a long result sequence (a parameter's CoordinateChecks) is encoded one item at a time, so
    its records are never all in memory; each item is one string join (:func:`_encoded`), several
    times faster than the standard library's chain of generators.
    """
    global encode_basestring_ascii
    if encode_basestring_ascii is None:  # json loads re and its scanner: not at every start-up
        from json.encoder import encode_basestring_ascii
    yield from _encoded_chunks(document, 0)
    yield "\n"


def _encoded_chunks(value, level: int):
    """The JSON of ``value`` in pieces: small containers piece by piece, a long sequence (neither
    list nor tuple) one item at a time, anything else as one string."""
    fields = _fields(value)
    if fields:
        opened = "{"
        for key, item in fields:
            yield f"{opened}\n{_INDENT * (level + 1)}{_json_key(key)}: "
            yield from _encoded_chunks(item, level + 1)
            opened = ","
        yield f"\n{_INDENT * level}}}"
    elif isinstance(value, (list, tuple, Sequence)) and not isinstance(value, str) and len(value):
        lazy, opened = not isinstance(value, (list, tuple)), "["
        for item in value:
            yield f"{opened}\n{_INDENT * (level + 1)}"
            if lazy:
                yield _encoded(item, level + 1)
            else:
                yield from _encoded_chunks(item, level + 1)
            opened = ","
        yield f"\n{_INDENT * level}]"
    else:
        yield _encoded(value, level)


_INDENT = "  "
_KEYS = {}
encode_basestring_ascii = None  # json.encoder's, loaded by the first json_chunks
#: json_ready's spelling of the floats RFC 8259 has no token for.
_NON_FINITE = {"nan": '"NaN"', "inf": '"inf"', "-inf": '"-inf"'}


def _fields(value):
    """(key, value) pairs of a non-empty dict or a result record, else None."""
    if isinstance(value, dict):  # keys as json_ready makes them: str(key), the last of equal ones kept
        return list({str(key): item for key, item in value.items()}.items()) or None
    if isinstance(value, Record):
        return [(field.name, getattr(value, field.name)) for field in dataclasses.fields(value)]
    if hasattr(value, "to_dict") and not isinstance(value, (str, int, float, list, tuple)):
        return _fields(value.to_dict())
    return None


def _json_key(key: str) -> str:
    encoded = _KEYS.get(key)
    if encoded is None:
        encoded = _KEYS[key] = encode_basestring_ascii(key)
    return encoded


def _encoded(value, level: int) -> str:
    """``json.dumps(json_ready(value), indent=2, allow_nan=False)`` at nesting ``level``, in one string."""
    if isinstance(value, str):
        return encode_basestring_ascii(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        text = float.__repr__(value)
        return _NON_FINITE.get(text, text)
    inner = "\n" + _INDENT * (level + 1)
    fields = _fields(value)
    if fields is not None:
        items = ("," + inner).join(f"{_json_key(key)}: {_encoded(item, level + 1)}" for key, item in fields)
        return f"{{{inner}{items}\n{_INDENT * level}}}"
    if isinstance(value, dict):
        return "{}"
    if isinstance(value, (list, tuple, Sequence)):
        if not len(value):
            return "[]"
        items = ("," + inner).join(_encoded(item, level + 1) for item in value)
        return f"[{inner}{items}\n{_INDENT * level}]"
    raise TypeError(f"{type(value).__name__} is not a result value")


def write_json(document, stream=None) -> None:
    """Write :func:`json_text` of ``document`` to ``stream`` (stdout by default), in one write."""
    emit(json_text(document), stream)


class StdoutUnavailable(OSError):
    """stdout is closed (``gradcheck ... >&-``): there is nowhere to write the results."""


def emit(text: str, stream=None) -> None:
    """Write ``text`` to ``stream`` (stdout by default) completely, or raise.

    The text is encoded in the stream's encoding, characters it cannot hold
    spelt in ASCII (:func:`ascii_spelling`: θ is ``theta``). A stream on a
    file descriptor is written with ``os.write`` until every byte is
    accepted, so a reader that goes away mid-way is a BrokenPipeError, never
    a silently partial result; a full disk or a closed descriptor is an OSError.
    """
    stream = sys.stdout if stream is None else stream
    if stream is None:
        raise StdoutUnavailable("stdout is closed")
    encoding = getattr(stream, "encoding", None) or "utf-8"
    data = text.encode(encoding, errors=ASCII_ERRORS)
    try:
        descriptor = stream.fileno()
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        descriptor = None
    stream.flush()
    if descriptor is None:
        buffer = getattr(stream, "buffer", None)
        if buffer is None:
            stream.write(data.decode(encoding))
        else:
            buffer.write(data)
        stream.flush()
        return
    with _interruption_deferred():
        view = memoryview(data)
        while view:
            view = view[os.write(descriptor, view) :]


#: The signals that end a run as Ctrl-C does (cli.py handles them), where the platform has them.
ENDING_SIGNAL_NAMES = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT")


@contextlib.contextmanager
def _interruption_deferred():
    """Hold Ctrl-C (and the other ending signals) back while the results are written: stdout gets them whole, or nothing at all.

    The interruption is delivered once the write is done. Ctrl-C reaches the
    reader too (one process group), so a reader that stops reading still
    cannot keep gradcheck waiting: it goes away, and the write fails.
    """
    # The interpreter has loaded _signal already; the public signal module would cost 0.6 ms of
    # start-up (it builds its enums), which every scalar command would pay.
    import _signal

    mask = getattr(_signal, "pthread_sigmask", None)  # POSIX only
    if mask is None:
        yield
        return
    ending = {getattr(_signal, name) for name in ENDING_SIGNAL_NAMES if hasattr(_signal, name)}
    mask(_signal.SIG_BLOCK, ending)
    try:
        yield
    finally:
        mask(_signal.SIG_UNBLOCK, ending)


#: The codec error handler that spells in ASCII what an output encoding cannot hold.
ASCII_ERRORS = "gradcheck.ascii"

_ASCII = {
    "θ": "theta", "ε": "eps", "ρ": "rho", "η": "eta", "Δ": "Delta", "Σ": "Sum", "∇": "grad", "µ": "u",
    "·": "*", "×": "x", "−": "-", "–": "-", "—": "--", "…": "...", "→": "->", "‖": "||", "√": "sqrt",
    "≤": "<=", "≥": ">=", "≈": "~", "≠": "!=", "∓": "-+", "±": "+-", "∝": "~", "½": "1/2", "¾": "3/4",
    "⌊": "floor(", "⌋": ")", "⌈": "ceil(", "⌉": ")", "′": "'", "″": "''", "‴": "'''",
    "✓": "yes", "✗": "no", "●": "*", "○": "o", "◆": "#",
    "│": "|", "┃": "|", "┤": "|", "├": "|", "└": "+", "┘": "+", "┌": "+", "┐": "+", "┬": "+", "┴": "+", "┼": "+",
}  # fmt: skip
_SUPERSCRIPTS = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁺ᵀᵏᵉ", "0123456789-+Tke"))
_SUBSCRIPTS = dict(zip("₀₁₂₃₄₅₆₇₈₉₋₊ₖⱼ", "0123456789-+kj"))


def ascii_spelling(text: str) -> str:
    """``text`` in ASCII: θ as ``theta``, 10⁻¹¹ as ``10^-11``, h₋ as ``h-``, ✓/✗ as yes/no, rules as - | +."""
    spelt, index = [], 0
    while index < len(text):
        character = text[index]
        for table, mark in ((_SUPERSCRIPTS, "^"), (_SUBSCRIPTS, "")):
            if character in table:
                end = index
                while end < len(text) and text[end] in table:
                    end += 1
                spelt.append(mark + "".join(table[each] for each in text[index:end]))
                index = end
                break
        else:
            if character.isascii():
                spelt.append(character)
            elif character in _ASCII:
                spelt.append(_ASCII[character])
            elif "\u2580" <= character <= "\u259f":  # block elements: the charts' bars
                spelt.append("#")
            elif "\u2500" <= character <= "\u257f":  # box drawing: the tables' rules
                spelt.append("-")
            else:
                spelt.append("?")
            index += 1
    return "".join(spelt)


def _ascii_errors(error: UnicodeError):
    if not isinstance(error, UnicodeEncodeError):
        raise error
    return ascii_spelling(error.object[error.start : error.end]), error.end


codecs.register_error(ASCII_ERRORS, _ascii_errors)


def spell_unencodable_in_ascii(stream) -> None:
    """Make a text stream that cannot encode θ spell such characters in ASCII (click's help too)."""
    try:
        "θ✓─".encode(getattr(stream, "encoding", None) or "utf-8")
    except UnicodeEncodeError:
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors=ASCII_ERRORS)
    except LookupError:
        pass


def error_line(error) -> str:
    """The one-line message for a rejected request (click's ``Error:`` prefix)."""
    return "Error: " + " ".join(str(error).splitlines())


def write_error(error, output_format: str, stdout=None, stderr=None) -> None:
    """Report a rejected request: one line on stderr, and ``{"error": to_dict()}`` for JSON."""
    document = json_text({"error": error}) if output_format == "json" else None
    write_line(error_line(error), stderr)
    if document is not None:
        emit(document, stdout)


#: What an interrupted command (Ctrl-C) prints on stderr, whatever the output format.
INTERRUPTED = "Error: interrupted"


def write_interrupted(interrupt=None, stderr=None) -> None:
    """Report Ctrl-C, or the signal that ended the run as Ctrl-C does (its ``signal_name``): one line on
    stderr; stdout gets nothing, not even a partial result."""
    name = getattr(interrupt, "signal_name", "SIGINT")
    line = INTERRUPTED if name == "SIGINT" else f"{INTERRUPTED} by {name}"
    write_line(line, stderr)


def write_line(line: str, stderr=None) -> None:
    """Write one message line to stderr. A stderr that is closed (``2>&-``) or full (``2>/dev/full``)
    is pointed at /dev/null instead of failing: the JSON error still reaches stdout, the exit status
    stays the one the outcome decides, and the interpreter's last flush cannot fail either."""
    stream = sys.stderr if stderr is None else stderr
    try:
        stream.write(line + "\n")
        stream.flush()
    except (AttributeError, OSError, ValueError):  # None, a full disk, a closed descriptor
        silence(stream)


def silence(stream) -> None:
    """Point ``stream``'s descriptor at /dev/null, so the interpreter's final flush cannot fail again."""
    try:
        descriptor = stream.fileno()  # not CliRunner's stream, which has none
    except (AttributeError, OSError, ValueError):
        return
    null = os.open(os.devnull, os.O_WRONLY)
    if null != descriptor:
        os.dup2(null, descriptor)
        os.close(null)


# ------------------------------------------------------------- text lines


def _value(number: float) -> str:
    """Values, slopes, gradients: Rust ``{:.12}``."""
    return rust_fixed(number, 12)


def _magnitude(number: float) -> str:
    """A gradient in ``check``'s text: ``{:.12}``, or ``{:.12e}`` for a nonzero magnitude below 1e-4."""
    return _error(number) if 0.0 < abs(number) < 1e-4 else _value(number)


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


def comparison_line(label: str, comparison, value=_value, passed: str = "pass") -> str:
    """A GradientComparison as the chapter's ``wrong candidate:`` line."""
    c = comparison
    return (
        f"{label}: analytic={value(c.analytic)} scaled_error={_error(c.scaled_error)} "
        f"tolerance={_error(c.tolerance)} {passed}={_bool(c.passed)}"
    )


def check_lines(label: str, check, candidate_label: str = None) -> list:
    """A ScalarGradientCheck: its difference lines, then its candidate line."""
    return [
        *difference_lines(label, check.difference),
        comparison_line(candidate_label or f"{label} candidate", check.comparison),
    ]


def coordinate_check_lines(label: str, record) -> list:
    """A check's coordinate as the chapter prints it, its ``pass=`` named ``chapter_pass=`` (the
    chapter's scaled error, not the coordinate's verdict) and small gradients in scientific notation."""
    return [
        *difference_lines(label, record.difference),
        comparison_line(f"{label} candidate", record.comparison, _magnitude, "chapter_pass"),
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
        if record.check is None:
            lines.append(f"{label} rejected: requested_h={_spacing(record.requested_step)} error={record.error}")
        else:
            lines += check_lines(label, record.check)
        lines.append(f"{label} regime: {record.regime}")
    return lines


def _sample_lines(coordinates, label: str = "") -> list:
    return [
        f"{label}sampled flat offsets: {rust_list([sample.flat_index for sample in coordinates])}",
        f"{label}sampled coordinates: {rust_list([sample.coordinate for sample in coordinates])}",
    ]


def _parameter_sample_lines(samples) -> list:
    lines = []
    for chosen in samples:
        requested = "" if chosen.requested_samples is None else f" requested_samples={chosen.requested_samples}"
        lines += [
            f"{chosen.name}: dtype={chosen.dtype} shape={rust_list(chosen.shape)} selection={chosen.selection}{requested}",
            *_sample_lines(chosen.coordinates, f"{chosen.name} "),
        ]
    return lines


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


def _rejected_lines(errors, labels) -> list:
    return [f"rejected {labels.get(request, request)}: {error}" for request, error in errors.items()]


def _names(names) -> str:
    """Names as Rust's ``{:?}`` prints a Vec<String>: ``["W1", "b1"]``."""
    return "[" + ", ".join(f'"{name}"' for name in names) + "]"


def _coordinate_label(name: str, coordinate) -> str:
    """``W1[0, 3]``: how the library's purity messages name a coordinate."""
    return f"{name}{rust_list(coordinate)}"


def _purity_line(purity) -> str:
    return (
        f"purity: pure={_bool(purity.pure)} stateful={_bool(purity.stateful)} evaluations={purity.evaluations} "
        f"distinct={purity.distinct} spread={_error(purity.spread)}; {purity.message}"
    )


def _parameter_line(parameter) -> str:
    selection = f"selection={parameter.selection}"
    if parameter.requested_samples is not None:
        selection += f" requested_samples={parameter.requested_samples}"
    step = "default" if parameter.step is None else _spacing(parameter.step)
    return (
        f"parameter {parameter.name}: dtype={parameter.dtype} shape={rust_list(parameter.shape)} {selection} "
        f"step={step} tolerance={_error(parameter.tolerance)} kink_tolerance={kink_tolerance_text(parameter)}"
    )


def estimate_fields(estimate) -> str:
    """A StepEstimate's numbers: what was compared at that step, and the error bar."""
    bar = estimate.error_bar
    return (
        f"analytic={_magnitude(estimate.analytic)} numerical={_magnitude(estimate.numerical)} "
        f"relative_error={_error(estimate.relative_error)} error_bar={_error(bar.total)} "
        f"(rounding={_error(bar.rounding)} jitter={_error(bar.jitter)} step_sensitivity={_error(bar.step_sensitivity)})"
    )


def _verdict_lines(label: str, record, step_name: str) -> list:
    lines = [f"{label} {step_name}={_spacing(e.step)}: {estimate_fields(e)}" for e in record.estimates[1:]]
    return [*lines, f"{label} verdict: {coordinate_verdict(record)}; {record.reason}"]


def _directional_lines(parameter) -> list:
    direction, label = parameter.directional, f"{parameter.name} directional"
    lines = [f"{label}: elements={direction.elements} moved={direction.moved}"]
    lines += [f"{label} multiplier={_spacing(e.step)}: {estimate_fields(e)}" for e in direction.estimates]
    return [*lines, f"{label} verdict: {direction.verdict}; {direction.reason}"]


#: Coordinates that did not pass shown per parameter in the short report (``--verbose`` shows all).
SHOWN_FAILURES = 3


def _summary_line(parameter) -> str:
    worst = parameter.checks.worst()
    failed = parameter.checks.verdict_count("failed")
    inconclusive = len(parameter.checks.unpassed()) - failed
    return (
        f"{parameter.name}: verdict={parameter.verdict} dtype={parameter.dtype} shape={rust_list(parameter.shape)} "
        f"checked={len(parameter.checks)} failed={failed} inconclusive={inconclusive} "
        f"directional={parameter.directional.verdict} worst={_coordinate_label(parameter.name, worst.coordinate)} "
        f"relative_error={_error(worst.estimates[worst.decided_at].relative_error)}"
    )


def diagnosis_line(label: str, diagnosis) -> str:
    """``W2 diagnosis: scale ×8: analytic = 8 × numerical ...``."""
    return f"{label} diagnosis: {diagnosis_text(diagnosis)}"


def _short_coordinate_line(name: str, record) -> str:
    estimate = record.estimates[record.decided_at]
    return (
        f"{_coordinate_label(name, record.coordinate)}: {coordinate_verdict(record, short=True)} "
        f"analytic={_magnitude(estimate.analytic)} numerical={_magnitude(estimate.numerical)} "
        f"relative_error={_error(estimate.relative_error)} error_bar={compact_error(estimate.error_bar.total)} "
        f"step={rust_debug(estimate.step)}"
    )


def compact_error(number: float) -> str:
    """An error bar in three digits: ``2.43e-11``."""
    return f"{number:.2e}"


def _short_check_lines(report) -> list:
    """One line per parameter, its diagnosis, and the first coordinates that did not pass."""
    lines = []
    for parameter in report.parameters:
        lines.append(_summary_line(parameter))
        if parameter.diagnosis is not None:
            lines.append(diagnosis_line(parameter.name, parameter.diagnosis))
        unpassed = parameter.checks.unpassed()
        lines += [_short_coordinate_line(parameter.name, record) for record in unpassed[:SHOWN_FAILURES]]
        if len(unpassed) > SHOWN_FAILURES:
            more = len(unpassed) - SHOWN_FAILURES
            lines.append(
                f"{parameter.name}: {more} more {'coordinate' if more == 1 else 'coordinates'} did not pass "
                "(--verbose shows every one)"
            )
    if report.diagnosis is not None:
        lines.append(diagnosis_line("check", report.diagnosis))
    return [*lines, *_check_tail(report)]


def _check_tail(report) -> list:
    return [
        _purity_line(report.purity),
        f"check: checked={report.checked} failed={report.failed} inconclusive={report.inconclusive} "
        f"failing_parameters={_names(report.failing_parameters)} evaluations={report.evaluations} "
        f"verdict={report.verdict} pass={_bool(report.passed)}",
    ]


def _check_lines(report):
    """Every line of a verbose check, made one coordinate at a time (a generator)."""
    if report.step_advice is not None:
        yield from _problem_step_advice_lines(report.step_advice)
    for parameter in report.parameters:
        yield _parameter_line(parameter)
        for record in parameter.checks:
            label = _coordinate_label(parameter.name, record.coordinate)
            yield from coordinate_check_lines(label, record)
            if record.kink.suspected:
                yield slopes_line(f"{label} one-sided slopes", record.kink.slopes)
            yield from _verdict_lines(label, record, "step")
        yield from _directional_lines(parameter)
        if parameter.diagnosis is not None:
            yield diagnosis_line(parameter.name, parameter.diagnosis)
        yield (
            f"{parameter.name} check: checked={len(parameter.checks)} failed={parameter.checks.verdict_count('failed')} "
            f"verdict={parameter.verdict} pass={_bool(parameter.passed)}"
        )
    if report.diagnosis is not None:
        yield diagnosis_line("check", report.diagnosis)
    yield from _check_tail(report)


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


#: Steps the short taylor output shows when none is in the fit (``--verbose`` shows every one).
SHOWN_TAYLOR_POINTS = 5


def _shown_taylor_points(result) -> tuple:
    """(numbered points to show, what they are): those in the fit, else the first usable ones, else the first."""
    numbered = list(enumerate(result.points, start=1))
    for label, chosen in (
        ("those in the fit", [pair for pair in numbered if pair[1].in_fit]),
        ("the first usable ones", [pair for pair in numbered if pair[1].usable][:SHOWN_TAYLOR_POINTS]),
        ("the first ones", numbered[:SHOWN_TAYLOR_POINTS]),
    ):
        if chosen:
            return chosen, label
    return [], "the first ones"


def _taylor_lines(result, verbose: bool = False) -> list:
    lines = [
        f"taylor: parameters={_names(result.parameters)} dtypes={_names(result.dtypes)} "
        f"direction={result.direction} seed={result.seed} center_value={_value(result.center_value)} "
        f"directional_derivative={_value(result.directional_derivative)} epsilon={_error(result.epsilon)}"
    ]
    numbered, label = list(enumerate(result.points, start=1)), ""
    if not verbose:
        numbered, label = _shown_taylor_points(result)
    for number, point in numbered:
        lines.append(
            f"taylor step {number}: step={_spacing(point.step)} displacement_norm={_spacing(point.displacement_norm)} "
            f"value={_value(point.value)} linear_term={_error(point.linear_term)} "
            f"remainder={_error(point.remainder)} rounding_floor={_error(point.rounding_floor)} "
            f"state={point.state} usable={_bool(point.usable)} in_fit={_bool(point.in_fit)}"
        )
    if len(numbered) < len(result.points):
        lines.append(
            f"taylor steps: {len(numbered)} of {len(result.points)} shown, {label} (--verbose shows every one)"
        )
    lines += [
        f"taylor fit: fit_points={result.fit_points} order={_value(result.order)} "
        f"pass_order={_value(result.pass_order)} fail_order={_value(result.fail_order)} "
        f"rounding_margin={_value(result.rounding_margin)} detection_limit={_error(result.detection_limit)} "
        f"deterministic={_bool(result.deterministic)}",
    ]
    for number, test in enumerate(result.localization, start=1):
        lines.append(
            f"taylor localization {number}: parameters={_names(test.parameters)} order={_value(test.order)} "
            f"verdict={test.verdict} ({test.reason}) evaluations={test.evaluations}"
        )
    lines.append(
        f"taylor verdict: {result.verdict} ({result.reason}) pass={_bool(result.passed)} "
        f"failing_parameters={_names(result.failing_parameters)} "
        f"localization_evaluations={result.localization_evaluations}"
    )
    return lines


# -------------------------------------------------------- section builders


def quadratic(checks: Sequence, labels: Sequence[str]) -> Section:
    """Quadratic checks (ScalarGradientCheck), one label per candidate line."""
    checks, labels = list(checks), list(labels)
    return Section(
        "quadratic", checks, lambda: _quadratic_lines(checks, labels), lambda: _tables().quadratic(checks, labels)
    )


def scalar_check(key: str, check, title: str = None) -> Section:
    """Any ScalarGradientCheck, under ``key`` in JSON and as the label of its text lines."""
    return Section(key, check, lambda: check_lines(key, check), lambda: _tables().scalar(title or key, check))


def identity(check) -> Section:
    """The rounded identity's ScalarGradientCheck."""
    return scalar_check("identity", check, "Rounded identity f(x) = x")


def kink(diagnostic) -> Section:
    """The |x| KinkDiagnostic: the check and the one-sided slope comparison."""
    return Section("kink", diagnostic, lambda: _kink_lines(diagnostic), lambda: _tables().kink(diagnostic))


def scan(records: Sequence, advice=None) -> Section:
    """StepScanRecords, each with its error regime; the table's chart also shows ``advice`` if given."""
    records = list(records)
    return Section("scan", records, lambda: _scan_lines(records), lambda: _tables().scan(records, advice))


def nll(example) -> Section:
    """The NllGradientExample: inputs, loss, sampled coordinate checks, restoration."""
    return Section("nll", example, lambda: _nll_lines(example), lambda: _tables().nll(example))


def sample(coordinates: Sequence) -> Section:
    """SampledCoordinates from the deterministic sampler."""
    coordinates = list(coordinates)
    return Section("sample", coordinates, lambda: _sample_lines(coordinates), lambda: _tables().sample(coordinates))


def parameter_samples(samples: Sequence) -> Section:
    """``gradcheck sample PROBLEM``: per parameter (ParameterSample), the coordinates a check probes."""
    return Section(
        "sample", samples, lambda: _parameter_sample_lines(samples), lambda: _tables().parameter_samples(samples)
    )


def rejected(errors: Mapping[str, Exception], labels: Mapping[str, str] = None) -> Section:
    """Rejected requests: request key (JSON) → the GradCheckError it raised; ``labels`` name them in text."""
    errors, labels = dict(errors), dict(labels or {})
    return Section(
        "rejected", errors, lambda: _rejected_lines(errors, labels), lambda: _tables().rejected(errors, labels)
    )


def check(report, verbose: bool = False) -> Section:
    """A GradientCheckReport: a line per parameter with its diagnosis and the coordinates that did not
    pass, then purity and the verdict; ``verbose``: the step advice and every coordinate's records."""
    shown = _check_with_shown_names(report)
    lines = (lambda: _check_lines(shown)) if verbose else (lambda: _short_check_lines(shown))
    return Section("check", report, lines, lambda: _tables().check(shown))


def step_advice(advice, key: str = "advice", title: str = "Step advice") -> Section:
    """A StepAdvice: every requested step's estimate and regime, then the advised step."""
    return Section(key, advice, lambda: _step_advice_lines(key, advice), lambda: _tables().step_advice(title, advice))


def schema_list(entries: Sequence) -> Section:
    """``gradcheck schema``: one ``name: title: description`` line per document."""
    return Section(
        "schemas",
        entries,
        lambda: [f"{entry['name']}: {entry['description']}" for entry in entries],
        lambda: _tables().schema_list(entries),
    )


def schema_document(name: str, document: dict) -> Section:
    """``gradcheck schema NAME``: the schema itself as text, ``{"schema": ...}`` as JSON, its fields as tables."""
    return Section("schema", document, lambda: json_text(document).splitlines(), lambda: _tables().schema_fields(name))


def taylor(result, verbose: bool = False) -> Section:
    """A TaylorResult: the setting, every step's remainder, the fit and the verdict."""
    shown = _taylor_with_shown_names(result)
    return Section("taylor", result, lambda: _taylor_lines(shown, verbose), lambda: _tables().taylor(shown))


def shown_name(name: str) -> str:
    """A parameter's name as text and tables show it: as given when it is printable one-line text, else
    its repr (``'a\\nb'``), so that a name cannot break one fact per line or send a terminal escapes."""
    return name if name.isprintable() else repr(name)


def _check_with_shown_names(report):
    """``report`` with every parameter name as :func:`shown_name` shows it (JSON keeps the names as given)."""
    if all(name.isprintable() for name in report.failing_parameters + tuple(p.name for p in report.parameters)):
        return report
    parameters = tuple(
        dataclasses.replace(parameter, name=shown_name(parameter.name)) for parameter in report.parameters
    )
    advice = report.step_advice
    if advice is not None:
        records = tuple(dataclasses.replace(record, name=shown_name(record.name)) for record in advice.parameters)
        steps = {shown_name(name): step for name, step in advice.steps.items()}
        advice = dataclasses.replace(advice, steps=steps, parameters=records)
    failing = tuple(map(shown_name, report.failing_parameters))
    return dataclasses.replace(report, parameters=parameters, failing_parameters=failing, step_advice=advice)


def _taylor_with_shown_names(result):
    """``result`` with every parameter name as :func:`shown_name` shows it."""
    if all(name.isprintable() for name in result.parameters):
        return result
    localization = tuple(
        dataclasses.replace(test, parameters=tuple(map(shown_name, test.parameters))) for test in result.localization
    )
    return dataclasses.replace(
        result,
        parameters=tuple(map(shown_name, result.parameters)),
        failing_parameters=tuple(map(shown_name, result.failing_parameters)),
        localization=localization,
    )
