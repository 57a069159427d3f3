"""Option types and inputs that several subcommands share, loaded only by the commands that use them.

Number lists (``--steps 1,1e-1``), sample counts (``--samples 16|all``),
``--step auto``, arrays read from .npy or JSON files, the user's problem
(``PROBLEM`` of ``check`` and ``taylor``) and ``--plot FILE``. Kept apart
from :mod:`gradcheck_cli.cli.app` so that ``gradcheck quadratic`` does not load
them.
"""

import contextlib
import errno
import math
import os
import sys
from typing import NamedTuple

import click

from ...core.blame import exception_line, raised_in_users_code, raised_in_worker, user_location, user_traceback
from ...core.formatting import escaped
from ...display import output
from ...errors import (
    AtCoordinate,
    AtParameter,
    GradCheckError,
    NonFiniteEvaluation,
    NonScalarEvaluation,
    PlottingUnavailable,
    ProblemFunctionRaised,
    ProblemImportFailed,
)
from ...errors.command_line import InputFileError, ObjectiveRaised, ObjectiveReturned, OutOfMemory, UserCodeRaised

__all__ = [
    "NumberList",
    "SampleCount",
    "StepOrAuto",
    "FLOAT_LIST",
    "INT_LIST",
    "EXISTING_FILE",
    "PLOT_FILE",
    "load_array",
    "user_problem",
    "PROBLEM_HELP",
    "PARAM_OPTION",
    "problem_argument",
    "plot_target",
    "draw_plot",
]


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
EXISTING_FILE = click.Path(exists=True, dir_okay=False)
PLOT_FILE = click.Path(dir_okay=False)


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
            raw = _bounded_read(file, option, path)
    except OSError as error:
        raise InputFileError(option=option, path=path, problem=f"cannot be read: {error.strerror}") from None
    except MemoryError:
        raise InputFileError(option=option, path=path, problem="is too large for memory") from None
    if not raw.strip():
        raise InputFileError(option=option, path=path, problem="is empty")
    if raw.startswith(b"\x93NUMPY"):
        _check_npy_header(raw, option, path)
        try:
            array = np.load(io.BytesIO(raw), allow_pickle=False)
        except (ValueError, OSError, EOFError) as error:
            raise InputFileError(option=option, path=path, problem=f"is not a readable .npy array: {error}") from None
        except MemoryError:
            raise InputFileError(option=option, path=path, problem="is a .npy array too large for memory") from None
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
    try:
        return array.astype(np.float64)
    except MemoryError:
        raise InputFileError(option=option, path=path, problem="is too large for memory as float64") from None


#: The most bytes an input file may hold: its reading is bounded, so /dev/zero or a FIFO that never
#: ends is one line, not the machine's memory.
INPUT_LIMIT = 1 << 30
#: The bytes a JSON text can begin with.
_JSON_STARTS = {bytes([byte]) for byte in b'[{"-0123456789tfn'}


def _bounded_read(file, option: str, path: str) -> bytes:
    """The file's bytes, at most INPUT_LIMIT; refused at its first bytes when they are neither .npy nor JSON."""
    import json

    first = file.read(1 << 16)
    start = first.lstrip(b" \t\r\n\x00\xef\xbb\xbf\xff\xfe")[:1]  # JSON in UTF-8, -16 or -32, a BOM or not
    if first.strip() and not first.startswith(b"\x93NUMPY") and start not in _JSON_STARTS:
        try:
            json.loads(first)  # for its message, which the whole file would give too
        except ValueError as error:
            raise InputFileError(
                option=option, path=path, problem=f"is neither a .npy array nor JSON: {error}"
            ) from None
    pieces, size = [first], len(first)
    while pieces[-1] and size <= INPUT_LIMIT:
        pieces.append(file.read(min(1 << 24, INPUT_LIMIT + 1 - size)))
        size += len(pieces[-1])
    if size > INPUT_LIMIT:
        raise InputFileError(
            option=option, path=path, problem=f"holds more than {INPUT_LIMIT} bytes, the most gradcheck reads"
        )
    return b"".join(pieces)


def _check_npy_header(raw: bytes, option: str, path: str) -> None:
    """InputFileError unless the .npy header's shape and dtype account for exactly the data that follows.

    A 128-byte file may claim 10¹² elements; it is refused before anything is allocated.
    """
    import io

    import numpy as np

    stream = io.BytesIO(raw)
    try:
        version = np.lib.format.read_magic(stream)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(stream)
    except (ValueError, OSError, EOFError, TypeError) as error:
        raise InputFileError(option=option, path=path, problem=f"is not a readable .npy array: {error}") from None
    if dtype.hasobject:
        return  # np.load refuses it (allow_pickle=False) with its own message
    count = math.prod(shape)
    claimed, held = count * dtype.itemsize, len(raw) - stream.tell()
    if claimed != held:
        problem = (
            f"is not a readable .npy array: its header claims shape {list(shape)} of {dtype} "
            f"({count} elements, {claimed} bytes) but {held} bytes of data follow"
        )
        raise InputFileError(option=option, path=path, problem=problem)


