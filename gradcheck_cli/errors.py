"""Typed errors: one class per rejected request, with the chapter's messages.

A mathematical mismatch is not an error (it is a comparison with
``passed=False``); these are requests the checker refuses to answer.
Every error carries the chapter's fields, reads as the chapter's Display
text (floats as Rust's ``{:?}`` prints them), and has ``to_dict()``.
"""

from .formatting import rust_debug, rust_list
from .records import json_ready

__all__ = [
    "GradCheckError",
    "InvalidStep",
    "NonFinitePoint",
    "PerturbationNotFinite",
    "PerturbationUnchanged",
    "InvalidActualSpacing",
    "NonFiniteStencilWeight",
    "NonFiniteEvaluation",
    "NonScalarEvaluation",
    "NonFiniteOneSidedSlope",
    "NonFiniteNumericalGradient",
    "InvalidTolerance",
    "NonFiniteAnalyticGradient",
    "GradientShapeMismatch",
    "InvalidShape",
    "ShapeOverflow",
    "EmptyTensor",
    "ZeroSamples",
    "NotAnArray",
    "UnsupportedDtype",
    "ReadOnlyArray",
    "SelfOverlappingArray",
    "InvalidLogits",
    "InvalidTargets",
    "AtCoordinate",
    "InvalidStepSequence",
    "TooFewAcceptedSteps",
    "UnrepresentablePoint",
    "UnknownParameter",
    "MissingGradient",
    "NoParameters",
    "ZeroDirection",
    "PlottingUnavailable",
    "UnsupportedPlotFormat",
    "NotCallable",
    "NotAMapping",
    "InvalidParameterName",
    "UnexpectedGradient",
    "InvalidSamples",
    "UnknownSampler",
    "ParameterChanged",
    "InvalidArgument",
    "TooManySamples",
    "ArrayMadeReadOnly",
    "MaskedValues",
    "CollapsedStep",
    "InvalidCoordinate",
    "DuplicateCoordinate",
    "SharedParameterMemory",
    "AtParameter",
    "InvalidProblemReference",
    "ProblemFileNotFound",
    "ProblemNotAFile",
    "ProblemModuleNotFound",
    "ProblemImportFailed",
    "ProblemFunctionNotFound",
    "ProblemFunctionRaised",
    "NotAProblem",
    "TorchUnavailable",
    "UnsupportedDevice",
    "UnsupportedTensor",
    "SharedTensorMemory",
    "InvalidTorchCall",
    "UnpicklableProblem",
    "WorkerProblemDiffers",
    "WorkerDied",
    "WorkerProbeDiffers",
    "ObjectiveInMain",
    "JaxUnavailable",
    "X64Disabled",
    "UnsupportedJaxInput",
    "InvalidJaxCall",
]


class GradCheckError(ValueError):
    """A rejected numerical derivative, comparison, sample request, or tensor read."""

    fields: tuple = ()

    def __init__(self, **values):
        missing = set(self.fields) - set(values)
        unknown = set(values) - set(self.fields)
        if missing or unknown:
            raise TypeError(
                f"{type(self).__name__} takes fields {self.fields}, "
                f"missing {sorted(missing)}, unknown {sorted(unknown)}"
            )
        for name, value in values.items():
            setattr(self, name, value)
        if isinstance(values.get("source"), BaseException):  # a wrapper (AtCoordinate, ...): its cause is what it wraps
            self.__cause__ = values["source"]
        super().__init__(self.describe())

    def describe(self) -> str:
        raise NotImplementedError

    def __eq__(self, other):
        return type(self) is type(other) and self.to_dict() == other.to_dict()

    __hash__ = None

    def __reduce__(self):
        return (_rebuild, (type(self), {name: getattr(self, name) for name in self.fields}))

    def to_dict(self) -> dict:
        """``kind`` (the class name), the fields, and the message, JSON-ready."""
        record = {"kind": type(self).__name__}
        for name in self.fields:
            value = getattr(self, name)
            record[name] = value.to_dict() if isinstance(value, GradCheckError) else json_ready(value)
        record["message"] = str(self)
        return record


def _rebuild(cls, values):
    return cls(**values)


def user_frames(error: BaseException) -> list:
    """The traceback entries of ``error`` in the user's own files: not gradcheck's, the standard
    library's or an installed package's."""
    return [frame for frame, owner in _frame_owners(error) if owner == "user"]


