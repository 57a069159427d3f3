"""The fast check: every parameter moved at once along one joint direction where that can hold each
of them, each parameter's own directional test where it cannot, its coordinates probed only where
that test does not pass, to localize and diagnose (docs/method.md, "The fast check")."""

from __future__ import annotations

import dataclasses
import functools

import numpy as np

from ..engine.sweep import SlopeColumns
from ..errors import ParameterChanged
from .diagnosed import with_passing_gradients
from .directional import probe_joint
from .directional_probes import DirectionalProbing
from .judge import judge_joint_direction, judge_parameter, largest_gradient
from .options import Options
from .plan import with_coordinates
from .probe import (
    GuardedObjective,
    ProbedParameter,
    direction_displacement,
    first_pass,
    own_direction,
    resolved_direction_scale,
)
from .report import purity_of

__all__ = ["fast_checks", "JOINT_TOLERANCE"]

#: What the joint direction holds each parameter it covers to: a change of that parameter's share of
#: the directional derivative beyond JOINT_TOLERANCE·‖a∘s‖₂ of its own fails the joint test.
JOINT_TOLERANCE = 1.0e-3
#: The second direction's signs are the check's seed's XOR this: a parameter whose tolerance is
#: coarser than JOINT_TOLERANCE/10 (float32's) passes a fast check only along two directions.
SECOND_DIRECTION = 0x5EC0D


def fast_checks(plan: list, counted: GuardedObjective, options: Options, probing) -> tuple:
    """(each parameter's record, the purity): f(θ), the joint direction's two probes where the
    parameters can share one, each other parameter's direction (and a second one where its tolerance
    is coarse), f(θ) again, each judged (a direction confirmed at other multipliers where the first
    cannot decide); where one does not pass, the parameter checked as the default check checks it.
    ``probing(plan)`` is the context in which a plan's coordinates are probed (a pool of workers, or none)."""
    covered, probed, seconds, purity = _directions(plan, counted)
    checks = _judged(probed, counted, purity, covered, seconds)
    seconds_unpassed = {
        item.planned.name
        for item, check in zip(seconds, _judged(seconds, counted, purity, covered, probed))
        if not check.passed
    }
    unpassed = [
        item.planned for item, check in zip(probed, checks) if not check.passed or item.planned.name in seconds_unpassed
    ]
    if unpassed:
        probed, checks, purity = _localized(unpassed, probed, checks, counted, options, probing, covered)
    records = dict(zip([item.planned.name for item in probed], checks))
    items = {item.planned.name: item for item in probed}
    for planned in plan:
        if planned.name in covered:
            items[planned.name], records[planned.name] = _covered_record(planned, covered, counted, purity)
    names = [planned.name for planned in plan]
    return with_passing_gradients([records[name] for name in names], [items[name] for name in names]), purity


def _directions(plan: list, counted: GuardedObjective) -> tuple:
    """(the parameters the joint test covers, the others probed along their own direction, the
    second directions, the purity): every probe of the first pass, between f(θ) and f(θ) again."""
    epsilon = min(planned.dtype.epsilon for planned in plan)
    if _joinable(plan):
        (covered, probed), seconds = _joint_pass(plan, counted), []
    else:
        covered, (probed, seconds) = {}, _own_passes(plan, counted)
    purity = purity_of(counted.centers, epsilon)
    if covered and not _still_passes(covered, counted, purity):  # f(θ)'s later values widened its bar
        probed += first_pass([planned for planned in plan if planned.name in covered], counted, None)
        covered, purity = {}, purity_of(counted.centers, epsilon)
    for item in probed + seconds:
        item.direction_scale = _measured_scale(item)
    return covered, probed, seconds, purity


def _joinable(plan: list) -> bool:
    """Whether the plan's parameters can share one direction: two or more, of one dtype, step and
    tolerances, the tolerance at most a tenth of JOINT_TOLERANCE (float64's: float32's is not)."""
    first = plan[0]
    same = [(p.dtype.name, p.step, p.tolerance, p.kink_tolerance, p.complex_dtype is None) for p in plan]
    alike = all(each == same[0] for each in same)
    return len(plan) > 1 and alike and not isinstance(first.step, str) and first.tolerance * 10 <= JOINT_TOLERANCE


def _own_passes(plan: list, counted: GuardedObjective) -> tuple:
    """(each parameter probed along its own direction, and along a second one where its tolerance is
    coarser than JOINT_TOLERANCE/10), between f(θ) and f(θ) again."""
    center = counted.center()
    probed = [own_direction(planned, counted, center) for planned in plan]
    seconds = [
        own_direction(dataclasses.replace(planned, seed=planned.seed ^ SECOND_DIRECTION), counted, center)
        for planned in plan
        if planned.tolerance * 10 > JOINT_TOLERANCE
    ]
    counted.center()
    return probed, seconds


def _joint_pass(plan: list, counted: GuardedObjective) -> tuple:
    """({name: (the joint DirectionalCheck, its probed item)} of each parameter the joint test
    covers, the other parameters probed along their own directions), between f(θ) and f(θ) again."""
    center = counted.center()
    joint = _joint_probe(plan, counted)
    covered = {} if joint is None else _covered(plan, *joint, center, purity_of(counted.centers, 0.0))
    probed = [own_direction(planned, counted, center) for planned in plan if planned.name not in covered]
    counted.center()
    return covered, probed


