"""The verdicts of a check's coordinates, directions and parameters, and the purity of f(θ)."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..core.record import float_bits
from ..engine.dtypes import ProbeDtype, probe_dtype
from ..engine.estimator import CentralDifference, compare_gradients, compare_one_sided_slopes, validate_step
from ..engine.tensors import at_coordinate
from ..errors import AtParameter, GradCheckError
from ..verdict.diagnosis import DirectionalGap, diagnose_parameter, diagnose_report, unchanged_diagnosis
from ..verdict.estimates import (
    NoiseModel,
    ObservedNoise,
    PrimaryColumns,
    ProbeValues,
    floor_factor,
    observed_noise,
    primary_columns,
    sensitivity_floors,
    series_noise,
    stencil_estimates,
    value_epsilons,
)
from ..verdict.reasons import agreement
from ..verdict.rules import judge_confirmed, judge_primary, verdict_of, with_step_sensitivity
from ..verdict.terms import (
    CONFIRMATION_FACTORS,
    FAILED,
    FAIL_MARGIN,
    INCONCLUSIVE,
    KINK,
    PASSED,
    ROUNDING_FACTOR,
    Evidence,
    Judgement,
    Resolution,
    Standard,
)
from .directional import DirectionalCheck, directional_estimate
from .plan import PlannedParameter
from .probe import (
    JITTER_LIMIT,
    GuardedObjective,
    ProbedParameter,
    confirmations,
    coordinate_difference,
    probe_parameter_direction,
)
from .records import CoordinateCheck, CoordinateChecks, GradientCheckReport, KinkVerdict, ParameterCheck, PurityVerdict


@dataclass(frozen=True, eq=False)
class PrimaryReading:
    """What a parameter's coordinates are judged with: the probed ``item``, f(θ) ``center``, the
    ``jitter``, the ``resolution`` and the ``primary`` columns at h. Called with k, coordinate k's
    record read from the primary columns, as :class:`CoordinateChecks` asks."""

    item: ProbedParameter
    center: float
    jitter: float
    resolution: Resolution
    primary: PrimaryColumns

    def __call__(self, k: int) -> CoordinateCheck:
        return _judge_coordinate(self, k)


def _judge_coordinate(
    reading: PrimaryReading, k: int, differences=None, noise: ObservedNoise | None = None
) -> CoordinateCheck:
    """Coordinate k's record, read from the ``reading``'s primary columns at h when it passes there
    (``differences`` None); else judged from its ``differences`` at every step (:func:`confirmations`),
    every bar carrying the parameter's observed ``noise``."""
    item, center = reading.item, reading.center
    planned = item.planned
    index = planned.columns.coordinate(k)
    difference = (
        differences[0]
        if differences
        else coordinate_difference(planned, k, item.minus_values, center, item.plus_values)
    )
    analytic = float(planned.columns.analytic[k])
    try:
        comparison = compare_gradients(analytic, difference.derivative, planned.tolerance)
        kink_tolerance = float(_kink_tolerances(planned, difference.requested_step, difference.point))
        slopes = compare_one_sided_slopes(difference, kink_tolerance)
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=at_coordinate(index, error)) from error
    if differences is None:
        estimates = (reading.primary.estimate(k),)
        floor = float(reading.primary.floor[k])
        judgement = Judgement(verdict=PASSED, decided_at=0, reason=agreement(estimates[0], planned.tolerance, floor))
    else:
        estimates, judgement = _confirmed(reading, k, differences, noise)
    between = min(slopes.left, slopes.right) <= analytic <= max(slopes.left, slopes.right)
    return CoordinateCheck(
        flat_index=int(planned.columns.offsets[k]),
        coordinate=index,
        difference=difference,
        comparison=comparison,
        kink=KinkVerdict(suspected=not slopes.consistent, analytic_between_slopes=between, slopes=slopes),
        **_verdict_fields(estimates, judgement),
    )


