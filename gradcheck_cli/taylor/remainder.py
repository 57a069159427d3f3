"""The Taylor-remainder test: a verdict on a whole gradient that needs no tolerance.

Every selected parameter moves along one deterministic unit direction d by a geometric sequence of steps,
the displacement actually stored in its own dtype is measured, and the order of the remainder
R(h) = f(x + Δ) − f(x) − Σ g·Δ is fitted: second order passes, first order fails. The rules (the
splitmix64 direction, the steps, the rounding floor ρ and the usable points, the fit range, the
verdict and the detection limit) are in docs/method.md, "The Taylor-remainder test". Every parameter
is bit-identical afterwards on every path (return, typed error, exception from the objective,
KeyboardInterrupt).
"""

from __future__ import annotations

import math
import operator
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ..core.defaults import SEED
from ..core.formatting import short_repr
from ..core.record import Record, same_bits
from ..engine.complex_parts import real_problem
from ..engine.dtypes import probe_dtype
from ..engine.estimator import real_scalar, validate_steps
from ..engine.problem import as_problem, selected_names, validated_whole_gradients
from ..engine.tensors import plain_view, write_back
from ..errors import InvalidArgument, NonFiniteEvaluation, ParameterChanged, ReadOnlyArray, UnsupportedDtype
from ..verdict.estimates import value_epsilons
from ..verdict.words import FAILED, INCONCLUSIVE, PASSED
from .geometry import (
    default_taylor_steps,
    direction_pieces,
    euclidean_norm,
    normalized_direction,
    taylor_direction,
)
from .localize import LocalizationTest, failing_names

__all__ = [
    "PASS_ORDER",
    "FAIL_ORDER",
    "SHRINK_ORDER",
    "ROUNDING_MARGIN",
    "FIT_POINTS",
    "MIN_FIT_POINTS",
    "TaylorPoint",
    "LocalizationTest",
    "TaylorResult",
    "taylor_direction",
    "default_taylor_steps",
    "check_taylor",
]

PASS_ORDER = 1.75
FAIL_ORDER = 1.25
#: Below this order the remainder does not even shrink like h: noise or a non-smooth f, not a verdict.
SHRINK_ORDER = 0.75
ROUNDING_MARGIN = 10.0
#: A first-order error below this (relative to max(1, |g·d|)) may hide under the second order of a fit
#: limited to float32's resolution: such a fit passes only when its smallest step rules it out.
FLOAT32_BLIND_SPOT = 1e-3
FIT_POINTS = 5
MIN_FIT_POINTS = 3


@dataclass(frozen=True, slots=True, kw_only=True)
class TaylorPoint(Record):
    """One step of the Taylor test.

    ``state`` is ``ok`` (evaluated), ``unchanged`` (the displacement rounded
    to zero in every parameter's dtype; not evaluated), ``non-finite
    displacement`` (a moved parameter overflowed; not evaluated) or
    ``non-finite value`` (f(x + Δ) was NaN or infinite). ``remainder`` is the
    signed R(h), ``usable`` says |R| ≥ 10·ρ, ``in_fit`` that the point is in
    the fitted window.
    """

    step: float
    displacement_norm: float
    value: float = math.nan
    linear_term: float = math.nan
    remainder: float = math.nan
    absolute_remainder: float = math.nan
    rounding_floor: float = math.nan
    state: str
    usable: bool = False
    in_fit: bool = False


@dataclass(frozen=True)
class TaylorResult(Record):
    """The Taylor-remainder verdict for one problem and direction.

    ``order`` is the fitted slope of log|R| against log‖Δ‖ (NaN when no fit
    was possible), ``verdict`` is ``passed``, ``failed`` or ``inconclusive``,
    ``reason`` says why, and ``passed`` is whether it is passed. After a
    first-order ``failed``, ``failing_parameters`` names the wrong parameters
    in problem order, found by the subset tests in ``localization``, whose
    objective calls sum to ``localization_evaluations``; all are empty (0)
    otherwise. ``evaluations`` counts every objective call, the localization's included.
    """

    parameters: tuple
    dtypes: tuple
    direction: str
    seed: int
    center_value: float
    directional_derivative: float
    epsilon: float
    rounding_margin: float
    pass_order: float
    fail_order: float
    points: tuple
    fit_points: int
    order: float
    detection_limit: float
    deterministic: bool
    failing_parameters: tuple
    localization: tuple
    localization_evaluations: int
    evaluations: int
    verdict: str
    reason: str
    passed: bool


