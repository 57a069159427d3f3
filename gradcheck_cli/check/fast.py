"""The fast check: each parameter's directional test alone, its coordinates probed only where that
test does not pass, to localize and diagnose (docs/method.md, "The fast check")."""

from __future__ import annotations

from .judge import judge_parameter, largest_gradient, with_passing_gradients
from .options import Options
from .plan import with_coordinates
from .probe import GuardedObjective, ProbedParameter, first_pass, resolved_direction_scale
from .report import purity_of

__all__ = ["fast_checks"]


def fast_checks(plan: list, counted: GuardedObjective, options: Options, probing) -> tuple:
    """(each parameter's record, the purity): f(θ), each direction's two probes, f(θ) again, each
    direction judged (confirmed at other multipliers where the first cannot decide); where one does
    not pass, the parameter checked as the default check checks it. ``probing(plan)`` is the
    context in which a plan's coordinates are probed (a pool of workers, or none)."""
    probed = first_pass(plan, counted, None)
    for item in probed:
        item.direction_scale = _measured_scale(item)
    epsilon = min(planned.dtype.epsilon for planned in plan)
    purity = purity_of(counted.centers, epsilon)
    checks = _judged(probed, counted, purity)
    unpassed = [planned for planned, check in zip(plan, checks) if not check.passed]
    if not unpassed:
        return with_passing_gradients(checks, probed), purity
    localized = [with_coordinates(planned, options) for planned in unpassed]
    counted.sampled = {planned.name: planned.columns.offsets for planned in localized}
    with probing(localized) as pool:
        relocated = first_pass(localized, counted, options.progress, pool)
    final = purity_of(counted.centers, epsilon)
    if final != purity:  # f(θ)'s later values widen every bar, or show it stateful
        checks = _judged(probed, counted, final)
    by_name = {item.planned.name: item for item in relocated}
    everything = [by_name.get(item.planned.name, item) for item in probed]
    largest = _largest(everything)
    checks = [
        judge_parameter(item, counted, final, largest, resolved_direction_scale(item))
        if item.planned.name in by_name
        else check
        for item, check in zip(everything, checks)
    ]
    return with_passing_gradients(checks, everything), final


def _judged(probed: list, counted: GuardedObjective, purity) -> list:
    """Each direction-only parameter's record, judged beside the check's largest measured scale."""
    largest = _largest(probed)
    return [judge_parameter(item, counted, purity, largest, item.direction_scale) for item in probed]


def _largest(probed: list) -> tuple:
    """The check's largest |numerical| at a coordinate and its largest direction scale."""
    scales = [resolved_direction_scale(item) for item in probed]
    return max([0.0] + [largest_gradient(item) for item in probed]), max([0.0, *scales])


def _measured_scale(item: ProbedParameter) -> float:
    """|f(θ₊) − f(θ₋)|/2 at multiplier 1: the directional derivative's size as f shows it, what the
    direction's estimate is resolved beside (never the analytic side under test)."""
    direction = item.direction
    return 0.0 if direction is None else abs(direction.plus_value - direction.minus_value) / 2