def _confirmed(reading: PrimaryReading, k: int, differences: list, noise: ObservedNoise | None) -> tuple:
    """Coordinate k, which did not pass at h, judged from its ``differences`` at every step (the
    first at h): its estimates (the primary one first, unless the observed ``noise`` recomputes
    it) and the :class:`Judgement`, at the primary floor, raised by the noise when there is any."""
    item, center, jitter, resolution = reading.item, reading.center, reading.jitter, reading.resolution
    planned, difference = item.planned, differences[0]
    analytic, floor = float(planned.columns.analytic[k]), float(reading.primary.floor[k])
    noise = noise or ObservedNoise(epsilon=planned.dtype.epsilon, units=0.0)
    if noise.units:
        epsilons = value_epsilons(
            [difference.minus_value], center, [difference.plus_value], noise.epsilon, _points(difference)
        )
        factor = floor_factor(planned.columns.analytic, planned.dtype)
        step, point = difference.requested_step, difference.point
        floor = float(sensitivity_floors(step, point, epsilons, planned.tolerance, factor)[0])
    kink_tolerance = _kink_tolerances(planned, np.array([d.requested_step for d in differences]), difference.point)
    confirmations = stencil_estimates(differences, analytic, NoiseModel(noise.epsilon, jitter, kink_tolerance))
    first = (reading.primary.estimate(k),) if not noise.units else ()
    estimates = with_step_sensitivity(
        [*first, *(confirmations.estimate(j) for j in range(len(first), len(differences)))]
    )
    evidence = Evidence(
        collapsed=[other.minus_value == other.center_value == other.plus_value for other in differences],
        precision=planned.dtype.name,
        values_precision=_values_precision(planned, difference),
        noise=noise.units,
        rounding_zero=_rounding_zero(item, center, resolution),
    )
    judgement = judge_confirmed(estimates, Standard(planned.tolerance, resolution, floor), evidence)
    return estimates, judgement


def _rounding_zero(item: ProbedParameter, center: float, resolution: Resolution) -> float:
    """Where every first-step probe of the parameter left f bit-identical (a stale copy, a lower
    precision), the largest |analytic| that is zero up to rounding beside the gradients that matter:
    all that its collapsed estimates can pass. Elsewhere (one coordinate's collapse beside others
    that move f) a collapsed estimate bounds |f′| by its bar: no limit (inf)."""
    if np.any(item.minus_values != center) or np.any(item.plus_values != center):
        return math.inf
    return ROUNDING_FACTOR * item.planned.dtype.epsilon * max(resolution.gradient, resolution.check)


def _values_precision(planned: PlannedParameter, difference: CentralDifference) -> str | None:
    """float32 or bfloat16 when f's three values at h are all numbers of that less precise dtype."""
    values = ([difference.minus_value], difference.center_value, [difference.plus_value])
    epsilon = float(value_epsilons(*values, planned.dtype.epsilon, _points(difference))[0])
    if epsilon == planned.dtype.epsilon:
        return None
    return "bfloat16" if epsilon == 2.0**-7 else "float32"


def _points(difference: CentralDifference) -> tuple:
    """The difference's θ−h, θ, θ+h as one-element columns (for value_epsilons)."""
    return ([difference.minus_point], [difference.point], [difference.plus_point])


def _verdict_fields(estimates: tuple, judgement: Judgement) -> dict:
    """The fields every judged record shares: the estimates, which one decided, the verdict and why."""
    return dict(
        estimates=estimates,
        decided_at=judgement.decided_at,
        verdict=judgement.verdict,
        reason=judgement.reason,
        passed=judgement.verdict == PASSED,
    )


