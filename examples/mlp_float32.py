"""The MLP of ``mlp.py`` in float32: the dtype's defaults at work.

Parameters, inputs and every operation of the forward and backward passes
are float32. The probes are rounded once into float32 (what the arrays can
hold), and the defaults follow from float32's ε = 2⁻²³:

* step ε^(1/3)·max(1, |θ|) ≈ 4.92e-3·max(1, |θ|), tolerance ε^(1/3) ≈ 4.92e-3,
  kink tolerance ε^(1/6) ≈ 7.0e-2.

``python examples/mlp_float32.py`` also shows what float64's defaults would
do to the same correct float32 gradients: with float64's step 6.06e-6 the
float32 rounding of the loss swamps the difference quotient, and with
float64's tolerance 6.06e-6 the (correct) float32 estimates are held to a
precision float32 cannot give. Both fail gradients that are right.

    gradcheck check examples/mlp_float32.py:problem         # exit 0
    gradcheck check examples/mlp_float32.py:wrong_problem   # exit 1, W2 fails
"""

import sys

import numpy as np
from mlp import build
from mlp import main as check_and_print

from gradcheck_cli import check_problem, probe_dtype


def problem():
    """The correct MLP in float32: passes at float32's defaults."""
    return build(np.float32)


def wrong_problem():
    """W2's gradient misses the mean's 1/batch: W2 fails at float32's defaults."""
    return build(np.float32, missing_batch_mean=True)


def with_float64_defaults():
    """The correct float32 MLP checked with float64's default step, then tolerance: both fail."""
    float64 = probe_dtype("float64")
    step_report = check_problem(problem(), step=float64.step_factor)
    tolerance_report = check_problem(problem(), tolerance=float64.tolerance)
    return step_report, tolerance_report


def main() -> int:
    float32 = probe_dtype("float32")
    print(
        f"float32 defaults: step {float32.step_factor:.3e}·max(1, |θ|), tolerance {float32.tolerance:.3e}, "
        f"kink tolerance {float32.kink_tolerance:.3e}"
    )
    status = check_and_print((("problem", problem), ("wrong_problem", wrong_problem)))
    step_report, tolerance_report = with_float64_defaults()
    for label, report in (("float64's step", step_report), ("float64's tolerance", tolerance_report)):
        worst = max(record.comparison.scaled_error for check in report.parameters for record in check.checks)
        print(
            f"correct float32 gradients with {label}: {report.failed} of {report.checked} coordinates fail "
            f"(largest scaled error {worst:.3e})"
        )
    return status


if __name__ == "__main__":
    sys.exit(main())
