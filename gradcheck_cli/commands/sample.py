"""``gradcheck sample``: the deterministic coordinate sampler."""

import click

from .. import chapter, render
from ..cli import ChapterDefault, Report, output_options, run
from .options import INT_LIST


@click.command()
@click.option("--shape", type=INT_LIST, required=True, metavar="N,N,...", help="The tensor's shape, e.g. 2,3.")
@click.option(
    "--max-samples",
    "--samples",
    "max_samples",
    type=int,
    default=ChapterDefault(chapter.TENSOR_SAMPLES),
    help="R: at most this many coordinates (--samples, as check and nll spell it, is the same option).",
)
@output_options
def sample(output_format, shape, max_samples):
    """The deterministic coordinate sampler: flat offsets ⌊k(N−1)/(S−1)⌋ and their coordinates.

    Pure integer arithmetic: no tensor is allocated, so any shape answers at once.
    """

    def compute():
        from ..sampling import sample_tensor_coordinates

        return Report((render.sample(sample_tensor_coordinates(shape, max_samples)),))

    run(output_format, compute)
