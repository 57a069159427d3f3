"""``gradcheck sample``: the deterministic coordinate sampler, or the coordinates ``check`` probes."""

import click

from ...chapter import fixtures
from ...core import defaults
from ...display import render
from ...errors.command_line import CommandLineError
from ..app import ChapterDefault, Report, output_options, run, summary
from .options import INT_LIST, PARAM_OPTION, TRACEBACK_OPTION, user_problem


@click.command(
    short_help=summary("sample"),
    help=(
        "The deterministic coordinate sampler: flat offsets ⌊k(N−1)/(S−1)⌋ and their coordinates.\n\n"
        "Pure integer arithmetic: no tensor is allocated, so any shape answers at once.\n\n"
        "[PROBLEM] is FILE.py:FUNCTION or package.module:FUNCTION, as for check: instead of --shape, the "
        "coordinates `gradcheck check PROBLEM` probes in each parameter with the same --samples, --sampler "
        "and --param (default --samples 16, check's), without evaluating anything."
    ),
)
@click.argument("problem", required=False, metavar="[PROBLEM]")
@click.option("--shape", type=INT_LIST, metavar="N,N,...", help="The tensor's shape, e.g. 2,3.")
@click.option(
    "--max-samples",
    "--samples",
    "max_samples",
    type=int,
    default=ChapterDefault(fixtures.TENSOR_SAMPLES),
    help="R: at most this many coordinates (--samples, as check and nll spell it, is the same option); "
    "with PROBLEM, check's default 16.",
)
@click.option(
    "--sampler",
    type=click.Choice(["structured", "chapter"]),
    help="With PROBLEM: the sampler check uses (default structured, as check's).",
)
@PARAM_OPTION
@TRACEBACK_OPTION
@output_options
def sample(output_format, problem, shape, max_samples, sampler, names, show_traceback):
    ctx = click.get_current_context()
    samples_given = ctx.get_parameter_source("max_samples") != click.core.ParameterSource.DEFAULT

    def compute():
        _reject_conflicts(ctx, problem, shape, sampler, names)
        if problem is None:
            from ...engine.sampling import sample_tensor_coordinates

            return Report((render.sample(sample_tensor_coordinates(shape, max_samples)),))
        from ...check import selected_coordinates

        with user_problem(problem, show_traceback) as loaded:
            chosen = selected_coordinates(
                loaded.parameters,
                loaded.gradients,
                samples=max_samples if samples_given else defaults.CHECK_SAMPLES,
                sampler=sampler or "structured",
                names=list(names) or None,
            )
        return Report((render.parameter_samples(chosen),))

    run(output_format, compute)


def _reject_conflicts(ctx, problem, shape, sampler, names) -> None:
    """Exactly one of --shape and PROBLEM; --sampler and --param only with PROBLEM."""
    if problem is None:
        if shape is None:  # the chapter's own message
            raise click.MissingParameter(
                ctx=ctx, param=next(param for param in ctx.command.params if param.name == "shape")
            )
        extra = [flag for flag, value in (("--sampler", sampler), ("--param", names)) if value]
        if extra:
            raise CommandLineError(
                option=extra[0], problem=f"{extra[0]} needs PROBLEM: the sampler alone takes --shape"
            )
    elif shape is not None:
        raise CommandLineError(option="--shape", problem="--shape and PROBLEM exclude each other: give one")
