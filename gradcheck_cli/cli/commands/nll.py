"""``gradcheck nll``: sampled logit coordinates of the indexed mean NLL against an analytic gradient."""

import click

from ...chapter import fixtures
from ...display import render
from ..app import ChapterDefault, Report, output_options, run, summary
from .options import EXISTING_FILE, INT_LIST, load_array


@click.command("nll", short_help=summary("nll"))
@click.option(
    "--samples", type=int, default=ChapterDefault(fixtures.TENSOR_SAMPLES), help="How many coordinates to check."
)
@click.option("--step", type=float, default=ChapterDefault(fixtures.TENSOR_STEP), help="The requested step h.")
@click.option(
    "--tolerance",
    type=float,
    default=ChapterDefault(fixtures.TENSOR_TOLERANCE),
    help="The scaled-error tolerance: |a − n| / max(1, |a|, |n|) must not exceed it (check's --tolerance is relative).",
)
@click.option(
    "--logits",
    type=EXISTING_FILE,
    metavar="FILE",
    help="[rows, vocab] logits: .npy or a JSON nested list. Default: the chapter's [2, 3] fixture.",
)
@click.option(
    "--targets",
    type=INT_LIST,
    default=ChapterDefault(fixtures.TARGETS),
    metavar="T,T,...",
    help="One target class per row.",
)
@click.option(
    "--analytic",
    type=EXISTING_FILE,
    metavar="FILE",
    help="Your gradient of the mean NLL (.npy or JSON, same shape); exit 1 if a sampled coordinate fails. "
    "Default: the hand-derived path.",
)
@output_options
def nll_command(output_format, samples, step, tolerance, logits, targets, analytic):
    """Indexed mean NLL: sampled logit coordinates against an analytic gradient.

    The parameters are perturbed in place and restored bit-exactly.
    """

    def compute():
        from ...chapter import nll

        nll.nll_options(step, tolerance, samples)  # refused before a file is read
        logit_array = None if logits is None else load_array(logits, "--logits")
        analytic_array = None if analytic is None else load_array(analytic, "--analytic")
        example = nll.nll_gradient_check(logit_array, targets, analytic_array, step, tolerance, samples)
        return Report((render.nll(example),), (example.check.passed,) if analytic is not None else ())

    run(output_format, compute)