def _judge_direction(
    item: ProbedParameter, counted: GuardedObjective, jitter: float, resolution: Resolution, noise: ObservedNoise
) -> DirectionalCheck:
    """The directional test's verdict: at multiplier 1, confirmed at the other multipliers if needed,
    every bar carrying the value ``noise`` the parameter's coordinates showed."""
    planned = item.planned
    epsilon = noise.epsilon
    center = counted.centers[0]
    kink_tolerance = float(_kink_tolerances(planned, 0.0 if planned.step is None else planned.step, 0.0))

    def estimate(probe):
        scale = max(resolution.gradient, resolution.check) or 1.0  # all zero: the chapter's floor
        return directional_estimate(
            probe, center, NoiseModel(epsilon, jitter, kink_tolerance), scale, resolution.gradient
        )

    probes = [item.direction] if item.direction is not None else []
    floor, judgement = planned.tolerance, None
    if probes:
        floor = _direction_floor(planned, probes[0], center, epsilon)
        standard = Standard(planned.tolerance, resolution, floor, "multiplier")
        judgement = judge_primary(estimate(probes[0]), standard)
    if judgement is None:
        for factor in CONFIRMATION_FACTORS:
            probe = probe_parameter_direction(planned, item.original, item.displacement, factor, counted)
            if probe is not None:
                probes.append(probe)
        noise = _direction_noise(probes, center, noise, planned.dtype.epsilon)
        if noise.epsilon > epsilon:  # the direction's own estimates show f's lower precision
            epsilon = noise.epsilon
            floor = _direction_floor(planned, probes[0], center, epsilon)
    estimates = tuple(estimate(probe) for probe in probes)
    if judgement is None and not estimates:
        judgement = Judgement(
            verdict=INCONCLUSIVE, decided_at=0, reason="the direction's probes round back to θ or overflow"
        )
    elif judgement is None:
        estimates = with_step_sensitivity(estimates)
        evidence = Evidence(
            collapsed=[probe.minus_value == center == probe.plus_value for probe in probes],
            precision=planned.dtype.name,
            noise=noise.units,
            rounding_zero=_rounding_zero(item, center, resolution),
        )
        judgement = judge_confirmed(estimates, Standard(planned.tolerance, resolution, floor, "multiplier"), evidence)
    first = probes[0] if probes else None
    return DirectionalCheck(
        elements=int(planned.array.size),
        moved=first.moved if first else 0,
        minus_value=first.minus_value if first else math.nan,
        plus_value=first.plus_value if first else math.nan,
        **_verdict_fields(estimates, judgement),
    )


def _direction_floor(planned: PlannedParameter, probe, center: float, epsilon: float) -> float:
    """The directional test's sensitivity floor at multiplier 1, f's values carrying ``epsilon``."""
    step = planned.dtype.default_step(0.0) if planned.step is None else planned.step
    epsilons = value_epsilons([probe.minus_value], center, [probe.plus_value], epsilon)
    factor = floor_factor(planned.columns.analytic, planned.dtype)
    return float(sensitivity_floors(step, 0.0, epsilons, planned.tolerance, factor)[0])


def _direction_noise(probes: list, center: float, noise: ObservedNoise, epsilon: float) -> ObservedNoise:
    """The larger of the parameter's observed ``noise`` and the one the direction's own estimates
    show, beyond the rounding of the dtype's ``epsilon``."""
    moved = [probe for probe in probes if not probe.minus_value == center == probe.plus_value]
    series = [
        (
            probe.multiplier,
            (probe.plus_value - probe.minus_value) / (2 * probe.multiplier),
            1.0 / probe.multiplier,
            max(abs(probe.minus_value), abs(center), abs(probe.plus_value)),
        )
        for probe in moved
    ]
    own = series_noise([series], epsilon)
    return own if own.epsilon > noise.epsilon else noise


def largest_gradient(item: ProbedParameter) -> float:
    """The largest |numerical| at the checked coordinates: neither an unchecked entry nor the
    analytic side under test (a bug that scales it up) sets the tolerance of the others."""
    return max(0.0, float(np.max(np.abs(item.slopes.derivative))))


def _kink_tolerances(planned: PlannedParameter, steps, theta):
    """The one-sided slopes' tolerance at requested ``steps`` at ``theta``: a number, or a column.

    The given one; at the default step ε^(1/6) (at every confirmation step too); else
    :func:`kink_tolerance_for_step`'s rule.
    """
    if planned.kink_tolerance is not None:
        return planned.kink_tolerance
    if planned.step is None:
        return planned.dtype.kink_tolerance
    return _step_kink_tolerances(steps, theta, planned.dtype)


