"""The check's results: each coordinate's, parameter's and the report's records, JSON-ready."""

from __future__ import annotations

import operator
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..advice.steps import ProblemStepAdvice
from ..core.record import Record
from ..engine.estimator import CentralDifference, GradientComparison, OneSidedSlopeComparison
from ..engine.sweep import index_columns
from ..verdict.diagnosis import Diagnosis
from ..verdict.terms import FAILED, PASSED
from .directional import DirectionalCheck


@dataclass(frozen=True, slots=True)
class KinkVerdict(Record):
    """The one-sided slopes at the kink tolerance, at the coordinate's step.

    ``analytic_between_slopes`` is ``min(left, right) ≤ analytic ≤ max(left, right)``:
    at a suspected kink, True means the candidate is consistent with a subgradient, False
    that it lies outside both one-sided slopes.
    """

    suspected: bool
    analytic_between_slopes: bool
    slopes: OneSidedSlopeComparison


@dataclass(frozen=True, slots=True)
class CoordinateCheck(Record):
    """One coordinate of one parameter: the chapter's records at its step, and the verdict.

    ``difference``, ``comparison`` (the chapter's scaled error) and ``kink`` are at the
    coordinate's step h; ``difference.center_value`` is the shared f(θ). ``estimates`` has
    the estimate at h first, then those at the confirmation steps when h did not pass;
    ``decided_at`` indexes the one the verdict rests on. ``verdict`` is a :class:`~gradcheck_cli.verdict.words.Verdict`:
    passed, failed, inconclusive or suspected kink; ``reason`` says why.
    """

    flat_index: int
    coordinate: tuple
    difference: CentralDifference
    comparison: GradientComparison
    kink: KinkVerdict
    estimates: tuple
    decided_at: int
    verdict: str
    reason: str
    passed: bool


@dataclass(frozen=True)
class PurityVerdict(Record):
    """f(θ) at the restored point, evaluated several times during the check.

    ``pure``: every value bit-identical. Otherwise ``spread`` (max − min) is counted in every
    error bar; ``stateful`` when it exceeds JITTER_LIMIT·ε·|f| (then nothing passes).
    """

    pure: bool
    stateful: bool
    evaluations: int
    distinct: int
    reference_value: float
    spread: float
    message: str


class CoordinateChecks(Sequence):
    """Every checked coordinate of one parameter, in selection order, kept as columns.

    A sequence of :class:`CoordinateCheck`: the records of the coordinates that did not pass at
    their first step are kept (they were confirmed at other steps); the others are built from
    the columns when asked for, one at a time, so a million coordinates cost a few numpy arrays
    (under 300 bytes a coordinate, docs/performance.md) rather than a million records.
    """

    __slots__ = ("_reading", "_item", "_primary", "_judged")

    def __init__(self, reading, judged: dict):
        """``reading(k)``: coordinate k's record read from the primary columns at h
        (:class:`~gradcheck_cli.check.judge.PrimaryReading`); ``judged``: k → the confirmed records."""
        self._reading, self._item, self._primary, self._judged = reading, reading.item, reading.primary, judged

    def __len__(self) -> int:
        return len(self._primary.passed)

    def __getitem__(self, k):
        if isinstance(k, slice):
            return tuple(self[j] for j in range(*k.indices(len(self))))
        k = operator.index(k)
        if k < 0:
            k += len(self)
        if not 0 <= k < len(self):
            raise IndexError("coordinate index out of range")
        judged = self._judged.get(k)
        if judged is not None:
            return judged
        return self._reading(k)

    def __eq__(self, other) -> bool:
        """Equal to another sequence of the same records (a tuple of them too)."""
        if isinstance(other, (CoordinateChecks, tuple, list)):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"CoordinateChecks({len(self)} coordinates, {len(self._judged)} confirmed at other steps)"

    def verdict_count(self, verdict: str) -> int:
        """How many coordinates have ``verdict``."""
        if verdict == PASSED:
            return int(self._primary.passed.sum()) + sum(1 for r in self._judged.values() if r.verdict == PASSED)
        return sum(1 for record in self._judged.values() if record.verdict == verdict)

    def verdicts(self) -> set:
        """The distinct verdicts."""
        found = {record.verdict for record in self._judged.values()}
        return found | {PASSED} if self._primary.passed.any() else found

    def unpassed(self) -> list:
        """The records of the coordinates that did not pass, in order."""
        return [record for _, record in sorted(self._judged.items()) if not record.passed]

    def failed(self) -> list:
        """The records of the coordinates that failed, in order."""
        return [record for record in self.unpassed() if record.verdict == FAILED]

    def worst(self) -> CoordinateCheck:
        """The coordinate whose deciding estimate has the largest relative error (the first of equals)."""
        errors = self._primary.relative_error.copy()
        for k, record in self._judged.items():
            errors[k] = record.estimates[record.decided_at].relative_error
        return self[int(np.argmax(errors))]

    def index_columns(self) -> list:
        """For each axis, the index of every checked coordinate (numpy columns)."""
        columns = self._item.planned.columns
        return list(index_columns(columns.offsets, columns.shape))

    def passing_index_columns(self) -> list:
        """For each axis, the index of every coordinate that passed with a clearly nonzero numerical
        value (beyond twice its error bar): what the diagnosis compares failures against."""
        resolved = self._primary.passed & (np.abs(self._item.slopes.derivative) > 2 * self._primary.bar)
        for k, record in self._judged.items():
            decided = record.estimates[record.decided_at]
            resolved[k] = record.passed and abs(decided.numerical) > 2 * decided.error_bar.total
        columns = self._item.planned.columns
        return list(index_columns(columns.offsets[resolved], columns.shape))


