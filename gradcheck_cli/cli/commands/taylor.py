"""``gradcheck taylor``: the Taylor-remainder test of the user's gradient."""

import click

from ...core import defaults
from ...display import render
from ..app import Report, output_options, run, summary
from .options import (
    PARAM_OPTION,
    PLOT_FILE,
    PROBLEM_HELP,
    TRACEBACK_OPTION,
    draw_plot,
    plot_target,
    problem_argument,
    user_problem,
)


@click.command(
    short_help=summary("taylor"),
    help=(
        "The Taylor-remainder test of PROBLEM: a verdict on the whole gradient that needs no tolerance.\n\n"
        + PROBLEM_HELP
        + "\n\n"
        "Along a deterministic unit direction d, the remainder f(x + Δ) − f(x) − g·Δ, with Δ the "
        "displacement actually stored, shrinks like h² when the gradient g is right and like h "
        "when it is wrong. The order is fitted where rounding does not dominate: order ≥ 1.75 "
        "passes, 0.75 to 1.25 fails, anything else is inconclusive. A fail over several parameters "
        "is localized: Taylor tests over halves of the parameters, bisected down to single ones, "
        "name the failing parameters (failing_parameters) and count their extra objective calls.\n\n"
        "Exit status: 0 when it passes, 1 when it fails or is inconclusive, 2 for bad input."
    ),
)
@problem_argument
@PARAM_OPTION
@click.option("--seed", type=int, default=defaults.SEED, help="Selects the deterministic direction d.")
@click.option(
    "--plot",
    type=PLOT_FILE,
    metavar="FILE",
    help="Also draw |R| against h, with reference slopes 1 and 2, into FILE.png or FILE.svg (needs matplotlib).",
)
@click.option(
    "--verbose",
    is_flag=True,
    help="Text: every step tried. Default: the steps in the fit (or the first usable ones), then the fit, "
    "the localization and the verdict.",
)
@TRACEBACK_OPTION
@output_options
def taylor(output_format, problem, names, seed, plot, verbose, show_traceback):
    def compute():
        plot_path = plot_target(plot)
        from ...taylor.remainder import check_taylor

        with user_problem(problem, show_traceback) as loaded:
            result = check_taylor(loaded, names=list(names) or None, seed=seed)
        if plot_path is not None:
            from ...display.plotting import plot_taylor

            draw_plot(plot_taylor, plot_path, result)
        return Report((render.taylor(result, verbose),), (result.passed,))

    run(output_format, compute)
