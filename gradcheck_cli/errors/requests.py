"""The requests the chapter's estimator and the checker refuse: steps, points, shapes, arrays, samples."""

from ..core.installs import INSTALL
from .record import GradCheckError


class InvalidStep(GradCheckError):
    """The requested step is zero, negative, or not finite."""

    fields = ("step",)
    template = "central-difference requested step {step:?} must be positive and finite"


class NonFinitePoint(GradCheckError):
    """The checked point is NaN or infinite."""

    fields = ("point",)
    template = "gradient-check point {point:?} must be finite"


class PerturbationNotFinite(GradCheckError):
    """A probe fl(point ± step) overflowed."""

    fields = ("side", "point", "step")
    template = "{side} perturbation from point {point:?} by step {step:?} is not finite"


class PerturbationUnchanged(GradCheckError):
    """A probe fl(point ± step) rounded back to the point itself."""

    fields = ("side", "point", "step")
    template = "{side} perturbation from point {point:?} by step {step:?} rounds back to the point"


class CollapsedStep(PerturbationUnchanged):
    """A probe rounded back to the point, and the smallest step that would move both probes."""

    fields = ("side", "point", "step", "smallest_step")
    template = (
        "{side} perturbation from point {point:?} by step {step:?} rounds back to the point; "
        "a step of at least {smallest_step:?} moves both probes"
    )


class InvalidActualSpacing(GradCheckError):
    """An actual probe distance is not positive and finite."""

    fields = ("side", "point", "probe", "spacing")
    template = (
        "{side} actual spacing from point {point:?} to probe {probe:?} must be positive and finite, got {spacing:?}"
    )


class NonFiniteStencilWeight(GradCheckError):
    """A stencil weight came out NaN or infinite."""

    fields = ("side", "value")
    template = "{side} stencil weight is not finite: {value:?}"


class NonFiniteEvaluation(GradCheckError):
    """The objective returned NaN or an infinity at a probe or the center."""

    fields = ("side", "value")
    template = "{side} function evaluation returned {value:?}"


class NonScalarEvaluation(GradCheckError):
    """The objective returned something that is not one real number."""

    fields = ("side", "returned")
    template = "{side} function evaluation must return one real number, got {returned}"


class NonFiniteOneSidedSlope(GradCheckError):
    """A one-sided secant slope overflowed or is NaN."""

    fields = ("side", "value")
    template = "{side} one-sided slope is not finite: {value:?}"


class NonFiniteNumericalGradient(GradCheckError):
    """The weighted three-point estimate is not finite."""

    fields = ("value",)
    template = "central difference produced non-finite gradient {value:?}"


class InvalidTolerance(GradCheckError):
    """The tolerance is negative or not finite."""

    fields = ("tolerance",)
    template = "gradient-check tolerance {tolerance:?} must be finite and nonnegative"


class NonFiniteAnalyticGradient(GradCheckError):
    """The analytic candidate is NaN or infinite."""

    fields = ("value",)
    template = "analytic gradient {value:?} must be finite"


class GradientShapeMismatch(GradCheckError):
    """The parameter and analytic-gradient arrays have different shapes."""

    fields = ("parameters", "analytic")
    template = "parameter shape {parameters:list} does not match analytic-gradient shape {analytic:list}"


class InvalidShape(GradCheckError):
    """A shape has a negative or non-integer extent."""

    fields = ("shape",)
    template = "tensor shape {shape:list} must contain only nonnegative whole numbers"


class ShapeOverflow(GradCheckError):
    """The shape's element count does not fit in a signed 64-bit integer."""

    template = "sampled tensor shape overflows a signed 64-bit element count"


class EmptyTensor(GradCheckError):
    """The shape has no elements."""

    template = "sampled tensor gradient check needs at least one value"


class ZeroSamples(GradCheckError):
    """Zero coordinates were requested."""

    template = "sampled tensor gradient check needs at least one sample"


class UnsupportedDtype(GradCheckError):
    """A tensor argument has a dtype the check cannot use."""

    fields = ("role", "dtype", "expected")
    template = "{role} array has dtype {dtype}; expected {expected}"


class ReadOnlyArray(GradCheckError):
    """The parameter array cannot be written (or the objective made it read-only while it was probed)."""

    fields = ("role", "during_check")
    template = "{role} array {state}"

    @property
    def state(self):
        if self.during_check:
            return "was made read-only by the objective during the check; its values were restored and it was left read-only"
        return "is read-only; the check perturbs it in place and restores it"


class SelfOverlappingArray(GradCheckError):
    """Two elements of the parameter array share memory (a zero or too small stride)."""

    fields = ("role", "strides")
    template = (
        "{role} array has elements that share memory (strides {strides:list}, an as_strided "
        "or broadcast view): perturbing one would perturb others; pass a copy (np.array(...))"
    )


class InvalidLogits(GradCheckError):
    """The logits are not a finite [rows, vocab] float64 array with rows, vocab ≥ 1."""

    fields = ("problem",)
    template = "logits {problem}"


class InvalidTargets(GradCheckError):
    """The targets do not name one vocabulary class per row."""

    fields = ("problem",)
    template = "targets {problem}"


