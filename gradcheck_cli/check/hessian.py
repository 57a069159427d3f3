"""Check a Hessian-vector product against the central difference of the gradient along the vector.

A Newton or trust-region method (scipy's ``hessp``) needs ``hvp(v) = H·v``.
The numerical side is (∇f(θ + Δ₊) − ∇f(θ − Δ₋)) / 2mh from the user's own
gradient at the actual probes θ ± m·h·v rounded into each parameter's dtype,
the analytic side ``hvp(w)`` with w = (Δ₊ + Δ₋) / 2mh, the direction the
probes actually took; every component is judged with its own rounding bar (at the
scale of its parameter's largest gradient value)
by the verdict rules of check_gradients (:mod:`gradcheck_cli.verdict.rules`). The
rules are in docs/method.md ("Second order").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ..core.defaults import SEED
from ..core.formatting import short_repr
from ..core.record import Record
from ..engine.cotangents import tangent
from ..engine.dtypes import probe_dtype
from ..engine.problem import GradientProblem, reject_shared_memory, selected_names
from ..engine.tensors import write_back
from ..errors import AtParameter, GradCheckError, InvalidArgument, ReadOnlyArray
from ..verdict.estimates import estimate_columns, value_epsilons
from ..verdict.rules import judge_confirmed, judge_primary, verdict_of, with_step_sensitivity
from ..verdict.terms import CONFIRMATION_FACTORS, JudgedEstimate, Resolution, Standard
from ..verdict.words import FAILED, INCONCLUSIVE, PASSED

__all__ = [
    "HessianComponent",
    "HessianParameterCheck",
    "HessianVectorReport",
    "check_hessian_vector_product",
    "hessian_problem",
]

#: Components kept per parameter in ``unpassed`` (the counts cover them all).
KEPT_COMPONENTS = 20


@dataclass(frozen=True)
class HessianComponent(Record):
    """One component c of H·v: its estimates at each multiplier tried and the verdict on them."""

    coordinate: tuple
    estimates: tuple
    decided_at: int
    verdict: str
    reason: str


@dataclass(frozen=True)
class HessianParameterCheck(Record):
    """The components of H·v that belong to one parameter.

    ``verdict`` is failed if any component failed, inconclusive if any did not
    pass, else passed; ``unpassed`` the first KEPT_COMPONENTS components that did not
    pass (row-major), ``worst`` the component with the largest relative error at m = 1.
    """

    name: str
    dtype: str
    shape: tuple
    verdict: str
    passed: bool
    checked: int
    failed: int
    inconclusive: int
    unpassed: tuple
    worst: HessianComponent | None


@dataclass(frozen=True)
class HessianVectorReport(Record):
    """The whole check: the step h, the tolerance, each parameter, and the verdict."""

    verdict: str
    passed: bool
    step: float
    tolerance: float
    failing_parameters: tuple
    parameters: tuple
    gradient_calls: int
    hvp_calls: int

    @property
    def evaluations(self) -> int:
        """The calls of the user's code, ``gradient`` and ``hvp`` together (as every report counts them)."""
        return self.gradient_calls + self.hvp_calls

    def parameter(self, name: str) -> HessianParameterCheck:
        """The :class:`HessianParameterCheck` named ``name``."""
        for check in self.parameters:
            if check.name == name:
                return check
        raise KeyError(name)