def raised_in_users_code(error: BaseException) -> bool:
    """Whether the innermost frame of ``error`` that is gradcheck's or the user's is the user's: their
    mapping's or array's method raised (maybe through numpy), not gradcheck's code called by theirs."""
    owners = [owner for _, owner in _frame_owners(error) if owner != "library"]
    return bool(owners) and owners[-1] == "user"


def _frame_owners(error: BaseException) -> list:
    """``(frame, owner)`` for each traceback entry, owner "gradcheck", "library" or "user"."""
    import os
    import sysconfig
    import traceback

    here = os.path.dirname(os.path.abspath(__file__))
    libraries = {os.path.abspath(sysconfig.get_paths()[key]) for key in ("stdlib", "platstdlib", "purelib", "platlib")}
    owners = []
    for frame in traceback.extract_tb(error.__traceback__):
        path = os.path.abspath(frame.filename)
        if path.startswith(here + os.sep):
            owners.append((frame, "gradcheck"))
        elif frame.filename.startswith("<") or any(path.startswith(root + os.sep) for root in libraries):
            owners.append((frame, "library"))  # <frozen importlib._bootstrap>, <string> too
        else:
            owners.append((frame, "user"))
    return owners


def user_location(error: BaseException) -> str:
    """`` (at mymodel.py:41 in loss)``: the innermost line of the user's own code that raised, or ""."""
    import os

    frames = user_frames(error)
    if not frames:
        return ""
    frame = frames[-1]
    path = os.path.abspath(frame.filename)
    shown = os.path.relpath(path) if path.startswith(os.getcwd() + os.sep) else path
    return f" (at {shown}:{frame.lineno} in {frame.name})"


def user_traceback(error: BaseException) -> str:
    """The user's frames of ``error`` in Python's traceback form, then its one line."""
    import traceback

    frames = traceback.format_list(user_frames(error))
    return "Traceback of your code (most recent call last):\n" + "".join(frames) + exception_line(error) + "\n"


#: The attribute that carries, on an exception the objective raised in a worker process (jobs ≥ 2),
#: ``(user_location, user_traceback)`` as they were there: the traceback does not cross processes.
RAISED_IN_WORKER = "_gradcheck_raised_in_worker"


def raised_in_worker(error: BaseException):
    """``(location, traceback)`` of the user's code if the objective raised ``error`` in a worker
    process (parallel.py marks it there), else None."""
    marked = getattr(error, RAISED_IN_WORKER, None)
    return marked if isinstance(marked, tuple) and len(marked) == 2 else None


def exception_line(error: BaseException) -> str:
    """``Name: message`` of any exception on one line; its name alone if it has no message."""
    try:
        text = " ".join(str(error).split())
    except Exception:  # an exception whose __str__ raises still has a name
        text = ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


class InvalidStep(GradCheckError):
    """The requested step is zero, negative, or not finite."""

    fields = ("step",)

    def describe(self):
        return f"central-difference requested step {rust_debug(self.step)} must be positive and finite"


class NonFinitePoint(GradCheckError):
    """The checked point is NaN or infinite."""

    fields = ("point",)

    def describe(self):
        return f"gradient-check point {rust_debug(self.point)} must be finite"


class PerturbationNotFinite(GradCheckError):
    """A probe fl(point ± step) overflowed."""

    fields = ("side", "point", "step")

    def describe(self):
        return (
            f"{self.side} perturbation from point {rust_debug(self.point)} "
            f"by step {rust_debug(self.step)} is not finite"
        )


class PerturbationUnchanged(GradCheckError):
    """A probe fl(point ± step) rounded back to the point itself."""

    fields = ("side", "point", "step")

    def describe(self):
        return (
            f"{self.side} perturbation from point {rust_debug(self.point)} "
            f"by step {rust_debug(self.step)} rounds back to the point"
        )


class CollapsedStep(PerturbationUnchanged):
    """A probe rounded back to the point, and the smallest step that would move both probes."""

    fields = ("side", "point", "step", "smallest_step")

    def describe(self):
        return f"{super().describe()}; a step of at least {rust_debug(self.smallest_step)} moves both probes"


class InvalidActualSpacing(GradCheckError):
    """An actual probe distance is not positive and finite."""

    fields = ("side", "point", "probe", "spacing")

    def describe(self):
        return (
            f"{self.side} actual spacing from point {rust_debug(self.point)} to probe "
            f"{rust_debug(self.probe)} must be positive and finite, got {rust_debug(self.spacing)}"
        )


