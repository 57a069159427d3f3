"""The requests refused about the user's code: loading a problem, torch and JAX calls, worker processes."""

from ..core.installs import INSTALL
from .record import GradCheckError

# Loading a problem from FILE.py:FUNCTION or package.module:FUNCTION (problem.py).


class InvalidProblemReference(GradCheckError):
    """The problem reference is not FILE.py:FUNCTION or package.module:FUNCTION."""

    fields = ("reference",)
    template = "problem {reference!r} must be FILE.py:FUNCTION or package.module:FUNCTION"


class ProblemFileNotFound(GradCheckError):
    """The problem file does not exist."""

    fields = ("path",)
    template = "problem file {path} does not exist"


class ProblemNotAFile(GradCheckError):
    """The problem file named exists but is no regular file: a directory, a FIFO, a device."""

    fields = ("path", "file_type")
    template = "problem file {path} is {file_type}, not a Python source file"


class ProblemModuleNotFound(GradCheckError):
    """The problem module does not exist."""

    fields = ("module",)
    template = "problem module {module} cannot be found"


class ProblemImportFailed(GradCheckError):
    """Running the problem's file or module raised an exception."""

    fields = ("source", "error")
    template = "importing {source} raised {error}"


class ProblemFunctionNotFound(GradCheckError):
    """The problem's file or module has no such function."""

    fields = ("source", "function", "close", "available")
    template = "{source} has no function {function}{close}; its functions are {available:join}"


class ProblemFunctionRaised(GradCheckError):
    """The problem function raised an exception."""

    fields = ("reference", "error")
    template = "{reference}() raised {error}"


class NotAProblem(GradCheckError):
    """The problem function returned something that is not a gradient problem."""

    fields = ("reference", "returned")
    template = "expected a GradientProblem or (objective, parameters, gradients) from {reference}, got {returned}"


# Torch code (torch.py): refused before the first call of the user's function.


class TorchUnavailable(GradCheckError, ImportError):
    """gradcheck_cli.torch was imported, but torch (the optional extra) is not installed."""

    template = f"gradcheck_cli.torch needs torch, which is not installed: {INSTALL['torch']}"


class UnsupportedDevice(GradCheckError):
    """A tensor to probe or read is not on the CPU."""

    fields = ("tensor", "device")
    template = (
        "tensor {tensor!r} is on device {device}; gradcheck probes CPU tensors only, "
        "in place (see docs/torch.md): check a .cpu() copy of the code"
    )


class UnsupportedTensor(GradCheckError):
    """A tensor that cannot be probed in place: its dtype, layout or memory."""

    fields = ("tensor", "problem")
    template = "tensor {tensor!r} {problem}"


class InvalidCall(GradCheckError):
    """The user's torch or JAX function (or loss) returned something that cannot be checked."""

    fields = ("call", "problem")
    template = "{call} {problem}"


# A check with jobs ≥ 2 (parallel.py): the coordinates' probes in worker processes.


class UnpicklableProblem(GradCheckError):
    """With jobs ≥ 2, the objective or its parameters cannot be pickled for the worker processes."""

    fields = ("jobs", "error")
    template = (
        "jobs={jobs} sends the objective and its parameters to worker processes by pickle, which "
        "failed: {error}; make the objective a module-level function (or a picklable object), or "
        "check a problem loaded by reference (check_problem(load_problem('FILE.py:FUNCTION')))"
    )


class WorkerProblemDiffers(GradCheckError):
    """A worker process loaded a problem that differs from this process's: a parameter, or f(θ)."""

    fields = ("difference",)
    template = (
        "the problem loaded in a worker process differs from this process's: {difference} (does the "
        "problem function draw unseeded random numbers?); seed it, or check with jobs=1"
    )


class WorkerDied(GradCheckError):
    """A worker process of a parallel check died (killed, crashed, or its result could not be read)."""

    fields = ("jobs", "problem")
    template = (
        "a worker process of the check with jobs={jobs} {problem}; every array is restored: "
        "check with jobs=1 to see the failure in this process"
    )


class WorkerProbeDiffers(GradCheckError):
    """A worker's probe, made again in this process, gave another value: the workers' objective differs."""

    fields = ("parameter", "coordinate", "side", "worker", "here")
    template = (
        "parameter {parameter!r} at coordinate {coordinate:list}: f at {probe} "
        "is {worker:?} in a worker process and {here:?} in this one, so the "
        "workers' objective differs from this process's (a module edited since, a file or an environment "
        "variable read differently, a value that depends on the calls made before); check with jobs=1"
    )

    @property
    def probe(self):
        return "θ−h" if self.side == "minus" else "θ+h"


class ObjectiveInMain(GradCheckError):
    """With jobs ≥ 2, the objective is defined in a ``__main__`` that the worker processes cannot import."""

    fields = ("jobs", "name")
    template = (
        "jobs={jobs} runs the objective {name} in worker processes, which import it by its module, "
        "but it is defined in a __main__ they cannot import (that of python -c, standard input or a notebook; "
        "any script's for an executor's workers); define it in a module file and import it from there, or check "
        "with jobs=1"
    )


# gradcheck_cli.adapters.jax: JAX code checked in its own arithmetic.


class JaxUnavailable(GradCheckError, ImportError):
    """gradcheck_cli.jax was imported, but jax (the optional extra) is not installed."""

    template = f"gradcheck_cli.jax needs jax, which is not installed: {INSTALL['jax']}"


class X64Disabled(GradCheckError):
    """A float64 (complex128) input of a JAX function while JAX computes in float32 (complex64): x64 off, its default."""

    fields = ("input", "dtype")
    template = (
        "input {input!r} is {dtype}, but JAX computes it in {narrow} with x64 off (its default): "
        "run jax.config.update('jax_enable_x64', True) first, or pass {narrow} inputs"
    )

    @property
    def narrow(self) -> str:
        """The dtype JAX computes the input in: complex64 for complex128, else float32."""
        return "complex64" if self.dtype == "complex128" else "float32"


class UnsupportedJaxInput(GradCheckError):
    """A leaf of a JAX function's inputs that cannot be checked: its dtype or kind."""

    fields = ("input", "problem")
    template = "input {input!r} {problem}"


__all__ = [name for name, value in globals().items() if isinstance(value, type) and value.__module__ == __name__]
