"""The Taylor-remainder test: a verdict on a whole gradient that needs no tolerance.

For parameters x, a deterministic unit direction d and the analytic
gradient g, move every selected parameter to fl(x + h·d) IN ITS OWN DTYPE and
measure the displacement actually stored, Δ = fl(x + h·d) − x (the chapter's
actual-spacing rule carried into many dimensions). The signed remainder

    R(h) = f(x + Δ) − f(x) − Σ g·Δ

shrinks like ‖Δ‖² when g is right (R ≈ ½ΔᵀHΔ) and only like ‖Δ‖ when g is
wrong along d (R ≈ (∇f − g)·Δ). The order of the remainder is the verdict.

The rules
---------
Direction
    d[name].flat[i] = 2u − 1, with u the top 53 bits of
    splitmix64(key(name, seed) + i) divided by 2⁵³, where
    key(name, seed) = splitmix64(FNV-1a-64(name) XOR seed); then all selected
    parameters' entries together are divided by their Euclidean norm.
    Pure integer arithmetic: the same on every platform and numpy version,
    independent of the other parameters, and, being pseudo-random, almost
    never orthogonal to a gradient error.
Steps
    hₖ = s·2⁻ᵏ for k = 0 … ⌈¾·log₂(1/ε)⌉ (40 steps for float64, 19 for
    float32), s = max(1, ‖x‖₂) over the selected parameters and ε the machine
    epsilon of the least precise parameter dtype; a step whose displacement
    rounds to zero everywhere is recorded as ``unchanged`` and skipped.
Rounding floor and usable points
    ρ(h) = ε_f·(|f(x)| + |f(x+Δ)|) + ε₆₄·Σ|g·Δ|, with ε_f the larger of the
    value's and the parameters' machine epsilons: what rounding alone can
    put into R. A point is usable when |R| ≥ 10·ρ: rounding then moves
    log|R| by at most about 10%, and the 5-point fit below averages that
    down. (The model is pessimistic for a plainly computed loss — its
    actual rounding sits at 0.1–0.7 ρ — but a loss with heavy cancellation
    can exceed it; its remainder then stops shrinking and the verdict is
    ``inconclusive``, never a pass.) A margin of 100 was tried: it hides
    first-order errors of 0.07 along d in a float32 objective, which 10
    resolves.
Fit range
    The order is fitted where h is as small as possible while rounding does
    not dominate, because that is where the lowest-order term rules (a wrong
    gradient's first-order term wins only as h → 0; a correct gradient's
    third-order term may rule at large h). Take the last unbroken run of
    usable points (the one reaching the smallest usable h), keep its tail on
    which R has one sign (a sign change is the notch where two orders cancel;
    the point next to it is dropped too, since its |R| is too small for
    either order and would flatten the slope), and fit the least-squares slope of log|R|
    against log‖Δ‖₂ over the last 5 of those points (a factor 16 in h). At
    least 3 points are needed.
Verdict
    order ≥ 1.75: ``pass`` (second order or higher: consistent with a right
    gradient); 0.75 ≤ order ≤ 1.25: ``fail`` (the linear model g·Δ is wrong
    along d, or f has a kink there); in between: ``inconclusive`` (the fit
    straddles the crossover of first- and second-order terms); below 0.75:
    ``inconclusive`` (the remainder does not even shrink like h: rounding
    noise above the model, or a discontinuous f — no evidence either way;
    a wrong gradient's remainder always shrinks at least like h). No usable
    point at all (a linear objective, or any objective with no curvature
    along d at working precision): ``pass`` with reason ``rounding level``
    when the detection limit (below) is at most √ε_f·max(1, |g·d|),
    otherwise ``inconclusive``. f(x) evaluated before and after the test
    must be bit-identical, else the objective is nondeterministic or
    stateful and the verdict is ``fail``.
Detection limit
    min over evaluated points of 10·ρ/‖Δ‖: the smallest first-order error
    (∇f − g)·d that would have stood above the rounding threshold somewhere.
    An error much smaller than √(10·ρ·|dᵀHd|) hides under the second-order
    term wherever rounding does not dominate: the Taylor test, like any
    finite-difference check, resolves about half the working digits.
bfloat16: practically always inconclusive
    With a bfloat16 parameter the test has 7 steps (k = 0 … 6), and ε_f is
    at least bfloat16's 2⁻⁷, so a point is usable only when |R| ≥ 10·ρ ≈
    0.16·|f|: the remainder must be a sixth of the loss itself. Only the
    largest one or two steps get there, fewer than the 3 a fit needs, and a
    fit over the few that do straddles the first/second-order crossover:
    right and wrong gradients alike come out ``inconclusive`` (in practice
    never ``pass`` or ``fail``). This is a limit of the rule, not a verdict on the
    gradient; check bfloat16 parameters with ``check_gradients``, which
    catches gross errors.

Every parameter is bit-identical afterwards on every path (return, typed
error, exception from the objective, KeyboardInterrupt).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Mapping, Sequence

import numpy as np

from .chapter import TAYLOR_SEED
from .dtypes import probe_dtype
from .errors import (
    AtCoordinate,
    AtParameter,
    GradCheckError,
    GradientShapeMismatch,
    NonFiniteAnalyticGradient,
    NonFiniteEvaluation,
    NonFinitePoint,
    UnsupportedDtype,
    ZeroDirection,
)
from .estimator import real_scalar, validate_steps
from .problem import as_problem, reject_shared_memory, selected_names
from .records import Record, record, same_bits
from .splitmix import MASK64, splitmix64, splitmix64_array
from .tensors import parameter_and_gradient

__all__ = [
    "PASS_ORDER",
    "FAIL_ORDER",
    "SHRINK_ORDER",
    "ROUNDING_MARGIN",
    "FIT_POINTS",
    "MIN_FIT_POINTS",
    "DEFAULT_SEED",
    "TaylorPoint",
    "TaylorResult",
    "selected_parameters",
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
#: The direction's seed unless told otherwise (kept in the numpy-free chapter module for the command line).
DEFAULT_SEED = TAYLOR_SEED

def _fnv1a64(text: str) -> int:
    value = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        value = ((value ^ byte) * 0x100000001B3) & MASK64
    return value


@record
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
    value: float
    linear_term: float
    remainder: float
    absolute_remainder: float
    rounding_floor: float
    state: str
    usable: bool
    in_fit: bool


@record
class TaylorResult(Record):
    """The Taylor-remainder verdict for one problem and direction.

    ``order`` is the fitted slope of log|R| against log‖Δ‖ (NaN when no fit
    was possible), ``verdict`` is ``pass``, ``fail`` or ``inconclusive``,
    ``reason`` says why, and ``passed`` is ``verdict == "pass"``.
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
    verdict: str
    reason: str
    passed: bool


