"""The ``gradcheck`` command: parse options, call the library, hand the results to :mod:`render`.

This module holds what every subcommand shares; each subcommand lives in its
own module, ``gradcheck X`` in ``commands/X.py``, listed in :data:`SUBCOMMANDS`.
No subcommand computes anything itself. Each one builds a :class:`Report`
(rendered sections plus the verdicts the user asked for) from library calls
and passes it to :func:`run`, which renders it and exits with the status that
:func:`exit_status` decides. Start-up matters: only the invoked subcommand's
module is imported (and its options built), this module imports neither
numpy nor rich, the commands that need numpy import it inside their bodies,
and only :mod:`tables` imports rich, when a table or progress bar is drawn.

How to add a subcommand, with an example, is in docs/development.md.
"""

import functools
import gc
import importlib
import itertools
import sys
from typing import NamedTuple

import click

from .. import __version__
from ..core.formatting import rust_debug
from ..display import output
from ..errors import GradCheckError
from ..errors import command_line as cli_errors
from ..errors.command_line import CommandLineError

__all__ = [
    "EXIT_OK",
    "EXIT_CANDIDATE_FAILED",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_BROKEN_PIPE",
    "EXIT_OUTPUT_FAILED",
    "OutputFailed",
    "CommandLineError",
    "Report",
    "exit_status",
    "output_options",
    "run",
    "main",
    "SUBCOMMANDS",
    "Subcommand",
    "summary",
]

EXIT_OK = 0
EXIT_CANDIDATE_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL_ERROR = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141
#: sysexits.h's EX_IOERR: stdout cannot be written (a full disk, ``>&-``); neither a verdict nor a defect.
EXIT_OUTPUT_FAILED = 74


class OutputFailed(Exception):
    """The results could not be written to stdout (the OSError that said so is ``__cause__``)."""


class Report(NamedTuple):
    """What a subcommand produced: the sections to render and the user's verdicts.

    ``user_verdicts`` holds one ``passed`` per verdict on something the user
    supplied: a candidate (``--analytic``) or a problem (``check``,
    ``taylor``); the chapter's built-in candidates are demonstrations and
    never count.
    """

    sections: tuple
    user_verdicts: tuple = ()


def exit_status(outcome) -> int:
    """gradcheck's exit status, decided here and nowhere else.

    - 0: the command completed and every comparison the user asked for passed;
    - 1: a candidate the user supplied with ``--analytic`` failed, a
      coordinate of the user's problem did not pass ``check`` (a failed
      comparison, a suspected kink, an impure objective), or ``taylor`` did
      not pass (failed or inconclusive);
    - 2: bad input, a click usage error or a rejected request (GradCheckError);
    - 3: an internal error, a defect in gradcheck itself (never 1, which would
      read as a verdict on the user's gradient);
    - 130: interrupted (Ctrl-C); 128 + N for the other signals that end a run the same way
      (SIGHUP 129, SIGQUIT 131, SIGTERM 143), as a shell reports a process they killed;
    - 141: the reader of stdout went away (``gradcheck demo | head``), as a
      shell reports a process killed by SIGPIPE;
    - 74: stdout cannot be written (``>/dev/full``, ``>&-``): sysexits.h's
      EX_IOERR, neither a verdict (1) nor a defect (3).
    """
    if isinstance(outcome, BrokenPipeError):
        return EXIT_BROKEN_PIPE
    if isinstance(outcome, OutputFailed):
        return EXIT_OUTPUT_FAILED
    if isinstance(outcome, (GradCheckError, click.ClickException)):
        return EXIT_BAD_INPUT
    if isinstance(outcome, output.Interrupted):
        return 128 + outcome.signal_number
    if isinstance(outcome, (KeyboardInterrupt, click.Abort)):
        return EXIT_INTERRUPTED
    if isinstance(outcome, BaseException):
        return EXIT_INTERNAL_ERROR
    return EXIT_OK if all(outcome.user_verdicts) else EXIT_CANDIDATE_FAILED


