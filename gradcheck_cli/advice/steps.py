"""Step advice without the analytic answer: which requested step to trust.

Central differences at a geometric sequence of requested steps (:func:`default_steps`), each one's
truncation error estimated by Richardson from its neighbours (the larger of the two pairings) and
its rounding floor ε·max|f| through the stencil weights; the advised step has the smallest
max(truncation, rounding). The rules and what the estimate means are in docs/method.md, "Step
advice". The spacing ratio η_j/η_k is formed as (h₋ⱼ/h₋ₖ)·(h₊ⱼ/h₊ₖ), never from the products,
which overflow above 1e154 and underflow below 1e-154.

Scalar work imports no numpy (dtypes come from :mod:`gradcheck_cli.engine.dtypes` by name); only tensor
coordinates (:func:`advise_coordinate_step`, :func:`advise_problem_steps`) and dtypes given as numpy
objects load it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from ..core.record import Record, same_bits
from ..engine.dtypes import dtype_perturbations, probe_dtype
from ..engine.estimator import CentralDifference, central_difference, validate_step, validate_steps
from ..engine.sampling import sample_tensor_coordinates
from ..errors import (
    AtCoordinate,
    AtParameter,
    GradCheckError,
    InvalidStepSequence,
    TooFewAcceptedSteps,
    UnrepresentablePoint,
)
from .choice import (
    both_probes_move,
    collapsed_fraction,
    lower_precision_seen,
    moves_f,
    moving_for_the_parameter,
    regime,
)

__all__ = [
    "DEFAULT_RATIO",
    "DEFAULT_STEPS_ABOVE",
    "DEFAULT_STEPS_BELOW",
    "default_steps",
    "geometric_steps",
    "StepEstimate",
    "RejectedStep",
    "StepAdvice",
    "ParameterStepAdvice",
    "ProblemStepAdvice",
    "advise_step",
    "advise_coordinate_step",
    "representative_coordinate",
    "advise_parameter_steps",
    "advise_problem_steps",
]

#: Consecutive default steps differ by a factor of two: fine enough that the
#: advised step is within √2 of the sequence's best, coarse enough that
#: neighbouring truncation errors differ by 4× and the Richardson difference
#: is well conditioned.
DEFAULT_RATIO = 0.5
#: The default sequence starts 2¹⁰ (about three decades) above the textbook
#: optimum ε^(1/3)·max(1, |θ|) of a second-order stencil …
DEFAULT_STEPS_ABOVE = 10
#: … and ends 2⁻¹³ (about four decades) below ε^(1/3), without the |θ| scale,
#: so that functions whose length scale is 1 at a large θ are covered too.
DEFAULT_STEPS_BELOW = 13
#: Never request a step below this many machine epsilons of max(1, |θ|):
#: the probes would sit a few ulps from θ (or collapse onto it).
SMALLEST_STEP_IN_EPSILONS = 4.0
#: Never request a step above this fraction of max(1, |θ|).
LARGEST_STEP_FRACTION = 0.25


def geometric_steps(largest: float, smallest: float, ratio: float = DEFAULT_RATIO) -> tuple:
    """Requested steps ``largest·ratioᵏ`` for k = 0, 1, … down to ``smallest`` (inclusive).

    Parameters
    ----------
    largest, smallest : float
        Positive finite bounds, ``largest > smallest``.
    ratio : float
        In (0, 1).
    """
    largest, smallest = validate_step(largest), validate_step(smallest)
    if not (0.0 < ratio < 1.0) or not largest > smallest:
        raise InvalidStepSequence(steps=[largest, smallest])
    steps = []
    step = largest
    while step >= smallest:
        steps.append(step)
        step *= ratio
    return tuple(steps)


def default_steps(point: float, dtype="float64") -> tuple:
    """The default requested-step sequence for a point in a dtype.

    With ε the dtype's machine epsilon and s = max(1, |θ|), the steps are
    hₖ = ε^(1/3)·2^(10−k) scaled as follows: the sequence runs from
    s·ε^(1/3)·2¹⁰ down to ε^(1/3)·2⁻¹³ in factors of two, keeping only steps
    between 4·ε·s and s/4. For float64 at |θ| ≤ 1 that is 24 steps from
    6.2e-3 to 7.4e-10; the textbook optimum ε^(1/3) ≈ 6e-6 (for |f/f‴| ≈ 1)
    sits three decades below the top and four above the bottom, so the
    sequence sees both the truncation and the rounding side.
    """
    dtype = probe_dtype(dtype, role="probed")
    epsilon = dtype.epsilon
    scale = max(1.0, abs(float(point)))
    top = dtype.default_step(point) * 2.0**DEFAULT_STEPS_ABOVE
    smallest = max(dtype.step_factor * 2.0**-DEFAULT_STEPS_BELOW, scale * epsilon * SMALLEST_STEP_IN_EPSILONS)
    # The grid is anchored at the top even when the cap below cuts its first steps off.
    largest = min(top, scale * LARGEST_STEP_FRACTION)
    return tuple(step for step in geometric_steps(top, smallest) if step <= largest)


@dataclass(frozen=True, slots=True)
class StepEstimate(Record):
    """One requested step's central difference and its estimated error.

    ``truncation_estimate`` is the Richardson estimate |c|·h₋h₊ (``inf`` if
    no neighbour has a different spacing product), ``rounding_floor`` the
    ε·|f|-over-spacing model, ``estimated_error`` the larger of the two, and
    ``scaled_estimated_error`` that divided by max(1, |derivative|), the
    chapter's scale without the analytic value, comparable with a tolerance.
    """

    requested_step: float
    difference: CentralDifference
    truncation_estimate: float
    rounding_floor: float
    estimated_error: float
    scaled_estimated_error: float
    regime: str


@dataclass(frozen=True)
class RejectedStep(Record):
    """A requested step the chapter's checker refused (collapsed probe, non-finite value, …)."""

    requested_step: float
    error: GradCheckError


