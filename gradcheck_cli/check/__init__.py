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
import functools
from collections.abc import Callable, Mapping

from ..advice.steps import advise_parameter_steps
from ..engine.problem import GradientProblem, as_problem
from ..verdict.estimates import kink_tolerance_for_step
from .derivatives import FirstValueUnconfirmed
from .diagnosed import with_passing_gradients
from .fast import fast_checks
from .judge import judge_parameter, largest_gradient
from .options import ALL_COORDINATES, AUTO_STEP, Options, Samples, is_auto, is_serial, options_of
from .plan import plan_check, probed_at, selected_coordinates
from .probe import JITTER_LIMIT, GuardedObjective, first_pass, resolved_direction_scale
from .records import (
    CallCheck,
    CoordinateCheck,
    CoordinateChecks,
    GradientCheckReport,
    KinkVerdict,
    ParameterCheck,
    PurityVerdict,
)
from .report import merged_report, purity_of, report_of

__all__ = [
    "ALL_COORDINATES",
    "AUTO_STEP",
    "JITTER_LIMIT",
    "KinkVerdict",
    "CoordinateCheck",
    "CoordinateChecks",
    "PurityVerdict",
    "CallCheck",
    "ParameterCheck",
    "GradientCheckReport",
    "Samples",
    "check_gradients",
    "check_problem",
    "check_with",
    "check_problems",
    "Options",
    "options_of",
    "kink_tolerance_for_step",
    "selected_coordinates",
]


def check_gradients(
    objective: Callable[[Mapping], float], parameters: Mapping, gradients: Mapping, **options
) -> GradientCheckReport:
    """Check named parameter arrays against their analytic gradients.

    Parameters
    ----------
    objective : callable Mapping[str, np.ndarray] -> float
        Called as ``objective(parameters)`` with the very mapping given here, whose arrays
        hold the probe. Deterministic, side-effect-free, and smooth across every probe.
    parameters : Mapping[str, np.ndarray]
        Writable float64, float32, float16 or bfloat16 arrays of any shape (views too), or
        complex128 or complex64 ones, checked as their real and imaginary parts; perturbed in
        place and bit-identical afterwards on every path, exceptions and KeyboardInterrupt
        included.
    gradients : Mapping[str, np.ndarray]
        The analytic gradient of each checked parameter, same shape, any real dtype (a complex
        parameter's: ∂f/∂Re z + i·∂f/∂Im z, docs/method.md "Complex numbers").
    **options
        Any of :class:`~gradcheck_cli.check.options.Options`: ``samples`` (16, or ``"all"``),
        ``step`` (a float, ``"auto"`` or one per parameter), ``tolerance``, ``seed``, ``fast``, ``jobs``,
        ``kink_tolerance``, ``coordinates``, ``names``, ``sampler`` and ``progress``. With
        ``jobs`` (N worker processes, 0 for one per core, or an Executor such as dask's
        ``Client.get_executor()``), the report is the serial one, bit for bit, for an objective
        that is a function of its parameters; the objective and parameters are pickled to the
        workers (a module-level function, not a lambda) unless :func:`check_problem` is given a
        problem loaded by reference. See docs/parallel.md.

    Returns
    -------
    GradientCheckReport

    Raises
    ------
    GradCheckError
        Before any objective call, for anything wrong with the request (an unknown option
        included; wrapped in AtParameter, and AtCoordinate where a coordinate is at fault).
        During the check, a non-finite or non-scalar objective value at a coordinate's step.
        Exceptions raised by the objective propagate unchanged, with every array restored (but
        at the last confirmation step, 100h, which is then skipped: docs/method.md, "Verdicts").
    """
    return _check(objective, parameters, gradients, options_of("check_gradients", options))


