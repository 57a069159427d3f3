"""Check several named parameter arrays of one model against their analytic gradients.

:func:`check_gradients` perturbs each array in place, one selected coordinate at a time (and
once along a whole-parameter direction), with probes rounded into the array's own dtype, and
writes the exact original bits back after every call, on every path. Everything is validated
before the objective is called once. Each estimate carries an error bar, and each coordinate,
parameter and report gets one of three verdicts: passed, failed, inconclusive. How a verdict
is decided is docs/method.md ("Verdicts").
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping

from ..advice.steps import advise_parameter_steps
from ..core.defaults import CHECK_SAMPLES
from ..engine.problem import GradientProblem
from ..errors import InvalidArgument
from .judge import judge_parameter, kink_tolerance_for_step, largest_gradient, purity_of, report_of
from .options import is_serial, request_options
from .plan import (
    ALL_COORDINATES,
    AUTO_STEP,
    CheckOptions,
    Samples,
    is_auto,
    plan_check,
    probed_at,
    selected_coordinates,
)
from .probe import JITTER_LIMIT, GuardedObjective, first_pass, resolved_direction_scale
from .records import CoordinateCheck, CoordinateChecks, GradientCheckReport, KinkVerdict, ParameterCheck, PurityVerdict

__all__ = [
    "ALL_COORDINATES",
    "AUTO_STEP",
    "JITTER_LIMIT",
    "KinkVerdict",
    "CoordinateCheck",
    "CoordinateChecks",
    "PurityVerdict",
    "ParameterCheck",
    "GradientCheckReport",
    "Samples",
    "check_gradients",
    "check_problem",
    "request_options",
    "kink_tolerance_for_step",
    "selected_coordinates",
]


def check_gradients(
    objective: Callable[[Mapping], float],
    parameters: Mapping,
    gradients: Mapping,
    *,
    samples: Samples = CHECK_SAMPLES,
    step: None | float | str | Mapping = None,
    tolerance: float | None = None,
    kink_tolerance: None | float | Mapping = None,
    coordinates: Mapping | None = None,
    names: Iterable[str] | None = None,
    sampler: str = "structured",
    progress: Callable[[int, int], None] | None = None,
    jobs: int | None = None,
) -> GradientCheckReport:
    """Check named parameter arrays against their analytic gradients.

    Parameters
    ----------
    objective : callable Mapping[str, np.ndarray] -> float
        Called as ``objective(parameters)`` with the very mapping given here, whose arrays
        hold the probe. Deterministic, side-effect-free, and smooth across every probe.
    parameters : Mapping[str, np.ndarray]
        Writable float64, float32 or bfloat16 arrays of any shape (views too); perturbed in
        place and bit-identical afterwards on every path, exceptions and KeyboardInterrupt
        included.
    gradients : Mapping[str, np.ndarray]
        The analytic gradient of each checked parameter, same shape, any real dtype.
    samples : int or "all", default 16
        Coordinates per parameter (min(samples, N)), or ``"all"``.
    step : float, "auto" or Mapping[str, float], optional
        The requested step h for every coordinate, or per parameter by name; ``"auto"``
        advises each parameter's step first (about 70 calls per parameter). Default: the
        dtype's ε^(1/3)·max(1, |θ|) per coordinate.
    tolerance : float, optional
        The relative tolerance. Default: the dtype's ε^(1/3).
    kink_tolerance : float or Mapping[str, float], optional
        Tolerance on the one-sided slopes' scaled gap. Default: :func:`kink_tolerance_for_step`.
    coordinates : Mapping[str, iterable of index tuples], optional
        Explicit coordinates for some parameters; the others are selected by ``sampler``.
    names : iterable of str, optional
        Check only these parameters (the problem's order is kept).
    sampler : "structured" or "chapter", default "structured"
        The structured selection (spread over every axis, mirrored pairs, the largest
        |analytic| entries) or the chapter's flat offsets ⌊k(N−1)/(S−1)⌋.
    progress : callable (done, total) -> None, optional
        Called with (0, total) before the first objective call and after every coordinate
        (with ``jobs``, after every chunk of coordinates).
    jobs : int or concurrent.futures.Executor, optional
        Worker processes for the coordinates' probes at their first step: None or 1 probes
        here, N ≥ 2 in N workers, 0 in one per usable core, an Executor (dask's
        ``Client.get_executor()``, mpi4py's ``MPIPoolExecutor``, loky) in its workers, and
        never shut down here; the report is the serial one, bit for bit, for an objective that
        is a function of its parameters. The objective and parameters are pickled to the
        workers (a module-level function, not a lambda), unless :func:`check_problem` is given
        a problem loaded by reference. See docs/parallel.md.

    Returns
    -------
    GradientCheckReport

    Raises
    ------
    GradCheckError
        Before any objective call, for anything wrong with the request (wrapped in
        AtParameter, and AtCoordinate where a coordinate is at fault). During the check, a
        non-finite or non-scalar objective value at a coordinate's step. Exceptions raised by
        the objective propagate unchanged, with every array restored.
    """
    options = CheckOptions(samples, step, tolerance, kink_tolerance, coordinates, names, sampler)  # in order
    plan = plan_check(objective, parameters, gradients, options)
    if progress is not None and not callable(progress):
        raise InvalidArgument(argument="progress", value=type(progress).__name__, expected="callable")
    workers = None if is_serial(jobs) else _parallel().workers_for(jobs, objective, parameters)
    snapshots = {planned.name: planned.snapshot for planned in plan}  # taken by the plan's finiteness pass
    counted = GuardedObjective(objective, parameters, {planned.name: planned.array for planned in plan}, snapshots)
    counted.sampled = {planned.name: planned.columns.offsets for planned in plan}
    try:
        return _checked(plan, counted, step, progress, workers)
    except BaseException:
        counted.restore()  # whatever the objective changed beside the probe, on every path
        raise


def _checked(plan: list, counted: GuardedObjective, step, progress, workers) -> GradientCheckReport:
    """The check itself, once everything is validated: probes, purity, verdicts, the report."""
    total = sum(len(planned.columns) for planned in plan)
    if progress is not None:
        progress(0, total)
    step_advice = None
    if is_auto(step):
        step_advice = advise_parameter_steps(counted, counted.parameters, [planned.name for planned in plan])
        plan = [probed_at(planned, step_advice.steps[planned.name]) for planned in plan]
    with contextlib.nullcontext() if workers is None else _parallel().probing(workers, plan) as pool:
        probed = first_pass(plan, counted, progress, pool)
    purity = purity_of(counted.centers, min(planned.dtype.epsilon for planned in plan))
    direction_scales = [resolved_direction_scale(item) for item in probed]
    largest = (max([0.0] + [largest_gradient(item) for item in probed]), max([0.0, *direction_scales]))
    checks = [
        judge_parameter(item, counted, purity.spread, largest, scale) for item, scale in zip(probed, direction_scales)
    ]
    counted.unchanged()  # the confirmations and directional probes may not have changed θ either
    return report_of(checks, purity, step_advice, counted.calls)


def check_problem(problem: GradientProblem, **options) -> GradientCheckReport:
    """:func:`check_gradients` on a :class:`~gradcheck_cli.engine.problem.GradientProblem` (same options).

    With ``jobs``, the worker processes load a problem that :func:`~gradcheck_cli.engine.problem.load_problem`
    loaded by its reference, and unpickle any other.
    """
    objective = problem.objective
    if problem.reference is not None and callable(objective) and not is_serial(options.get("jobs")):
        objective = _parallel().ByReference(objective, problem.reference)
    return check_gradients(objective, problem.parameters, problem.gradients, **options)


def _parallel():
    from . import parallel

    return parallel
