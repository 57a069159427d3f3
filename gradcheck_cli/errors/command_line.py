"""The errors only the command line raises: a malformed command line, an unusable input file, a failing objective;
and :func:`in_flags`, which names in a library message the flags that set the parameters it names."""

import ast
import re
import shlex

from .record import GradCheckError

#: The error classes only (the error schema has one kind per name); in_flags is imported by name.
__all__ = [
    "CommandLineError",
    "InputFileError",
    "ObjectiveRaised",
    "ObjectiveReturned",
    "UserCodeRaised",
    "OutOfMemory",
    "ExecutorUnavailable",
]


class CommandLineError(GradCheckError):
    """The command line is malformed: an unknown option, a missing or malformed value."""

    fields = ("option", "problem")

    template = "{problem}"


class InputFileError(GradCheckError):
    """An input file holds no usable array: unreadable, not .npy or JSON, or not real numbers."""

    fields = ("option", "path", "problem")

    template = "{option} file '{path}' {problem}"


class ObjectiveRaised(GradCheckError):
    """The user's objective raised an exception (not a GradCheckError) during a check."""

    fields = ("reference", "error")

    template = "the objective of {reference} raised {error}"


class ObjectiveReturned(GradCheckError):
    """The user's objective returned what a check cannot use (NaN, an infinity, not one real number)."""

    fields = ("reference", "source")

    template = "the objective of {reference}: {source}"


class UserCodeRaised(GradCheckError):
    """The user's own code beside the objective (a mapping's or an array's method) raised during a check."""

    fields = ("reference", "error")

    template = "the code of {reference} raised {error}"


class OutOfMemory(GradCheckError):
    """gradcheck's own working arrays for the user's problem did not fit in memory."""

    fields = ("reference", "parameter", "elements", "dtype", "size")

    template = (
        "not enough memory for gradcheck's working arrays of {reference}: its largest parameter "
        "{parameter!r} holds {elements} {dtype} elements ({size}), and a check needs a "
        "few copies of it; check fewer coordinates (--samples), or on a machine with more memory"
    )


class ExecutorUnavailable(GradCheckError):
    """``--executor``'s engine cannot be used: dask.distributed is not installed, or no scheduler answered."""

    fields = ("address", "problem")
    template = "--executor {address} cannot be used: {problem}"


#: How the library's messages name a parameter, and the same words as the command line's flags.
FLAG_NAMES = {
    "with jobs=1": "with jobs=1 (--jobs 1)",
    "(parameter step)": "(--step)",
    "(samples='all')": "(--samples all)",
}


#: How a library message asks for every coordinate of one parameter: ``(samples='all', names=['W'])``.
EVERY_COORDINATE_OF = re.compile(r"\(samples='all', names=\[(.+?)\]\)")


def _every_coordinate_flags(match: re.Match) -> str:
    return f"(--samples all --param {shlex.quote(ast.literal_eval(match.group(1)))})"


def in_flags(message: str) -> str:
    """A library message with the command line's flags where it names the parameters they set."""
    for words, with_flag in FLAG_NAMES.items():
        message = message.replace(words, with_flag)
    return EVERY_COORDINATE_OF.sub(_every_coordinate_flags, message)