def _value_epsilon(returned) -> float:
    if isinstance(returned, float) or not isinstance(returned, np.generic):
        return 2.0**-52
    try:
        return probe_dtype(returned.dtype).epsilon
    except UnsupportedDtype:
        return 2.0**-52


def _fit_order(points: list) -> tuple:
    """(order, indices of the fitted points, reason when no fit) per the module's rule."""
    usable = [index for index, point in enumerate(points) if point.usable]
    if not usable:
        return math.nan, [], "rounding level"
    run = [usable[-1]]
    # The last unbroken run of usable points among the evaluated ones.
    evaluated = [index for index, point in enumerate(points) if point.state == "ok"]
    position = evaluated.index(usable[-1])
    while position > 0 and points[evaluated[position - 1]].usable:
        position -= 1
        run.insert(0, evaluated[position])
    sign = math.copysign(1.0, points[run[-1]].remainder)
    tail = []
    for index in reversed(run):
        if math.copysign(1.0, points[index].remainder) != sign:
            # The point next to a sign change sits in the notch where two orders cancel:
            # its |R| is too small for either, and it would flatten the fitted slope.
            tail = tail[1:]
            break
        tail.insert(0, index)
    window = tail[-FIT_POINTS:]
    if len(window) < MIN_FIT_POINTS:
        return math.nan, [], "too few usable points"
    xs = [math.log(points[index].displacement_norm) for index in window]
    ys = [math.log(points[index].absolute_remainder) for index in window]
    mean_x, mean_y = math.fsum(xs) / len(xs), math.fsum(ys) / len(ys)
    spread = math.fsum((x - mean_x) ** 2 for x in xs)
    if spread == 0.0:
        return math.nan, [], "too few usable points"
    slope = math.fsum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys)) / spread
    return slope, window, None


def check_taylor(
    problem,
    *,
    names: Sequence[str] = None,
    steps: Sequence[float] = None,
    seed: int = SEED,
    direction: Mapping[str, np.ndarray] = None,
) -> TaylorResult:
    """Run the Taylor-remainder test over a gradient problem.

    Parameters
    ----------
    problem : GradientProblem or (objective, parameters, gradients)
        ``objective(parameters)`` returns the scalar loss; ``gradients[name]``
        is the analytic gradient, same shape as ``parameters[name]``.
    names : sequence of str, optional
        Perturb only these parameters (the others stay fixed); all by default.
    steps : sequence of float, optional
        Strictly decreasing requested step lengths h along the unit direction
        (at least two); by default :func:`default_taylor_steps`.
    seed : int, default 0
        Selects the deterministic direction (:func:`taylor_direction`).
    direction : mapping name -> array, optional
        Use this direction instead (same shapes; normalized to unit length).

    Returns
    -------
    TaylorResult
        After a first-order ``failed`` over several parameters, with the
        ``failing_parameters`` found by Taylor tests over bisected subsets
        (module docstring, "Localization") and their cost in objective calls.

    Raises
    ------
    GradCheckError
        A typed error, before any objective call, for a bad problem,
        selection, step sequence or direction, and for a non-finite or
        non-scalar f(x). Exceptions from the objective propagate unchanged,
        with every parameter restored bit-exactly.
    """
    problem = real_problem(as_problem(problem, reference="the Taylor test's problem"))
    names = tuple(selected_names(problem.parameters, problem.gradients, names))
    gradients = validated_whole_gradients(problem, names)
    if isinstance(seed, bool) or not hasattr(type(seed), "__index__"):
        raise InvalidArgument(argument="seed", value=short_repr(seed), expected="a whole number")
    pieces, description, seed = direction_pieces(problem.parameters, names, operator.index(seed), direction)
    unit = normalized_direction(pieces)
    given_steps = None if steps is None else validate_steps(steps)
    steps = default_taylor_steps(problem.parameters, names) if given_steps is None else given_steps
    result = _measure_and_judge(problem, names, gradients, (unit, description, seed), steps)
    if result.verdict != FAILED or result.reason != "first order":
        return result
    failing, tests = failing_names(
        _measure_and_judge, problem, names, gradients, (pieces, description, seed), given_steps
    )
    localization_evaluations = sum(test.evaluations for test in tests)
    return replace(
        result,
        failing_parameters=failing,
        localization=tests,
        localization_evaluations=localization_evaluations,
        evaluations=result.evaluations + localization_evaluations,
    )