@dataclass(frozen=True)
class StepAdvice(Record):
    """The advised step for one point and the evidence for it.

    ``derivative`` is the three-point estimate at the advised step (not an
    extrapolation), ``advised_at_edge`` says the smallest estimated error is
    at the first or last step of the sequence (then the best step may lie
    outside it; for a function with zero third derivative the largest step
    is legitimately best), and ``deterministic`` says every step's center
    value f(θ) was bit-identical; if not, the objective is nondeterministic
    or stateful and no error estimate can be trusted.
    """

    point: float
    dtype: str
    epsilon: float
    advised_step: float
    derivative: float
    estimated_error: float
    scaled_estimated_error: float
    advised_at_edge: bool
    deterministic: bool
    estimates: tuple
    rejected: tuple


def _richardson(near: CentralDifference, other: CentralDifference) -> float:
    """|c|·η for ``near`` from the pair (near, other); None when their η coincide.

    |c|·η_near = |D_near − D_other| / |1 − η_other/η_near|, with the ratio
    of spacing products formed from the ratios of the spacings, so that no
    product of two spacings is ever formed (it would overflow or underflow).
    """
    ratio = (other.minus_spacing / near.minus_spacing) * (other.plus_spacing / near.plus_spacing)
    if ratio == 1.0:
        return None
    return abs(near.derivative - other.derivative) / abs(1.0 - ratio)


def _rounding_floor(difference: CentralDifference, epsilon: float) -> float:
    largest_value = max(abs(difference.minus_value), abs(difference.center_value), abs(difference.plus_value))
    left = difference.left_weight / difference.minus_spacing
    right = difference.right_weight / difference.plus_spacing
    # First-order sensitivity of the stencil to errors in f₋, f₊ and f₀.
    return epsilon * largest_value * (left + right + abs(left - right))


def advise_step(
    evaluate: Callable[[float], float],
    point: float,
    *,
    dtype="float64",
    steps: Sequence[float] = None,
) -> StepAdvice:
    """Advise a requested step for one scalar function without an analytic candidate.

    Parameters
    ----------
    evaluate : callable float -> float
        The objective, deterministic and smooth around θ; called three times
        (minus, center, plus) per requested step, steps largest first.
    point : float
        The finite point θ, representable in ``dtype``.
    dtype : str or numpy dtype, default "float64"
        The arithmetic of the probed value (float64, float32 or bfloat16):
        the exact θ ∓ h is rounded once into it
        (:func:`~gradcheck_cli.engine.dtypes.dtype_perturbations`) and its ε sets the
        rounding floor ("float32" for a float32 objective). A dtype given by
        name loads no numpy.
    steps : sequence of float, optional
        Strictly decreasing requested steps (at least two); by default
        :func:`default_steps` (``point``, ``dtype``).

    Returns
    -------
    StepAdvice
        One :class:`StepEstimate` per accepted step, in the given order, and
        one :class:`RejectedStep` per step the checker refused (a probe that
        collapses onto θ or overflows, a non-finite value or slope).

    Raises
    ------
    GradCheckError
        A bad point, dtype or step sequence, or fewer than two accepted
        steps. Exceptions raised by ``evaluate`` itself propagate unchanged.
    """
    probed = probe_dtype(dtype, role="probed")
    point = _representable_point(point, probed)
    steps = default_steps(point, dtype) if steps is None else validate_steps(steps)
    if len(steps) < 2:
        raise InvalidStepSequence(steps=list(steps))
    differences, rejected = _differences_at_steps(point, steps, evaluate, probed)
    estimates, advised = _estimated_errors(differences, probed.epsilon)
    best = estimates[advised]
    first_center = differences[0].center_value
    return StepAdvice(
        point=point,
        dtype=probed.name,
        epsilon=probed.epsilon,
        advised_step=best.requested_step,
        derivative=best.difference.derivative,
        estimated_error=best.estimated_error,
        scaled_estimated_error=best.scaled_estimated_error,
        advised_at_edge=advised in (0, len(estimates) - 1),
        deterministic=all(same_bits(difference.center_value, first_center) for difference in differences),
        estimates=estimates,
        rejected=tuple(rejected),
    )