class NonFiniteStencilWeight(GradCheckError):
    """A stencil weight came out NaN or infinite."""

    fields = ("side", "value")

    def describe(self):
        return f"{self.side} stencil weight is not finite: {rust_debug(self.value)}"


class NonFiniteEvaluation(GradCheckError):
    """The objective returned NaN or an infinity at a probe or the center."""

    fields = ("side", "value")

    def describe(self):
        return f"{self.side} function evaluation returned {rust_debug(self.value)}"


class NonScalarEvaluation(GradCheckError):
    """The objective returned something that is not one real number."""

    fields = ("side", "returned")

    def describe(self):
        return f"{self.side} function evaluation must return one real number, got {self.returned}"


class NonFiniteOneSidedSlope(GradCheckError):
    """A one-sided secant slope overflowed or is NaN."""

    fields = ("side", "value")

    def describe(self):
        return f"{self.side} one-sided slope is not finite: {rust_debug(self.value)}"


class NonFiniteNumericalGradient(GradCheckError):
    """The weighted three-point estimate is not finite."""

    fields = ("value",)

    def describe(self):
        return f"central difference produced non-finite gradient {rust_debug(self.value)}"


class InvalidTolerance(GradCheckError):
    """The tolerance is negative or not finite."""

    fields = ("tolerance",)

    def describe(self):
        return f"gradient-check tolerance {rust_debug(self.tolerance)} must be finite and nonnegative"


class NonFiniteAnalyticGradient(GradCheckError):
    """The analytic candidate is NaN or infinite."""

    fields = ("value",)

    def describe(self):
        return f"analytic gradient {rust_debug(self.value)} must be finite"


class GradientShapeMismatch(GradCheckError):
    """The parameter and analytic-gradient arrays have different shapes."""

    fields = ("parameters", "analytic")

    def describe(self):
        return (
            f"parameter shape {rust_list(self.parameters)} does not match "
            f"analytic-gradient shape {rust_list(self.analytic)}"
        )


class InvalidShape(GradCheckError):
    """A shape has a negative or non-integer extent."""

    fields = ("shape",)

    def describe(self):
        return f"tensor shape {rust_list(self.shape)} must contain only nonnegative whole numbers"


class ShapeOverflow(GradCheckError):
    """The shape's element count does not fit in a signed 64-bit integer."""

    fields = ()

    def describe(self):
        return "sampled tensor shape overflows a signed 64-bit element count"


class EmptyTensor(GradCheckError):
    """The shape has no elements."""

    fields = ()

    def describe(self):
        return "sampled tensor gradient check needs at least one value"


class ZeroSamples(GradCheckError):
    """Zero coordinates were requested."""

    fields = ()

    def describe(self):
        return "sampled tensor gradient check needs at least one sample"


class NotAnArray(GradCheckError):
    """A tensor argument is not a numpy array."""

    fields = ("role", "type_name")

    def describe(self):
        return f"{self.role} must be a numpy array, got {self.type_name}"


class UnsupportedDtype(GradCheckError):
    """A tensor argument has a dtype the check cannot use."""

    fields = ("role", "dtype", "expected")

    def describe(self):
        return f"{self.role} array has dtype {self.dtype}; expected {self.expected}"


class ReadOnlyArray(GradCheckError):
    """The parameter array cannot be written, so it cannot be probed in place."""

    fields = ("role",)

    def describe(self):
        return f"{self.role} array is read-only; the check perturbs it in place and restores it"


class SelfOverlappingArray(GradCheckError):
    """Two elements of the parameter array share memory (a zero or too small stride)."""

    fields = ("role", "strides")

    def describe(self):
        return (
            f"{self.role} array has elements that share memory (strides {rust_list(self.strides)}, an as_strided "
            "or broadcast view): perturbing one would perturb others; pass a copy (np.array(...))"
        )


class InvalidLogits(GradCheckError):
    """The logits are not a finite [rows, vocab] float64 array with rows, vocab ≥ 1."""

    fields = ("problem",)

    def describe(self):
        return f"logits {self.problem}"


class InvalidTargets(GradCheckError):
    """The targets do not name one vocabulary class per row."""

    fields = ("problem",)

    def describe(self):
        return f"targets {self.problem}"


class AtCoordinate(GradCheckError):
    """An error at one selected tensor coordinate; the cause is the underlying error."""

    fields = ("coordinate", "source")

    def describe(self):
        return f"gradient check at coordinate {rust_list(self.coordinate)} failed: {self.source}"


