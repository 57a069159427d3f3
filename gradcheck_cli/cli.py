"""The ``gradcheck`` command: parse options, call the library, hand the results to :mod:`render`.

No subcommand computes anything itself. Each one builds a :class:`Report`
(rendered sections plus the verdicts the user asked for) from library calls
and passes it to :func:`run`, which renders it and exits with the status that
:func:`exit_status` decides. Start-up matters: this module imports neither
numpy nor rich; the commands that need numpy import it inside their bodies,
and only :mod:`render` imports rich, inside its table functions.

A new subcommand is a handful of lines::

    @main.command()
    @click.option("--point", type=float, default=2.0, help="The point θ.")
    @click.option("--analytic", type=float, default=12.0, help="Your candidate for c'(θ).")
    @output_options
    def cube(output_format, point, analytic):
        '''c(θ) = θ³.'''
        def compute():
            check = scalar_gradient_check(point, analytic, 1e-5, 1e-6, lambda x: x**3)
            return Report((render.scalar_check("cube", check),), user_verdicts=(check.comparison.passed,))
        run(output_format, compute)
"""

import contextlib
import functools
import os
import sys

import click

from . import __version__, chapter, render
from .errors import CommandLineError, GradCheckError, InputFileError, ObjectiveRaised, PlottingUnavailable
from .estimator import validate_step, validate_tolerance
from .formatting import rust_debug
from .scan import __doc__ as _scan_doc

__all__ = [
    "EXIT_OK",
    "EXIT_CANDIDATE_FAILED",
    "EXIT_BAD_INPUT",
    "EXIT_INTERNAL_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_BROKEN_PIPE",
    "CommandLineError",
    "InputFileError",
    "ObjectiveRaised",
    "Report",
    "exit_status",
    "output_options",
    "run",
    "load_array",
    "main",
]

EXIT_OK = 0
EXIT_CANDIDATE_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_INTERNAL_ERROR = 3
EXIT_INTERRUPTED = 130
EXIT_BROKEN_PIPE = 141