def _check(objective, parameters: Mapping, gradients: Mapping, options: Options) -> GradientCheckReport:
    """The check of validated options: the plan, the probes, the verdicts."""
    plan = plan_check(objective, parameters, gradients, options)
    jobs = options.jobs
    workers = None if is_serial(jobs) else _parallel().workers_for(jobs, objective, parameters)
    snapshots = {planned.name: planned.snapshot for planned in plan}  # taken by the plan's finiteness pass
    counted = GuardedObjective(objective, parameters, {planned.name: planned.array for planned in plan}, snapshots)
    counted.sampled = {planned.name: planned.columns.offsets for planned in plan}
    try:
        return _checked(plan, counted, options, workers)
    except BaseException:
        counted.restore()  # whatever the objective changed beside the probe, on every path
        raise


def _checked(plan: list, counted: GuardedObjective, options: Options, workers) -> GradientCheckReport:
    """The check itself, once everything is validated: probes, purity, verdicts, the report."""
    step, progress = options.step, options.progress
    total = sum(len(planned.columns) for planned in plan)
    if progress is not None:
        progress(0, total)
    step_advice = None
    if is_auto(step):
        step_advice = advise_parameter_steps(counted, counted.parameters, [planned.name for planned in plan])
        plan = [probed_at(planned, step_advice.steps[planned.name]) for planned in plan]
    probing = (lambda plan: contextlib.nullcontext()) if workers is None else functools.partial(_probing, workers)
    if options.fast:
        checks, purity = fast_checks(plan, counted, options, probing)
        counted.unchanged()
        return report_of(checks, purity, step_advice, counted.calls)
    with probing(plan) as pool:
        probed = first_pass(plan, counted, progress, pool)
    purity = purity_of(counted.centers, min(planned.dtype.epsilon for planned in plan))
    direction_scales = [resolved_direction_scale(item) for item in probed]
    largest = (max([0.0] + [largest_gradient(item) for item in probed]), max([0.0, *direction_scales]))
    checks = [judge_parameter(item, counted, purity, largest, scale) for item, scale in zip(probed, direction_scales)]
    checks = with_passing_gradients(checks, probed)
    counted.unchanged()  # the confirmations and directional probes may not have changed θ either
    return report_of(checks, purity, step_advice, counted.calls)


def check_problem(problem: GradientProblem, **options) -> GradientCheckReport:
    """:func:`check_gradients` on a :class:`~gradcheck_cli.problem.GradientProblem` (the same options).

    With ``jobs``, the worker processes load a problem that :func:`~gradcheck_cli.problem.load_problem`
    loaded by its reference, and unpickle any other.
    """
    return check_with(problem, options_of("check_problem", options))


def check_with(problem: GradientProblem, options: Options) -> GradientCheckReport:
    """:func:`check_problem` with validated :class:`Options` (what the adapters and the command line call)."""
    problem = as_problem(problem, "the problem")
    objective = problem.objective
    if problem.reference is not None and callable(objective) and not is_serial(options.jobs):
        objective = _parallel().ByReference(objective, problem.reference)
    return _check(objective, problem.parameters, problem.gradients, options)


def check_problems(problems, options: Options) -> GradientCheckReport:
    """Each :class:`~gradcheck_cli.check.derivatives.DerivativeProblem` checked with ``options``, its call
    checks beside: the one report when there is one problem, else one report whose parameters and call
    checks carry their problem's label (:func:`merged_report`)."""
    reports = {}
    for derivative in problems:
        try:
            report = check_with(derivative.problem, derivative.options(options))
        except FirstValueUnconfirmed:  # its objective calls f at θ first from now on
            report = check_with(derivative.problem, derivative.options(options))
        reports[derivative.label] = report_of(
            list(report.parameters), report.purity, report.step_advice, report.evaluations, derivative.calls
        )
    if len(reports) == 1:
        return next(iter(reports.values()))
    return merged_report(reports)


def _probing(workers, plan: list):
    return _parallel().probing(workers, plan)


def _parallel():
    from . import parallel

    return parallel