class InvalidStepSequence(GradCheckError):
    """A step sequence is too short or not strictly decreasing."""

    fields = ("steps",)

    def describe(self):
        return (
            f"requested steps {rust_list(self.steps)} must be at least two positive finite steps "
            "in strictly decreasing order"
        )


class TooFewAcceptedSteps(GradCheckError):
    """Step advice got fewer than two usable central differences."""

    fields = ("accepted", "requested")

    def describe(self):
        return (
            f"step advice needs at least two accepted steps with distinct actual spacings, "
            f"got {self.accepted} of {self.requested} requested steps"
        )


class UnrepresentablePoint(GradCheckError):
    """The point cannot be stored in the dtype whose arithmetic is probed."""

    fields = ("point", "dtype", "nearest")

    def describe(self):
        return (
            f"gradient-check point {rust_debug(self.point)} is not representable in {self.dtype} "
            f"(nearest {rust_debug(self.nearest)})"
        )


class UnknownParameter(GradCheckError):
    """A selected parameter name is not in the problem."""

    fields = ("name", "available")

    def describe(self):
        return f"parameter {self.name!r} is not one of the problem's parameters {list(self.available)!r}"


class MissingGradient(GradCheckError):
    """A parameter has no analytic gradient in the problem."""

    fields = ("name",)

    def describe(self):
        return f"the problem has no analytic gradient for parameter {self.name!r}"


class NoParameters(GradCheckError):
    """The problem (or the selection) has no parameter to perturb."""

    fields = ()

    def describe(self):
        return "the problem has no parameters to perturb"


class ZeroDirection(GradCheckError):
    """The Taylor-test direction is zero (or not finite) over the selected parameters."""

    fields = ("norm",)

    def describe(self):
        return f"Taylor-test direction norm {rust_debug(self.norm)} must be positive and finite"


class PlottingUnavailable(GradCheckError):
    """matplotlib, the optional plotting dependency, is not installed."""

    fields = ()

    def describe(self):
        return "plotting needs matplotlib, which is not installed: pip install matplotlib (from a clone, make install installs it)"


class UnsupportedPlotFormat(GradCheckError):
    """The plot path does not end in .png or .svg."""

    fields = ("path",)

    def describe(self):
        return f"plot file {self.path!r} must end in .png or .svg"


# Multi-parameter checks (check.py): requests refused before the first objective call.


class NotCallable(GradCheckError):
    """The objective (or a problem function) cannot be called."""

    fields = ("role", "type_name")

    def describe(self):
        return f"{self.role} must be callable, got {self.type_name}"


class NotAMapping(GradCheckError):
    """Parameters, gradients or coordinates are not a mapping keyed by parameter name."""

    fields = ("role", "values", "type_name")

    def describe(self):
        return f"{self.role} must be a mapping from parameter names to {self.values}, got {self.type_name}"


class InvalidParameterName(GradCheckError):
    """A parameter name is not a string."""

    fields = ("name", "type_name")

    def describe(self):
        return f"parameter names must be strings, got {self.name} ({self.type_name})"


class UnexpectedGradient(GradCheckError):
    """An analytic gradient names no parameter."""

    fields = ("name",)

    def describe(self):
        return f"analytic gradient {self.name!r} names no parameter of the problem"


class InvalidSamples(GradCheckError):
    """The sample count is not a positive whole number (nor "all", where that is accepted)."""

    fields = ("role", "samples", "expected")

    def describe(self):
        return f"{self.role} must be {self.expected}, got {self.samples}"


class ParameterChanged(GradCheckError):
    """The objective replaced, removed or modified a parameter array it was handed."""

    fields = ("parameter", "change")

    def describe(self):
        return (
            f"parameter {self.parameter!r} was {self.change} by the objective during the check; every "
            "array was restored, and the objective must leave its parameters as they are"
        )


class UnknownSampler(GradCheckError):
    """The coordinate sampler is not one gradcheck has."""

    fields = ("sampler", "available")

    def describe(self):
        return f"sampler {self.sampler} is not one of {', '.join(self.available)}"


class InvalidArgument(GradCheckError):
    """An argument has the wrong type: a step that is not a number, names that are not strings, ..."""

    fields = ("argument", "value", "expected")

    def describe(self):
        return f"{self.argument} must be {self.expected}, got {self.value}"