# ---------------------------------------------------------- output options

_FORMAT_CHOICES = "gradcheck.format_choices"
_OUTPUT_FORMAT = "gradcheck.output_format"


def _resolve_format(ctx, format_name, json_flag) -> str:
    if json_flag and format_name not in (None, "json"):
        raise click.UsageError(f"--json conflicts with --format {format_name}; choose one output format", ctx)
    return "json" if json_flag else (format_name or "text")


def _choose_format(ctx, param, value):
    # Both options are eager, so the format is settled (and a conflict rejected)
    # before any other option is converted, and a bad value can still be
    # reported as JSON.
    choices = ctx.meta.setdefault(_FORMAT_CHOICES, {})
    choices[param.name] = value
    if len(choices) == 2:
        ctx.meta[_OUTPUT_FORMAT] = _resolve_format(ctx, **choices)
    return value


def _requested_format(ctx) -> str:
    return "text" if ctx is None else ctx.meta.get(_OUTPUT_FORMAT, "text")


def output_options(command):
    """Add ``--format text|json|table`` and ``--json``; the command receives ``output_format``."""

    @functools.wraps(command)
    def with_output_format(*args, **kwargs):
        return command(*args, output_format=_requested_format(click.get_current_context()), **kwargs)

    with_output_format = click.option(
        "--json",
        "json_flag",
        is_flag=True,
        is_eager=True,
        expose_value=False,
        callback=_choose_format,
        help="Shorthand for --format json.",
    )(with_output_format)
    from ..display import render  # a command's, not the group's: `gradcheck --help` does not load it

    return click.option(
        "--format",
        "format_name",
        type=click.Choice(render.FORMATS),
        is_eager=True,
        expose_value=False,
        callback=_choose_format,
        help="text (the default): chapter-style key=value lines; json: one strict JSON document; table: rich tables.",
    )(with_output_format)


# ------------------------------------------------------------- the run path


def run(output_format: str, compute) -> None:
    """Call ``compute() -> Report``, render it whole, write it, and exit with :func:`exit_status`.

    A rejected request (any GradCheckError) becomes one line on stderr, its
    ``to_dict()`` under "error" on stdout for JSON, and exit status 2. The
    result is rendered completely before the first byte is written, so Ctrl-C
    or a failure while rendering leaves stdout empty.
    """
    from ..display import render

    ctx = click.get_current_context()
    try:
        report = compute()
        text, rest = output.gathered(render.render_chunks(report.sections, output_format), output.STREAM_THRESHOLD)
    except GradCheckError as error:
        output.write_error(error, output_format, message=in_flags(error))
        ctx.exit(exit_status(error))
    except KeyboardInterrupt as interrupt:
        # Caught here rather than by click, which would print an empty line first.
        output.write_interrupted(interrupt)
        ctx.exit(exit_status(interrupt))
    if rest is None:
        output.emit(text)
        ctx.exit(exit_status(report))
    ctx.exit(_stream(text, rest, exit_status(report)))


def in_flags(error: GradCheckError) -> str:
    """The library's message of ``error`` with the flags of the command line beside the parameters it names."""
    return cli_errors.in_flags(str(error))


def _stream(text: str, rest, status: int) -> int:
    """Write an output too long to hold whole as it is rendered: ``text`` then each piece of ``rest``,
    straight to the real stdout; the exit status, or that of a stdout that failed (see deliver)."""
    held = sys.stdout
    stream = held.stream if isinstance(held, output.HeldStdout) else held
    if isinstance(held, output.HeldStdout):
        text = held.getvalue() + text
        held.seek(0)
        held.truncate()
    return deliver(itertools.chain([text], rest), stream, status)