class AtCoordinate(GradCheckError):
    """An error at one selected tensor coordinate; the cause is the underlying error."""

    fields = ("coordinate", "source")
    template = "gradient check at coordinate {coordinate:list} failed: {source}"


class InvalidStepSequence(GradCheckError):
    """A step sequence is too short or not strictly decreasing."""

    fields = ("steps",)
    template = "requested steps {steps:list} must be at least two positive finite steps in strictly decreasing order"


class TooFewAcceptedSteps(GradCheckError):
    """Step advice got fewer than two usable central differences."""

    fields = ("accepted", "requested")
    template = (
        "step advice needs at least two accepted steps with distinct actual spacings, "
        "got {accepted} of {requested} requested steps"
    )


class UnrepresentablePoint(GradCheckError):
    """The point cannot be stored in the dtype whose arithmetic is probed."""

    fields = ("point", "dtype", "nearest")
    template = "gradient-check point {point:?} is not representable in {dtype} (nearest {nearest:?})"


class UnknownParameter(GradCheckError):
    """A selected parameter name is not in the problem."""

    fields = ("name", "available")
    template = "parameter {name!r} is not one of the problem's parameters {available!r}"


class MissingGradient(GradCheckError):
    """A parameter has no analytic gradient in the problem."""

    fields = ("name",)
    template = "the problem has no analytic gradient for parameter {name!r}"


class NoParameters(GradCheckError):
    """The problem (or the selection) has no parameter to perturb."""

    template = "the problem has no parameters to perturb"


class ZeroDirection(GradCheckError):
    """The Taylor-test direction is zero (or not finite) over the selected parameters."""

    fields = ("norm",)
    template = "Taylor-test direction norm {norm:?} must be positive and finite"


class PlottingUnavailable(GradCheckError):
    """matplotlib, the optional plotting dependency, is not installed."""

    template = f"plotting needs matplotlib, which is not installed: {INSTALL['matplotlib']}"


class UnsupportedPlotFormat(GradCheckError):
    """The plot path does not end in .png or .svg."""

    fields = ("path",)
    template = "plot file {path!r} must end in .png or .svg"


# Multi-parameter checks (check.py): requests refused before the first objective call.


class InvalidParameterName(GradCheckError):
    """A parameter name is not a string."""

    fields = ("name", "type_name")
    template = "parameter names must be strings, got {name} ({type_name})"


class UnexpectedGradient(GradCheckError):
    """An analytic gradient names no parameter."""

    fields = ("name",)
    template = "analytic gradient {name!r} names no parameter of the problem"


class ParameterChanged(GradCheckError):
    """The objective replaced, removed or modified a parameter array it was handed."""

    fields = ("parameter", "change")
    template = (
        "parameter {parameter!r} was {change} by the objective during the check; every "
        "array was restored, and the objective must leave its parameters as they are"
    )


class UnknownSampler(GradCheckError):
    """The coordinate sampler is not one gradcheck has."""

    fields = ("sampler", "available")
    template = "sampler {sampler} is not one of {available:join}"


class UnknownOption(GradCheckError):
    """A keyword that is not one of a check's options (:class:`~gradcheck_cli.check.options.Options`)."""

    fields = ("entry", "option", "close", "known")
    template = "{entry} has no option {option}{close}; its options are {known:join}"


class InvalidArgument(GradCheckError):
    """An argument of the wrong type or value: not an array, not callable, not a mapping, not a whole number, ..."""

    fields = ("argument", "value", "expected")
    template = "{argument} must be {expected}, got {value}"


class TooManySamples(GradCheckError):
    """More coordinates were requested than their records could hold in memory."""

    fields = ("role", "count", "limit")
    template = (
        "{role} selects {count} coordinates, more than the {limit} whose records "
        "fit in the memory available; request fewer"
    )


class MaskedValues(GradCheckError):
    """A masked array has masked elements: the check needs every value."""

    fields = ("role", "coordinate")
    template = "{role} has a masked element at {coordinate:list}; the check needs every value"


class InvalidCoordinate(GradCheckError):
    """An explicit coordinate is not a row-major index into the parameter's shape."""

    fields = ("coordinate", "shape")
    template = "coordinate {coordinate} is not an index into shape {shape:list}"


class DuplicateCoordinate(GradCheckError):
    """An explicit coordinate is listed twice."""

    fields = ("coordinate",)
    template = "coordinate {coordinate:list} is listed twice"


class SharedMemory(GradCheckError):
    """Two parameters (or tensors) share memory, so perturbing one would perturb the other."""

    fields = ("role", "first", "second")
    template = "{role} {first!r} and {second!r} share memory; perturbing one would perturb both: pass {copy} of one"

    @property
    def copy(self):
        return "a .clone()" if self.role == "tensors" else "a copy (np.array(...))"


class AtParameter(GradCheckError):
    """An error in one named parameter; the cause is the underlying error."""

    fields = ("parameter", "source")
    template = "parameter {parameter!r}: {source}"


__all__ = [name for name, value in globals().items() if isinstance(value, type) and value.__module__ == __name__]