def _measure_and_judge(problem, names: tuple, gradients: dict, direction: tuple, steps: tuple) -> TaylorResult:
    """Walk along the validated ``(unit, description, seed)`` direction, fit the remainder's order, judge it."""
    unit, description, seed = direction
    gradients = {name: gradient.astype(np.float64) for name, gradient in gradients.items()}
    with np.errstate(all="ignore"):  # a gradient near the float limit overflows to inf, not to a warning
        directional_derivative = math.fsum(float(np.sum(gradients[name] * unit[name])) for name in names)
    center, final, epsilon, points, residues = _walk_along_direction(problem, names, unit, gradients, steps)
    judged = _judge_points(points, center, epsilon, directional_derivative)
    if judged[-2:] == (FAILED, "first order"):
        judged, epsilon = _float32_inside(judged, points, residues, center, epsilon, directional_derivative)
    points, fit_points, order, detection_limit, verdict, reason = judged
    deterministic = same_bits(final, center)
    if not deterministic:
        verdict, reason = FAILED, "nondeterministic objective"
    return TaylorResult(
        parameters=names,
        dtypes=tuple(str(problem.parameters[name].dtype) for name in names),
        direction=description,
        seed=seed,
        center_value=center,
        directional_derivative=directional_derivative,
        epsilon=epsilon,
        rounding_margin=ROUNDING_MARGIN,
        pass_order=PASS_ORDER,
        fail_order=FAIL_ORDER,
        points=tuple(points),
        fit_points=fit_points,
        order=order,
        detection_limit=detection_limit,
        deterministic=deterministic,
        failing_parameters=(),
        localization=(),
        localization_evaluations=0,
        evaluations=2 + sum(point.state in ("ok", "non-finite value") for point in points),
        verdict=verdict,
        reason=reason,
        passed=verdict == PASSED,
    )


def _judge_points(points: list, center: float, epsilon: float, directional_derivative: float) -> tuple:
    """(points marked in_fit, fit size, order, detection limit, verdict, reason) from the evaluated points."""
    order, window, reason = _fit_order(points)
    points = [replace(point, in_fit=True) if index in window else point for index, point in enumerate(points)]
    evaluated = [point for point in points if point.state == "ok"]
    limits = [ROUNDING_MARGIN * point.rounding_floor / point.displacement_norm for point in evaluated]
    detection_limit = min(limits) if limits else math.inf
    if len(evaluated) < MIN_FIT_POINTS:
        verdict, reason = INCONCLUSIVE, "too few evaluated points"
    else:
        threshold = math.sqrt(epsilon) * max(1.0, abs(directional_derivative))
        verdict, reason = _fit_verdict(order, reason, detection_limit, threshold)
        if reason == "rounding level" and any(point.value == center for point in evaluated):
            verdict, reason = INCONCLUSIVE, "too few usable points"  # f did not change: no evidence
    return points, len(window), order, detection_limit, verdict, reason


def _float32_inside(judged: tuple, points: list, residues: list, center: float, epsilon: float, slope: float):
    """(judgement, ε_f) of a first-order failure of float64 parameters, re-judged as if f computed in float32.

    Below float32's resolution of x an objective casting to float32 inside has its float32 part frozen,
    and R(h) is first order for a right gradient. The points are re-judged with a floor widened by
    that cast's residue Σ|g|·|(fl32(x + Δ) − fl32(x)) − Δ| and float32's rounding of the values. With
    K = |R|/‖Δ‖ at the failing fit's smallest step and E at the widened fit's: a widened first order
    keeps the failure; a widened second order with K > 10·E passes when E ≤ FLOAT32_BLIND_SPOT·
    max(1, |g·d|), else is inconclusive; otherwise values that show noise (:func:`_float32_noise`)
    make it inconclusive and smooth ones keep the failure. docs/method.md, "A float32 part inside".
    """
    single = 2.0**-23
    if epsilon >= single or not any(residue > 0.0 for residue in residues):
        return judged, epsilon
    widened = []
    for point, residue in zip(points, residues):
        if point.state == "ok":
            floor = point.rounding_floor + residue + single * (abs(center) + abs(point.value))
            usable = point.usable and point.absolute_remainder >= ROUNDING_MARGIN * floor
            point = replace(point, rounding_floor=floor, usable=usable)
        widened.append(point)
    again = _judge_points(widened, center, single, slope)
    if again[-2:] == (FAILED, "first order"):
        return judged, epsilon
    smallest = [point for point in judged[0] if point.in_fit][-1]
    first_order = smallest.absolute_remainder / smallest.displacement_norm
    fitted = [point for point in again[0] if point.in_fit]
    below = fitted[-1].step / 4.0 if fitted else math.inf
    noisy = _float32_noise(points, below) > 0.1 * single * abs(center)
    if again[-1] == "second order":
        hidden = fitted[-1].absolute_remainder / fitted[-1].displacement_norm
        if first_order > ROUNDING_MARGIN * hidden and hidden <= FLOAT32_BLIND_SPOT * max(1.0, abs(slope)):
            return (*again[:-1], "second order above float32 resolution (f computes in float32 below it)"), single
        if first_order > ROUNDING_MARGIN * hidden or noisy:
            reason = f"second order only above float32 resolution, blind to a first-order error below {hidden:.1e}"
            return (*again[:-2], INCONCLUSIVE, reason), single
    elif noisy:
        reason = "first order only below float32 resolution: does the objective compute in float32?"
        return (*again[:-2], INCONCLUSIVE, reason), single
    return judged, epsilon  # no sign of a float32 inside: the first order stands


