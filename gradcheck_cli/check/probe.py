"""The guarded objective and the first pass: f(θ), each coordinate's probes at h, each direction's."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ..engine.blocks import same_array_bits
from ..engine.dtypes import dtype_perturbations
from ..engine.estimator import CentralDifference, difference_from_values, evaluated_value
from ..engine.sweep import SlopeColumns, difference_at, probe_values, slope_columns
from ..engine.tensors import probing_objective, write_back
from ..errors import AtParameter, GradCheckError, ParameterChanged, ReadOnlyArray
from ..verdict.terms import CONFIRMATION_FACTORS
from .directional import probe_direction
from .directional_probes import Direction, DirectionScale, DirectionalProbing
from .plan import PlannedParameter

#: f(θ) varying by more than JITTER_LIMIT·ε·|f| between calls is not rounding jitter: no pass.
JITTER_LIMIT = 256.0


@dataclass
class ProbedParameter:
    """A parameter after the first pass: each coordinate's values at θ ∓ h, the direction's probe."""

    planned: PlannedParameter
    minus_values: np.ndarray
    plus_values: np.ndarray
    slopes: SlopeColumns
    original: np.ndarray | None = None  # θ's snapshot, what the direction's probes restore from
    displacement: Direction | None = None
    direction: object = None
    direction_scale: float = 0.0  # ‖ĝ∘Δ‖₂, taken in the direction's first probes (resolved_direction_scale)


class GuardedObjective:
    """The user's objective, called as ``objective(parameters)`` and counted; f(θ) kept."""

    jitter_limit = JITTER_LIMIT  # what a worker's f(θ) may differ from this process's by (parallel.py)

    def __init__(self, objective: Callable, parameters: Mapping, checked: dict, snapshots: Mapping | None = None):
        self.objective, self.parameters, self.calls, self.centers = objective, parameters, 0, []
        self.checked = checked
        self.entries = {name: parameters[name] for name in checked}  # the objects given, np.matrix included
        snapshots = {} if snapshots is None else snapshots  # copies taken since the arrays were last written
        self.snapshots = {
            name: np.array(array, copy=True) if snapshots.get(name) is None else snapshots[name]
            for name, array in checked.items()
        }
        self.sampled = {}  # name → the flat offsets its coordinates write θ back to, compared at each f(θ)
        self.compared_at = None  # the call count when every array was last compared with its snapshot

    def __call__(self, _parameters=None):
        self.calls += 1
        return self.objective(self.parameters)

    def center(self) -> float:
        """f(θ) with every array restored, validated and recorded for the purity measurement."""
        value = evaluated_value("center", self())
        self.unchanged(at=self.sampled)  # every bit: where a pass restores from the snapshot, and last
        self.centers.append(value)
        return value

    def restore(self) -> None:
        """Every checked array back to its snapshot where its bits differ (never raises for that)."""
        for name, array in self.checked.items():
            if not same_array_bits(array, self.snapshots[name]):
                write_back(array, Ellipsis, self.snapshots[name])

    def unchanged(self, name: str | None = None, at: Mapping | None = None) -> None:
        """Every checked array (or the one named) is still the one given, writable and bit-identical
        to the original: else it is restored and the objective's change is a typed error. With ``at``
        (name → flat offsets), only those elements' bits are compared (none for a name it lacks)."""
        every = name is None
        checked = self.checked.items() if every else [(name, self.checked[name])]
        for name, array in checked:
            if not array.flags.writeable:
                raise ReadOnlyArray(role="parameters", during_check=True)
            if self.parameters.get(name) is not self.entries[name]:
                raise ParameterChanged(parameter=name, change="replaced or removed")
            if every and at is None and self.compared_at == self.calls:
                continue  # no call since every bit was compared: nothing but gradcheck's restored writes
            if not same_array_bits(array, self.snapshots[name], None if at is None else at.get(name, ())):
                write_back(array, Ellipsis, self.snapshots[name])
                raise ParameterChanged(parameter=name, change="modified in place")
        if every and at is None:
            self.compared_at = self.calls