class Report:
    """What a subcommand produced: the sections to render and the user's verdicts.

    ``user_verdicts`` holds one ``passed`` per verdict on something the user
    supplied: a candidate (``--analytic``) or a problem (``check``,
    ``taylor``); the chapter's built-in candidates are demonstrations and
    never count.
    """

    __slots__ = ("sections", "user_verdicts")

    def __init__(self, sections, user_verdicts=()):
        self.sections, self.user_verdicts = tuple(sections), tuple(user_verdicts)


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
    - 130: interrupted (Ctrl-C);
    - 141: the reader of stdout went away (``gradcheck demo | head``), as a
      shell reports a process killed by SIGPIPE.
    """
    if isinstance(outcome, BrokenPipeError):
        return EXIT_BROKEN_PIPE
    if isinstance(outcome, (GradCheckError, click.ClickException)):
        return EXIT_BAD_INPUT
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
    return click.option(
        "--format",
        "format_name",
        type=click.Choice(render.FORMATS),
        is_eager=True,
        expose_value=False,
        callback=_choose_format,
        help="text (the default): chapter-style key=value lines; json: one strict JSON document; "
        "table: rich tables.",
    )(with_output_format)


# ------------------------------------------------------------- the run path


def run(output_format: str, compute) -> None:
    """Call ``compute() -> Report``, render it, and exit with :func:`exit_status`.

    A rejected request (any GradCheckError) becomes one line on stderr, its
    ``to_dict()`` under "error" on stdout for JSON, and exit status 2.
    """
    ctx = click.get_current_context()
    try:
        report = compute()
    except GradCheckError as error:
        render.write_error(error, output_format)
        ctx.exit(exit_status(error))
    except KeyboardInterrupt as interrupt:
        # Caught here rather than by click, which would print an empty line first.
        render.write_interrupted()
        ctx.exit(exit_status(interrupt))
    try:
        render.write(report.sections, output_format)
        sys.stdout.flush()
    except BrokenPipeError as closed:
        # Nobody reads the rest; keep the interpreter from failing again at its final flush.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        ctx.exit(exit_status(closed))
    ctx.exit(exit_status(report))


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
    param = getattr(error, "param", None)
    if isinstance(param, click.Argument):
        option = param.human_readable_name  # PROBLEM, as the usage line names it
    else:
        option = param.opts[0] if param is not None and getattr(param, "opts", None) else None
    problem = CommandLineError(option=option, problem=error.format_message())
    settled = None if ctx is None else ctx.meta.get(_OUTPUT_FORMAT)
    # click stops at an unknown option (or one without its value) before any option callback
    # runs, so the format is not settled yet: read it from the words.
    render.write_error(problem, settled or _format_in_words(words))
    return exit_status(error)


class GradcheckGroup(click.Group):
    """click's group with gradcheck's error contract: one line on stderr, exit 2, no traceback."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        words = list(sys.argv[1:] if args is None else args)
        try:
            status = super().main(words, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as error:
            status = _report_click_error(error, words)
        except click.Abort as interrupt:
            render.write_interrupted()
            status = exit_status(interrupt)
        except Exception as error:  # a defect in gradcheck: still one line, and never status 1
            from .problem import _one_line

            click.echo(f"Error: internal error in gradcheck: {_one_line(error)}", err=True)
            status = exit_status(error)
        if standalone_mode:
            sys.exit(status)
        return status


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


class NumberList(click.ParamType):
    """Comma-separated numbers, optionally in brackets: ``1,1e-1,1e-3`` or ``[2, 3]``."""

    def __init__(self, kind: type, example: str):
        self.kind, self.example = kind, example
        self.noun = "whole number" if kind is int else "number"
        self.name = f"{kind.__name__}-list"

    def convert(self, value, param, ctx):
        if isinstance(value, (tuple, list)):
            return tuple(value)
        expected = f"expected comma-separated {self.noun}s like {self.example}"
        text = value.strip()
        if text.startswith("[") and text.endswith("]"):
            text = text[1:-1]
        items = [item.strip() for item in text.split(",")]
        if items == [""]:
            self.fail(f"{value!r} is empty; {expected}", param, ctx)
        numbers = []
        for item in items:
            try:
                numbers.append(self.kind(item))
            except ValueError:
                where = "" if len(items) == 1 else f" in {value!r}"
                self.fail(f"{item!r}{where} is not a {self.noun}; {expected}", param, ctx)
        return tuple(numbers)


class SampleCount(click.ParamType):
    """``--samples``: a positive whole number, or ``all`` for every coordinate."""

    name = "samples"

    def convert(self, value, param, ctx):
        if value == "all" or (isinstance(value, int) and not isinstance(value, bool) and value > 0):
            return value
        try:
            count = int(value.strip())
        except ValueError:
            count = 0
        if count <= 0:
            self.fail(f'{value!r} is neither a positive whole number nor "all"', param, ctx)
        return count


class StepOrAuto(click.ParamType):
    """``--step``: a number, or ``auto`` for the advised step of each parameter."""

    name = "step"

    def convert(self, value, param, ctx):
        if value == "auto" or isinstance(value, float):
            return value
        try:
            return float(value)
        except ValueError:
            self.fail(f'{value!r} is neither a number nor "auto"', param, ctx)


FLOAT_LIST = NumberList(float, "1,1e-1,1e-3")
INT_LIST = NumberList(int, "2,3")
_EXISTING_FILE = click.Path(exists=True, dir_okay=False)
_PLOT_FILE = click.Path(dir_okay=False)


def load_array(path: str, option: str):
    """A float64 array from a .npy file or a JSON nested list of real numbers.

    The format is recognised by content (the .npy magic bytes), not by the
    file name. Raises InputFileError for anything else.
    """
    import io
    import json

    import numpy as np

    try:
        with open(path, "rb") as file:
            raw = file.read()
    except OSError as error:
        raise InputFileError(option=option, path=path, problem=f"cannot be read: {error.strerror}") from None
    if not raw.strip():
        raise InputFileError(option=option, path=path, problem="is empty")
    if raw.startswith(b"\x93NUMPY"):
        try:
            array = np.load(io.BytesIO(raw), allow_pickle=False)
        except (ValueError, OSError, EOFError) as error:
            raise InputFileError(option=option, path=path, problem=f"is not a readable .npy array: {error}") from None
    else:
        try:
            data = json.loads(raw)
        except ValueError as error:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            problem = f"is neither a .npy array nor JSON: {error}"
            raise InputFileError(option=option, path=path, problem=problem) from None
        except RecursionError:
            raise InputFileError(option=option, path=path, problem="nests its lists too deeply") from None
        try:
            array = np.array(data)
        except (ValueError, TypeError, OverflowError, RecursionError):
            array = None
        if array is None or array.dtype == object:
            raise InputFileError(option=option, path=path, problem="is not a rectangular nested list of numbers")
    if array.dtype.kind not in "iuf" or array.dtype.itemsize > 8:
        raise InputFileError(option=option, path=path, problem=f"must hold real numbers, got dtype {array.dtype}")
    return array.astype(np.float64)


@contextlib.contextmanager
def user_problem(reference: str):
    """Load the user's problem for a command and keep the user's code apart from gradcheck's.

    Whatever the user's code prints goes to stderr, since stdout carries
    results only (a ``--json`` document must stay one document). An
    exception that comes out of the user's objective (SystemExit included)
    becomes :class:`ObjectiveRaised`, one line and exit 2: the library lets
    it propagate unchanged after restoring every array. Any other exception
    is gradcheck's own defect and is left alone, so it is reported as an
    internal error rather than blamed on the user; KeyboardInterrupt passes.
    """
    import dataclasses

    from .problem import _one_line, load_problem

    raised = []

    def watched(objective):
        def call(parameters):
            try:
                return objective(parameters)
            except BaseException as error:
                raised.append(error)
                raise

        return call

    with contextlib.redirect_stdout(sys.stderr):
        try:
            problem = load_problem(reference)
            yield dataclasses.replace(problem, objective=watched(problem.objective))
        except (Exception, SystemExit) as error:
            if raised and error is raised[-1] and not isinstance(error, GradCheckError):
                raise ObjectiveRaised(reference=reference, error=_one_line(error)) from error
            raise


def plot_target(path):
    """Validate ``--plot FILE`` before any work: a .png or .svg name, and matplotlib installed."""
    if path is None:
        return None
    import importlib.util

    from .plotting import plot_format

    plot_format(path)
    if importlib.util.find_spec("matplotlib") is None:
        raise PlottingUnavailable()
    return path


def draw_plot(draw, path, *arguments, **keywords) -> None:
    """Call a :mod:`plotting` function that writes ``path``; a file that cannot be written is bad input."""
    try:
        draw(*arguments, path, **keywords)
    except OSError as error:
        problem = f"cannot be written: {error.strerror or error}"
        raise InputFileError(option="--plot", path=path, problem=problem) from None
    click.echo(f"wrote {path}", err=True)


# ---------------------------------------------------------------- commands


@click.group(
    name="gradcheck",
    cls=GradcheckGroup,
    context_settings={"show_default": True, "help_option_names": ["-h", "--help"]},
    epilog=(
        "Exit status: 0 when every comparison you asked for passed (the chapter's built-in "
        "wrong candidate and failing scan steps are demonstrations); 1 when a candidate you "
        "supplied with --analytic fails, or your problem fails check or taylor; 2 for bad "
        "input, with one line on stderr; 3 for an internal error in gradcheck; 130 when interrupted; "
        "141 when the reader of stdout goes away."
    ),
)
@click.version_option(__version__, "--version", prog_name="gradcheck", message="%(prog)s %(version)s")
def main():
    """Check gradients before trusting backpropagation.

    Three-point finite differences from the actual floating-point probes
    fl(θ−h) and fl(θ+h), a scale-aware error max(1, |a|, |n|), and
    deterministic tensor coordinates (chapter 13). The chapter's examples
    (demo, quadratic, scan, identity, kink, nll, sample) and your own code
    (check, taylor). Every subcommand prints text, JSON (--json) or tables
    (--format table).
    """


_STEP_TOLERANCE = ChapterDefault(chapter.STEP_TOLERANCE)


def _chapter_quadratic(point, step, tolerance, analytic=()) -> Report:

    if analytic:
        candidates, labels = analytic, ["candidate"] * len(analytic)
    else:
        wrong = chapter.QUADRATIC_CANDIDATES[1]
        candidates, labels = (chapter.quadratic_derivative(point), wrong), ("correct candidate", "wrong candidate")
    checks = [chapter.quadratic_gradient_check(candidate, point, step, tolerance) for candidate in candidates]
    verdicts = tuple(check.comparison.passed for check in checks) if analytic else ()
    return Report((render.quadratic(checks, labels),), verdicts)


def _chapter_rejected_requests() -> dict:
    """The chapter's four rejected requests, each with the typed error the library raises."""
    import numpy as np

    from . import estimator, nll, tensors

    requests = {
        "zero step": lambda: estimator.central_difference(chapter.COLLAPSED_POINT, 0.0, chapter.quadratic),
        "step leaves the point unchanged": chapter.collapsed_step_error,
        "non-finite objective value": lambda: estimator.central_difference(
            chapter.COLLAPSED_POINT, chapter.QUADRATIC_STEP, lambda point: float("nan")
        ),
        "shape mismatch": lambda: tensors.sampled_tensor_gradient_check(
            np.zeros(2), np.zeros((1, 2)), nll.TENSOR_STEP, nll.TENSOR_TOLERANCE, nll.TENSOR_SAMPLES, sum
        ),
    }
    errors = {}
    for request, attempt in requests.items():
        try:
            outcome = attempt()
        except GradCheckError as error:
            outcome = error
        if not isinstance(outcome, GradCheckError):
            raise AssertionError(f"the chapter's rejected request {request!r} was accepted")
        errors[request] = outcome
    return errors


@main.command()
@output_options
def demo(output_format):
    """The chapter's whole demo, in the chapter's order.

    The quadratic with candidate 6 and the wrong candidate 5.5, the rounded
    identity, the |x| kink, the six-step cubic scan, the NLL coordinates with
    exact restoration, and the rejected requests. Always exits 0: every
    failing comparison here is a demonstration.
    """

    def compute():
        from . import nll

        quadratic_report = _chapter_quadratic(chapter.QUADRATIC_POINT, chapter.QUADRATIC_STEP, chapter.STEP_TOLERANCE)
        return Report(
            (
                *quadratic_report.sections,
                render.identity(chapter.rounded_identity_gradient_check()),
                render.kink(chapter.absolute_kink_diagnostic()),
                render.scan(chapter.cubic_step_scan()),
                render.nll(nll.nll_gradient_check()),
                render.rejected(_chapter_rejected_requests()),
            )
        )

    run(output_format, compute)


@main.command()
@click.option("--point", type=float, default=ChapterDefault(chapter.QUADRATIC_POINT), help="The point θ.")
@click.option("--step", type=float, default=ChapterDefault(chapter.QUADRATIC_STEP), help="The requested step h.")
@click.option("--tolerance", type=float, default=_STEP_TOLERANCE, help="The scaled-error tolerance.")
@click.option(
    "--analytic",
    type=float,
    multiple=True,
    metavar="X",
    help="Your candidate for q'(θ); repeat for several. Exit 1 if one fails. "
    "Without it: the hand derivative 2θ (the chapter's 6) and the chapter's wrong candidate 5.5.",
)
@output_options
def quadratic(output_format, point, step, tolerance, analytic):
    """q(θ) = θ²: one central difference and its candidates."""
    run(output_format, lambda: _chapter_quadratic(point, step, tolerance, analytic))


# The rule is scan.py's docstring, word for word (without its reST code markup).
_REGIME_RULE = _scan_doc[_scan_doc.index("1. ") :].rstrip().replace("``", "")


@main.command(
    help=(
        "g(θ) = θ³ − 2θ against 3θ² − 2: one check per requested step, "
        "each labelled with its error regime.\n\n"
        "The regime comes from the records alone, at any point and step list:\n\n"
        "\b\n" + _REGIME_RULE + "\n\n"
        "A failing step is a demonstration, not a failed command: scan exits 0.\n\n"
        "--advise adds the step advice, which never looks at the analytic value: "
        "a geometric sequence of steps, each estimate's error estimated from its "
        "neighbours (Richardson) and from the rounding floor ε·|f| over the actual "
        "spacing, and the step with the smallest estimated error."
    )
)
@click.option("--point", type=float, default=ChapterDefault(chapter.CUBIC_POINT), help="The point θ.")
@click.option(
    "--steps",
    type=FLOAT_LIST,
    default=ChapterDefault(chapter.STEP_SCAN),
    metavar="H,H,...",
    help="Requested steps, comma-separated.",
)
@click.option("--tolerance", type=float, default=_STEP_TOLERANCE, help="The scaled-error tolerance.")
@click.option(
    "--advise",
    is_flag=True,
    help="Also advise a step without the analytic value: each step's estimated error and regime "
    "(truncation, advised, rounding).",
)
@click.option(
    "--plot",
    type=_PLOT_FILE,
    metavar="FILE",
    help="Also draw the scaled error against the step into FILE.png or FILE.svg (needs matplotlib).",
)
@output_options
def scan(output_format, point, steps, tolerance, advise, plot):
    def compute():
        plot_path = plot_target(plot)
        records = chapter.cubic_step_scan(point, steps, tolerance)
        advice = None
        if advise:
            from .advice import advise_step

            advice = advise_step(point, chapter.cubic)
        if plot_path is not None:
            from .plotting import plot_scan

            draw_plot(plot_scan, plot_path, records, advice=advice)
        sections = [render.scan(records, advice)]
        if advice is not None:
            title = "Step advice for g(θ) = θ³ − 2θ (no analytic value)"
            sections.append(render.step_advice(advice, "advice", title))
        return Report(sections)

    run(output_format, compute)


@main.command()
@click.option("--point", type=float, default=ChapterDefault(chapter.IDENTITY_POINT), help="The point x.")
@click.option(
    "--step",
    type=float,
    default=ChapterDefault(chapter.IDENTITY_STEP),
    help="The requested step h (the default lands the probes at unequal distances 2⁻⁵³ and 2⁻⁵²).",
)
@click.option("--tolerance", type=float, default=_STEP_TOLERANCE, help="The scaled-error tolerance.")
@output_options
def identity(output_format, point, step, tolerance):
    """f(x) = x with unequal actual spacings: both slopes are 1, so the estimate is 1."""

    def compute():

        return Report((render.identity(chapter.rounded_identity_gradient_check(point, step, tolerance)),))

    run(output_format, compute)


@main.command()
@click.option("--point", type=float, default=ChapterDefault(chapter.KINK_POINT), help="The point x.")
@click.option("--step", type=float, default=ChapterDefault(chapter.KINK_STEP), help="The requested step h.")
@click.option(
    "--tolerance",
    type=float,
    default=ChapterDefault(chapter.KINK_TOLERANCE),
    help="The tolerance for the candidate and for the one-sided slopes.",
)
@output_options
def kink(output_format, point, step, tolerance):
    """f(x) = |x|: candidate 0 at the corner passes, a false pass the slopes expose.

    The one-sided slopes -1 and 1 disagree; agreement would still not prove
    that a derivative exists.
    """

    def compute():

        return Report((render.kink(chapter.absolute_kink_diagnostic(point, step, tolerance)),))

    run(output_format, compute)


@main.command("nll")
@click.option(
    "--samples", type=int, default=ChapterDefault(chapter.TENSOR_SAMPLES), help="How many coordinates to check."
)
@click.option("--step", type=float, default=ChapterDefault(chapter.TENSOR_STEP), help="The requested step h.")
@click.option("--tolerance", type=float, default=ChapterDefault(chapter.TENSOR_TOLERANCE), help="The tolerance.")
@click.option(
    "--logits",
    type=_EXISTING_FILE,
    metavar="FILE",
    help="[rows, vocab] logits: .npy or a JSON nested list. Default: the chapter's [2, 3] fixture.",
)
@click.option(
    "--targets",
    type=INT_LIST,
    default=ChapterDefault(chapter.TARGETS),
    metavar="T,T,...",
    help="One target class per row.",
)
@click.option(
    "--analytic",
    type=_EXISTING_FILE,
    metavar="FILE",
    help="Your gradient of the mean NLL (.npy or JSON, same shape); exit 1 if a sampled coordinate fails. "
    "Default: the hand-derived path.",
)
@output_options
def nll_command(output_format, samples, step, tolerance, logits, targets, analytic):
    """Indexed mean NLL: sampled logit coordinates against an analytic gradient.

    The parameters are perturbed in place and restored bit-exactly.
    """

    def compute():
        from . import nll

        logit_array = None if logits is None else load_array(logits, "--logits")
        analytic_array = None if analytic is None else load_array(analytic, "--analytic")
        example = nll.nll_gradient_check(logit_array, targets, analytic_array, step, tolerance, samples)
        return Report((render.nll(example),), (example.check.passed,) if analytic is not None else ())

    run(output_format, compute)


@main.command()
@click.option("--shape", type=INT_LIST, required=True, metavar="N,N,...", help="The tensor's shape, e.g. 2,3.")
@click.option(
    "--max-samples", type=int, default=ChapterDefault(chapter.TENSOR_SAMPLES), help="R: at most this many coordinates."
)
@output_options
def sample(output_format, shape, max_samples):
    """The deterministic coordinate sampler: flat offsets ⌊k(N−1)/(S−1)⌋ and their coordinates.

    Pure integer arithmetic: no tensor is allocated, so any shape answers at once.
    """

    def compute():
        from .sampling import sample_tensor_coordinates

        return Report((render.sample(sample_tensor_coordinates(shape, max_samples)),))

    run(output_format, compute)


_PROBLEM_HELP = (
    "PROBLEM is FILE.py:FUNCTION or package.module:FUNCTION: a function that takes no arguments and "
    "returns a GradientProblem(objective, parameters, gradients) or that tuple; the objective is "
    "called as objective(parameters)."
)
_PARAM_OPTION = click.option(
    "--param",
    "names",
    multiple=True,
    metavar="NAME",
    help="Only this parameter (repeat for several; the problem's order is kept). Default: all.",
)


def _problem_argument(command):
    return click.argument("problem", metavar="PROBLEM")(command)


@main.command(
    short_help="Check your own gradients, coordinate by coordinate.",
    help=(
        "Check your own gradients: every parameter of PROBLEM, coordinate by coordinate.\n\n"
        + _PROBLEM_HELP
        + "\n\n"
        "Each selected coordinate is perturbed in place, at the probes rounded into the "
        "parameter's dtype, and restored bit-exactly. A coordinate passes when its scaled "
        "error is within the tolerance and its one-sided slopes agree (otherwise it is a "
        "suspected kink, never evidence); every center value must be bit-identical "
        "(otherwise the objective is nondeterministic or stateful).\n\n"
        "Exit status: 0 when every coordinate passes, 1 when any does not, 2 for bad input "
        "(including an exception raised by the objective)."
    ),
)
@_problem_argument
@click.option(
    "--samples",
    type=SampleCount(),
    default=chapter.CHECK_SAMPLES,
    metavar="N|all",
    help="Coordinates per parameter (the chapter's deterministic sampler), or all of them.",
)
@click.option(
    "--step",
    type=StepOrAuto(),
    metavar="H|auto",
    help="The requested step h for every coordinate, or auto: each parameter at the step advised "
    "for one representative coordinate. Default: ε^(1/3)·max(1, |θ|) of the parameter's dtype. "
    "The kink tolerance goes with the step: max(ε^(1/6), √(h/max(1, |θ|))).",
)
@click.option(
    "--tolerance",
    type=float,
    help="The scaled-error tolerance. Default: ε^(1/3) of the parameter's dtype.",
)
@_PARAM_OPTION
@output_options
def check(output_format, problem, samples, step, tolerance, names):
    def compute():
        if step != "auto" and step is not None:
            validate_step(step)
        if tolerance is not None:
            validate_tolerance(tolerance)
        from .check import check_problem

        selected = list(names) or None
        with user_problem(problem) as loaded:
            with render.ProgressBar("checking coordinates") as progress:
                report = check_problem(
                    loaded, samples=samples, step=step, tolerance=tolerance, names=selected, progress=progress
                )
        return Report((render.check(report),), (report.passed,))

    run(output_format, compute)


@main.command(
    short_help="The Taylor-remainder test of your gradient: no tolerance needed.",
    help=(
        "The Taylor-remainder test of PROBLEM: a verdict on the whole gradient that needs no tolerance.\n\n"
        + _PROBLEM_HELP
        + "\n\n"
        "Along a deterministic unit direction d, the remainder f(x + Δ) − f(x) − g·Δ, with Δ the "
        "displacement actually stored, shrinks like h² when the gradient g is right and like h "
        "when it is wrong. The order is fitted where rounding does not dominate: order ≥ 1.75 "
        "passes, 0.75 to 1.25 fails, anything else is inconclusive.\n\n"
        "Exit status: 0 when it passes, 1 when it fails or is inconclusive, 2 for bad input."
    ),
)
@_problem_argument
@_PARAM_OPTION
@click.option("--seed", type=int, default=chapter.TAYLOR_SEED, help="Selects the deterministic direction d.")
@click.option(
    "--plot",
    type=_PLOT_FILE,
    metavar="FILE",
    help="Also draw |R| against h, with reference slopes 1 and 2, into FILE.png or FILE.svg (needs matplotlib).",
)
@output_options
def taylor(output_format, problem, names, seed, plot):
    def compute():
        plot_path = plot_target(plot)
        from .taylor import taylor_test

        with user_problem(problem) as loaded:
            result = taylor_test(loaded, names=list(names) or None, seed=seed)
        if plot_path is not None:
            from .plotting import plot_taylor

            draw_plot(plot_taylor, plot_path, result)
        return Report((render.taylor(result),), (result.passed,))

    run(output_format, compute)