def _float32_noise(points: list, below: float) -> float:
    """The largest |R(h) − 6R(h/2) + 8R(h/4)| over evaluated halving steps below ``below``: zero for any
    smooth a·h + b·h², so what is left is the values' noise (a float32 part's rounding)."""
    evaluated = [point for point in points if point.state == "ok" and point.step <= below]
    noise = 0.0
    for first, second, third in zip(evaluated, evaluated[1:], evaluated[2:]):
        if first.step == 2.0 * second.step == 4.0 * third.step:
            noise = max(noise, abs(first.remainder - 6.0 * second.remainder + 8.0 * third.remainder))
    return noise


def _walk_along_direction(problem, names: tuple, unit: dict, gradients: dict, steps: tuple) -> tuple:
    """f(x), then f(fl(x + h·d)) at every step, then f(x) again: (center, final center, ε_f, TaylorPoints).

    Every moved parameter is written back bit-exactly after every call and on every path.
    """
    entries = {name: problem.parameters[name] for name in names}
    arrays = {name: plain_view(entry) for name, entry in entries.items()}
    saved = {name: np.array(array, copy=True) for name, array in arrays.items()}
    origin = {name: array.astype(np.float64) for name, array in arrays.items()}
    parameter_epsilon = max(probe_dtype(array.dtype).epsilon for array in arrays.values())

    def restore() -> bool:
        """Every array bit-identical again; False if the objective had made one read-only."""
        return all([write_back(array, Ellipsis, saved[name]) for name, array in arrays.items()])

    points, residues = [], []
    try:
        returned = problem.objective(problem.parameters)
        center = real_scalar("center", returned)
        if not math.isfinite(center):
            raise NonFiniteEvaluation(side="center", value=center)
        _unchanged(problem.parameters, entries, arrays)
        epsilon = max(parameter_epsilon, _value_epsilon(returned))
        for step in steps:
            moved, deltas, norm, state = _displacement(arrays, origin, unit, step)
            if state != "ok":
                points.append(TaylorPoint(step=step, displacement_norm=norm, state=state))
                residues.append(0.0)
                continue
            try:
                for name, array in arrays.items():
                    np.ndarray.__setitem__(array, Ellipsis, moved[name])
                value = real_scalar("plus", problem.objective(problem.parameters))
            except BaseException:
                restore()
                raise
            if not restore():
                raise ReadOnlyArray(role="parameters", during_check=True)
            _unchanged(problem.parameters, entries, arrays)
            points.append(_evaluated_point(step, norm, value, center, epsilon, gradients, deltas))
            residues.append(_float32_cast_residue(arrays, origin, moved, deltas, gradients))
        final = real_scalar("center", problem.objective(problem.parameters))
        _unchanged(problem.parameters, entries, arrays)
    finally:
        restore()
    return center, final, *_at_values_precision(points, center, epsilon), residues