class FirstPass:
    """The first pass's count of coordinates probed at h, shared by the serial loop and parallel.py's
    pool: each coordinate's two calls counted, f(θ) again at the checkpoints (a third and two thirds
    of the ``total`` coordinates), then ``progress(done, total)``."""

    def __init__(self, counted: GuardedObjective, total: int, progress: Callable | None):
        self.counted, self.total, self.progress, self.done = counted, total, progress, 0
        self.checkpoints = sorted({max(1, math.ceil(total * part / 3)) for part in (1, 2)})

    def advance(self, count: int) -> None:
        """``count`` more coordinates probed: their calls counted, f(θ) at a checkpoint, then progress."""
        self.counted.calls += 2 * count
        self.done += count
        if self.done in self.checkpoints:
            self.counted.center()
        if self.progress is not None:  # the segment's last coordinate: after the checkpoint's f(θ)
            self.progress(self.done, self.total)

    def probe(self, planned: PlannedParameter) -> tuple:
        """``planned``'s values at θ − h and θ + h, here, in segments that end at the checkpoints."""
        columns, minus, plus, start = planned.columns, [], [], 0
        while start < len(columns):
            due = [
                point - self.done for point in self.checkpoints if self.done < point <= self.done + len(columns) - start
            ]
            stop = start + due[0] if due else len(columns)
            segment = self._segment(planned, start, stop)
            minus += segment[0]
            plus += segment[1]
            self.advance(stop - start)
            start = stop
        return minus, plus

    def _segment(self, planned: PlannedParameter, start: int, stop: int) -> tuple:
        """Coordinates start:stop of ``planned`` probed at h; typed errors in AtParameter."""
        progress, base, total = self.progress, self.done - start, self.total
        after = None if progress is None else (lambda k: progress(base + k, total) if k < stop else None)
        counted = self.counted
        try:
            return probe_values(
                planned.array,
                planned.columns,
                counted.objective,
                counted.parameters,
                part=(start, stop),
                progress=after,
                center=counted.centers[0],
            )
        except GradCheckError as error:
            raise AtParameter(parameter=planned.name, source=error) from error


def first_pass(plan: list, counted: GuardedObjective, progress, pool=None) -> list:
    """f(θ), each coordinate's two probes at h, each direction's two probes; f(θ) again at checkpoints.

    With a ``pool`` (parallel.py) the coordinates' probes are made in worker processes, and
    everything else here, in the same order.
    """
    center = counted.center()
    passing = FirstPass(counted, sum(len(planned.columns) for planned in plan), progress)
    probed = []
    for index, planned in enumerate(plan):
        minus, plus = passing.probe(planned) if pool is None else pool.collect(index, passing)
        probed.append(_probed(planned, counted, center, minus, plus))
    counted.center()
    return probed


def _probed(planned: PlannedParameter, counted: GuardedObjective, center: float, minus, plus) -> ProbedParameter:
    """``planned`` after its coordinates' probes: their slopes checked, then the direction's first probes."""
    columns = planned.columns
    minus_values, plus_values = np.array(minus, dtype=np.float64), np.array(plus, dtype=np.float64)
    slopes = slope_columns(columns, minus_values, center, plus_values)
    if not slopes.finite.all():
        coordinate_difference(planned, int(np.argmin(slopes.finite)), minus_values, center, plus_values)
    # a fast check probes no coordinate: nothing resolves S, read from f (fast.py)
    scale = _scale(columns.offsets, slopes, planned.gradient_peak) if len(columns) else None
    saved, displacement = counted.snapshots[planned.name], direction_displacement(planned)
    direction = probe_parameter_direction(planned, saved, displacement, 1.0, counted, scale)
    item = ProbedParameter(planned, minus_values, plus_values, slopes, saved, displacement, direction)
    item.direction_scale = scale.norm if direction is not None and scale is not None else 0.0
    return item


def own_direction(planned: PlannedParameter, counted: GuardedObjective, center: float) -> ProbedParameter:
    """A fast check's parameter probed along its own direction alone, no coordinate (fast.py)."""
    return _probed(planned, counted, center, [], [])


