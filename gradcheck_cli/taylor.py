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
from collections.abc import Mapping as AnyMapping
from dataclasses import dataclass, replace

import numpy as np

from .defaults import TAYLOR_SEED
from .dtypes import probe_dtype
from .errors import (
    GradientShapeMismatch,
    InvalidArgument,
    NonFiniteEvaluation,
    ParameterChanged,
    ReadOnlyArray,
    UnsupportedDtype,
    ZeroDirection,
)
from .estimates import value_epsilons
from .estimator import real_scalar, validate_steps
from .formatting import short_repr
from .problem import as_problem, selected_names, validated_whole_gradients
from .records import Record, same_bits
from .splitmix import MASK64, splitmix64, splitmix64_array
from .tensors import plain_view, write_back

__all__ = [
    "PASS_ORDER",
    "FAIL_ORDER",
    "SHRINK_ORDER",
    "ROUNDING_MARGIN",
    "FIT_POINTS",
    "MIN_FIT_POINTS",
    "DEFAULT_SEED",
    "TaylorPoint",
    "LocalizationTest",
    "TaylorResult",
    "taylor_direction",
    "default_taylor_steps",
    "taylor_test",
]

PASS_ORDER = 1.75
FAIL_ORDER = 1.25
#: Below this order the remainder does not even shrink like h: noise or a non-smooth f, not a verdict.
SHRINK_ORDER = 0.75
ROUNDING_MARGIN = 10.0
FIT_POINTS = 5
MIN_FIT_POINTS = 3
#: The direction's seed unless told otherwise (kept in the numpy-free defaults module for the command line).
DEFAULT_SEED = TAYLOR_SEED


def _fnv1a64(text: str) -> int:
    value = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x100000001B3) & MASK64
    return value


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


@dataclass(frozen=True, slots=True, kw_only=True)
class LocalizationTest(Record):
    """One Taylor test over a subset of the parameters, made to localize a failure.

    ``evaluations`` counts its objective calls (f(x) twice and every evaluated step).
    """

    parameters: tuple
    order: float
    verdict: str
    reason: str
    evaluations: int


@dataclass(frozen=True)
class TaylorResult(Record):
    """The Taylor-remainder verdict for one problem and direction.

    ``order`` is the fitted slope of log|R| against log‖Δ‖ (NaN when no fit
    was possible), ``verdict`` is ``passed``, ``failed`` or ``inconclusive``,
    ``reason`` says why, and ``passed`` is ``verdict == "passed"``. After a
    first-order ``failed``, ``failing_parameters`` names the wrong parameters
    in problem order, found by the subset tests in ``localization``, whose
    objective calls sum to ``localization_evaluations``; all are empty (0)
    otherwise.
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
    verdict: str
    reason: str
    passed: bool


def taylor_direction(parameters: Mapping[str, np.ndarray], names: Sequence[str], seed: int = DEFAULT_SEED) -> dict:
    """The deterministic unit direction over the named parameters (float64 arrays).

    See the module docstring for the construction; the result's entries,
    over all names together, have Euclidean norm 1.
    """
    return _normalized(_seeded_pieces(parameters, names, seed))


def _seeded_pieces(parameters: Mapping[str, np.ndarray], names: Sequence[str], seed: int) -> dict:
    """Each named parameter's 2u − 1 entries (float64, not yet normalized): independent of the other names."""
    raw = {}
    for name in names:
        shape = np.shape(parameters[name])
        key = splitmix64(_fnv1a64(name) ^ (int(seed) & MASK64))
        count = math.prod(shape)
        states = np.arange(count, dtype=np.uint64) + np.uint64(key)
        unit = (splitmix64_array(states) >> np.uint64(11)).astype(np.float64) * 2.0**-53
        raw[name] = (2.0 * unit - 1.0).reshape(shape)
    return raw


def _normalized(direction: dict) -> dict:
    norm = _norm(list(direction.values()))
    if not (math.isfinite(norm) and norm > 0.0):
        raise ZeroDirection(norm=norm)
    return {name: values / norm for name, values in direction.items()}