def check_hessian_vector_product(
    gradient: Callable[[Mapping[str, np.ndarray]], Mapping],
    hvp: Callable[[Mapping[str, np.ndarray]], Mapping],
    parameters: Mapping[str, np.ndarray],
    *,
    direction: Mapping[str, np.ndarray] | None = None,
    step: float | None = None,
    tolerance: float | None = None,
    seed: int = SEED,
) -> HessianVectorReport:
    """Check ``hvp(v)`` against the central difference of ``gradient`` along v, component by component.

    Parameters
    ----------
    gradient : callable Mapping[str, np.ndarray] -> Mapping[str, array]
        ∇f at the arrays in ``parameters`` (called with that very mapping,
        perturbed in place): one array per parameter, same shapes.
    hvp : callable Mapping[str, np.ndarray] -> Mapping[str, array]
        H·w at the unperturbed parameters for a direction w (float64 arrays
        by name): one array per parameter, same shapes.
    parameters : Mapping[str, np.ndarray]
        Writable float64, float32, float16 or bfloat16 arrays; bit-identical afterwards on every path.
    direction : Mapping[str, np.ndarray], optional
        v per parameter; default :func:`~gradcheck_cli.engine.cotangents.tangent` of
        each (seed, the parameter's position), scaled like the default step.
    step : float, optional
        h; default ε^(1/3) of the coarsest dtype among the parameters.
    tolerance : float, optional
        The relative tolerance; default ε^(1/3) of that dtype.
    seed : int
        The default direction's seed.

    Returns
    -------
    HessianVectorReport
        Probed at m = 1, then at the multipliers CONFIRMATION_FACTORS (0.1, 10)
        for the components that did not pass at m = 1, as a coordinate is.

    Raises
    ------
    GradCheckError
        For a bad request, before ``gradient`` is called; InvalidArgument when
        ``gradient`` or ``hvp`` returns a missing or misshapen array.
        Exceptions they raise propagate unchanged, with every array restored.
    """
    for role, function in (("gradient", gradient), ("hvp", hvp)):
        if not callable(function):
            raise InvalidArgument(argument=role, value=type(function).__name__, expected="callable")
    names = selected_names(parameters, parameters)
    dtypes = {name: _probed_dtype(name, parameters[name]) for name in names}
    reject_shared_memory(parameters, names)
    coarsest = max(dtypes.values(), key=lambda dtype: dtype.epsilon)
    h = coarsest.step_factor if step is None else _positive(step, "step")
    tolerance = coarsest.tolerance if tolerance is None else _positive(tolerance, "tolerance")
    origins = {name: np.array(parameters[name], copy=True) for name in names}
    exact = {name: origin.astype(np.float64) for name, origin in origins.items()}
    if direction is None:
        direction = {name: tangent(origins[name], index, seed) for index, name in enumerate(names)}
    v = {name: _direction_array(direction, name, origins[name].shape) for name in names}
    center = _read(gradient(parameters), names, origins, "gradient")
    probing = _Probing(gradient, hvp, parameters, origins, exact, v, h, names)
    probes = {1.0: _probe(probing, 1.0)}
    epsilon = _values_epsilon(center, probes[1.0], coarsest.epsilon)
    largest = max(float(np.max(np.abs(a), initial=0.0)) for a, *_ in probes[1.0].values())
    readings = {name: _Reading(center[name], epsilon, h) for name in names}
    components = {name: _first_judgements(probes[1.0][name], readings[name], tolerance, largest) for name in names}
    if any(judgement is None for judged in components.values() for _, judgement, _ in judged.values()):
        for factor in CONFIRMATION_FACTORS:
            probes[factor] = _probe(probing, factor)
        components = {name: _confirmed(name, components[name], probes, readings[name], tolerance) for name in names}
    checks = tuple(_parameter_check(name, dtypes[name], origins[name].shape, components[name]) for name in names)
    failing = tuple(check.name for check in checks if not check.passed)
    verdict = verdict_of(check.verdict for check in checks)
    return HessianVectorReport(
        verdict=verdict,
        passed=verdict == PASSED,
        step=h,
        tolerance=tolerance,
        failing_parameters=failing,
        parameters=checks,
        gradient_calls=1 + 2 * len(probes),
        hvp_calls=len(probes),
    )


def hessian_problem(
    gradient: Callable[[Mapping[str, np.ndarray]], Mapping],
    hvp: Callable[[Mapping[str, np.ndarray]], Mapping],
    parameters: Mapping[str, np.ndarray],
    *,
    direction: Mapping[str, np.ndarray] | None = None,
    seed: int = SEED,
) -> GradientProblem:
    """The Hessian-vector product as a first-order problem: objective ⟨v, ∇f(θ)⟩, gradient ``hvp(v)``.

    A Hessian is symmetric, so ∇⟨v, ∇f⟩ = H·v: ``check_problem`` of this problem checks ``hvp``
    as a gradient, and ``check_taylor`` of it is the directional Taylor test of the Hessian term
    (its remainder is second order for a right ``hvp``, first order for a wrong one). Arguments as
    :func:`check_hessian_vector_product`'s; ``hvp`` is called once, here.
    """
    for role, function in (("gradient", gradient), ("hvp", hvp)):
        if not callable(function):
            raise InvalidArgument(argument=role, value=type(function).__name__, expected="callable")
    names = selected_names(parameters, parameters)
    origins = {name: np.asarray(parameters[name]) for name in names}
    if direction is None:
        direction = {name: tangent(origins[name], index, seed) for index, name in enumerate(names)}
    v = {name: _direction_array(direction, name, origins[name].shape) for name in names}
    products = _read(hvp(v), names, origins, "hvp")

    def objective(arrays):
        values = _read(gradient(arrays), names, origins, "gradient")
        return sum(float(np.sum(values[name] * v[name])) for name in names)

    return GradientProblem(objective, parameters, products)