def coordinate_difference(planned, k: int, minus_values, center: float, plus_values) -> CentralDifference:
    """Coordinate k's CentralDifference at h (the chapter's typed error in AtParameter if it has one)."""
    try:
        return difference_at(planned.columns, k, float(minus_values[k]), center, float(plus_values[k]))
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=error) from error


def _two_probes(array: np.ndarray, index: tuple, geometry, counted: GuardedObjective) -> tuple:
    evaluate = probing_objective(array, index, counted)
    minus = evaluated_value("minus", evaluate(geometry.minus_point))
    plus = evaluated_value("plus", evaluate(geometry.plus_point))
    return minus, plus


def probe_parameter_direction(
    planned: PlannedParameter, saved, displacement, multiplier: float, counted: GuardedObjective, scale=None
):
    """The direction's probes at ``multiplier``; at 1 (the first pass) f must be finite there, as at a coordinate.

    The array must still be θ (it is restored from ``saved``, its snapshot, which would undo a
    change the objective made unseen)."""
    counted.unchanged(planned.name, at={})  # its bits: compared in the plus probe's pass
    try:
        return probe_direction(
            DirectionalProbing(planned.array, saved, planned.gradient, displacement, counted, planned.gradient_peak),
            multiplier,
            required=multiplier == 1.0,
            scale=scale,
            changed=lambda: ParameterChanged(parameter=planned.name, change="modified in place"),
        )
    except ParameterChanged:
        raise
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=error) from error


def direction_displacement(planned: PlannedParameter) -> Direction:
    """s_i·u·max(1, |θ_i|), u = ε^(1/3)/√N (or s_i·h/√N): each coordinate's step along the ±1 direction,
    scaled so that ‖Δ‖ is about one step."""
    return Direction(
        step=planned.step,
        step_factor=planned.dtype.step_factor,
        elements=int(planned.array.size),
        unit_blocks=planned.unit_blocks,
        seed=planned.seed,
    )


def further_differences(
    planned, index: tuple, difference: CentralDifference, counted: GuardedObjective, factors: tuple
) -> list:
    """The coordinate's differences at h·factor for each of the ``factors`` whose probes are usable."""
    differences, point = [], difference.point
    for factor in factors:
        step = difference.requested_step * factor
        try:
            geometry = dtype_perturbations(point, step, planned.dtype)
            minus, plus = _two_probes(planned.array, index, geometry, counted)
            differences.append(difference_from_values(point, step, geometry, minus, difference.center_value, plus))
        except GradCheckError:
            continue  # a probe that collapses, overflows or meets a non-finite value: not this step
    return differences


def confirmations(item: ProbedParameter, k: int, center: float, counted: GuardedObjective) -> list:
    """Coordinate k's CentralDifferences at h and at each usable confirmation step."""
    planned = item.planned
    difference = coordinate_difference(planned, k, item.minus_values, center, item.plus_values)
    index = planned.columns.coordinate(k)
    return [difference, *further_differences(planned, index, difference, counted, CONFIRMATION_FACTORS)]


def _scale(offsets: np.ndarray, slopes: SlopeColumns, peak: float = math.inf) -> DirectionScale:
    """The direction scale's weights: |a| capped at the checked coordinates' largest one-sided slope
    magnitude (at least |numerical|; at a corner, the corner's slope), those magnitudes there."""
    with np.errstate(all="ignore"):
        resolved = np.maximum(np.abs(slopes.left), np.abs(slopes.right))
    return DirectionScale(offsets, resolved, float(np.max(resolved, initial=0.0)), peak)


def resolved_direction_scale(item: ProbedParameter) -> float:
    """‖ĝ∘Δ‖₂ of the direction Δ (:class:`~gradcheck_cli.check.directional.DirectionScale`): what the
    estimates resolve, so that a gradient scaled up by a bug does not raise its own bar (0
    without a direction)."""
    return 0.0 if item.direction is None else item.direction_scale