def _float32_cast_residue(arrays: dict, origin: dict, moved: dict, deltas: dict, gradients: dict) -> float:
    """Σ|g|·|(fl32(x + Δ) − fl32(x)) − Δ| over the float64 parameters: what a float32 cast inside f would miss."""
    residue = 0.0
    with np.errstate(all="ignore"):
        for name, array in arrays.items():
            if array.dtype == np.float64:
                seen = moved[name].astype(np.float32).astype(np.float64) - origin[name].astype(np.float32)
                residue += float(np.sum(np.abs(gradients[name]) * np.abs(seen - deltas[name])))
    return residue


def _at_values_precision(points: list, center: float, epsilon: float) -> tuple:
    """(ε_f, points) with ε_f the ε that f's values carry (float32's where every value is a float32
    number: an objective computing in float32 for float64 parameters) and each point's floor at it."""
    values = np.array([point.value for point in points if point.state == "ok"], dtype=np.float64)
    if not len(values):
        return epsilon, points
    values_epsilon = float(np.min(value_epsilons(values, center, values, epsilon)))
    if values_epsilon <= epsilon:
        return epsilon, points
    widened = []
    for point in points:
        if point.state == "ok":
            floor = point.rounding_floor + (values_epsilon - epsilon) * (abs(center) + abs(point.value))
            point = replace(
                point, rounding_floor=floor, usable=point.usable and point.absolute_remainder >= ROUNDING_MARGIN * floor
            )
        widened.append(point)
    return values_epsilon, widened


def _unchanged(parameters: Mapping, entries: dict, arrays: dict) -> None:
    """Every moved parameter still the object given (as ``check`` requires) and writable."""
    for name, entry in entries.items():
        if parameters.get(name) is not entry:
            raise ParameterChanged(parameter=name, change="replaced or removed")
    if not all(array.flags.writeable for array in arrays.values()):
        raise ReadOnlyArray(role="parameters", during_check=True)


def _displacement(arrays: dict, origin: dict, unit: dict, step: float) -> tuple:
    """fl(x + h·d) in each parameter's own dtype, Δ = that − x in float64, ‖Δ‖, and the state it leaves."""
    moved, deltas = {}, {}
    with np.errstate(over="ignore", invalid="ignore"):
        for name, array in arrays.items():
            moved[name] = (origin[name] + step * unit[name]).astype(array.dtype)
            deltas[name] = moved[name].astype(np.float64) - origin[name]
    if not all(np.isfinite(delta).all() for delta in deltas.values()):
        return moved, deltas, math.inf, "non-finite displacement"
    norm = euclidean_norm(list(deltas.values()))
    return moved, deltas, norm, "unchanged" if norm == 0.0 else "ok"


def _evaluated_point(step, norm, value, center, epsilon, gradients, deltas) -> TaylorPoint:
    """The remainder R(h) = f(x + Δ) − f(x) − Σ g·Δ at one evaluated step, and its rounding floor ρ."""
    with np.errstate(all="ignore"):
        linear = math.fsum(float(np.sum(gradients[name] * deltas[name])) for name in deltas)
        linear_size = math.fsum(float(np.sum(np.abs(gradients[name] * deltas[name]))) for name in deltas)
    if not math.isfinite(value):
        return TaylorPoint(step=step, displacement_norm=norm, value=value, linear_term=linear, state="non-finite value")
    remainder = (value - center) - linear
    floor = epsilon * (abs(center) + abs(value)) + 2.0**-52 * linear_size
    return TaylorPoint(
        step=step,
        displacement_norm=norm,
        value=value,
        linear_term=linear,
        remainder=remainder,
        absolute_remainder=abs(remainder),
        rounding_floor=floor,
        state="ok",
        usable=abs(remainder) >= ROUNDING_MARGIN * floor and value != center,  # f unchanged: no evidence
    )


def _fit_verdict(order: float, reason, detection_limit: float, threshold: float) -> tuple:
    """(verdict, reason) from the fit: no usable point passes only when the detection limit is within ``threshold``."""
    if reason == "rounding level":
        if detection_limit <= threshold:
            return PASSED, "rounding level"
        return INCONCLUSIVE, "rounding level above the detection threshold"
    if reason is not None:
        return INCONCLUSIVE, reason
    return _order_verdict(order)


def _order_verdict(order: float) -> tuple:
    """(verdict, reason) from the fitted order of the remainder."""
    if order >= PASS_ORDER:
        return PASSED, "second order"
    if SHRINK_ORDER <= order <= FAIL_ORDER:
        return FAILED, "first order"
    if order < SHRINK_ORDER:
        return INCONCLUSIVE, "remainder does not shrink"
    return INCONCLUSIVE, "between first and second order"
