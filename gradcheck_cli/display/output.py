"""The one output layer: what reaches stdout and stderr, and how.

stdout carries results only, written once they are complete (:class:`HeldStdout`, :func:`emit`), or,
past :data:`STREAM_THRESHOLD`, streamed as they are rendered (:func:`gathered`); the signals that end a
run are held back while a result is written (:func:`ending_signals` raises :class:`Interrupted`
otherwise); what an encoding cannot hold is spelt in ASCII; :func:`json_text` is the one JSON writer;
messages go to stderr one line each. render.py turns results into text lines and sections; cli.py
decides the exit status.
"""

from __future__ import annotations

import atexit
import codecs
import contextlib
import io
import math
import os
import signal
import sys
import threading
from collections.abc import Sequence

from ..core.formatting import escaped
from ..core.record import Record, json_fields, json_ready
from .ownership import (
    ENDING_SIGNALS,
    STDERR,
    USERS_CODE,
    StderrView,
    in_another_process,
    leave_if_forked,
    outlive,
    results_closed_after,
    results_stream,
    take_stdout,
)

__all__ = [
    "STREAM_THRESHOLD",
    "ENDING_SIGNALS",
    "Interrupted",
    "ending_signals",
    "USERS_CODE",
    "ignored",
    "HeldStdout",
    "gathered",
    "emit",
    "StdoutUnavailable",
    "json_text",
    "json_chunks",
    "write_json",
    "ASCII_ERRORS",
    "ascii_spelling",
    "spell_unencodable_in_ascii",
    "error_line",
    "write_error",
    "INTERRUPTED",
    "write_interrupted",
    "write_line",
    "silence",
    "terminal_columns",
    "StderrView",
    "take_stdout",
    "results_closed_after",
    "in_another_process",
    "leave_if_forked",
    "outlive",
]


class Interrupted(KeyboardInterrupt):
    """One of :data:`ENDING_SIGNALS` arrived: the run ends as Ctrl-C ends it, every array restored."""

    def __init__(self, signal_number: int):
        super().__init__(signal_number)
        self.signal_number = signal_number
        self.signal_name = ENDING_SIGNALS[signal_number]


def ignored(signal_number, frame) -> None:
    """A signal after the run's first one, or once its status is decided: the run is ending anyway."""


def _ignored_to_the_end() -> None:
    """At exit, each signal :func:`ignored` handles becomes one the operating system ignores: the
    interpreter's last steps put every signal with a Python handler back to its default (a late
    second Ctrl-C would kill the process, status −2), and leave an ignored one ignored. Not before:
    an ignored signal stays ignored in every process started meanwhile (a test run's children)."""
    for number in ENDING_SIGNALS:
        with contextlib.suppress(ValueError, OSError):  # ValueError: not the main thread
            if signal.getsignal(number) is ignored:
                signal.signal(number, signal.SIG_IGN)


atexit.register(_ignored_to_the_end)


@contextlib.contextmanager
def ending_signals(after=None):
    """Each of :data:`ENDING_SIGNALS` raises :class:`Interrupted` in the main thread, the first time.

    Whatever was running unwinds as from Ctrl-C (every probe restored, the workers stopped); a
    second signal meanwhile is ignored, so the clean-up is not cut short. A signal that was
    ignored when gradcheck started (``nohup``, a background job's SIGINT) stays ignored. On
    leaving, the signals get ``after``, or the handlers they had.
    """

    def interrupt(signal_number, frame):
        for number in handled:
            signal.signal(number, ignored)
        raise Interrupted(signal_number)

    handled = {number: signal.getsignal(number) for number in ENDING_SIGNALS}
    handled = {number: previous for number, previous in handled.items() if previous != signal.SIG_IGN}
    try:
        for number in handled:
            signal.signal(number, interrupt)
    except ValueError:  # not the main thread, where only the interpreter's own handlers run
        handled = {}
    USERS_CODE.found = {**handled, **USERS_CODE.found}
    try:
        yield
    finally:
        for number, previous in handled.items():
            signal.signal(number, previous if after is None else after)