def _probed_dtype(name: str, array):
    try:
        if not isinstance(array, np.ndarray):
            raise InvalidArgument(argument="parameters", value=short_repr(array), expected="a numpy array")
        if not array.flags.writeable:
            raise ReadOnlyArray(role="parameters", during_check=False)
        return probe_dtype(array.dtype, role="real parameters")  # no complex ones here
    except GradCheckError as error:
        raise AtParameter(parameter=name, source=error) from error


def _positive(value, argument: str) -> float:
    number = float(value)
    if not (number > 0.0 and np.isfinite(number)):
        raise InvalidArgument(argument=argument, value=short_repr(value), expected="a positive finite number")
    return number


def _direction_array(direction: Mapping, name: str, shape: tuple) -> np.ndarray:
    values = np.asarray(direction.get(name) if isinstance(direction, Mapping) else None, dtype=np.float64)
    if values.shape != shape or not np.all(np.isfinite(values)) or not np.any(values):
        expected = f"a finite, nonzero array of shape {list(shape)} for every parameter"
        raise InvalidArgument(argument=f"direction[{name!r}]", value=short_repr(direction.get(name)), expected=expected)
    return values


def _read(returned, names, origins: Mapping, role: str) -> dict:
    """The arrays ``gradient`` or ``hvp`` returned, as float64, each checked against its parameter's shape."""
    if not isinstance(returned, Mapping):
        raise InvalidArgument(argument=role, value=short_repr(returned), expected="a mapping of arrays by name")
    arrays = {}
    for name in names:
        values = np.asarray(returned.get(name), dtype=np.float64)
        if values.shape != origins[name].shape:
            expected = f"an array of shape {list(origins[name].shape)}"
            raise InvalidArgument(
                argument=f"{role}()[{name!r}]", value=short_repr(returned.get(name)), expected=expected
            )
        arrays[name] = values
    return arrays


def _values_epsilon(center: dict, probe: dict, epsilon: float) -> float:
    """ε of the precision the gradient's values carry: :func:`~gradcheck_cli.verdict.estimates.value_epsilons`'
    where every value at θ and at both probes is a number of that lower precision (a float64 θ of
    small integers has a float32 gradient there, but not at θ ± h·v), else the parameters' ``epsilon``."""
    epsilons = [value_epsilons(probe[name][4], center[name], probe[name][3], epsilon) for name in center]
    return max(epsilon, min(float(np.min(values, initial=np.inf)) for values in epsilons))


@dataclass(frozen=True, slots=True)
class _Probing:
    """What every probe along v uses: the user's ``gradient`` and ``hvp``, the ``parameters``
    (probed in place), their ``origins`` (copies, written back) and ``exact`` float64 values, the
    direction ``v``, the step ``h`` and the checked ``names``."""

    gradient: Callable
    hvp: Callable
    parameters: Mapping
    origins: dict
    exact: dict
    v: dict
    h: float
    names: list


@dataclass(frozen=True, slots=True)
class _Reading:
    """How a parameter's numerical components are read: ``center`` its gradient at θ (beside the
    probes' values, the scale of their rounding), ``epsilon`` what the values are trusted to, ``h``."""

    center: np.ndarray
    epsilon: float
    h: float


def _probe(probing: _Probing, multiplier: float) -> dict:
    """Per parameter (analytic, numerical, largest |∇f|) per unit multiplier at θ ± m·h·v."""
    gradient, parameters, origins, exact = probing.gradient, probing.parameters, probing.origins, probing.exact
    v, h, names = probing.v, probing.h, probing.names
    plus, minus, w = {}, {}, {}
    for name in names:
        step = multiplier * h * v[name]
        plus[name] = (exact[name] + step).astype(origins[name].dtype)
        minus[name] = (exact[name] - step).astype(origins[name].dtype)
        moved = (plus[name].astype(np.float64) - exact[name]) + (exact[name] - minus[name].astype(np.float64))
        w[name] = moved / (2.0 * multiplier * h)
    plus_values = _read(_gradient_at(gradient, parameters, origins, plus), names, origins, "gradient")
    minus_values = _read(_gradient_at(gradient, parameters, origins, minus), names, origins, "gradient")
    analytic = _read(probing.hvp(w), names, origins, "hvp")
    probes = {}
    for name in names:
        numerical = (plus_values[name] - minus_values[name]) / (2.0 * multiplier * h)
        largest = np.maximum(np.abs(plus_values[name]), np.abs(minus_values[name]))
        probes[name] = (analytic[name], numerical, largest, plus_values[name], minus_values[name])
    return probes


