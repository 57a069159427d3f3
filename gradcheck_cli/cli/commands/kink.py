"""``gradcheck kink``: f(x) = |x|, a false pass at the corner that the one-sided slopes expose."""

import click

from ...chapter import fixtures
from ...display import render
from ..app import ChapterDefault, Report, output_options, run, summary


@click.command(short_help=summary("kink"))
@click.option("--point", type=float, default=ChapterDefault(fixtures.KINK_POINT), help="The point x.")
@click.option("--step", type=float, default=ChapterDefault(fixtures.KINK_STEP), help="The requested step h.")
@click.option(
    "--tolerance",
    type=float,
    default=ChapterDefault(fixtures.KINK_TOLERANCE),
    help="The tolerance of the candidate's scaled error |a − n| / max(1, |a|, |n|) and of the one-sided "
    "slopes' scaled gap (check's --tolerance is relative).",
)
@output_options
def kink(output_format, point, step, tolerance):
    """f(x) = |x|: candidate 0 at the corner passes, a false pass the slopes expose.

    The one-sided slopes -1 and 1 disagree; agreement would still not prove
    that a derivative exists.
    """

    def compute():
        return Report((render.kink(fixtures.absolute_kink_diagnostic(point, step, tolerance)),))

    run(output_format, compute)