def selected_parameters(problem, names: Sequence[str] = None):
    """Validate a problem and the parameter names to use; returns (problem, names, gradients).

    ``problem`` may be a :class:`GradientProblem` or the tuple
    ``(objective, parameters, gradients)``. Every selected parameter must be
    a writable float64, float32 or bfloat16 array of finite values, with a
    finite analytic gradient of the same shape (the whole arrays move; a
    real scalar stands for the gradient of a 0-d parameter), and share no
    memory with any other parameter. ``gradients`` maps each selected name
    to its validated gradient array.
    """
    problem = as_problem(problem, reference="the Taylor test's problem")
    names = selected_names(problem.parameters, problem.gradients, names)
    gradients = {}
    for name in names:
        try:
            _, gradient = parameter_and_gradient(problem.parameters[name], problem.gradients[name])
            _reject_non_finite(problem.parameters[name], lambda value: NonFinitePoint(point=value))
            _reject_non_finite(gradient, lambda value: NonFiniteAnalyticGradient(value=value))
        except GradCheckError as error:
            raise AtParameter(parameter=name, source=error) from error
        gradients[name] = gradient
    reject_shared_memory(problem.parameters, names)
    return problem, tuple(names), gradients


def _reject_non_finite(values: np.ndarray, error) -> None:
    values = values.astype(np.float64)
    finite = np.isfinite(values)
    if not finite.all():
        index = tuple(int(i) for i in np.argwhere(~finite)[0])
        raise AtCoordinate(coordinate=list(index), source=error(float(values[index])))


