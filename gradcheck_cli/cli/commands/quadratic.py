"""``gradcheck quadratic``: q(θ) = θ², one central difference and its candidates (the start-up benchmark)."""

import click

from ...chapter import fixtures
from ...display import render
from ..app import ChapterDefault, Report, output_options, run, summary

_STEP_TOLERANCE = ChapterDefault(fixtures.STEP_TOLERANCE)


def quadratic_report(point, step, tolerance, analytic=()) -> Report:
    """The user's candidates for q'(θ), else the chapter's correct and wrong ones; ``demo`` shows the same."""
    if analytic:
        candidates, labels = analytic, ["candidate"] * len(analytic)
    else:
        wrong = fixtures.QUADRATIC_CANDIDATES[1]
        candidates, labels = (fixtures.quadratic_derivative(point), wrong), ("correct candidate", "wrong candidate")
    checks = [fixtures.quadratic_gradient_check(candidate, point, step, tolerance) for candidate in candidates]
    verdicts = tuple(check.comparison.passed for check in checks) if analytic else ()
    return Report((render.quadratic(checks, labels),), verdicts)


@click.command(short_help=summary("quadratic"))
@click.option("--point", type=float, default=ChapterDefault(fixtures.QUADRATIC_POINT), help="The point θ.")
@click.option("--step", type=float, default=ChapterDefault(fixtures.QUADRATIC_STEP), help="The requested step h.")
@click.option(
    "--tolerance",
    type=float,
    default=_STEP_TOLERANCE,
    help="The scaled-error tolerance: |a − n| / max(1, |a|, |n|) must not exceed it (check's --tolerance is relative).",
)
@click.option(
    "--analytic",
    type=float,
    multiple=True,
    metavar="X",
    help="Your candidate for q'(θ); repeat for several. Exit 1 if one fails. "
    "Without it: the hand derivative 2θ (the chapter's 6) and the chapter's wrong candidate 5.5.",
)
@output_options
def quadratic(output_format, point, step, tolerance, analytic):
    """q(θ) = θ²: one central difference and its candidates."""
    run(output_format, lambda: quadratic_report(point, step, tolerance, analytic))