def _joint_probe(plan: list, counted: GuardedObjective):
    """(the joint probe, each parameter's share) of every parameter moved at once, or None."""
    for planned in plan:
        counted.unchanged(planned.name, at={})  # its bits: compared in the plus probe's pass
    probings = [
        DirectionalProbing(
            planned.array,
            counted.snapshots[planned.name],
            planned.gradient,
            direction_displacement(planned),
            counted,
            planned.gradient_peak,
        )
        for planned in plan
    ]
    return probe_joint(probings, lambda k: ParameterChanged(parameter=plan[k].name, change="modified in place"))


def _covered(plan: list, probe, shares: tuple, center: float, purity) -> dict:
    """{name: (the joint DirectionalCheck, its item)} of each parameter the passed joint test holds:
    its share min(‖a∘s‖₂, |Σ a·s|)/2 at least tolerance/JOINT_TOLERANCE of the joint estimate's
    scale; {} unless the joint test passed."""
    item = ProbedParameter(plan[0], *_empty(), direction=probe)
    item.direction_scale = _measured_scale(item)
    check = judge_joint_direction(item, center, purity, item.direction_scale)
    if check is None or not check.passed:
        return {}
    reach = plan[0].tolerance / JOINT_TOLERANCE
    joint = dataclasses.replace(
        check, elements=sum(int(p.array.size) for p in plan), joint=tuple(planned.name for planned in plan)
    )
    scale = check.estimates[0].scale
    return {planned.name: (joint, item) for planned, share in zip(plan, shares) if share >= reach * scale}


def _still_passes(covered: dict, counted: GuardedObjective, purity) -> bool:
    """Whether the joint test still passes beside every f(θ) (``purity``), not the first alone."""
    if purity.spread == 0.0 and not purity.stateful:
        return True  # the bar it was judged with
    _, item = next(iter(covered.values()))
    check = judge_joint_direction(item, counted.centers[0], purity, item.direction_scale)
    return check is not None and check.passed


def _judged(probed: list, counted: GuardedObjective, purity, covered: dict, others: tuple = ()) -> list:
    """Each direction-only parameter's record, judged beside the check's largest measured scale (of
    ``others`` too: the second directions)."""
    largest = _largest([*probed, *others], covered)
    return [judge_parameter(item, counted, purity, largest, item.direction_scale) for item in probed]


def _localized(unpassed: list, probed: list, checks: list, counted, options: Options, probing, covered: dict):
    """(probed, checks, purity) after the parameters whose direction did not pass are checked as the
    default check checks them: their coordinates selected and probed, their direction tested again."""
    epsilon = min(item.planned.dtype.epsilon for item in probed)
    purity = purity_of(counted.centers, epsilon)
    localized = [with_coordinates(planned, options) for planned in unpassed]
    counted.sampled = {planned.name: planned.columns.offsets for planned in localized}
    with probing(localized) as pool:
        relocated = first_pass(localized, counted, options.progress, pool)
    final = purity_of(counted.centers, epsilon)
    if final != purity:  # f(θ)'s later values widen every bar, or show it stateful
        checks = _judged(probed, counted, final, covered)
    by_name = {item.planned.name: item for item in relocated}
    everything = [by_name.get(item.planned.name, item) for item in probed]
    largest = _largest(everything, covered)
    checks = [
        judge_parameter(item, counted, final, largest, resolved_direction_scale(item))
        if item.planned.name in by_name
        else check
        for item, check in zip(everything, checks)
    ]
    return everything, checks, final


def _covered_record(planned, covered: dict, counted: GuardedObjective, purity) -> tuple:
    """(item, record) of a parameter the joint test covers: no coordinate, the joint DirectionalCheck."""
    joint, joint_item = covered[planned.name]
    item = ProbedParameter(planned, *_empty())
    scale = joint_item.direction_scale
    return item, judge_parameter(item, counted, purity, (0.0, scale), scale, directional=joint)


@functools.cache
def _empty() -> tuple:
    """(minus values, plus values, slopes) of a parameter with no coordinate: empty, read-only, made once."""
    empty, none = np.empty(0, dtype=np.float64), np.empty(0, dtype=bool)
    empty.flags.writeable = none.flags.writeable = False
    return empty, empty, SlopeColumns(empty, empty, empty, none)


def _largest(probed: list, covered: dict) -> tuple:
    """The check's largest |numerical| at a coordinate and its largest direction scale (the joint
    direction's, measured, among them)."""
    scales = [resolved_direction_scale(item) for item in probed]
    scales += [item.direction_scale for _, item in covered.values()]
    return max([0.0] + [largest_gradient(item) for item in probed]), max([0.0, *scales])


def _measured_scale(item: ProbedParameter) -> float:
    """|f(θ₊) − f(θ₋)|/2 at multiplier 1: the directional derivative's size as f shows it, what the
    direction's estimate is resolved beside (never the analytic side under test)."""
    direction = item.direction
    return 0.0 if direction is None else abs(direction.plus_value - direction.minus_value) / 2
