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

import functools
import sys

import click

from . import __version__, chapter, render
from .errors import CommandLineError, GradCheckError, InputFileError
from .formatting import rust_debug
from .scan import __doc__ as _scan_doc

__all__ = [
    "EXIT_OK",
    "EXIT_CANDIDATE_FAILED",
    "EXIT_BAD_INPUT",
    "EXIT_INTERRUPTED",
    "CommandLineError",
    "InputFileError",
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
EXIT_INTERRUPTED = 130


class Report:
    """What a subcommand produced: the sections to render and the user's verdicts.

    ``user_verdicts`` holds one ``passed`` per comparison against a candidate
    the user supplied (``--analytic``); the chapter's built-in candidates are
    demonstrations and never count.
    """

    __slots__ = ("sections", "user_verdicts")

    def __init__(self, sections, user_verdicts=()):
        self.sections, self.user_verdicts = tuple(sections), tuple(user_verdicts)


def exit_status(outcome) -> int:
    """gradcheck's exit status, decided here and nowhere else.

    - 0: the command completed and every comparison the user asked for passed;
    - 1: a candidate the user supplied with ``--analytic`` failed;
    - 2: bad input, a click usage error or a rejected request (GradCheckError);
    - 130: interrupted.
    """
    if isinstance(outcome, (GradCheckError, click.ClickException)):
        return EXIT_BAD_INPUT
    if isinstance(outcome, (KeyboardInterrupt, click.Abort)):
        return EXIT_INTERRUPTED
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
    render.write(report.sections, output_format)
    ctx.exit(exit_status(report))


def _report_click_error(error: click.ClickException) -> int:
    ctx = getattr(error, "ctx", None)
    if isinstance(error, click.exceptions.NoArgsIsHelpError):
        error.show()  # bare `gradcheck`: click's help on stderr
        return exit_status(error)
    param = getattr(error, "param", None)
    option = param.opts[0] if param is not None and getattr(param, "opts", None) else None
    problem = CommandLineError(option=option, problem=error.format_message())
    render.write_error(problem, _requested_format(ctx))
    return exit_status(error)


class GradcheckGroup(click.Group):
    """click's group with gradcheck's error contract: one line on stderr, exit 2, no traceback."""

    def main(self, args=None, prog_name=None, complete_var=None, standalone_mode=True, **extra):
        try:
            status = super().main(args, prog_name, complete_var, standalone_mode=False, **extra)
        except click.ClickException as error:
            status = _report_click_error(error)
        except click.Abort as interrupt:
            click.echo("Error: interrupted", err=True)
            status = exit_status(interrupt)
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


FLOAT_LIST = NumberList(float, "1,1e-1,1e-3")
INT_LIST = NumberList(int, "2,3")
_EXISTING_FILE = click.Path(exists=True, dir_okay=False)


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
        try:
            array = np.array(data)
        except (ValueError, TypeError, OverflowError):
            array = None
        if array is None or array.dtype == object:
            raise InputFileError(option=option, path=path, problem="is not a rectangular nested list of numbers")
    if array.dtype.kind not in "iuf" or array.dtype.itemsize > 8:
        raise InputFileError(option=option, path=path, problem=f"must hold real numbers, got dtype {array.dtype}")
    return array.astype(np.float64)


# ---------------------------------------------------------------- commands


@click.group(
    name="gradcheck",
    cls=GradcheckGroup,
    context_settings={"show_default": True, "help_option_names": ["-h", "--help"]},
    epilog=(
        "Exit status: 0 when every comparison you asked for passed (the chapter's built-in "
        "wrong candidate and failing scan steps are demonstrations); 1 when a candidate you "
        "supplied with --analytic fails; 2 for bad input, with one line on stderr."
    ),
)
@click.version_option(__version__, "--version", prog_name="gradcheck", message="%(prog)s %(version)s")
def main():
    """Check gradients before trusting backpropagation.

    Three-point finite differences from the actual floating-point probes
    fl(θ−h) and fl(θ+h), a scale-aware error max(1, |a|, |n|), and
    deterministic tensor coordinates (chapter 13). Every subcommand prints
    text, JSON (--json) or tables (--format table).
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
        "A failing step is a demonstration, not a failed command: scan exits 0."
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
@output_options
def scan(output_format, point, steps, tolerance):
    def compute():

        return Report((render.scan(chapter.cubic_step_scan(point, steps, tolerance)),))

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
