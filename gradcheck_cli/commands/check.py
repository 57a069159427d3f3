"""``gradcheck check``: the user's own gradients, coordinate by coordinate."""

import click

from .. import defaults, render, tables
from ..cli import Report, output_options, run
from ..estimator import validate_step, validate_tolerance
from .options import PARAM_OPTION, PROBLEM_HELP, SampleCount, StepOrAuto, problem_argument, user_problem


@click.command(
    short_help="Check your own gradients, coordinate by coordinate.",
    help=(
        "Check your own gradients: every parameter of PROBLEM, coordinate by coordinate.\n\n" + PROBLEM_HELP + "\n\n"
        "Each selected coordinate is perturbed in place, at the probes rounded into the "
        "parameter's dtype, and restored bit-exactly. A coordinate passes when its scaled "
        "error is within the tolerance and its one-sided slopes agree (otherwise it is a "
        "suspected kink, never evidence); every center value must be bit-identical "
        "(otherwise the objective is nondeterministic or stateful).\n\n"
        "Exit status: 0 when every coordinate passes, 1 when any does not, 2 for bad input "
        "(including an exception raised by the objective)."
    ),
)
@problem_argument
@click.option(
    "--samples",
    type=SampleCount(),
    default=defaults.CHECK_SAMPLES,
    metavar="N|all",
    help="Coordinates per parameter (the chapter's deterministic sampler), or all of them.",
)
@click.option(
    "--step",
    type=StepOrAuto(),
    metavar="H|auto",
    help="The requested step h for every coordinate, or auto: each parameter at the step advised "
    "for one representative coordinate. Default: ε^(1/3)·max(1, |θ|) of the parameter's dtype. "
    "The kink tolerance goes with the step: max(ε^(1/6), √(h/max(1, |θ|))).",
)
@click.option(
    "--tolerance",
    type=float,
    help="The scaled-error tolerance. Default: ε^(1/3) of the parameter's dtype.",
)
@PARAM_OPTION
@output_options
def check(output_format, problem, samples, step, tolerance, names):
    def compute():
        if step != "auto" and step is not None:
            validate_step(step)
        if tolerance is not None:
            validate_tolerance(tolerance)
        from ..check import check_problem

        selected = list(names) or None
        with user_problem(problem) as loaded:
            with tables.ProgressBar("checking coordinates") as progress:
                report = check_problem(
                    loaded, samples=samples, step=step, tolerance=tolerance, names=selected, progress=progress
                )
        return Report((render.check(report),), (report.passed,))

    run(output_format, compute)