def default_taylor_steps(parameters: Mapping[str, np.ndarray], names: Sequence[str]) -> tuple:
    """hₖ = s·2⁻ᵏ, k = 0 … ⌈¾·log₂(1/ε)⌉, s = max(1, ‖x‖₂), ε of the least precise dtype."""
    epsilon = max(probe_dtype(parameters[name].dtype).epsilon for name in names)
    scale = max(1.0, _norm([parameters[name].astype(np.float64) for name in names]))
    last = math.ceil(0.75 * math.log2(1.0 / epsilon))
    return tuple(math.ldexp(scale, -k) for k in range(last + 1))


def _norm(arrays) -> float:
    """The Euclidean norm over several arrays, scaled first so that no square overflows."""
    largest = max((float(np.max(np.abs(values))) for values in arrays if values.size), default=0.0)
    if largest == 0.0 or not math.isfinite(largest):
        return largest
    return largest * math.sqrt(math.fsum(float(np.sum(np.square(values / largest))) for values in arrays))


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


def taylor_test(
    problem,
    *,
    names: Sequence[str] = None,
    steps: Sequence[float] = None,
    seed: int = DEFAULT_SEED,
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
    problem = as_problem(problem, reference="the Taylor test's problem")
    names = tuple(selected_names(problem.parameters, problem.gradients, names))
    gradients = validated_whole_gradients(problem, names)
    if isinstance(seed, bool) or not hasattr(type(seed), "__index__"):
        raise InvalidArgument(argument="seed", value=short_repr(seed), expected="a whole number")
    pieces, description, seed = _direction_pieces(problem.parameters, names, operator.index(seed), direction)
    unit = _normalized(pieces)
    given_steps = None if steps is None else validate_steps(steps)
    steps = default_taylor_steps(problem.parameters, names) if given_steps is None else given_steps
    result = _measure_and_judge(problem, names, gradients, (unit, description, seed), steps)
    if result.verdict != "failed" or result.reason != "first order":
        return result
    tests = []
    subset_test = _subset_tester(problem, gradients, pieces, description, seed, given_steps, tests)
    moved = tuple(name for name in names if np.any(pieces[name] != 0.0))
    failing = _bisect(moved, subset_test, failed=moved == names)
    return replace(
        result,
        failing_parameters=tuple(name for name in names if name in failing),
        localization=tuple(tests),
        localization_evaluations=sum(test.evaluations for test in tests),
    )


def _subset_tester(problem, gradients: dict, pieces: dict, description: str, seed: int, steps, tests: list):
    """A function running the Taylor test over a subset of names (appending its LocalizationTest to ``tests``)."""

    def subset_test(subset: tuple) -> str:
        """``failed``, ``passed`` or ``inconclusive``: whether the subset carries a first-order error along d."""
        unit = _normalized({name: pieces[name] for name in subset})
        subset_steps = default_taylor_steps(problem.parameters, subset) if steps is None else steps
        subset_gradients = {name: gradients[name] for name in subset}
        result = _measure_and_judge(problem, subset, subset_gradients, (unit, description, seed), subset_steps)
        evaluations = 2 + sum(point.state in ("ok", "non-finite value") for point in result.points)
        test = LocalizationTest(
            parameters=subset, order=result.order, verdict=result.verdict, reason=result.reason, evaluations=evaluations
        )
        tests.append(test)
        if result.verdict == "failed" and result.reason != "first order":
            return "inconclusive"  # a nondeterministic objective says nothing about where the gradient is wrong
        return result.verdict

    return subset_test


def _bisect(names: tuple, subset_test, failed: bool) -> tuple:
    """The single names whose own test fails, found by bisecting ``names`` (which failed, or carry the error).

    A half is searched when its own test fails or its sibling's passes (the
    second half is then not tested); a single name is named only when its
    own test fails (``failed`` says it already did).
    """
    if len(names) == 1:
        return names if failed or subset_test(names) == "failed" else ()
    middle = (len(names) + 1) // 2
    first, second = names[:middle], names[middle:]
    first_verdict = subset_test(first)
    if first_verdict == "passed":
        return _bisect(second, subset_test, failed=False)
    second_verdict = subset_test(second)
    found = ()
    if first_verdict == "failed" or second_verdict == "passed":
        found += _bisect(first, subset_test, failed=first_verdict == "failed")
    if second_verdict == "failed":
        found += _bisect(second, subset_test, failed=True)
    return found


def _measure_and_judge(problem, names: tuple, gradients: dict, direction: tuple, steps: tuple) -> TaylorResult:
    """Walk along the validated ``(unit, description, seed)`` direction, fit the remainder's order, judge it."""
    unit, description, seed = direction
    gradients = {name: gradient.astype(np.float64) for name, gradient in gradients.items()}
    with np.errstate(all="ignore"):  # a gradient near the float limit overflows to inf, not to a warning
        directional_derivative = math.fsum(float(np.sum(gradients[name] * unit[name])) for name in names)
    center, final, epsilon, points = _walk_along_direction(problem, names, unit, gradients, steps)
    order, window, reason = _fit_order(points)
    points = [replace(point, in_fit=True) if index in window else point for index, point in enumerate(points)]
    evaluated = [point for point in points if point.state == "ok"]
    limits = [ROUNDING_MARGIN * point.rounding_floor / point.displacement_norm for point in evaluated]
    detection_limit = min(limits) if limits else math.inf
    deterministic = same_bits(final, center)
    if not deterministic:
        verdict, reason = "failed", "nondeterministic objective"
    elif len(evaluated) < MIN_FIT_POINTS:
        verdict, reason = "inconclusive", "too few evaluated points"
    else:
        threshold = math.sqrt(epsilon) * max(1.0, abs(directional_derivative))
        verdict, reason = _fit_verdict(order, reason, detection_limit, threshold)
        if reason == "rounding level" and any(point.value == center for point in evaluated):
            verdict, reason = "inconclusive", "too few usable points"  # f did not change: no evidence
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
        fit_points=len(window),
        order=order,
        detection_limit=detection_limit,
        deterministic=deterministic,
        failing_parameters=(),
        localization=(),
        localization_evaluations=0,
        verdict=verdict,
        reason=reason,
        passed=verdict == "passed",
    )