def _gradient_at(gradient, parameters, origins, points: Mapping) -> Mapping:
    """``gradient(parameters)`` with every parameter at ``points``; each written back on every path."""
    try:
        for name, point in points.items():
            np.ndarray.__setitem__(parameters[name], Ellipsis, point)
        return gradient(parameters)
    finally:
        for name, origin in origins.items():
            if not write_back(parameters[name], Ellipsis, origin):
                raise ReadOnlyArray(role="parameters", during_check=False)


def _estimate(probe, flat: int, reading: _Reading, multiplier: float) -> JudgedEstimate:
    """Component ``flat``'s estimate at m: the values' rounding ε·|g| divided by the spacing 2mh, as a derivative.

    |g| is the parameter's largest gradient value, not the component's own: a gradient is sums of
    products, and a small component that cancels its terms carries their rounding, which the
    largest component bounds from below (a float32 A·θ's smallest component failed without it)."""
    analytic, numerical, largest = probe[:3]
    peak = max(float(np.max(largest, initial=0.0)), float(np.max(np.abs(reading.center), initial=0.0)))
    return estimate_columns(
        multiplier,
        [float(analytic.flat[flat])],
        [float(numerical.flat[flat])],
        largest_value=peak,
        epsilons=reading.epsilon,
        jitter=0.0,
        gain=1.0 / (multiplier * reading.h),
        consistent=True,
    ).estimate(0)


def _first_judgements(probe, reading: _Reading, tolerance: float, largest: float) -> dict:
    """flat index → (estimates, Judgement or None, Resolution) at m = 1."""
    analytic = probe[0]
    resolution = Resolution(gradient=float(np.max(np.abs(analytic), initial=0.0)), check=largest)
    judged = {}
    for flat in range(analytic.size):
        estimate = _estimate(probe, flat, reading, 1.0)
        judged[flat] = (
            (estimate,),
            judge_primary(estimate, Standard(tolerance, resolution, unit="multiplier")),
            resolution,
        )
    return judged


def _confirmed(name: str, judged: dict, probes: dict, reading: _Reading, tolerance: float) -> dict:
    """The components without a verdict at m = 1 judged again with the estimates at every multiplier."""
    confirmed = {}
    for flat, (estimates, judgement, resolution) in judged.items():
        if judgement is None:
            extra = (_estimate(probes[factor][name], flat, reading, factor) for factor in CONFIRMATION_FACTORS)
            estimates = with_step_sensitivity((*estimates, *extra))
            judgement = judge_confirmed(estimates, Standard(tolerance, resolution, unit="multiplier"))
        confirmed[flat] = (estimates, judgement, resolution)
    return confirmed


def _parameter_check(name, dtype, shape, components) -> HessianParameterCheck:
    counts = {FAILED: 0, INCONCLUSIVE: 0}
    unpassed, worst, worst_error = [], None, -1.0
    for flat, (estimates, judgement, _) in components.items():
        record = HessianComponent(
            coordinate=tuple(int(i) for i in np.unravel_index(flat, shape)),
            estimates=tuple(estimates),
            decided_at=judgement.decided_at,
            verdict=judgement.verdict,
            reason=judgement.reason,
        )
        if judgement.verdict != PASSED:
            counts[FAILED if judgement.verdict == FAILED else INCONCLUSIVE] += 1
            if len(unpassed) < KEPT_COMPONENTS:
                unpassed.append(record)
        if estimates[0].relative_error > worst_error:
            worst, worst_error = record, estimates[0].relative_error
    verdict = verdict_of(judgement.verdict for _, judgement, _ in components.values())
    return HessianParameterCheck(
        name=name,
        dtype=dtype.name,
        shape=tuple(shape),
        verdict=verdict,
        passed=verdict == PASSED,
        checked=len(components),
        failed=counts[FAILED],
        inconclusive=counts[INCONCLUSIVE],
        unpassed=tuple(unpassed),
        worst=worst,
    )
