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
    "InvalidLogits",
    "InvalidTargets",
    "AtCoordinate",
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

    def __init__(self, **values):
        super().__init__(**values)
        self.__cause__ = self.source

    def describe(self):
        return f"gradient check at coordinate {rust_list(self.coordinate)} failed: {self.source}"