@dataclass(frozen=True)
class ParameterCheck(Record):
    """Every selected coordinate of one named parameter, its directional test and its verdict.

    Attributes
    ----------
    name, dtype : str
    shape : tuple of int
    selection : str
        ``"structured"`` or ``"chapter"`` (a sampler with ``requested_samples``), ``"all"``
        or ``"explicit"``.
    requested_samples : int or None
    step : float or None
        The requested step of every coordinate (given, or advised with ``step="auto"``), or
        None for the dtype's default ε^(1/3)·max(1, |θ|).
    tolerance : float
        The relative tolerance, as used (given, or the dtype's ε^(1/3)).
    kink_tolerance : float or None
        Shared by every coordinate, or None when each coordinate's step sets its own.
    verdict : str
        failed if a coordinate or the directional test failed, else inconclusive
        if one did not pass or the objective is stateful, else passed.
    passed : bool
    checks : CoordinateChecks
        A sequence of CoordinateCheck, in selection order, built from columns when read.
    directional : DirectionalCheck
    diagnosis : Diagnosis or None
        What kind of bug the failures show (None when nothing failed).
    """

    name: str
    dtype: str
    shape: tuple
    selection: str
    requested_samples: int | None
    step: float | None
    tolerance: float
    kink_tolerance: float | None
    verdict: str
    passed: bool
    checks: tuple
    directional: DirectionalCheck
    diagnosis: Diagnosis | None


@dataclass(frozen=True)
class CallCheck(Record):
    """A check of how a torch or JAX derivative is called, beside its finite differences.

    ``kind`` is one of :data:`~gradcheck_cli.verdict.words.CALL_KINDS`: ``determinism`` (the backward
    called twice with the same cotangent), ``undefined gradients`` (the backward called with an output's
    gradient undefined, torch) or ``batching`` (the backward or forward rule under vmap against a loop
    of single calls). ``parameter`` names the input with the largest difference (or the first at fault),
    ``output`` the output whose gradient was undefined (None: every output's, or another kind);
    ``difference`` is the largest absolute difference found (None when a call raised) and ``tolerance``
    what it was allowed; ``message`` says what was compared and what came out.
    """

    kind: str
    parameter: str
    output: int | None
    verdict: str
    passed: bool
    difference: float | None
    tolerance: float
    message: str


@dataclass(frozen=True)
class GradientCheckReport(Record):
    """The whole check: every parameter, the purity measurement and the verdict.

    Attributes
    ----------
    verdict : str
        failed if any parameter failed; inconclusive if any did not pass or the
        objective is stateful; else passed.
    passed : bool
        Whether the verdict is passed.
    checked, failed, inconclusive : int
        Coordinates checked; those that failed; those that neither passed nor failed.
    failing_parameters : tuple of str
        Names of the parameters that did not pass, failed or inconclusive (on a stateful
        objective every parameter is inconclusive), in problem order.
    purity : PurityVerdict
    parameters : tuple of ParameterCheck, in problem order
    step_advice : ProblemStepAdvice or None
        With ``step="auto"``, the advice each parameter's step came from.
    evaluations : int
        Objective calls made by the check (the step advice's included).
    diagnosis : Diagnosis or None
        Set when every failing parameter is off by the same factor (the loss itself is scaled).
    calls : tuple of CallCheck
        torch's and JAX's ``check_function``: the checks of the derivative calls themselves
        (determinism, undefined output gradients, batching); a failed one fails the report and names
        its input among ``failing_parameters``. Empty for a problem's own gradients.
    """

    verdict: str
    passed: bool
    checked: int
    failed: int
    inconclusive: int
    failing_parameters: tuple
    purity: PurityVerdict
    parameters: tuple
    step_advice: ProblemStepAdvice | None
    evaluations: int
    diagnosis: Diagnosis | None
    calls: tuple = ()

    def parameter(self, name: str) -> ParameterCheck:
        """The :class:`ParameterCheck` named ``name``."""
        for check in self.parameters:
            if check.name == name:
                return check
        raise KeyError(name)

    def failures(self) -> list:
        """``(parameter name, CoordinateCheck)`` for every coordinate that did not pass."""
        return [(check.name, record) for check in self.parameters for record in check.checks.unpassed()]