def _representable_point(point: float, probed) -> float:
    """``point`` as a float, refused with UnrepresentablePoint if the probed dtype cannot store it."""
    point = float(point)
    if math.isfinite(point):
        nearest = probed.round_exact(Fraction(point))
        if nearest != point:
            raise UnrepresentablePoint(point=point, dtype=probed.name, nearest=nearest)
    return point


def _differences_at_steps(point: float, steps: tuple, evaluate: Callable, probed) -> tuple:
    """Rule 1: the central difference at every step the checker accepts, and a RejectedStep for each other."""
    differences, rejected = [], []
    for step in steps:
        try:
            geometry = dtype_perturbations(point, step, probed)
            differences.append(central_difference(point, step, evaluate, geometry))
        except GradCheckError as error:
            rejected.append(RejectedStep(step, error))
    spacings = {(difference.minus_spacing, difference.plus_spacing) for difference in differences}
    if len(spacings) < 2:
        raise TooFewAcceptedSteps(accepted=len(differences), requested=len(steps))
    return differences, rejected


def _truncation_estimate(differences: list, index: int) -> float:
    """Rule 2: the larger Richardson estimate against either neighbour (inf if neither has another η)."""
    difference = differences[index]
    neighbours = differences[max(0, index - 1) : index] + differences[index + 1 : index + 2]
    candidates = [_richardson(difference, other) for other in neighbours]
    candidates = [value for value in candidates if value is not None]
    return max(candidates) if candidates else math.inf


def _estimated_errors(differences: list, epsilon: float) -> tuple:
    """Rules 2-4: every step's StepEstimate with its regime, and the index of the advised step."""
    truncation = [_truncation_estimate(differences, index) for index in range(len(differences))]
    floors = [_rounding_floor(difference, epsilon) for difference in differences]
    errors = [max(estimate, floor) for estimate, floor in zip(truncation, floors)]
    # Smallest estimated error; on a tie the earlier (larger) step wins. Never a step at which a probe
    # leaves f bit-identical (its estimate is 0, or half the difference, whatever the derivative):
    # then one at which at least one probe moves f; any step only when f moves at none.
    moved = [index for index, difference in enumerate(differences) if both_probes_move(difference)]
    either = [index for index, d in enumerate(differences) if not d.minus_value == d.center_value == d.plus_value]
    advised = min(moved or either or range(len(differences)), key=lambda index: (errors[index], index))
    estimates = []
    for index, difference in enumerate(differences):
        estimates.append(
            StepEstimate(
                requested_step=difference.requested_step,
                difference=difference,
                truncation_estimate=truncation[index],
                rounding_floor=floors[index],
                estimated_error=errors[index],
                scaled_estimated_error=errors[index] / max(1.0, abs(difference.derivative)),
                regime=regime(index, advised),
            )
        )
    return tuple(estimates), advised


def advise_coordinate_step(objective: Callable, parameters, coordinate, *, steps: Sequence[float] = None) -> StepAdvice:
    """Advise a step for one coordinate of a tensor, probed in place.

    The probe is written into ``parameters`` itself through
    :func:`~gradcheck_cli.engine.tensors.probing_objective`, and the exact original
    element is restored after every call (exceptions and KeyboardInterrupt
    included). The dtype of ``parameters`` (float64, float32 or bfloat16)
    sets the probe rounding and the rounding floor.

    Parameters
    ----------
    objective : callable np.ndarray -> float
        Called as ``objective(parameters)``.
    parameters : np.ndarray, any shape, writable
        The parameter array; bit-identical afterwards on every path.
    coordinate : tuple of int
        The coordinate to probe, one index per axis.
    steps : sequence of float, optional
        As in :func:`advise_step`.
    """
    from ..engine.tensors import probing_objective, writable_probe_dtype

    writable_probe_dtype(parameters)
    index = tuple(int(position) for position in coordinate)
    point = float(parameters[index])
    return advise_step(probing_objective(parameters, index, objective), point, dtype=parameters.dtype, steps=steps)


