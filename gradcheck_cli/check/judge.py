"""The verdicts of a check's coordinates, directions and parameters, and their diagnoses."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import numpy as np

from ..engine.dtypes import probe_dtype
from ..engine.estimator import CentralDifference, compare_gradients, compare_one_sided_slopes
from ..engine.tensors import at_coordinate
from ..errors import AtParameter, GradCheckError
from ..verdict.estimates import (
    NoiseModel,
    ObservedNoise,
    PrimaryColumns,
    ProbeValues,
    floor_factor,
    no_coordinates,
    observed_noise,
    primary_columns,
    sensitivity_floors,
    series_noise,
    stencil_estimates,
    step_kink_tolerances,
    value_epsilons,
)
from ..verdict.reasons import agreement
from ..verdict.rules import judge_confirmed, judge_primary, smooth_by_curvature, verdict_of, with_step_sensitivity
from ..verdict.terms import (
    CONFIRMATION_FACTORS,
    INCONCLUSIVE,
    KINK,
    LARGEST_RELATIVE_STEP,
    LAST_FACTOR,
    PASSED,
    ROUNDING_FACTOR,
    Evidence,
    Judgement,
    Resolution,
    Standard,
)
from .diagnosed import diagnosis_of
from .directional import DirectionalCheck, directional_estimate
from .plan import PlannedParameter
from .probe import (
    GuardedObjective,
    ProbedParameter,
    confirmations,
    coordinate_difference,
    further_differences,
    probe_parameter_direction,
)
from .records import CoordinateCheck, CoordinateChecks, KinkVerdict, ParameterCheck, PurityVerdict


@dataclass(frozen=True, eq=False)
class PrimaryReading:
    """What a parameter's coordinates are judged with: the probed ``item``, f(θ) ``center``, the
    ``jitter``, the ``resolution``, the ``primary`` columns at h, and whether f(θ) is ``stateful``.
    Called with k, coordinate k's record read from the primary columns, as :class:`CoordinateChecks`
    asks."""

    item: ProbedParameter
    center: float
    jitter: float
    resolution: Resolution
    primary: PrimaryColumns
    stateful: bool = False

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
    estimates = [*first, *(confirmations.estimate(j) for j in range(len(first), len(differences)))]
    estimates = with_step_sensitivity(_smooth_slopes(estimates, [d.right_slope - d.left_slope for d in differences]))
    values_precision = _values_precision(planned, differences)
    evidence = Evidence(
        collapsed=[other.minus_value == other.center_value == other.plus_value for other in differences],
        precision=planned.dtype.name,
        values_precision=values_precision,
        frozen=_frozen(values_precision, differences),
        noise=noise.units,
        rounding_zero=_rounding_zero(item, center, resolution),
        stateful=reading.stateful,
    )
    judgement = judge_confirmed(estimates, Standard(planned.tolerance, resolution, floor), evidence)
    return estimates, judgement


def _smooth_slopes(estimates: list, gaps: list) -> list:
    """The estimates, their slopes consistent where the slopes' ``gaps`` (right minus left) across
    steps show a smooth f's curvature (:func:`~gradcheck_cli.verdict.rules.smooth_by_curvature`): at
    100h in float32 a quadratic's slopes differ by f″·h, far beyond any kink tolerance, and agree
    with 10h's."""
    steps = [e.step for e in estimates]
    # each slope is off by up to its values' error over its spacing: 4 bars' worth between them
    noises = [4 * (e.error_bar.rounding + e.error_bar.jitter) for e in estimates]
    smooth = smooth_by_curvature(steps, gaps, noises)
    return [
        dataclasses.replace(e, slopes_consistent=True) if flag and not e.slopes_consistent else e
        for e, flag in zip(estimates, smooth)
    ]


def _rounding_zero(item: ProbedParameter, center: float, resolution: Resolution) -> float:
    """Where every first-step probe of the parameter left f bit-identical (a stale copy, a lower
    precision), the largest |analytic| that is zero up to rounding beside the gradients that matter:
    all that its collapsed estimates can pass. Elsewhere (one coordinate's collapse beside others
    that move f) a collapsed estimate bounds |f′| by its bar: no limit (inf)."""
    if np.any(item.minus_values != center) or np.any(item.plus_values != center):
        return math.inf
    return ROUNDING_FACTOR * item.planned.dtype.epsilon * max(resolution.gradient, resolution.check)