def judge_parameter(
    item: ProbedParameter, counted: GuardedObjective, jitter: float, largest: tuple, direction_scale: float
) -> ParameterCheck:
    planned, columns = item.planned, item.planned.columns
    resolution = Resolution(gradient=largest_gradient(item), check=largest[0])
    kink_tolerances = _kink_tolerances(planned, columns.step, columns.theta)
    center = counted.centers[0]
    primary = primary_columns(
        columns,
        ProbeValues(item.minus_values, center, item.plus_values, item.slopes),
        NoiseModel(planned.dtype.epsilon, jitter, kink_tolerances),
        Standard(planned.tolerance, resolution),
        floor_factor(columns.analytic, planned.dtype),
    )
    confirmed = {k: confirmations(item, k, center, counted) for k in np.flatnonzero(~primary.passed).tolist()}
    noise = observed_noise(confirmed.values(), planned.dtype.epsilon)
    reading = PrimaryReading(item, center, jitter, resolution, primary)
    judged = {k: _judge_coordinate(reading, k, differences, noise) for k, differences in confirmed.items()}
    checks = CoordinateChecks(PrimaryReading(_slim(item), center, jitter, resolution, primary), judged)
    resolution = Resolution(gradient=direction_scale, check=largest[1])
    directional = _judge_direction(item, counted, jitter, resolution, noise)
    verdict = verdict_of(checks.verdicts() | {directional.verdict})
    unique = np.unique(kink_tolerances) if isinstance(kink_tolerances, np.ndarray) else [kink_tolerances]
    diagnosis = diagnose_parameter(
        checks.failed(),
        checks.passing_index_columns(),
        directional,
        np.asarray(planned.gradient, dtype=np.float64) if checks.failed() else planned.gradient,  # read if failed
        _directional_gap(item, directional, planned.tolerance),
        checks.verdict_count(INCONCLUSIVE),
        parts=planned.complex_dtype is not None,
    )
    if diagnosis is None and verdict != PASSED and _unchanged(item, center, directional):
        diagnosis = unchanged_diagnosis(planned.name, planned.dtype.name)
    return ParameterCheck(
        name=planned.name,
        dtype=planned.shown_dtype,
        shape=planned.shown_shape,
        selection=planned.selection,
        requested_samples=planned.requested_samples,
        step=planned.step,
        tolerance=planned.tolerance,
        kink_tolerance=float(unique[0]) if len(unique) == 1 else None,
        verdict=verdict,
        passed=verdict == PASSED,
        checks=checks,
        directional=directional,
        diagnosis=diagnosis,
    )


def _slim(item: ProbedParameter) -> ProbedParameter:
    """``item`` without its arrays: the records are built from what they show, and a report that is
    kept must keep no copy of θ (nor θ, its snapshot or its gradient)."""
    planned = dataclasses.replace(item.planned, array=None, gradient=None, snapshot=None)
    return ProbedParameter(planned, item.minus_values, item.plus_values, item.slopes)


def _unchanged(item: ProbedParameter, center: float, directional: DirectionalCheck) -> bool:
    """f bit-identical to f(θ) at both probes of every coordinate's first step and of the direction."""
    moved = np.any(item.minus_values != center) or np.any(item.plus_values != center)
    return not moved and directional.minus_value == center == directional.plus_value


def _directional_gap(item: ProbedParameter, directional: DirectionalCheck, tolerance: float) -> DirectionalGap | None:
    """A failed directional test's gap, for the diagnosis to explain (None unless it failed)."""
    if directional.verdict != FAILED or item.displacement is None:
        return None
    estimate = directional.estimates[directional.decided_at]
    return DirectionalGap(
        shifts=item.displacement.shifts(item.original),
        gap=estimate.analytic - estimate.numerical,
        limit=max(FAIL_MARGIN * estimate.error_bar.total, tolerance * estimate.scale),
    )


