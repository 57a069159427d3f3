"""What kind of mistake a failed parameter shows: a scale, a sign, a transpose, a conjugate, a zero, one row.

Read off the coordinates the check already has, deterministically; the rules are in
docs/method.md ("Diagnosis").
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.record import Record
from ..engine.complex_parts import coordinate_text
from .words import FAILED, PASSED

__all__ = ["KINDS", "Diagnosis", "DirectionalGap", "diagnose_parameter", "diagnose_report", "unchanged_diagnosis"]

#: Every ``Diagnosis.kind``.
KINDS = ("scale", "sign", "transpose", "conjugate", "zero", "localized", "unexplained", "unchanged")
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


def _axis_name(rank: int, axis: int, index: int, parts: bool = False) -> str:
    """Index ``index`` of ``axis`` in words; with ``parts``, the last axis of a complex parameter's real view
    is its parts, and ``rank`` counts the others."""
    if parts and axis == rank:
        return f"the {'real' if index == 0 else 'imaginary'} parts"
    if rank == 2:
        return f"{'row' if axis == 0 else 'column'} {index}"
    if rank == 1:
        return f"element {index}"
    return f"index {index} of axis {axis}"


#: At most this many indices of one axis hold every failure for them to be named (rows 3 and 7).
CONFINED_INDICES = 3


def _indices_text(rank: int, axis: int, indices: list, parts: bool = False) -> str:
    if len(indices) == 1:
        return _axis_name(rank, axis, indices[0], parts)
    name = _axis_name(rank, axis, 0).rsplit(" ", 1)[0]
    plural = {"row": "rows", "column": "columns", "element": "elements"}.get(name, name)
    return f"{plural} {', '.join(str(index) for index in indices)}"


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
            return _indices_text(rank - parts, axis, indices, parts), axis, indices
    return None


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


def _confined_diagnosis(
    failing: list, confined, ratio, gradient: np.ndarray, directional, gap: DirectionalGap | None, inconclusive: int
) -> Diagnosis:
    """The diagnosis of failures confined to one place (``confined``, from :func:`_confined`): localized
    there when the rest is evidenced right, else where it fails at least."""
    where = confined[0]
    if inconclusive:
        return Diagnosis(
            kind="unexplained",
            factor=None,
            where=where,
            message=f"{where} fails at least, and {inconclusive} coordinate{'s were' if inconclusive > 1 else ' was'} "
            "inconclusive: the rest is not shown right (check more coordinates, or at another step)",
        )
    if not _evidenced(failing, confined, ratio, gradient, directional, gap):
        return Diagnosis(
            kind="unexplained",
            factor=None,
            where=where,
            message=f"{where} fails at least, and the directional test shows more error than the failing "
            "coordinates explain: check every coordinate (samples='all')",
        )
    factor = None if ratio is None else _nice(ratio)
    detail = "" if factor is None else f" (there analytic = {factor:g} × numerical)"
    return Diagnosis(
        kind="localized",
        factor=factor,
        where=where,
        message=f"only {where} fails and the rest passes{detail}: an indexing or broadcasting slip there",
    )


def diagnose_parameter(
    failing: Sequence,
    passing: list,
    directional,
    gradient: np.ndarray,
    gap: DirectionalGap | None = None,
    inconclusive: int = 0,
    parts: bool = False,
) -> Diagnosis | None:
    """The Diagnosis of one parameter's failed CoordinateChecks and DirectionalCheck; None when
    nothing failed.

    ``passing`` holds, per axis, the index of every coordinate that passed with a clearly nonzero
    numerical value (numpy columns, see ``CoordinateChecks.passing_index_columns``).
    ``gradient`` is the parameter's whole analytic gradient (the transpose test reads the
    mirrored entries from it). ``gap``: a failed directional test's gap, which a "localized"
    diagnosis must explain (else it says where the parameter fails at least). ``inconclusive``:
    how many of the parameter's coordinates were inconclusive (then the rest is not evidenced right).
    ``parts``: the parameter is complex, its coordinates index its real view (the last index the part).
    """
    failing = list(failing)
    if not failing:
        if directional.verdict != FAILED:
            return None
        return Diagnosis(
            kind="unexplained",
            factor=None,
            where=None,
            message="every checked coordinate passed but the directional test failed: the error is at "
            "coordinates the selection left out (check them all with --samples all)",
        )
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
    confined = _confined(failing, passing, gradient.ndim, parts)
    if confined is not None:
        return _confined_diagnosis(failing, confined, ratio, gradient, directional, gap, inconclusive)
    if ratio is not None and (not passing or len(passing[0]) == 0):
        return _ratio_diagnosis(_nice(ratio))
    return Diagnosis(
        kind="unexplained",
        factor=None,
        where=None,
        message="the failing coordinates share no factor, mirror or row: none of the usual bugs fits",
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


def diagnose_report(diagnoses: Sequence[Diagnosis | None]) -> Diagnosis | None:
    """One diagnosis for the report when every parameter failed, each off by the same factor."""
    found = [diagnosis for diagnosis in diagnoses if diagnosis is not None]
    if len(found) < 2 or len(found) < len(diagnoses):  # a parameter that did not fail shares no factor
        return None
    if any(diagnosis.kind not in ("scale", "sign") for diagnosis in found):
        return None
    factors = {diagnosis.factor for diagnosis in found}
    if len(factors) != 1:
        return None
    [factor] = factors
    return Diagnosis(
        kind=found[0].kind,
        factor=factor,
        where="every parameter",
        message=f"every parameter is off by the same factor {factor:g}: the loss itself is scaled in the "
        "backward pass (or its sign flipped), not one layer",
    )


def unchanged_diagnosis(name: str, precision: str) -> Diagnosis:
    """f bit-identical at every probe of a parameter that did not pass."""
    return Diagnosis(
        kind="unchanged",
        factor=None,
        where=None,
        message=f"f did not change at any probe of {name}: the objective does not read this array (a stale "
        f"copy?) or computes in lower precision than {precision}",
    )
