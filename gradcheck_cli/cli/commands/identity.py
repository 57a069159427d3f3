"""``gradcheck identity``: f(x) = x with unequal actual spacings."""

import click

from ...chapter import fixtures
from ...display import render
from ..app import ChapterDefault, Report, output_options, run, summary


@click.command(short_help=summary("identity"))
@click.option("--point", type=float, default=ChapterDefault(fixtures.IDENTITY_POINT), help="The point x.")
@click.option(
    "--step",
    type=float,
    default=ChapterDefault(fixtures.IDENTITY_STEP),
    help="The requested step h (the default lands the probes at unequal distances 2⁻⁵³ and 2⁻⁵²).",
)
@click.option(
    "--tolerance",
    type=float,
    default=ChapterDefault(fixtures.STEP_TOLERANCE),
    help="The scaled-error tolerance: |a − n| / max(1, |a|, |n|) must not exceed it (check's --tolerance is relative).",
)
@output_options
def identity(output_format, point, step, tolerance):
    """f(x) = x with unequal actual spacings: both slopes are 1, so the estimate is 1."""

    def compute():
        return Report((render.identity(fixtures.rounded_identity_gradient_check(point, step, tolerance)),))

    run(output_format, compute)