class TooManySamples(GradCheckError):
    """More coordinates were requested than their records could hold in memory."""

    fields = ("role", "count", "limit")

    def describe(self):
        return (
            f"{self.role} selects {self.count} coordinates, more than the {self.limit} whose records "
            "fit in the memory available; request fewer"
        )


class ArrayMadeReadOnly(GradCheckError):
    """The objective made a parameter array read-only while it was being probed."""

    fields = ("role",)

    def describe(self):
        return (
            f"the objective made the {self.role} array read-only during the check; "
            "its values were restored and it was left read-only"
        )


class MaskedValues(GradCheckError):
    """A masked array has masked elements: the check needs every value."""

    fields = ("role", "coordinate")

    def describe(self):
        return f"{self.role} has a masked element at {rust_list(self.coordinate)}; the check needs every value"


class InvalidCoordinate(GradCheckError):
    """An explicit coordinate is not a row-major index into the parameter's shape."""

    fields = ("coordinate", "shape")

    def describe(self):
        return f"coordinate {self.coordinate} is not an index into shape {rust_list(self.shape)}"


class DuplicateCoordinate(GradCheckError):
    """An explicit coordinate is listed twice."""

    fields = ("coordinate",)

    def describe(self):
        return f"coordinate {rust_list(self.coordinate)} is listed twice"


class SharedParameterMemory(GradCheckError):
    """Two parameters share memory, so perturbing one would perturb the other."""

    fields = ("first", "second")

    def describe(self):
        return (
            f"parameters {self.first!r} and {self.second!r} share memory; perturbing one coordinate would perturb both"
        )


class AtParameter(GradCheckError):
    """An error in one named parameter; the cause is the underlying error."""

    fields = ("parameter", "source")

    def describe(self):
        return f"parameter {self.parameter!r}: {self.source}"


# Loading a problem from FILE.py:FUNCTION or package.module:FUNCTION (problem.py).


class InvalidProblemReference(GradCheckError):
    """The problem reference is not FILE.py:FUNCTION or package.module:FUNCTION."""

    fields = ("reference",)

    def describe(self):
        return f"problem {self.reference!r} must be FILE.py:FUNCTION or package.module:FUNCTION"


class ProblemFileNotFound(GradCheckError):
    """The problem file does not exist."""

    fields = ("path",)

    def describe(self):
        return f"problem file {self.path} does not exist"


class ProblemNotAFile(GradCheckError):
    """The problem file named exists but is no regular file: a directory, a FIFO, a device."""

    fields = ("path", "file_type")

    def describe(self):
        return f"problem file {self.path} is {self.file_type}, not a Python source file"


class ProblemModuleNotFound(GradCheckError):
    """The problem module does not exist."""

    fields = ("module",)

    def describe(self):
        return f"problem module {self.module} cannot be found"


class ProblemImportFailed(GradCheckError):
    """Running the problem's file or module raised an exception."""

    fields = ("source", "error")

    def describe(self):
        return f"importing {self.source} raised {self.error}"


class ProblemFunctionNotFound(GradCheckError):
    """The problem's file or module has no such function."""

    fields = ("source", "function")

    def describe(self):
        return f"{self.source} has no function {self.function}"


class ProblemFunctionRaised(GradCheckError):
    """The problem function raised an exception."""

    fields = ("reference", "error")

    def describe(self):
        return f"{self.reference}() raised {self.error}"


class NotAProblem(GradCheckError):
    """The problem function returned something that is not a gradient problem."""

    fields = ("reference", "returned")

    def describe(self):
        return (
            f"expected a GradientProblem or (objective, parameters, gradients) from {self.reference}, "
            f"got {self.returned}"
        )


# Torch code (torch.py): refused before the first call of the user's function.


class TorchUnavailable(GradCheckError, ImportError):
    """gradcheck_cli.torch was imported, but torch (the optional extra) is not installed."""

    fields = ()

    def describe(self):
        return (
            "gradcheck_cli.torch needs torch, which is not installed: pip install -e '.[torch]' "
            "from a clone of gradcheck (or pip install 'gradcheck-cli[torch]')"
        )


class UnsupportedDevice(GradCheckError):
    """A tensor to probe or read is not on the CPU."""

    fields = ("tensor", "device")

    def describe(self):
        return (
            f"tensor {self.tensor!r} is on device {self.device}; gradcheck probes CPU tensors only, "
            "in place (see docs/torch.md): check a .cpu() copy of the code"
        )


