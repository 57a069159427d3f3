"""The derivatives a torch or JAX check differentiates: the paths of ``jax.test_util.check_grads``'
recursion through orders and modes, each a problem with its label, and the checks of the derivative
calls themselves (:class:`~gradcheck_cli.check.records.CallCheck`) made from their numpy values.

A path is the modes in the order they are applied: ``("rev",)`` is the backward, ``("rev", "fwd")``
forward mode applied to the backward (forward over reverse), labelled ``fwd∘rev`` as a composition
reads. The rules are docs/method.md's "Every order in every mode".
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..core.formatting import rust_debug, rust_exp
from ..engine.blocks import same_array_bits
from ..engine.complex_parts import COMPLEX_DTYPES
from ..engine.dtypes import probe_dtype
from ..engine.problem import GradientProblem
from ..verdict.terms import FLOOR_FACTOR
from ..verdict.words import CALL_KINDS, FAILED, PASSED
from .options import MODES, Options
from .records import CallCheck

#: How many cotangents (tangents) a batched check stacks.
BATCH = 3
#: The kinds of call check (:data:`~gradcheck_cli.verdict.words.CALL_KINDS`).
DETERMINISM, UNDEFINED, BATCHING = CALL_KINDS

__all__ = [
    "DerivativeProblem",
    "FirstValueUnconfirmed",
    "derivative_paths",
    "path_label",
    "agreement_check",
    "raised_check",
    "determinism_check",
    "relative_limits",
    "selected",
    "call_tolerance",
    "BATCH",
    "DETERMINISM",
    "UNDEFINED",
    "BATCHING",
]


class FirstValueUnconfirmed(BaseException):
    """Raised by a derivative problem's objective whose first f(θ) was the value its derivative's own
    call computed (a vjp's forward) rather than a call of f, when f called at θ later gives other bits:
    :func:`~gradcheck_cli.check.check_problems` checks it again, its objective now calling f at θ first.
    A BaseException, so that no handler of the objective's own exceptions takes it for one."""


@dataclass(frozen=True)
class DerivativeProblem:
    """One derivative of a check: its ``path`` of modes, the GradientProblem of its finite differences,
    the :class:`CallCheck` records of its calls (made before any finite difference), and ``variation``:
    when two calls of its backward differed within ``nondet_tol``, that tolerance relative to the
    gradient's scale, else 0 (:func:`determinism_check`)."""

    path: tuple
    problem: GradientProblem
    calls: tuple = ()
    variation: float = 0.0

    @property
    def label(self) -> str:
        return path_label(self.path)

    def options(self, options: Options) -> Options:
        """The options its finite differences are judged with: a tolerance no finer than FLOOR_FACTOR
        times its variation, so that the sensitivity floor (tolerance/FLOOR_FACTOR) holds it."""
        wanted = FLOOR_FACTOR * self.variation
        if wanted == 0.0:
            return options
        defaults = [probe_dtype(array.dtype).tolerance for array in self.problem.parameters.values()]
        base = options.tolerance if options.tolerance is not None else min(defaults)
        return options if wanted <= base else dataclasses.replace(options, tolerance=wanted)


def derivative_paths(order: int, modes) -> list:
    """Every path of at most ``order`` modes, depth first as ``check_grads`` checks them: a mode, then
    the paths that differentiate its derivative (fwd, fwd∘fwd, rev∘fwd, rev, fwd∘rev, rev∘rev at 2)."""
    ordered = [mode for mode in MODES if mode in modes]
    paths = []

    def visit(prefix: tuple) -> None:
        for mode in ordered:
            paths.append((*prefix, mode))
            if len(prefix) + 1 < order:
                visit((*prefix, mode))

    visit(())
    return paths


def path_label(path) -> str:
    """``fwd∘rev`` for ``("rev", "fwd")``: the last mode applied first, as a composition reads."""
    return "∘".join(reversed(path))


def selected(options: Options, mapping: Mapping) -> dict:
    """The entries of ``mapping`` (name → value) that ``options.names`` selects: all without ``names``,
    and all when it names none of them (the check's plan then refuses the names)."""
    chosen = {name: value for name, value in mapping.items() if options.names is None or name in set(options.names)}
    return chosen or dict(mapping)


def call_tolerance(options: Options, dtype) -> float:
    """What a batched or undefined-gradient call may differ by, relative to max(1, |value|): the check's
    tolerance, by default the dtype's ε^(1/3) (a complex dtype's: its parts')."""
    if options.tolerance is not None:
        return options.tolerance
    name = getattr(dtype, "name", str(dtype))
    return probe_dtype(COMPLEX_DTYPES.get(name, dtype)).tolerance


def as_real(values) -> np.ndarray:
    """``values`` as a float64 array; a complex one as its real and imaginary parts (a last axis of 2)."""
    values = np.asarray(values)
    if values.dtype.kind == "c":
        return np.stack([values.real, values.imag], axis=-1).astype(np.float64)
    return np.asarray(values, dtype=np.float64)  # a float64 array as it is: only read


def agreement_check(
    kind: str, expected: Mapping, got: Mapping, limits: Mapping, what: str, failure: str = "", output=None
) -> CallCheck:
    """``got`` against ``expected`` (name → float64 array), each name's largest absolute difference
    within ``limits[name]`` (bit-identical values, NaN and infinities included, differ by 0); ``what``
    says what was compared and ``failure`` what a difference means, for the message."""
    worst, worst_excess, worst_difference = next(iter(expected)), -np.inf, 0.0
    for name, reference in expected.items():
        reference, value = as_real(reference), as_real(got[name])
        if same_array_bits(value, reference) or (
            value.shape == reference.shape and np.array_equal(value, reference, equal_nan=True)
        ):
            largest = 0.0  # bit-identical up to NaN's payload and zero's sign: what most calls give
        else:
            same = (value == reference) | (np.isnan(value) & np.isnan(reference))
            difference = np.where(same, 0.0, np.abs(value - reference))
            largest = float(np.max(difference, initial=0.0)) if not np.isnan(difference).any() else float("nan")
        excess = np.inf if np.isnan(largest) else largest - limits[name]
        if excess > worst_excess:
            worst, worst_excess, worst_difference = name, excess, largest
    passed = not worst_excess > 0
    within = "within" if passed else "beyond"
    size = f"differ by up to {rust_exp(worst_difference, 3)} in {worst}, {within} {rust_debug(limits[worst])}"
    return CallCheck(
        kind=kind,
        parameter=worst,
        output=output,
        verdict=PASSED if passed else FAILED,
        passed=passed,
        difference=worst_difference,
        tolerance=float(limits[worst]),
        message=("" if passed or not failure else f"{failure}: ") + f"{what} {size}",
    )


def relative_limits(expected: Mapping, tolerances: Mapping) -> dict:
    """Each name's tolerance times max(1, its largest |expected| value)."""
    return {
        name: tolerances[name] * max(1.0, float(np.max(np.abs(as_real(value)), initial=0.0)))
        for name, value in expected.items()
    }


def determinism_check(first: Mapping, second: Mapping, nondet_tol: float) -> tuple:
    """``(CallCheck, variation)`` of two calls of a backward with the same cotangent (name → float64
    gradient): they agree within ``nondet_tol``. When they differ at all, the variation is
    ``nondet_tol`` (how much the user lets them vary) relative to max(1, the gradients' largest |value|),
    else 0."""
    limits = dict.fromkeys(first, float(nondet_tol))
    what = "two calls of the backward with the same cotangent"
    check = agreement_check(DETERMINISM, first, second, limits, what, "nondeterministic backward")
    if not check.passed or check.difference == 0.0:
        return check, 0.0
    scale = max([1.0] + [float(np.max(np.abs(as_real(values)), initial=0.0)) for values in first.values()])
    return check, float(nondet_tol) / scale


def raised_check(kind: str, parameter: str, error: BaseException, what: str, output=None) -> CallCheck:
    """A call that raised: failed, naming the exception's type and first line."""
    lines = str(error).strip().splitlines()
    raised = type(error).__name__ + (f": {lines[0]}" if lines else "")
    return CallCheck(
        kind=kind,
        parameter=parameter,
        output=output,
        verdict=FAILED,
        passed=False,
        difference=None,
        tolerance=0.0,
        message=f"{what} raised {raised}",
    )