@contextlib.contextmanager
def user_problem(reference: str, traceback: bool = False):
    """Load the user's problem for a command and keep the user's code apart from gradcheck's.

    Whatever the user's code prints goes to stderr, since stdout carries
    results only (a ``--json`` document must stay one document): ``print``,
    and anything written to file descriptor 1. An exception that comes out
    of the user's objective (SystemExit, GeneratorExit, any BaseException
    but KeyboardInterrupt)
    becomes :class:`ObjectiveRaised`, one line and exit 2: the library lets
    it propagate unchanged after restoring every array (from a worker process
    of ``--jobs`` too). Any other exception
    is gradcheck's own defect and is left alone, so it is reported as an
    internal error rather than blamed on the user; KeyboardInterrupt passes.
    The one line names the user's file and line; with ``traceback`` the
    user's frames are written to stderr in full first.
    """
    import dataclasses

    from ...engine.problem import load_problem

    raised = []

    def watched(objective):
        def call(parameters):
            process = os.getpid()
            output.USERS_CODE.depth += 1
            try:
                value = objective(parameters)
            except BaseException as error:
                if os.getpid() != process:
                    _leave_fork(error)
                raised.append(error)
                raise
            finally:
                output.USERS_CODE.depth -= 1
            if os.getpid() != process:
                _leave_fork(None)
            return value

        return call

    problem = None
    with contextlib.redirect_stdout(output.StderrView()), _descriptor_1_to_stderr(), _numpy_errors_apart() as apart:
        try:
            problem = load_problem(reference, adapt=_torch_code)
            yield dataclasses.replace(problem, objective=apart(watched(problem.objective)))
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # GeneratorExit and the user's own BaseException subclasses too
            in_worker = raised_in_worker(error)  # (location, traceback) as the worker saw them
            objectives = raised and error is raised[-1] or in_worker is not None
            users = (objectives or raised_in_users_code(error)) and not isinstance(error, GradCheckError)
            cause = error if users else error.__cause__ if isinstance(error, _USER_RAISED) else None
            if traceback and cause is not None:
                sys.stderr.write(user_traceback(cause) if in_worker is None else in_worker[1])
            if users:
                location = user_location(error) if in_worker is None else in_worker[0]
                blamed = ObjectiveRaised if objectives else UserCodeRaised
                raise blamed(reference=reference, error=exception_line(error) + location) from error
            if _returned_unusable(error):
                raise ObjectiveReturned(reference=reference, source=error) from error
            if isinstance(error, MemoryError) and problem is not None:
                raise _out_of_memory(reference, problem) from error
            raise


def _leave_fork(error) -> None:
    """End a child the user's objective forked, which came back into gradcheck (returned, or raised
    ``error``): at once, writing nothing, never through gradcheck's exit path; its status is
    ``SystemExit``'s code when that is a number, 0 after a return, else 1."""
    status = 1
    if error is None:
        status = 0
    elif isinstance(error, SystemExit):
        status = error.code if isinstance(error.code, int) else 0 if error.code is None else 1
    os._exit(status & 0xFF)


def _returned_unusable(error) -> bool:
    """Whether ``error`` (through the parameter and coordinate that wrap it) says what the objective returned."""
    while isinstance(error, (AtParameter, AtCoordinate)):
        error = error.source
    return isinstance(error, (NonFiniteEvaluation, NonScalarEvaluation))


def _out_of_memory(reference: str, problem) -> OutOfMemory:
    """OutOfMemory naming ``problem``'s largest parameter array."""
    import numpy as np

    arrays = [(name, value) for name, value in problem.parameters.items() if isinstance(value, np.ndarray)]
    name, array = max(arrays, key=lambda item: item[1].nbytes, default=("", np.empty(0)))
    size = f"{array.nbytes / 2**20:.1f} MiB"
    return OutOfMemory(reference=reference, parameter=name, elements=int(array.size), dtype=str(array.dtype), size=size)


@contextlib.contextmanager
def _numpy_errors_apart():
    """gradcheck's arithmetic under numpy's default error handling, whatever the user's module set
    (``np.seterr(all="raise")`` at import): the user's objective still runs under the user's own.
    Yields the wrapper that gives the objective its state back; numpy's state is gradcheck's again after."""
    import numpy as np

    ours = np.geterr()
    users = {}

    def apart(objective):
        users.update(np.geterr())
        if users == ours:
            return objective
        np.seterr(**ours)

        def call(parameters):
            with np.errstate(**users):
                return objective(parameters)

        return call

    try:
        yield apart
    finally:
        np.seterr(**ours)