def deliver(text, stream, status: int) -> int:
    """Write ``text`` (a string, or an iterable of them) to ``stream`` and return ``status``, or the
    status of a stdout that failed.

    A reader that went away is 141 and says nothing; any other failure to
    write (a full disk, a closed descriptor) is one line on stderr and 74.
    """
    try:
        for piece in [text] if isinstance(text, str) else text:
            if piece:
                output.emit(piece, stream)
        return status
    except BrokenPipeError as closed:
        output.silence(stream)
        return exit_status(closed)
    except KeyboardInterrupt as interrupt:
        output.write_interrupted(interrupt)
        return exit_status(interrupt)
    except OSError as error:
        output.silence(stream)
        return _report_output_failure(error)


def _report_output_failure(error: OSError) -> int:
    reason = error.strerror or str(error) or type(error).__name__
    output.write_line(f"Error: cannot write the results to stdout: {reason}")
    failed = OutputFailed(reason)
    failed.__cause__ = error
    return exit_status(failed)


def _format_in_words(words) -> str:
    """The output format a command line's words ask for: json only when nothing else is asked for.

    Only the subcommand's own words count (``--json`` before the subcommand
    is not an option of the group).
    """
    first = next((index for index, word in enumerate(words) if not word.startswith("-")), len(words))
    words = words[first + 1 :]
    formats = set()
    for index, word in enumerate(words):
        if word == "--json":
            formats.add("json")
        elif word == "--format" and index + 1 < len(words):
            formats.add(words[index + 1])
        elif word.startswith("--format="):
            formats.add(word.split("=", 1)[1])
    return "json" if formats == {"json"} else "text"


def _report_click_error(error: click.ClickException, words=()) -> int:
    ctx = getattr(error, "ctx", None)
    if isinstance(error, click.exceptions.NoArgsIsHelpError):
        error.show()  # bare `gradcheck`: click's help on stderr
        return exit_status(error)
    if isinstance(error, click.NoSuchOption) and error.possibilities:
        error.possibilities = _close_options(error.option_name, error.possibilities)
    param = getattr(error, "param", None)
    if isinstance(param, click.Argument):
        option = param.human_readable_name  # PROBLEM, as the usage line names it
    else:
        option = param.opts[0] if param is not None and getattr(param, "opts", None) else None
    problem = CommandLineError(option=option, problem=error.format_message())
    settled = None if ctx is None else ctx.meta.get(_OUTPUT_FORMAT)
    # click stops at an unknown option (or one without its value) before any option callback
    # runs, so the format is not settled yet: read it from the words.
    output.write_error(problem, settled or _format_in_words(words))
    return exit_status(error)


def _close_options(name: str, options) -> list:
    """The options whose names (without their dashes) are close to ``name``'s, closest first: click's own
    guesses compare the dashes too, and so offer --json for --pont."""
    import difflib

    bare = {option.lstrip("-"): option for option in options}
    return [bare[close] for close in difflib.get_close_matches(name.lstrip("-"), list(bare), n=3, cutoff=0.6)]


class GradcheckContext(click.Context):
    """click's context, whose help is as wide as click makes it (the terminal's width, at most 78,
    at least 50) without the ``import shutil`` click's formatter does for that: 4 ms of ``gradcheck
    --help``. CliRunner's fixed width (``click.formatting.FORCED_WIDTH``) is still click's to apply."""

    def make_formatter(self):
        width, widest = self.terminal_width, self.max_content_width
        if width is None and click.formatting.FORCED_WIDTH is None:
            width = max(min(output.terminal_columns(), 80 if widest is None else widest) - 2, 50)
        return self.formatter_class(width=width, max_width=widest)