def _values_precision(planned: PlannedParameter, differences: list) -> str | None:
    """float32 or bfloat16 when f's three values at every step tried are all numbers of that less
    precise dtype, and not by chance: one of them has more significant bits than half its significand,
    or every one is the same number (f frozen, read as a precision too coarse for the steps). Values of
    a few bits are numbers of every binary precision: 0 and k·2⁻⁵², what terms of order 1 cancel to."""
    epsilon = min(
        float(value_epsilons([d.minus_value], d.center_value, [d.plus_value], planned.dtype.epsilon, _points(d))[0])
        for d in differences
    )
    if epsilon == planned.dtype.epsilon:
        return None
    name = "bfloat16" if epsilon == 2.0**-7 else "float32"
    values = {value for d in differences for value in (d.minus_value, d.center_value, d.plus_value)}
    if len(values) > 1 and max(map(_significant_bits, values)) <= probe_dtype(name).significand_bits // 2:
        return None
    return name


def _significant_bits(value: float) -> int:
    """How many bits of its significand a finite float64 needs, from the leading 1 to the last (0 for 0)."""
    if value == 0.0 or not math.isfinite(value):
        return 0
    significand = int(math.ldexp(math.frexp(abs(value))[0], 53))
    return significand.bit_length() - ((significand & -significand).bit_length() - 1)


def _frozen(values_precision: str | None, differences: list) -> bool:
    """f's values are numbers of a lower precision whose quantum at θ is at least every step tried:
    an input rounded into it need not move at any of them."""
    if values_precision is None:
        return False
    epsilon = probe_dtype(values_precision).epsilon
    point = differences[0].point
    return max(difference.requested_step for difference in differences) <= 2 * epsilon * max(1.0, abs(point))


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
    item: ProbedParameter,
    counted: GuardedObjective,
    reading: PrimaryReading,
    resolution: Resolution,
    noise: ObservedNoise,
) -> DirectionalCheck:
    """The directional test's verdict: at multiplier 1, confirmed at 0.1 and 10 if needed and at 100
    if those leave it undecided, every bar carrying the value ``noise`` the parameter's coordinates
    showed (or the direction's own, when larger)."""
    planned = item.planned
    center = counted.centers[0]
    direction = _DirectionReading(item, reading, resolution, noise.epsilon, center)
    probes = [item.direction] if item.direction is not None else []
    if not probes:
        judgement = Judgement(
            verdict=INCONCLUSIVE, decided_at=0, reason="the direction's probes round back to θ or overflow"
        )
        return _directional_check(planned, probes, (), judgement)
    first = direction.estimate(probes[0])
    judgement = judge_primary(first, direction.standard(probes[0]))
    if judgement is not None:
        return _directional_check(planned, probes, (first,), judgement)
    probes += _direction_probes(item, counted, CONFIRMATION_FACTORS)
    noise = _direction_noise(probes, center, noise, planned.dtype.epsilon)
    direction.epsilon = max(direction.epsilon, noise.epsilon)  # the direction's own estimates show f's lower precision
    estimates, judgement = direction.judged(probes, noise)
    # each element moves by (ε^(1/3)·max(1, |θ_i|) or h)/√N at multiplier 1
    moved = (planned.dtype.step_factor if planned.step is None else planned.step) / math.sqrt(planned.array.size)
    if judgement.verdict in (INCONCLUSIVE, KINK) and LAST_FACTOR * moved <= LARGEST_RELATIVE_STEP:
        last = _unless_raised(lambda: _direction_probes(item, counted, (LAST_FACTOR,)))
        rejudged = direction.judged(probes + last, noise) if last else None
        if rejudged is not None and rejudged[1].verdict == PASSED:  # as a coordinate's: 100h only passes
            estimates, judgement = rejudged
            probes += last
    return _directional_check(planned, probes, estimates, judgement)


def judge_joint_direction(item: ProbedParameter, center: float, purity: PurityVerdict, scale: float):
    """A fast check's joint direction (``item.direction``, every parameter moved at once; ``item.planned``
    stands for them all: they share dtype, step and tolerances) judged at multiplier 1 alone, beside
    its measured ``scale``: its DirectionalCheck, or None where that one estimate does not decide (no
    confirmation is probed: each parameter's own direction then is, docs/method.md "The fast check")."""
    resolution = Resolution(scale, scale)
    reading = PrimaryReading(item, center, purity.spread, resolution, None, purity.stateful)
    direction = _DirectionReading(item, reading, resolution, item.planned.dtype.epsilon, center)
    first = direction.estimate(item.direction)
    judgement = judge_primary(first, direction.standard(item.direction))
    return None if judgement is None else _directional_check(item.planned, [item.direction], (first,), judgement)