class UnsupportedTensor(GradCheckError):
    """A tensor that cannot be probed in place: its dtype, layout or memory."""

    fields = ("tensor", "problem")

    def describe(self):
        return f"tensor {self.tensor!r} {self.problem}"


class SharedTensorMemory(GradCheckError):
    """Two tensors share memory, so perturbing one would perturb the other."""

    fields = ("first", "second")

    def describe(self):
        return (
            f"tensors {self.first!r} and {self.second!r} share memory (one is a view of the other, "
            "or both of one tensor); perturbing one would perturb both: pass a .clone() of one"
        )


class InvalidTorchCall(GradCheckError):
    """The user's function or loss returned something that cannot be checked."""

    fields = ("call", "problem")

    def describe(self):
        return f"{self.call} {self.problem}"


# A check with jobs ≥ 2 (parallel.py): the coordinates' probes in worker processes.


class UnpicklableProblem(GradCheckError):
    """With jobs ≥ 2, the objective or its parameters cannot be pickled for the worker processes."""

    fields = ("jobs", "error")

    def describe(self):
        return (
            f"jobs={self.jobs} sends the objective and its parameters to worker processes by pickle, which "
            f"failed: {self.error}; make the objective a module-level function (or a picklable object), or "
            "check a problem loaded by reference (check_problem(load_problem('FILE.py:FUNCTION')))"
        )


class WorkerProblemDiffers(GradCheckError):
    """A worker process loaded a problem that differs from this process's: a parameter, or f(θ)."""

    fields = ("difference",)

    def describe(self):
        return (
            f"the problem loaded in a worker process differs from this process's: {self.difference} (does the "
            "problem function draw unseeded random numbers?); seed it, or check with jobs=1"
        )


class WorkerDied(GradCheckError):
    """A worker process of a parallel check died (killed, crashed, or its result could not be read)."""

    fields = ("jobs", "problem")

    def describe(self):
        return (
            f"a worker process of the check with jobs={self.jobs} {self.problem}; every array is restored: "
            "check with jobs=1 (--jobs 1) to see the failure in this process"
        )


class WorkerProbeDiffers(GradCheckError):
    """A worker's probe, made again in this process, gave another value: the workers' objective differs."""

    fields = ("parameter", "coordinate", "side", "worker", "here")

    def describe(self):
        return (
            f"parameter {self.parameter!r} at coordinate {rust_list(self.coordinate)}: f at θ{'−' if self.side == 'minus' else '+'}h "
            f"is {rust_debug(self.worker)} in a worker process and {rust_debug(self.here)} in this one, so the "
            "workers' objective differs from this process's (a module edited since, a file or an environment "
            "variable read differently, a value that depends on the calls made before); check with jobs=1 (--jobs 1)"
        )


class ObjectiveInMain(GradCheckError):
    """With jobs ≥ 2, the objective is defined in a ``__main__`` that the worker processes cannot import."""

    fields = ("jobs", "name")

    def describe(self):
        return (
            f"jobs={self.jobs} runs the objective {self.name} in worker processes, which import it by its module, "
            "but it is defined in a __main__ they cannot import (that of python -c, standard input or a notebook; "
            "any script's for an executor's workers); define it in a module file and import it from there, or check "
            "with jobs=1"
        )


# gradcheck_cli.jax: JAX code checked in its own arithmetic.


class JaxUnavailable(GradCheckError, ImportError):
    """gradcheck_cli.jax was imported, but jax (the optional extra) is not installed."""

    fields = ()

    def describe(self):
        return (
            "gradcheck_cli.jax needs jax, which is not installed: pip install -e '.[jax]' "
            "from a clone of gradcheck (or pip install 'gradcheck-cli[jax]'; the CPU jax is enough)"
        )


class X64Disabled(GradCheckError):
    """A float64 input of a JAX function while JAX computes in float32 (x64 off, its default)."""

    fields = ("input",)

    def describe(self):
        return (
            f"input {self.input!r} is float64, but JAX computes it in float32 with x64 off (its default): "
            "run jax.config.update('jax_enable_x64', True) first, or pass float32 inputs"
        )


class UnsupportedJaxInput(GradCheckError):
    """A leaf of a JAX function's inputs that cannot be checked: its dtype or kind."""

    fields = ("input", "problem")

    def describe(self):
        return f"input {self.input!r} {self.problem}"


class InvalidJaxCall(GradCheckError):
    """The user's JAX function returned something that cannot be checked."""

    fields = ("call", "problem")

    def describe(self):
        return f"{self.call} {self.problem}"