@dataclass(frozen=True)
class ParameterStepAdvice(Record):
    """The step advice for one parameter of a problem, at one coordinate."""

    name: str
    coordinate: tuple
    advice: StepAdvice


@dataclass(frozen=True)
class ProblemStepAdvice(Record):
    """Step advice per parameter; ``steps`` maps each name to its advised step."""

    steps: dict
    parameters: tuple


def representative_coordinate(shape) -> tuple:
    """The coordinate a parameter's step is advised at: the chapter's sampler with one sample (flat ⌊N/2⌋)."""
    return sample_tensor_coordinates(shape, 1)[0].coordinate


def advise_parameter_steps(objective: Callable, parameters, names: Sequence[str], *, steps=None) -> ProblemStepAdvice:
    """Advise one step per named parameter, each at its :func:`representative_coordinate`.

    The parameters must already be validated (writable float64, float32 or
    bfloat16 arrays, finite at the representative coordinate, sharing no
    memory): :func:`advise_problem_steps` validates a problem first, and
    :func:`~gradcheck_cli.check.check_gradients` with ``step="auto"``
    validates its whole request first. ``objective`` is called as
    ``objective(parameters)`` with the probe written into the mapping's
    array itself, restored after every call. A typed error of the advice
    (too few accepted steps) is raised as AtParameter(AtCoordinate(...)).
    """

    from ..engine.complex_parts import real_view  # numpy: a problem's parameters are arrays already

    def evaluate(_array):
        return objective(parameters)

    advised, records = {}, []
    for name in names:
        array = real_view(parameters[name])
        coordinate = representative_coordinate(array.shape)
        try:
            advice = advise_coordinate_step(evaluate, array, coordinate, steps=steps)
        except GradCheckError as error:
            located = AtCoordinate(coordinate=list(coordinate), source=error)
            raise AtParameter(parameter=name, source=located) from located
        advice = moving_for_the_parameter(advice, array)
        if (
            steps is None
            and lower_precision_seen(advice)
            and collapsed_fraction(array, advice.advised_step, True) > 0.5
        ):
            advice = _float32_sequence_advice(evaluate, array, coordinate, advice)
        advised[name] = advice.advised_step
        records.append(ParameterStepAdvice(name, coordinate, advice))
    return ProblemStepAdvice(steps=advised, parameters=tuple(records))


def _float32_sequence_advice(evaluate, array, coordinate, advice: StepAdvice) -> StepAdvice:
    """When every float64 step collapses most of a float64 parameter's coordinates in float32 (an objective
    computing in float32 inside): the advice over float32's longer default sequence, if its step moves
    f and collapses at most half of them; else ``advice``."""
    if array.dtype.itemsize <= 4:
        return advice
    try:
        wider = advise_coordinate_step(
            evaluate, array, coordinate, steps=default_steps(float(array[coordinate]), "float32")
        )
    except GradCheckError:
        return advice
    wider = moving_for_the_parameter(wider, array, lower=True)
    if moves_f(wider) and collapsed_fraction(array, wider.advised_step, True) <= 0.5:
        return wider
    return advice


def advise_problem_steps(problem, *, names: Sequence[str] = None, steps: Sequence[float] = None) -> ProblemStepAdvice:
    """Advise one requested step per parameter of a :class:`GradientProblem`.

    Each parameter is probed at one coordinate, the chapter's sampler with
    one sample (flat offset ⌊N/2⌋), through ``problem.objective(problem.parameters)``.
    The loss value, and so the rounding floor, is shared by all
    coordinates, but the curvature is not: this is one representative
    coordinate's advice, meant as the step for the whole parameter
    (``check_gradients(..., step="auto")`` and ``gradcheck check --step
    auto``, which validate their whole request first and then advise
    through :func:`advise_parameter_steps`), not a per-coordinate optimum.

    The problem is validated first as the Taylor test validates it
    (:func:`~gradcheck_cli.engine.problem.validated_whole_gradients`: whole finite
    arrays and gradients, no shared memory).

    Parameters
    ----------
    problem : GradientProblem or (objective, parameters, gradients)
    names : sequence of str, optional
        Restrict to these parameters (the problem's order is kept); all by default.
    steps : sequence of float, optional
        As in :func:`advise_step`; by default each coordinate's own
        :func:`default_steps`.
    """
    from ..engine.complex_parts import real_problem
    from ..engine.problem import as_problem, selected_names, validated_whole_gradients

    problem = real_problem(as_problem(problem, reference="the step advice's problem"))
    selected = selected_names(problem.parameters, problem.gradients, names)
    validated_whole_gradients(problem, selected)
    return advise_parameter_steps(problem.objective, problem.parameters, selected, steps=steps)
