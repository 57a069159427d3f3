"""``gradcheck scan``: the cubic's step scan, each step labelled with its error regime."""

import click

from ...chapter import fixtures
from ...chapter.scan import __doc__ as _scan_doc
from ...display import render
from ..app import ChapterDefault, Report, output_options, run, summary
from .options import FLOAT_LIST, PLOT_FILE, draw_plot, plot_target

_STEP_TOLERANCE = ChapterDefault(fixtures.STEP_TOLERANCE)

# The rule is scan.py's docstring, word for word (without its reST code markup).
_REGIME_RULE = _scan_doc[_scan_doc.index("1. ") :].rstrip().replace("``", "")


@click.command(
    short_help=summary("scan"),
    help=(
        "g(θ) = θ³ − 2θ against 3θ² − 2: one check per requested step, "
        "each labelled with its error regime.\n\n"
        "The regime comes from the records alone, at any point and step list:\n\n"
        "\b\n" + _REGIME_RULE + "\n\n"
        "A failing step is a demonstration, not a failed command: scan exits 0.\n\n"
        "--advise adds the step advice, which never looks at the analytic value: "
        "a geometric sequence of steps, each estimate's error estimated from its "
        "neighbours (Richardson) and from the rounding floor ε·|f| over the actual "
        "spacing, and the step with the smallest estimated error."
    ),
)
@click.option("--point", type=float, default=ChapterDefault(fixtures.CUBIC_POINT), help="The point θ.")
@click.option(
    "--steps",
    type=FLOAT_LIST,
    default=ChapterDefault(fixtures.STEP_SCAN),
    metavar="H,H,...",
    help="Requested steps, comma-separated.",
)
@click.option(
    "--tolerance",
    type=float,
    default=_STEP_TOLERANCE,
    help="The scaled-error tolerance: |a − n| / max(1, |a|, |n|) must not exceed it (check's --tolerance is relative).",
)
@click.option(
    "--advise",
    is_flag=True,
    help="Also advise a step without the analytic value: each step's estimated error and regime "
    "(truncation, advised, rounding).",
)
@click.option(
    "--plot",
    type=PLOT_FILE,
    metavar="FILE",
    help="Also draw the scaled error against the step into FILE.png or FILE.svg (needs matplotlib).",
)
@output_options
def scan(output_format, point, steps, tolerance, advise, plot):
    def compute():
        plot_path = plot_target(plot)
        records = fixtures.cubic_step_scan(point, steps, tolerance)
        advice = None
        if advise:
            from ...advice.steps import advise_step

            advice = advise_step(fixtures.cubic, point)
        if plot_path is not None:
            from ...display.plotting import plot_scan

            draw_plot(plot_scan, plot_path, records, advice=advice)
        sections = [render.scan(records, advice)]
        if advice is not None:
            title = "Step advice for g(θ) = θ³ − 2θ (no analytic value)"
            sections.append(render.step_advice(advice, "advice", title))
        return Report(sections)

    run(output_format, compute)
