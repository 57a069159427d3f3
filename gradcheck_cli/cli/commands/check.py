"""``gradcheck check``: the user's own gradients, coordinate by coordinate."""

import click

from ...core import defaults
from ...core.installs import COMMANDS
from ...display import render
from ...display.progress import ProgressBar
from ..app import Report, output_options, run, summary
from .executor import dask_executor, executor_address, start_workers
from .options import (
    PARAM_OPTION,
    PROBLEM_HELP,
    TRACEBACK_OPTION,
    SampleCount,
    StepOrAuto,
    problem_argument,
    user_problem,
)


@click.command(
    short_help=summary("check"),
    help=(
        "Check your own gradients: every parameter of PROBLEM, coordinate by coordinate.\n\n" + PROBLEM_HELP + "\n\n"
        "Each selected coordinate is perturbed in place, at the probes rounded into the "
        "parameter's dtype, and restored bit-exactly; so is each whole parameter once, along a "
        "fixed ±1 direction. Every numerical estimate carries an error bar (rounding of f, "
        "jitter of f, movement between steps). A coordinate passes when analytic and numerical "
        "agree within the relative tolerance (or, for a gradient too small to compare, within the bar "
        "beside the parameter's larger gradients); it fails only "
        "when they disagree beyond the tolerance and the bar at two steps; otherwise it is "
        "inconclusive (or a suspected kink), and the reason says what would decide it.\n\n"
        "Exit status: 0 when everything passed, 1 when anything failed or was inconclusive, "
        "2 for bad input (including an exception raised by the objective)."
    ),
)
@problem_argument
@click.option(
    "--samples",
    type=SampleCount(),
    default=defaults.CHECK_SAMPLES,
    metavar="N|all",
    help="Coordinates per parameter, or all of them.",
)
@click.option(
    "--sampler",
    type=click.Choice(["structured", "chapter"]),
    default="structured",
    show_default=True,
    help="structured: spread over every axis, mirrored pairs of square matrices and the largest "
    "|analytic| entries; chapter: the chapter's flat offsets ⌊k(N−1)/(S−1)⌋.",
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
    help="The relative tolerance on |analytic − numerical| / max(|analytic|, |numerical|) (the chapter's "
    "commands' --tolerance is on the scaled error, divided by max(1, ...)). Default: "
    "ε^(1/3) of the parameter's dtype (6.1e-6 for float64, 4.9e-3 for float32).",
)
@PARAM_OPTION
@click.option(
    "--seed",
    type=int,
    default=defaults.SEED,
    show_default=True,
    help="Selects the directional test's ±1 signs.",
)
@click.option(
    "--fast",
    is_flag=True,
    help="The whole-gradient fast check: each parameter's directional test alone, in a constant number "
    "of calls; coordinates are probed only where it does not pass, to localize and diagnose "
    '(docs/method.md, "The fast check").',
)
@click.option(
    "--jobs",
    type=int,
    default=1,
    metavar="N",
    help="Probe the coordinates in N worker processes (0: one per core): forks of this command, PROBLEM "
    "loaded, or, where PROBLEM started a thread or keeps a file open, forks of a server that has imported "
    "numpy and gradcheck, each loading PROBLEM again; the report is the same, bit for bit, for an objective "
    "that is a function of its parameters. Worth it when the check's objective calls take far longer than "
    "starting the workers: see docs/parallel.md.",
)
@click.option(
    "--executor",
    metavar="dask://HOST:PORT",
    help="Probe the coordinates on the workers of the dask.distributed scheduler at HOST:PORT instead "
    f"({COMMANDS['distributed']}), each of which loads PROBLEM again from the same path; not "
    "with --jobs. Worth it for an objective of seconds a call: see docs/parallel.md.",
)
@click.option(
    "--verbose",
    is_flag=True,
    help="Text: the step advice and every coordinate in the chapter's form, at every step tried. "
    "Default: a line per parameter, its diagnosis and the first coordinates that did not pass.",
)
@TRACEBACK_OPTION
@output_options
def check(
    output_format,
    problem,
    samples,
    sampler,
    step,
    tolerance,
    names,
    seed,
    fast,
    jobs,
    executor,
    verbose,
    show_traceback,
):
    def compute():
        import dataclasses

        from ...check import check_with, options_of
        from ...core.processes import allow_forks
        from ...display.output import results_stream

        if results_stream() is not None:  # the command is its process's own program (not CliRunner's, a caller's)
            allow_forks()  # its workers may be its forks while it runs only the threads it runs now (numpy's)

        # Refused before PROBLEM is loaded, so that the user's code never runs for a bad value.
        given = {
            "samples": samples,
            "sampler": sampler,
            "step": step,
            "tolerance": tolerance,
            "seed": seed,
            "fast": fast,
            "jobs": jobs,
        }
        options = options_of("gradcheck check", {**given, "names": list(names) or None})
        scheduler = executor_address(executor, jobs)
        with (
            dask_executor(scheduler) as workers,
            user_problem(problem, show_traceback) as loaded,
            ProgressBar("checking coordinates") as progress,
        ):
            start_workers(jobs, executor, fast)
            options = dataclasses.replace(options, progress=progress)
            if workers is not None:
                options = dataclasses.replace(options, jobs=workers)
            report = check_with(loaded, options)
        return Report((render.check(report, verbose),), (report.passed,))

    run(output_format, compute)