@contextlib.contextmanager
def _descriptor_1_to_stderr():
    """Point file descriptor 1 at stderr meanwhile: ``os.write(1, ...)``, C code and ``os.system`` too.

    C's stdio buffers are flushed before descriptor 1 is given back, so that
    what a C extension printed lands on stderr as well.
    """
    for stream in (sys.stdout, sys.stderr, sys.__stdout__):
        if stream is not None:
            stream.flush()
    try:
        saved = os.dup(1)
    except OSError:  # descriptor 1 is closed: there is nothing to protect
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        _flush_c_stdio()
        os.dup2(saved, 1)
        os.close(saved)


def _flush_c_stdio() -> None:
    try:
        import ctypes

        ctypes.CDLL(None).fflush(None)
    except (ImportError, OSError, AttributeError, TypeError):
        pass


def _torch_code(returned, reference: str):
    """What the problem function returned, as a problem when it is torch or JAX code (gradcheck_cli.adapters.torch, .jax).

    Only once the user's code has imported torch (jax): gradcheck never imports
    either for a numpy problem. The user's function or loss raising during the
    analytic pass is ObjectiveRaised, as it is during the check.
    """
    adapters = []
    if "torch" in sys.modules:
        from ...adapters.torch import torch_problem

        adapters.append(torch_problem)
    if "jax" in sys.modules:
        from ...adapters.jax import jax_problem

        adapters.append(jax_problem)
    try:
        for adapter in adapters:
            returned = adapter(returned, reference)
        return returned
    except GradCheckError:
        raise
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # the user's function or loss, in the analytic pass
        error_line = exception_line(error) + user_location(error)
        blamed = ObjectiveRaised if isinstance(returned, (tuple, list)) and len(returned) == 2 else UserCodeRaised
        raise blamed(reference=reference.removesuffix("()"), error=error_line) from error


PROBLEM_HELP = (
    "PROBLEM is FILE.py:FUNCTION or package.module:FUNCTION: a function that takes no arguments and "
    "returns a GradientProblem(objective, parameters, gradients) or that tuple; the objective is "
    "called as objective(parameters). Torch code too: parameters and gradients may be torch tensors, "
    "and the function may return (fn, inputs) or (module, loss_fn) (see docs/torch.md); JAX code may return "
    "(fn, args) (see docs/jax.md)."
)
#: The errors that carry an exception of the user's code as their cause.
_USER_RAISED = (ProblemFunctionRaised, ProblemImportFailed, ObjectiveRaised)

TRACEBACK_OPTION = click.option(
    "--traceback",
    "show_traceback",
    is_flag=True,
    help="When your code raises, print its frames in full on stderr (the one-line error still ends it).",
)

PARAM_OPTION = click.option(
    "--param",
    "names",
    multiple=True,
    metavar="NAME",
    help="Only this parameter (repeat for several; the problem's order is kept). Default: all.",
)


def problem_argument(command):
    """The PROBLEM argument of ``check`` and ``taylor``; :data:`PROBLEM_HELP` explains it in their help."""
    return click.argument("problem", metavar="PROBLEM", required=False, callback=_problem_given)(command)


def _problem_given(ctx, param, value):
    # Required, but click's own message would not say what PROBLEM looks like.
    if value is None:
        raise click.MissingParameter(
            "Name it FILE.py:FUNCTION or package.module:FUNCTION, e.g. "
            f"gradcheck {ctx.info_name} examples/line.py:problem",
            ctx=ctx,
            param=param,
        )
    return value


class PlotTarget(NamedTuple):
    """A ``--plot`` file: as the user named it, and resolved against the starting directory."""

    shown: str
    absolute: str


def plot_target(path):
    """Validate ``--plot FILE`` before any work: a .png or .svg name, matplotlib installed, and a file
    that can be written, resolved now (an objective that changes directory does not move it)."""
    if path is None:
        return None
    import importlib.util

    from ...display.plotting import plot_format

    plot_format(path)
    if importlib.util.find_spec("matplotlib") is None:
        raise PlottingUnavailable()
    absolute = os.path.abspath(path)
    directory = os.path.dirname(absolute)
    if os.path.isdir(absolute):
        reason = errno.EISDIR
    elif not os.path.isdir(directory):
        reason = errno.ENOENT
    elif not os.access(absolute if os.path.exists(absolute) else directory, os.W_OK):
        reason = errno.EACCES
    else:
        return PlotTarget(path, absolute)
    raise InputFileError(option="--plot", path=path, problem=f"cannot be written: {os.strerror(reason)}")


def draw_plot(draw, path, *arguments, **keywords) -> None:
    """Call a :mod:`plotting` function that writes ``path`` (a PlotTarget); a file that cannot be written is bad input."""
    try:
        draw(*arguments, path.absolute, **keywords)
    except OSError as error:
        problem = f"cannot be written: {error.strerror or error}"
        raise InputFileError(option="--plot", path=path.shown, problem=problem) from None
    output.write_line(f"wrote {escaped(path.shown)}")
