"""The errors only the command line raises: a malformed command line, an unusable input file, a failing objective."""

from .errors import GradCheckError

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

    def describe(self):
        return self.problem


class InputFileError(GradCheckError):
    """An input file holds no usable array: unreadable, not .npy or JSON, or not real numbers."""

    fields = ("option", "path", "problem")

    def describe(self):
        return f"{self.option} file '{self.path}' {self.problem}"


class ObjectiveRaised(GradCheckError):
    """The user's objective raised an exception (not a GradCheckError) during a check."""

    fields = ("reference", "error")

    def describe(self):
        return f"the objective of {self.reference} raised {self.error}"


class ObjectiveReturned(GradCheckError):
    """The user's objective returned what a check cannot use (NaN, an infinity, not one real number)."""

    fields = ("reference", "source")

    def describe(self):
        return f"the objective of {self.reference}: {self.source}"


class UserCodeRaised(GradCheckError):
    """The user's own code beside the objective (a mapping's or an array's method) raised during a check."""

    fields = ("reference", "error")

    def describe(self):
        return f"the code of {self.reference} raised {self.error}"


class OutOfMemory(GradCheckError):
    """gradcheck's own working arrays for the user's problem did not fit in memory."""

    fields = ("reference", "parameter", "elements", "dtype", "size")

    def describe(self):
        return (
            f"not enough memory for gradcheck's working arrays of {self.reference}: its largest parameter "
            f"{self.parameter!r} holds {self.elements} {self.dtype} elements ({self.size}), and a check needs a "
            "few copies of it; check fewer coordinates (--samples), or on a machine with more memory"
        )


class ExecutorUnavailable(GradCheckError):
    """``--executor``'s engine cannot be used: dask.distributed is not installed, or no scheduler answered."""

    fields = ("address", "problem")

    def describe(self):
        return f"--executor {self.address} cannot be used: {self.problem}"