class HeldStdout(io.StringIO):
    """``sys.stdout`` while a command runs: everything it gets is held, then written once, whole.

    It answers ``isatty()`` and ``encoding`` for the real stdout, so tables
    still get a terminal's width and colour. Only the thread that made it is
    gradcheck's: what another thread prints (the user's, still running after
    the problem returned) goes to stderr.
    """

    def __init__(self, stream):
        super().__init__()
        self.stream = stream
        self.owner = threading.get_ident()

    def write(self, text):
        if threading.get_ident() != self.owner:
            return STDERR.write(text)
        return super().write(text)

    @property
    def encoding(self):
        return getattr(self.stream, "encoding", None) or "utf-8"

    def isatty(self):
        return getattr(self.stream, "isatty", lambda: False)()


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
    its records are never all in memory; each item is one string join (:meth:`_Encoder.one`),
    several times faster than the standard library's chain of generators.
    """
    from json.encoder import encode_basestring_ascii  # json loads re and its scanner: not at every start-up

    encoder = _Encoder(encode_basestring_ascii)
    yield from encoder.chunks(document, 0)
    yield "\n"


_INDENT = "  "
#: json_ready's spelling of the floats RFC 8259 has no token for, by their repr: the rule is json_ready's.
_NON_FINITE = {repr(value): f'"{json_ready(value)}"' for value in (math.nan, math.inf, -math.inf)}


def _fields(value):
    """(key, value) pairs of a non-empty dict or a result record, else None."""
    if isinstance(value, dict):  # keys as json_ready makes them: str(key), the last of equal ones kept
        return list({str(key): item for key, item in value.items()}.items()) or None
    if isinstance(value, Record):
        return [(key, getattr(value, name)) for name, key in json_fields(type(value))]
    if hasattr(value, "to_dict") and not isinstance(value, (str, int, float, list, tuple)):
        return _fields(value.to_dict())
    return None


class _Encoder:
    """The JSON of a result, strict and indented as ``json.dumps(..., indent=2)`` writes it."""

    def __init__(self, string):
        self.string = string  # json.encoder.encode_basestring_ascii
        self.keys = {}

    def chunks(self, value, level: int):
        """The JSON of ``value`` in pieces: small containers piece by piece, a long sequence (neither
        list nor tuple) one item at a time, anything else as one string."""
        fields = _fields(value)
        if fields:
            opened = "{"
            for key, item in fields:
                yield f"{opened}\n{_INDENT * (level + 1)}{self.key(key)}: "
                yield from self.chunks(item, level + 1)
                opened = ","
            yield f"\n{_INDENT * level}}}"
        elif isinstance(value, (list, tuple, Sequence)) and not isinstance(value, str) and len(value):
            lazy, opened = not isinstance(value, (list, tuple)), "["
            for item in value:
                yield f"{opened}\n{_INDENT * (level + 1)}"
                if lazy:
                    yield self.one(item, level + 1)
                else:
                    yield from self.chunks(item, level + 1)
                opened = ","
            yield f"\n{_INDENT * level}]"
        else:
            yield self.one(value, level)

    def key(self, key: str) -> str:
        encoded = self.keys.get(key)
        if encoded is None:
            encoded = self.keys[key] = self.string(key)
        return encoded

    def one(self, value, level: int) -> str:
        """``json.dumps(json_ready(value), indent=2, allow_nan=False)`` at nesting ``level``, in one string."""
        if isinstance(value, str):
            return self.string(value)
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
            items = ("," + inner).join(f"{self.key(key)}: {self.one(item, level + 1)}" for key, item in fields)
            return f"{{{inner}{items}\n{_INDENT * level}}}"
        if isinstance(value, dict):
            return "{}"
        if isinstance(value, (list, tuple, Sequence)):
            if not len(value):
                return "[]"
            items = ("," + inner).join(self.one(item, level + 1) for item in value)
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


@contextlib.contextmanager
def _interruption_deferred():
    """Hold Ctrl-C (and the other ending signals) back while the results are written: stdout gets them whole, or nothing at all.

    The interruption is delivered once the write is done. Ctrl-C reaches the
    reader too (one process group), so a reader that stops reading still
    cannot keep gradcheck waiting: it goes away, and the write fails.
    """
    mask = getattr(signal, "pthread_sigmask", None)  # POSIX only
    if mask is None:
        yield
        return
    mask(signal.SIG_BLOCK, ENDING_SIGNALS)
    try:
        yield
    finally:
        mask(signal.SIG_UNBLOCK, ENDING_SIGNALS)


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


def error_line(error, message: str = None) -> str:
    """The one-line message for a rejected request (click's ``Error:`` prefix), every character that is
    not printable escaped (:func:`escaped`): an address or a file name cannot send terminal escapes."""
    return "Error: " + escaped(" ".join((str(error) if message is None else message).splitlines()))


def write_error(error, output_format: str, stdout=None, stderr=None, message: str = None) -> None:
    """Report a rejected request: one line on stderr, and ``{"error": to_dict()}`` for JSON; ``message``
    in both instead of the library's, where the command line words it in its flags."""
    record = error.to_dict() if message is None else {**error.to_dict(), "message": message}
    document = json_text({"error": record}) if output_format == "json" else None
    write_line(error_line(error, message), stderr)
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


def terminal_columns(fallback: int = 80) -> int:
    """``shutil.get_terminal_size((fallback, 24)).columns`` without importing shutil, which loads zlib, bz2
    and lzma (4 ms of every ``gradcheck --help``): a positive $COLUMNS, else the width of the terminal
    on stdout (the results' descriptor once :func:`take_stdout` took it), else ``fallback``."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        results = results_stream()
        descriptor = sys.__stdout__.fileno() if results is None else results.fileno()
        return os.get_terminal_size(descriptor).columns or fallback
    except (AttributeError, ValueError, OSError):  # no stdout, a closed one, or no terminal
        return fallback
