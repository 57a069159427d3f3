"""``gradcheck demo``: the chapter's whole demo, in the chapter's order."""

import click

from ...chapter import fixtures
from ...display import render
from ...errors import GradCheckError
from ..app import Report, output_options, run, summary
from .quadratic import quadratic_report

#: The chapter's four rejected requests: their JSON keys and the labels of their text lines.
REJECTED_LABELS = {
    "zero_step": "zero step",
    "step_leaves_point_unchanged": "step leaves the point unchanged",
    "non_finite_objective_value": "non-finite objective value",
    "shape_mismatch": "shape mismatch",
}


def _chapter_rejected_requests() -> dict:
    """The chapter's four rejected requests (by JSON key), each with the typed error the library raises."""
    import numpy as np

    from ...chapter import nll, sampled
    from ...engine import estimator

    requests = {
        "zero_step": lambda: estimator.central_difference(fixtures.COLLAPSED_POINT, 0.0, fixtures.quadratic),
        "step_leaves_point_unchanged": fixtures.collapsed_step_error,
        "non_finite_objective_value": lambda: estimator.central_difference(
            fixtures.COLLAPSED_POINT, fixtures.QUADRATIC_STEP, lambda point: float("nan")
        ),
        "shape_mismatch": lambda: sampled.sampled_tensor_gradient_check(
            np.zeros(2), np.zeros((1, 2)), nll.TENSOR_STEP, nll.TENSOR_TOLERANCE, nll.TENSOR_SAMPLES, sum
        ),
    }
    errors = {}
    for request, attempt in requests.items():
        try:
            outcome = attempt()
        except GradCheckError as error:
            outcome = error
        if not isinstance(outcome, GradCheckError):
            raise AssertionError(f"the chapter's rejected request {request!r} was accepted")
        errors[request] = outcome
    return errors


@click.command(short_help=summary("demo"))
@output_options
def demo(output_format):
    """The chapter's whole demo, in the chapter's order.

    The quadratic with candidate 6 and the wrong candidate 5.5, the rounded
    identity, the |x| kink, the six-step cubic scan, the NLL coordinates with
    exact restoration, and the rejected requests. Always exits 0: every
    failing comparison here is a demonstration.
    """

    def compute():
        from ...chapter import nll

        quadratic = quadratic_report(fixtures.QUADRATIC_POINT, fixtures.QUADRATIC_STEP, fixtures.STEP_TOLERANCE)
        return Report(
            (
                *quadratic.sections,
                render.identity(fixtures.rounded_identity_gradient_check()),
                render.kink(fixtures.absolute_kink_diagnostic()),
                render.scan(fixtures.cubic_step_scan()),
                render.nll(nll.nll_gradient_check()),
                render.rejected(_chapter_rejected_requests(), REJECTED_LABELS),
            )
        )

    run(output_format, compute)