def _direction_pieces(parameters: Mapping, names: tuple, seed: int, direction) -> tuple:
    """(direction pieces, how they were made, the seed recorded): the seeded splitmix64 ones, or ``direction``'s.

    The pieces are not normalized; normalized over any subset of names, they give that subset's direction.
    """
    if direction is None:
        return _seeded_pieces(parameters, names, seed), "splitmix64", seed
    return _given_pieces(direction, parameters, names), "given", -1


def _given_pieces(direction, parameters: Mapping, names: Sequence[str]) -> dict:
    """The caller's direction over ``names``, as float64 arrays of the parameters' shapes, not yet normalized."""
    if not isinstance(direction, AnyMapping):
        raise InvalidArgument(
            argument="direction", value=type(direction).__name__, expected="a mapping from parameter names to arrays"
        )
    unit = {}
    for name in names:
        values = direction.get(name)
        if values is not None:
            try:
                values = np.asarray(values)
            except (TypeError, ValueError, OverflowError, RecursionError):
                values = np.asarray(None)
            if values.dtype.kind not in "fiu" and values.dtype.name != "bfloat16":
                expected = "an array of real numbers for each parameter"
                given = f"{short_repr(direction[name])} for {name!r}"
                raise InvalidArgument(argument="direction", value=given, expected=expected)
            values = values.astype(np.float64)
        if values is None or values.shape != parameters[name].shape:
            raise GradientShapeMismatch(
                parameters=list(parameters[name].shape),
                analytic=[] if values is None else list(values.shape),
            )
        unit[name] = values
    return unit


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

    points = []
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
        final = real_scalar("center", problem.objective(problem.parameters))
        _unchanged(problem.parameters, entries, arrays)
    finally:
        restore()
    return center, final, *_at_values_precision(points, center, epsilon)


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
    norm = _norm(list(deltas.values()))
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
            return "passed", "rounding level"
        return "inconclusive", "rounding level above the detection threshold"
    if reason is not None:
        return "inconclusive", reason
    return _order_verdict(order)


def _order_verdict(order: float) -> tuple:
    """(verdict, reason) from the fitted order of the remainder."""
    if order >= PASS_ORDER:
        return "passed", "second order"
    if SHRINK_ORDER <= order <= FAIL_ORDER:
        return "failed", "first order"
    if order < SHRINK_ORDER:
        return "inconclusive", "remainder does not shrink"
    return "inconclusive", "between first and second order"