def _direction_probes(item: ProbedParameter, counted: GuardedObjective, factors) -> list:
    """The direction's usable probes at each multiplier of ``factors``."""
    probes = (
        probe_parameter_direction(item.planned, item.original, item.displacement, factor, counted) for factor in factors
    )
    return [probe for probe in probes if probe is not None]


def _directional_check(planned: PlannedParameter, probes: list, estimates: tuple, judgement: Judgement):
    first = probes[0] if probes else None
    return DirectionalCheck(
        elements=int(planned.array.size),
        moved=first.moved if first else 0,
        minus_value=first.minus_value if first else math.nan,
        plus_value=first.plus_value if first else math.nan,
        **_verdict_fields(estimates, judgement),
    )


@dataclass(eq=False)
class _DirectionReading:
    """What a parameter's directional estimates are judged with: its probed ``item`` and coordinates'
    ``reading``, the ``resolution``, the ``epsilon`` f's values carry and f(θ) ``center``. A probe's
    estimate and floor are computed once for each ``epsilon`` (the probes live as long as it does)."""

    item: ProbedParameter
    reading: PrimaryReading
    resolution: Resolution
    epsilon: float
    center: float
    known: dict = dataclasses.field(default_factory=dict)

    def estimate(self, probe):
        key = ("estimate", id(probe), self.epsilon)
        if key not in self.known:
            planned, resolution = self.item.planned, self.resolution
            scale = max(resolution.gradient, resolution.check) or 1.0  # all zero: the chapter's floor
            tolerance = float(_kink_tolerances(planned, 0.0 if planned.step is None else planned.step, 0.0))
            noise = NoiseModel(self.epsilon, self.reading.jitter, tolerance)
            self.known[key] = directional_estimate(probe, self.center, noise, scale, resolution.gradient)
        return self.known[key]

    def standard(self, first) -> Standard:
        key = ("standard", id(first), self.epsilon)
        if key not in self.known:
            floor = _direction_floor(self.item.planned, first, self.center, self.epsilon)
            self.known[key] = Standard(self.item.planned.tolerance, self.resolution, floor, "multiplier")
        return self.known[key]

    def judged(self, probes: list, noise: ObservedNoise) -> tuple:
        """The estimates of ``probes`` (the first at multiplier 1), with their slopes' curvature and
        step sensitivity, and their Judgement."""
        center = self.center
        gaps = [((p.plus_value - center) - (center - p.minus_value)) / p.multiplier for p in probes]
        estimates = with_step_sensitivity(_smooth_slopes([self.estimate(probe) for probe in probes], gaps))
        evidence = Evidence(
            collapsed=[probe.minus_value == center == probe.plus_value for probe in probes],
            precision=self.item.planned.dtype.name,
            noise=noise.units,
            rounding_zero=_rounding_zero(self.item, center, self.resolution),
            stateful=self.reading.stateful,
        )
        return estimates, judge_confirmed(estimates, self.standard(probes[0]), evidence)


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
    return max(0.0, float(np.max(np.abs(item.slopes.derivative), initial=0.0)))


def _kink_tolerances(planned: PlannedParameter, steps, theta):
    """The one-sided slopes' tolerance at requested ``steps`` at ``theta``: a number, or a column.

    The given one; at the default step ε^(1/6) (at every confirmation step too); else
    :func:`kink_tolerance_for_step`'s rule.
    """
    if planned.kink_tolerance is not None:
        return planned.kink_tolerance
    if planned.step is None:
        return planned.dtype.kink_tolerance
    return step_kink_tolerances(steps, theta, planned.dtype)