def taylor_direction(parameters: Mapping[str, np.ndarray], names: Sequence[str], seed: int = DEFAULT_SEED) -> dict:
    """The deterministic unit direction over the named parameters (float64 arrays).

    See the module docstring for the construction; the result's entries,
    over all names together, have Euclidean norm 1.
    """
    raw = {}
    for name in names:
        shape = np.shape(parameters[name])
        key = splitmix64(_fnv1a64(name) ^ (int(seed) & MASK64))
        count = math.prod(shape)
        states = np.arange(count, dtype=np.uint64) + np.uint64(key)
        unit = (splitmix64_array(states) >> np.uint64(11)).astype(np.float64) * 2.0**-53
        raw[name] = (2.0 * unit - 1.0).reshape(shape)
    return _normalized(raw)


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

    Raises
    ------
    GradCheckError
        A typed error, before any objective call, for a bad problem,
        selection, step sequence or direction, and for a non-finite or
        non-scalar f(x). Exceptions from the objective propagate unchanged,
        with every parameter restored bit-exactly.
    """
    problem, names, validated_gradients = selected_parameters(problem, names)
    parameters = problem.parameters
    if direction is None:
        unit = taylor_direction(parameters, names, seed)
        description = "splitmix64"
    else:
        unit = {}
        for name in names:
            values = np.asarray(direction[name], dtype=np.float64) if name in direction else None
            if values is None or values.shape != parameters[name].shape:
                raise GradientShapeMismatch(
                    parameters=list(parameters[name].shape),
                    analytic=[] if values is None else list(values.shape),
                )
            unit[name] = values
        unit = _normalized(unit)
        description, seed = "given", -1
    if steps is None:
        steps = default_taylor_steps(parameters, names)
    else:
        steps = validate_steps(steps)

    arrays = {name: parameters[name] for name in names}
    saved = {name: array.copy() for name, array in arrays.items()}
    origin = {name: array.astype(np.float64) for name, array in arrays.items()}
    gradients = {name: validated_gradients[name].astype(np.float64) for name in names}
    directional_derivative = math.fsum(float(np.sum(gradients[name] * unit[name])) for name in names)
    parameter_epsilon = max(probe_dtype(array.dtype).epsilon for array in arrays.values())

    def restore():
        for name, array in arrays.items():
            array[...] = saved[name]

    points = []
    try:
        returned = problem.objective(parameters)
        center = real_scalar("center", returned)
        if not math.isfinite(center):
            raise NonFiniteEvaluation(side="center", value=center)
        epsilon = max(parameter_epsilon, _value_epsilon(returned))
        for step in steps:
            moved, deltas = {}, {}
            with np.errstate(over="ignore", invalid="ignore"):
                for name in names:
                    moved[name] = (origin[name] + step * unit[name]).astype(arrays[name].dtype)
                    deltas[name] = moved[name].astype(np.float64) - origin[name]
            finite = all(np.isfinite(delta).all() for delta in deltas.values())
            norm = _norm(list(deltas.values())) if finite else math.inf
            if not finite or norm == 0.0:
                state = "non-finite displacement" if not finite else "unchanged"
                points.append(TaylorPoint(step, norm, math.nan, math.nan, math.nan, math.nan, math.nan, state, False, False))
                continue
            try:
                for name, array in arrays.items():
                    array[...] = moved[name]
                value = real_scalar("plus", problem.objective(parameters))
            finally:
                restore()
            linear = math.fsum(float(np.sum(gradients[name] * deltas[name])) for name in names)
            linear_size = math.fsum(float(np.sum(np.abs(gradients[name] * deltas[name]))) for name in names)
            if not math.isfinite(value):
                points.append(
                    TaylorPoint(step, norm, value, linear, math.nan, math.nan, math.nan, "non-finite value", False, False)
                )
                continue
            remainder = (value - center) - linear
            floor = epsilon * (abs(center) + abs(value)) + 2.0**-52 * linear_size
            points.append(
                TaylorPoint(
                    step=step,
                    displacement_norm=norm,
                    value=value,
                    linear_term=linear,
                    remainder=remainder,
                    absolute_remainder=abs(remainder),
                    rounding_floor=floor,
                    state="ok",
                    usable=abs(remainder) >= ROUNDING_MARGIN * floor,
                    in_fit=False,
                )
            )
        final = real_scalar("center", problem.objective(parameters))
    finally:
        restore()

    deterministic = same_bits(final, center)
    order, window, reason = _fit_order(points)
    points = [
        dataclasses.replace(point, in_fit=True) if index in window else point
        for index, point in enumerate(points)
    ]
    evaluated = [point for point in points if point.state == "ok"]
    limits = [ROUNDING_MARGIN * point.rounding_floor / point.displacement_norm for point in evaluated]
    detection_limit = min(limits) if limits else math.inf

    if not deterministic:
        verdict, reason = "fail", "nondeterministic objective"
    elif len(evaluated) < MIN_FIT_POINTS:
        verdict, reason = "inconclusive", "too few evaluated points"
    elif reason == "rounding level":
        within = detection_limit <= math.sqrt(epsilon) * max(1.0, abs(directional_derivative))
        verdict = "pass" if within else "inconclusive"
        reason = "rounding level" if within else "rounding level above the detection threshold"
    elif reason is not None:
        verdict = "inconclusive"
    elif order >= PASS_ORDER:
        verdict, reason = "pass", "second order"
    elif order >= SHRINK_ORDER and order <= FAIL_ORDER:
        verdict, reason = "fail", "first order"
    elif order < SHRINK_ORDER:
        verdict, reason = "inconclusive", "remainder does not shrink"
    else:
        verdict, reason = "inconclusive", "between first and second order"

    return TaylorResult(
        parameters=names,
        dtypes=tuple(str(arrays[name].dtype) for name in names),
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
        verdict=verdict,
        reason=reason,
        passed=verdict == "pass",
    )