class GradcheckGroup(click.Group):
    """click's group with gradcheck's error contract: one line on stderr, exit 2, no traceback.

    Subcommands in ``lazy_commands`` (name → :class:`Subcommand`, a module of
    this package) are imported the first time they are asked for, click's
    documented lazy-group pattern: running one subcommand builds only its
    options, ``--help`` lists their summaries without importing them, and a
    misspelt name loads them all.
    """

    context_class = GradcheckContext

    def __init__(self, *args, lazy_commands=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.lazy_commands = dict(lazy_commands or {})

    def list_commands(self, ctx):
        return sorted({*self.commands, *self.lazy_commands})

    def get_command(self, ctx, name):
        if name not in self.commands and name in self.lazy_commands:
            module, command = self.lazy_commands[name].target.split(":")
            self.add_command(getattr(importlib.import_module(f".commands.{module}", __package__), command), name)
        return self.commands.get(name)

    def format_commands(self, ctx, formatter):
        """click's listing of the subcommands, from their summaries: ``--help`` imports none of them."""
        rows = [(name, self.lazy_commands[name].summary) for name in sorted(self.lazy_commands)]
        rows += [(name, command.get_short_help_str()) for name, command in sorted(self.commands.items())]
        with formatter.section("Commands"):
            formatter.write_dl(sorted(dict(rows).items()))

    def resolve_command(self, ctx, args):
        if args and args[0] not in self.commands and args[0] not in self.lazy_commands:
            # click suggests the nearest name ("Did you mean 'quadratic'?") among the loaded commands only.
            for name in self.lazy_commands:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        own_process = args is None and standalone_mode  # not a caller's main(args) nor CliRunner's
        if own_process:
            _exempt_from_collection()
        words = list(sys.argv[1:] if args is None else args)
        with output.ending_signals(after=output.ignored if standalone_mode else None), output.results_closed_after():
            status = self._main(words, prog_name, complete_var, own_process, **extra)
        if standalone_mode:
            sys.exit(status)
        return status

    def _main(self, words, prog_name, complete_var, own_process=False, **extra) -> int:
        for stream in (sys.stdout, sys.stderr):
            output.spell_unencodable_in_ascii(stream)
        own_process = own_process and sys.stdout is not None  # then stdout is gradcheck's until the process ends
        stdout = output.take_stdout() if own_process else sys.stdout
        if stdout is None:  # `gradcheck ... >&-`: nowhere to put the results, so do no work
            return _report_output_failure(output.StdoutUnavailable(0, "stdout is closed"))
        after, sys.stdout = sys.stdout, output.HeldStdout(stdout)
        held = output.outlive(sys.stdout) if own_process else sys.stdout
        try:
            status = self._invoke(words, prog_name, complete_var, **extra)
        finally:
            sys.stdout = after
        output.leave_if_forked(status)
        if status == EXIT_INTERNAL_ERROR or status in {128 + number for number in output.ENDING_SIGNALS}:
            return status  # a defect or a signal: whatever was held is not a result
        return deliver(held.getvalue(), stdout, status)

    def _invoke(self, words, prog_name, complete_var, **extra) -> int:
        try:
            return super().main(words, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as error:
            return _report_click_error(error, words)
        except (click.Abort, KeyboardInterrupt) as interrupt:
            output.write_interrupted(interrupt)
            return exit_status(interrupt)
        except SystemExit:
            raise
        except BaseException as error:  # a defect in gradcheck: still one line, and never status 1
            return _report_defect(error)


def _exempt_from_collection() -> None:
    """Move every object made so far (the modules of Python, click and gradcheck, which live until the
    process ends) out of the cyclic garbage collector's reach, with ``gc.freeze()``.

    The interpreter's exit runs full collections that walk every such object: about a tenth of
    ``gradcheck quadratic``'s time (docs/performance.md §1). Whatever the command makes, the user's
    problem and its objects included, is made later and collected as before. Only for a process that
    runs its own command line and then exits (the console script, ``python -m gradcheck_cli``)."""
    freeze = getattr(gc, "freeze", None)  # CPython's
    if freeze is not None:
        freeze()


def _report_defect(error: BaseException) -> int:
    from ..core.blame import exception_line  # a defect is rare: scalar commands do not load blame

    output.write_line(f"Error: internal error in gradcheck: {exception_line(error)}")
    return exit_status(error)


# ------------------------------------------------------ option value types


class ChapterDefault:
    """A click default that ``--help`` shows as the chapter prints it (``1e-5``, ``0,2``).

    Click shows a plain float default with Python's repr (``1e-05``); a
    callable default is shown with ``str()`` and called for the value.
    """

    def __init__(self, value):
        self.value = value

    def __call__(self):
        return self.value

    def __str__(self):
        items = self.value if isinstance(self.value, tuple) else (self.value,)
        return ",".join(rust_debug(item) if isinstance(item, float) else str(item) for item in items)


# ---------------------------------------------------------------- commands


class Subcommand(NamedTuple):
    """Where a subcommand's command object is (``"module:command"`` in ``commands/``), and its summary,
    the command's ``short_help``: what ``gradcheck --help`` lists without importing the module."""

    target: str
    summary: str


#: Every subcommand: ``gradcheck X`` is the command object in ``commands/X.py``. A module is
#: imported only when its subcommand runs, so ``gradcheck quadratic`` builds 6 options, not 49.
SUBCOMMANDS = {
    "demo": Subcommand("demo:demo", "The chapter's whole demo, in the chapter's order."),
    "quadratic": Subcommand("quadratic:quadratic", "q(θ) = θ²: one central difference and its candidates."),
    "scan": Subcommand("scan:scan", "g(θ) = θ³ − 2θ: one check per step, with its error regime."),
    "identity": Subcommand("identity:identity", "f(x) = x with unequal actual spacings: the estimate is 1."),
    "kink": Subcommand("kink:kink", "f(x) = |x|: a false pass at the corner, which the slopes expose."),
    "nll": Subcommand("nll:nll_command", "Indexed mean NLL: sampled logit coordinates against a gradient."),
    "sample": Subcommand("sample:sample", "The deterministic coordinate sampler, or the coordinates check probes."),
    "check": Subcommand("check:check", "Check your own gradients, coordinate by coordinate."),
    "taylor": Subcommand("taylor:taylor", "The Taylor-remainder test of your gradient: no tolerance needed."),
    "schema": Subcommand("schema:schema", "The JSON Schema of each document --json writes."),
}


def summary(name: str) -> str:
    """The ``short_help`` of subcommand ``name``, from :data:`SUBCOMMANDS`."""
    return SUBCOMMANDS[name].summary


def _print_version(ctx, parameter, value) -> None:
    # click's version_option would translate its help text at import time, which loads locale.
    if value and not ctx.resilient_parsing:
        click.echo(f"gradcheck {__version__}")
        ctx.exit()


@click.group(
    name="gradcheck",
    cls=GradcheckGroup,
    lazy_commands=SUBCOMMANDS,
    context_settings={"show_default": True, "help_option_names": ["-h", "--help"]},
    epilog=(
        "Exit status: 0 when every comparison you asked for passed (the chapter's built-in "
        "wrong candidate and failing scan steps are demonstrations); 1 when a candidate you "
        "supplied with --analytic fails, or your problem fails check or taylor; 2 for bad "
        "input, with one line on stderr; 3 for an internal error in gradcheck; 74 when stdout "
        "cannot be written (a full disk, a closed descriptor); 130 when interrupted (Ctrl-C), "
        "128 + N for signal N (SIGHUP 129, SIGQUIT 131, SIGTERM 143); 141 when the reader of "
        "stdout goes away."
    ),
)
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_print_version,
    help="Show the version and exit.",
)
def main():
    """Check gradients before trusting backpropagation.

    Three-point finite differences from the actual floating-point probes
    fl(θ−h) and fl(θ+h), a scale-aware error max(1, |a|, |n|), and
    deterministic tensor coordinates (chapter 13). The chapter's examples
    (demo, quadratic, scan, identity, kink, nll, sample) and your own code
    (check, taylor). Every subcommand prints text, JSON (--json) or tables
    (--format table); gradcheck schema prints the JSON's schemas.
    """