def judge_parameter(
    item: ProbedParameter,
    counted: GuardedObjective,
    purity: PurityVerdict,
    largest: tuple,
    direction_scale: float,
    directional: DirectionalCheck | None = None,
) -> ParameterCheck:
    """One parameter's record: its coordinates judged (confirmed where they did not pass at h), its
    directional test (or the given ``directional``, a fast check's joint direction), its verdict (at
    best inconclusive when the ``purity`` says f is stateful) and the diagnosis of a failure."""
    planned, columns, jitter = item.planned, item.planned.columns, purity.spread
    resolution = Resolution(gradient=largest_gradient(item), check=largest[0])
    kink_tolerances = _kink_tolerances(planned, columns.step, columns.theta)
    center = counted.centers[0]
    if directional is not None and not len(columns):  # a fast check's covered parameter: its record alone
        reading = PrimaryReading(_slim(item), center, jitter, resolution, no_coordinates(), purity.stateful)
        return _parameter_check(item, CoordinateChecks(reading, {}), directional, kink_tolerances, purity)
    primary = primary_columns(
        columns,
        ProbeValues(item.minus_values, center, item.plus_values, item.slopes),
        NoiseModel(planned.dtype.epsilon, jitter, kink_tolerances),
        Standard(planned.tolerance, resolution),
        floor_factor(columns.analytic, planned.dtype),
    )
    confirmed = {k: confirmations(item, k, center, counted) for k in np.flatnonzero(~primary.passed).tolist()}
    noise = observed_noise(confirmed.values(), planned.dtype.epsilon)
    reading = PrimaryReading(item, center, jitter, resolution, primary, purity.stateful)
    judged = _confirmed_coordinates(reading, confirmed, counted, noise)
    checks = CoordinateChecks(dataclasses.replace(reading, item=_slim(item)), judged)
    directional = directional or _judge_direction(
        item, counted, reading, Resolution(direction_scale, largest[1]), noise
    )
    return _parameter_check(item, checks, directional, kink_tolerances, purity)


def _parameter_check(item: ProbedParameter, checks, directional, kink_tolerances, purity: PurityVerdict):
    """The parameter's record of its judged ``checks`` and ``directional`` test: its verdict and diagnosis."""
    planned = item.planned
    verdict = verdict_of(checks.verdicts() | {directional.verdict}, purity.stateful)
    unique = np.unique(kink_tolerances) if isinstance(kink_tolerances, np.ndarray) else [kink_tolerances]
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
        diagnosis=diagnosis_of(item, checks, directional),
    )


def _confirmed_coordinates(reading: PrimaryReading, confirmed: dict, counted: GuardedObjective, noise) -> dict:
    """k → the record of each coordinate that did not pass at h, judged on its ``confirmed``
    differences, and at 100h where h/10 to 10h left it undecided."""
    judged = {k: _judge_coordinate(reading, k, differences, noise) for k, differences in confirmed.items()}
    for k, record in judged.items():
        last = _last_confirmation(reading.item, k, record, confirmed[k], counted)
        if last:  # 100h may resolve what rounding hid; it never decides a failure h/10 to 10h did not
            rejudged = _judge_coordinate(reading, k, confirmed[k] + last, noise)
            judged[k] = rejudged if rejudged.passed else record
    return judged


def _last_confirmation(item: ProbedParameter, k: int, record, differences: list, counted: GuardedObjective) -> list:
    """Coordinate k's difference at h·LAST_FACTOR when h/10 to 10h left it undecided and the probes
    there stay within LARGEST_RELATIVE_STEP of max(1, |θ|); none otherwise."""
    first = differences[0]
    if record.verdict not in (INCONCLUSIVE, KINK):
        return []
    if LAST_FACTOR * first.requested_step > LARGEST_RELATIVE_STEP * max(1.0, abs(first.point)):
        return []
    index = item.planned.columns.coordinate(k)
    return _unless_raised(lambda: further_differences(item.planned, index, first, counted, (LAST_FACTOR,)))


def _unless_raised(probing) -> list:
    """What ``probing`` returns, or nothing where the objective raised at the step: a probe 100h from θ
    may leave the objective's domain (a matrix no longer positive definite), and that step is then
    unusable, as one whose f is not finite is. The array is restored; gradcheck's own errors and
    interrupts go on."""
    try:
        return probing()
    except GradCheckError:
        raise
    except Exception:
        return []


def _slim(item: ProbedParameter) -> ProbedParameter:
    """``item`` without its arrays: the records are built from what they show, and a report that is
    kept must keep no copy of θ (nor θ, its snapshot or its gradient)."""
    planned = dataclasses.replace(item.planned, array=None, gradient=None, snapshot=None)
    return ProbedParameter(planned, item.minus_values, item.plus_values, item.slopes)
