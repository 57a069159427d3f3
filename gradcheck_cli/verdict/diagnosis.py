"""What kind of mistake a failed parameter shows: a scale, a sign, a transpose, a conjugate, a zero, one row.

Read off the coordinates the check already has, deterministically; the rules are in
docs/method.md ("Diagnosis").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..core.formatting import rust_list
from ..core.record import Record
from ..engine.complex_parts import coordinate_text
from .findings import axis_text, difference_text, next_step, other_parameter_text, ratios_text, shown, slices_text
from .words import FAILED, PASSED

__all__ = [
    "KINDS",
    "Diagnosis",
    "DirectionalGap",
    "Scope",
    "diagnose_parameter",
    "diagnose_report",
    "with_other_parameters",
]

#: Every ``Diagnosis.kind``.
KINDS = ("scale", "sign", "transpose", "conjugate", "zero", "localized", "unexplained")
#: Ratios of analytic to numerical agree when within this relative spread of their median.
RATIO_SPREAD = 1e-2


@dataclass(frozen=True)
class Diagnosis(Record):
    """The kind of bug, its factor (``scale``, ``sign``) or place (``localized``), in one sentence."""

    kind: str
    factor: float | None
    where: str | None
    message: str


def _decided(check):
    return check.estimates[check.decided_at]


def _resolved(estimate) -> bool:
    """The numerical value is clearly nonzero: beyond twice its error bar."""
    return abs(estimate.numerical) > 2 * estimate.error_bar.total


def _common_ratio(estimates: Sequence) -> float | None:
    """The ratio analytic/numerical shared by every estimate, else None.

    Read from the estimates whose bar fixes the ratio to RATIO_SPREAD/2 (all resolved ones when
    none does), which must agree within RATIO_SPREAD of their median; every other estimate must
    only be consistent with it within its bar (|a − r·n| ≤ 2|r|·bar + RATIO_SPREAD·|a|).
    """
    resolved = [estimate for estimate in estimates if _resolved(estimate)]
    precise = [e for e in resolved if 2 * e.error_bar.total <= RATIO_SPREAD / 2 * abs(e.numerical)] or resolved
    if not precise:
        return None
    ratios = [estimate.analytic / estimate.numerical for estimate in precise]
    median = statistics.median(ratios)
    # One factor: the ratios agree within RATIO_SPREAD, and closely beside how far they are from 1
    # (ratios of 1.0001 to 1.002 are an additive slip, not a scale).
    spread = RATIO_SPREAD * min(abs(median), abs(median - 1.0))
    if all(abs(ratio - median) <= max(spread, 1e-300) for ratio in ratios):
        common = median
    elif all(abs(ratio) <= RATIO_SPREAD for ratio in ratios):
        common = 0.0
    else:
        return None
    for estimate in estimates:
        allowed = 2 * max(1.0, abs(common)) * estimate.error_bar.total + RATIO_SPREAD * abs(estimate.analytic)
        if abs(estimate.analytic - common * estimate.numerical) > allowed:
            return None
    return common


def _nice(factor: float) -> float:
    """An integer or 1/integer other than 1 the factor is within 1e-3 of, else the factor to 4
    significant digits of its distance from 1 (1.001, not 1: a factor of 1 is no bug)."""
    for value in (round(factor), 1 / round(1 / factor) if abs(factor) < 1 and factor != 0 else None):
        if value and value != 1 and abs(factor - value) <= 1e-3 * abs(factor):
            return float(value)
    return 1.0 + float(f"{factor - 1.0:.4g}") if abs(factor - 1.0) < 0.5 else float(f"{factor:.4g}")


def _scale_message(factor: float) -> str:
    text = f"{factor:g}"
    if abs(factor) >= 2 and factor == round(factor):
        causes = f"a sum where a mean belongs (a batch or sequence length of {text}), or a missing 1/{text}"
        if factor == 2:
            causes = "a ×2 from a squared term (d(x²) = 2x counted twice, or a missing ½), or " + causes
    elif 0 < abs(factor) < 1 and 1 / factor == round(1 / factor):
        inverse = f"{1 / factor:g}"
        causes = f"a mean where a sum belongs, or an extra 1/{inverse} (a batch or sequence length of {inverse})"
        if factor == 0.5:
            causes = "a missing ×2 from a squared term (d(x²) = 2x), or " + causes
    elif abs(factor - 1) < 0.05:
        causes = "a constant a little off (an approximated function, an ε, a truncated constant)"
    else:
        causes = "a constant factor (a scale, a temperature, a weight) applied twice or not at all"
    return f"analytic = {text} × numerical at every failing coordinate: {causes}"


#: At most this many indices of one axis hold every failure for them to be named (rows 3 and 7).
CONFINED_INDICES = 3


def _confined(failing: list, passing: list, rank: int, parts: bool = False) -> tuple | None:
    """Where the failures are confined to, when coordinates elsewhere pass and none there does:
    (text, axis, indices), axis None for a single coordinate.

    ``passing`` holds, per axis, the index of every passing coordinate (numpy columns). With ``parts``,
    the coordinates index a complex parameter's real view, whose last axis is the part.
    """
    if not passing or len(passing[0]) == 0:
        return None
    if len(failing) == 1 and (rank != 1 or parts):
        dtype = "complex128" if parts else "float64"
        return f"coordinate {coordinate_text(failing[0].coordinate, dtype)}", None, None
    for axis in range(rank):
        indices = sorted({check.coordinate[axis] for check in failing})
        if len(indices) <= CONFINED_INDICES and not np.any(np.isin(passing[axis], indices)):
            return _axis_words(rank, axis, indices, parts), axis, indices
    return None


def _axis_words(rank: int, axis: int, indices: list, parts: bool) -> str:
    """:func:`~.findings.axis_text`; with ``parts``, the last axis of a complex parameter's real view is its
    parts, and the others are counted without it."""
    if parts and axis == rank - 1:
        return " and ".join(f"the {'real' if index == 0 else 'imaginary'} parts" for index in indices)
    return axis_text(rank - parts, axis, indices)


@dataclass(frozen=True)
class DirectionalGap:
    """A failed directional test's analytic − numerical ``gap`` (per unit multiplier), each element's
    displacement ``shifts`` (flat), and the ``limit`` within which a predicted gap explains it."""

    shifts: np.ndarray
    gap: float
    limit: float

    def explains(self, errors: dict) -> bool:
        """Errors (flat index → analytic − numerical) alone account for the gap: the rest is right."""
        predicted = math.fsum(error * float(self.shifts[k]) for k, error in errors.items())
        return abs(self.gap - predicted) <= self.limit


def _evidenced(failing: list, confined: tuple, ratio, gradient: np.ndarray, directional, gap) -> bool:
    """The rest of the parameter is evidenced right: the directional test passed, or the failures —
    with every unchecked entry of the confined indices off by the same ratio — explain its gap."""
    if directional.verdict == PASSED:
        return True
    if gap is None:
        return False
    errors = {}
    _, axis, indices = confined
    if axis is not None and ratio not in (None, 0.0):
        flat = np.flatnonzero(np.isin(np.indices(gradient.shape)[axis], indices).ravel())
        values = gradient.reshape(-1)[flat]
        errors = dict(zip(flat.tolist(), (values - values / ratio).tolist()))
    for check in failing:
        estimate = _decided(check)
        errors[check.flat_index] = estimate.analytic - estimate.numerical
    return gap.explains(errors)


def _transposed(failing: list, gradient: np.ndarray, parts: bool = False) -> bool:
    """Every failing numerical value matches the analytic value at the mirrored coordinate (with
    ``parts``, of the same part of a complex parameter's entries)."""
    last = gradient.ndim - parts  # the axes after the matrix's are a complex parameter's parts
    if last < 2 or gradient.shape[last - 1] != gradient.shape[last - 2]:
        return False
    if not any(check.coordinate[last - 1] != check.coordinate[last - 2] for check in failing):
        return False
    for check in failing:
        estimate = _decided(check)
        index = check.coordinate
        mirrored = float(gradient[(*index[: last - 2], index[last - 1], index[last - 2], *index[last:])])
        gap = abs(estimate.numerical - mirrored)
        if gap > max(RATIO_SPREAD * max(abs(mirrored), abs(estimate.numerical)), 2 * estimate.error_bar.total):
            return False
    return True


@dataclass(frozen=True)
class Scope:
    """What a diagnosis says about its parameter beside its coordinates: its ``name``, how many
    coordinates were ``checked`` of its ``size`` elements, how many were ``inconclusive``, and, per
    axis, the index of every checked coordinate (``indices``, numpy columns)."""

    name: str
    checked: int
    size: int
    inconclusive: int = 0
    indices: list | None = None


def _unexplained(where: str | None, *parts: str, factor: float | None = None) -> Diagnosis:
    return Diagnosis(kind="unexplained", factor=factor, where=where, message="; ".join(part for part in parts if part))


def _confined_diagnosis(
    failing: list, confined, ratio, gradient: np.ndarray, directional, gap, scope: Scope
) -> Diagnosis:
    """The diagnosis of failures confined to one place (``confined``, from :func:`_confined`): localized
    there when the rest is evidenced right, else where it fails at least."""
    where = confined[0]
    fails = "fails" if len(failing) == 1 or confined[1] is None or len(confined[2]) == 1 else "fail"
    if scope.inconclusive:
        were = "s were" if scope.inconclusive > 1 else " was"
        return _unexplained(
            where,
            f"{where} {fails} at least, and {scope.inconclusive} coordinate{were} inconclusive: the rest is not shown "
            "right (check more coordinates, or at another step)",
            next_step(scope.name, scope.checked, scope.size),
        )
    if not _evidenced(failing, confined, ratio, gradient, directional, gap):
        seen = (
            "the directional test shows more error than the failing coordinates explain"
            if directional.verdict == FAILED
            else f"the directional test is {directional.verdict}: the rest is not shown right"
        )
        return _unexplained(
            where, f"{where} {fails} at least, and {seen}", next_step(scope.name, scope.checked, scope.size)
        )
    factor = None if ratio is None else _nice(ratio)
    detail = "" if factor is None else f" (there analytic = {factor:g} × numerical)"
    return Diagnosis(
        kind="localized",
        factor=factor,
        where=where,
        message=f"only {where} {fails} and the rest passes{detail}: an indexing or broadcasting slip there",
    )


def _directional_only(directional, scope: Scope) -> Diagnosis | None:
    """A failed directional test with no failing coordinate: where the error must be."""
    if directional.verdict != FAILED:
        return None
    failed = "the directional test failed"
    if all(estimate.numerical == 0.0 for estimate in directional.estimates):
        analytic = directional.estimates[directional.decided_at].analytic
        failed = (
            f"f does not change along {scope.name}'s direction at any multiplier tried, while the analytic "
            f"directional derivative is {analytic:.4g}"
        )
    if scope.inconclusive:
        were = "s were" if scope.inconclusive > 1 else " was"
        seen = f"no checked coordinate failed, but {scope.inconclusive} coordinate{were} inconclusive"
        return _unexplained(None, f"{failed}; {seen}", next_step(scope.name, scope.checked, scope.size))
    if scope.checked < scope.size:
        return _unexplained(
            None,
            "every checked coordinate passed but the directional test failed: the error is at coordinates the "
            "selection left out",
            next_step(scope.name, scope.checked, scope.size),
        )
    return _unexplained(
        None,
        "every coordinate passed but the directional test failed: an error spread over many coordinates, each "
        "within its tolerance",
    )


def _flat(check) -> bool:
    """The numerical derivative is 0 at every step tried, or within the error bar of 0 where the
    verdict rests, beside a nonzero analytic value."""
    decided = _decided(check)
    if decided.analytic == 0.0:
        return False
    return all(estimate.numerical == 0.0 for estimate in check.estimates) or not _resolved(decided)


def _still(check) -> bool:
    """f bit-identical to f(θ) at both probes of the first step and the numerical value 0 at every step."""
    difference = check.difference
    unmoved = difference.minus_value == difference.center_value == difference.plus_value
    return unmoved and all(estimate.numerical == 0.0 for estimate in check.estimates)


def _checked_indices(failing: list, scope: Scope) -> list:
    """Per axis, the index of every checked coordinate (the failing ones when the scope has none)."""
    if scope.indices is not None:
        return scope.indices
    return [np.array([check.coordinate[axis] for check in failing]) for axis in range(len(failing[0].coordinate))]


def _flat_diagnosis(failing: list, passing: list, shape: tuple, scope: Scope) -> Diagnosis:
    """Every failing coordinate has an f that does not (measurably) change beside a nonzero analytic
    value: what was seen, no cause."""
    analytic = max((_decided(check).analytic for check in failing), key=abs)
    places = shown([f"{scope.name}{rust_list(check.coordinate)}" for check in failing], 4)
    if all(map(_still, failing)):
        seen = f"f does not change along {places} at any step tried"
    else:
        seen = f"f does not change measurably along {places}: the numerical derivative is within its error bar of 0"
    if len(failing) == 1:
        text = f"{seen}, while the analytic value there is {analytic:.4g}"
    else:
        text = f"{seen}, while their analytic values are nonzero (up to {analytic:.4g})"
    slices = slices_text(failing, passing, _checked_indices(failing, scope), shape) if len(failing) > 1 else ""
    return _unexplained(None, text, slices, next_step(scope.name, scope.checked, scope.size))


def _zero_diagnosis(failing: list, passing: list, confined, directional, shape: tuple, scope: Scope) -> Diagnosis:
    """Every failing coordinate has analytic 0 where the numerical value is clearly not."""
    message = "the analytic gradient is 0 where the numerical one is not: a term never accumulated, or a branch detached from the graph"
    where = None
    if passing and len(passing[0]):
        where = confined[0] if confined is not None else None
        slices = slices_text(failing, passing, _checked_indices(failing, scope), shape)
        message = (
            f"the analytic gradient is 0 at every failing coordinate, where the numerical one is not, and right where "
            f"it passes ({slices}): a term never accumulated there, a loop left early, or a branch detached from the graph"
        )
    if directional.verdict == FAILED and scope.checked < scope.size:
        message += f"; the directional test failed too: there may be more among the unchecked ones, {next_step(scope.name, scope.checked, scope.size)}"
    return Diagnosis(kind="zero", factor=0.0, where=where, message=message)


def diagnose_parameter(
    failing: Sequence,
    passing: list,
    directional,
    gradient: np.ndarray,
    gap: DirectionalGap | None = None,
    scope: Scope | None = None,
    parts: bool = False,
) -> Diagnosis | None:
    """The Diagnosis of one parameter's failed CoordinateChecks and DirectionalCheck; None when
    nothing failed.

    ``passing`` holds, per axis, the index of every coordinate that passed with a clearly nonzero
    numerical value (numpy columns, see ``CoordinateChecks.passing_index_columns``).
    ``gradient`` is the parameter's whole analytic gradient (the transpose test reads the
    mirrored entries from it). ``gap``: a failed directional test's gap, which a "localized"
    diagnosis must explain (else it says where the parameter fails at least). ``scope``: the
    parameter's name, and how many of its coordinates were checked and inconclusive. ``parts``: the
    parameter is complex, its coordinates index its real view (the last index the part).
    """
    failing = list(failing)
    scope = scope or Scope(name="the parameter", checked=len(failing), size=int(np.size(gradient)))
    if not failing:
        return _directional_only(directional, scope)
    ratio = _common_ratio([_decided(check) for check in failing])
    if parts and ratio is not None and _nice(ratio) == -1.0 and all(c.coordinate[-1] == 1 for c in failing):
        return _CONJUGATE
    if _transposed(failing, gradient, parts):
        return Diagnosis(
            kind="transpose",
            factor=None,
            where=None,
            message="analytic[i, j] = numerical[j, i] at every failing coordinate: the gradient of a square "
            "weight is transposed (x·Wᵀ where x·W belongs, or the outer product taken in the wrong order)",
        )
    if all(map(_flat, failing)):
        return _flat_diagnosis(failing, passing, gradient.shape, scope)
    confined = _confined(failing, passing, gradient.ndim, parts)
    estimates = [_decided(check) for check in failing]
    if all(abs(e.analytic) <= RATIO_SPREAD * abs(e.numerical) for e in estimates):
        return _zero_diagnosis(failing, passing, confined, directional, gradient.shape, scope)
    ratio = _common_ratio(estimates)
    if confined is not None:
        return _confined_diagnosis(failing, confined, ratio, gradient, directional, gap, scope)
    unresolved_passes = not passing or len(passing[0]) == 0
    if ratio is not None and unresolved_passes and sum(map(_resolved, estimates)) >= 2:
        return _ratio_diagnosis(_nice(ratio))
    return _unexplained_diagnosis(failing, passing, gradient, scope, ratio)


def _unexplained_diagnosis(failing: list, passing: list, gradient: np.ndarray, scope: Scope, ratio) -> Diagnosis:
    """What the evidence shows when no kind fits: the slices, the ratios, the shape of the difference."""
    if len(failing) == 1 and ratio is not None:
        seen = (
            f"only one coordinate fails ({scope.name}{rust_list(failing[0].coordinate)}), where analytic = "
            f"{_nice(ratio):g} × numerical: one coordinate cannot tell a shared factor from any other error"
        )
        return _unexplained(None, seen, next_step(scope.name, scope.checked, scope.size), factor=_nice(ratio))
    counted = f"{len(failing)} of {scope.checked} checked coordinates fail"
    return _unexplained(
        None,
        f"{counted} with no common factor, mirror or place",
        slices_text(failing, passing, _checked_indices(failing, scope), gradient.shape),
        ratios_text(failing),
        difference_text(failing, gradient) or "",
        next_step(scope.name, scope.checked, scope.size),
    )


_CONJUGATE = Diagnosis(
    kind="conjugate",
    factor=None,
    where=None,
    message="the real parts agree and every failing imaginary part is −numerical: the gradient is conjugated "
    "(∂f/∂Re z − i·∂f/∂Im z where ∂f/∂Re z + i·∂f/∂Im z belongs: a conj missing or extra in the backward pass)",
)


def _ratio_diagnosis(factor: float) -> Diagnosis:
    if factor == 0.0:
        return Diagnosis(
            kind="zero",
            factor=0.0,
            where=None,
            message="the analytic gradient is 0 where the numerical one is not: a term never accumulated, or a "
            "branch detached from the graph",
        )
    if factor == -1.0:
        return Diagnosis(
            kind="sign",
            factor=-1.0,
            where=None,
            message="analytic = −numerical at every failing coordinate: a flipped sign (a loss maximised, "
            "a subtraction reversed)",
        )
    return Diagnosis(kind="scale", factor=factor, where=None, message=_scale_message(factor))


def with_other_parameters(diagnosis: Diagnosis | None, name: str, failing: Sequence, gradients: Mapping):
    """An unexplained ``diagnosis`` with what the analytic ``gradients`` of the parameters that passed
    show about its ``failing`` coordinates (a copy of one, a term proportional to one), said before
    its next step; any other diagnosis as it is."""
    if diagnosis is None or diagnosis.kind != "unexplained" or not failing:
        return diagnosis
    text = other_parameter_text(name, failing, gradients)
    if text is None:
        return diagnosis
    seen, _, step = diagnosis.message.rpartition("; ")
    return replace(diagnosis, message="; ".join(part for part in (seen, text, step) if part))


def diagnose_report(diagnoses: Sequence[Diagnosis | None]) -> Diagnosis | None:
    """One diagnosis for the report when every parameter failed (two or more), each off by the same
    factor: each a scale or sign, or a single failing coordinate's ratio (two parameters make two)."""
    found = [diagnosis for diagnosis in diagnoses if diagnosis is not None]
    if len(found) < 2 or len(found) < len(diagnoses):  # a parameter that did not fail shares no factor
        return None
    if any(diagnosis.kind not in ("scale", "sign", "unexplained") or diagnosis.factor is None for diagnosis in found):
        return None
    factors = {diagnosis.factor for diagnosis in found}
    if len(factors) != 1 or factors == {0.0}:
        return None
    [factor] = factors
    return Diagnosis(
        kind="sign" if factor == -1.0 else "scale",
        factor=factor,
        where="every parameter",
        message=f"every parameter is off by the same factor {factor:g}: the loss itself is scaled in the "
        "backward pass (or its sign flipped), not one layer",
    )