def report_of(
    checks: list, purity: PurityVerdict, step_advice, evaluations: int, calls: tuple = ()
) -> GradientCheckReport:
    """The report of the parameters' ``checks`` and the derivative ``calls``' checks (torch and JAX)."""
    verdict = verdict_of([*(check.verdict for check in checks), *(call.verdict for call in calls)], purity.stateful)
    failing = [check.name for check in checks if not check.passed]
    failing += [call.parameter for call in calls if not call.passed]
    return GradientCheckReport(
        verdict=verdict,
        passed=verdict == PASSED,
        checked=sum(len(check.checks) for check in checks),
        failed=sum(check.checks.verdict_count(FAILED) for check in checks),
        inconclusive=sum(
            check.checks.verdict_count(INCONCLUSIVE) + check.checks.verdict_count(KINK) for check in checks
        ),
        failing_parameters=tuple(dict.fromkeys(failing)),
        purity=purity,
        parameters=tuple(checks),
        step_advice=step_advice,
        evaluations=evaluations,
        diagnosis=diagnose_report([check.diagnosis for check in checks]),
        calls=tuple(calls),
    )


def merged_report(reports: Mapping) -> GradientCheckReport:
    """One report of several checks by label (a torch or JAX function in several modes or orders): each
    parameter's and call check's name followed by its label in parentheses, the least pure purity,
    every evaluation counted."""
    checks = [
        dataclasses.replace(check, name=f"{check.name} ({label})")
        for label, report in reports.items()
        for check in report.parameters
    ]
    calls = [
        dataclasses.replace(call, parameter=f"{call.parameter} ({label})")
        for label, report in reports.items()
        for call in report.calls
    ]
    purity = max((report.purity for report in reports.values()), key=lambda purity: (purity.stateful, not purity.pure))
    return report_of(checks, purity, None, sum(report.evaluations for report in reports.values()), tuple(calls))


def purity_of(centers: list, epsilon: float) -> PurityVerdict:
    """The spread of f(θ) over its evaluations at the restored point, and what it means."""
    reference = centers[0]
    distinct = len({float_bits(value) for value in centers})
    spread = max(centers) - min(centers)
    stateful = spread > JITTER_LIMIT * epsilon * max(abs(value) for value in centers)
    if distinct == 1:
        message = f"all {len(centers)} evaluations of f(θ) are bit-identical"
    elif stateful:
        message = (
            f"the objective is nondeterministic or stateful: f(θ) took {distinct} different values in "
            f"{len(centers)} evaluations with every parameter restored (spread {spread:.2e}), far beyond "
            "rounding jitter; no comparison built on it is evidence"
        )
    else:
        message = (
            f"f(θ) took {distinct} different values in {len(centers)} evaluations (spread {spread:.2e}): "
            "rounding jitter, counted in every error bar"
        )
    return PurityVerdict(
        pure=distinct == 1,
        stateful=stateful,
        evaluations=len(centers),
        distinct=distinct,
        reference_value=reference,
        spread=spread,
        message=message,
    )


def kink_tolerance_for_step(step: float, point: float, dtype) -> float:
    """The kink tolerance that goes with requested step h at θ: max(ε^(1/6), √(h / max(1, |θ|))).

    Parameters
    ----------
    step : float
        The requested step h, positive and finite.
    point : float
        The coordinate's θ.
    dtype : ProbeDtype, numpy dtype or str
        The parameter's dtype (float64, float32 or bfloat16).
    """
    dtype = dtype if isinstance(dtype, ProbeDtype) else probe_dtype(dtype)
    return float(_step_kink_tolerances(np.float64(validate_step(step)), np.float64(point), dtype))


def _step_kink_tolerances(steps, theta, dtype: ProbeDtype):
    """max(ε^(1/6), √(h / max(1, |θ|))) of each requested step h at θ (numbers or columns)."""
    with np.errstate(all="ignore"):
        return np.maximum(dtype.kink_tolerance, np.sqrt(steps / np.maximum(1.0, np.abs(theta))))
