"""The chapter's scan and NLL fixture, to every printed digit, and the regime rule."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gradcheck_cli import error_regimes
from gradcheck_cli.chapter.fixtures import CUBIC_POINT, STEP_SCAN, TARGETS, cubic, cubic_derivative, cubic_step_scan
from gradcheck_cli.chapter.nll import (
    InvalidLogits,
    InvalidTargets,
    chapter_logits,
    hand_derived_nll_gradient,
    indexed_mean_nll,
    nll_gradient_check,
)
from gradcheck_cli.core.formatting import rust_exp, rust_fixed, rust_list

# The chapter's scan: requested h, numerical value, scaled error, actual spacing, regime, verdict.
# Numerical values and scaled errors for 1e-5, 1e-13 and 1e-15 are printed to 12 digits in the
# prose; the rest come from the figure (3 significant digits) and the spacings from its
# "Actual left spacing / Actual right spacing" rows.
CHAPTER_SCAN = [
    (1.0, "5.75", "1.74e-1", "1.00000000000000000e0", "truncation", False),
    (1e-1, "4.76", "2.10e-3", "1.00000000000000089e-1", "truncation", False),
    (1e-3, "4.750001", "2.11e-7", "9.99999999999889866e-4", "converging", True),
    (1e-5, "4.750000000100", "2.103583973678e-11", "1.00000000000655120e-5", "trusted range", True),
    (1e-13, "4.751111111111", "2.338634237605e-4", "9.99200722162640886e-14", "rounding", False),
    (1e-15, "4.800000000000", "1.041666666667e-2", "1.11022302462515654e-15", "rounding", False),
]


def _as_printed(value, printed):
    if "e" in printed:
        digits = len(printed.split("e")[0].split(".")[1])
        return rust_exp(value, digits)
    return f"{value:.{len(printed.split('.')[1])}f}"


@pytest.mark.parametrize(
    "record, expected", list(zip(cubic_step_scan(), CHAPTER_SCAN)), ids=[str(s) for s in STEP_SCAN]
)
def test_cubic_scan_matches_the_chapter(record, expected):
    step, numerical, scaled_error, spacing, phase, passed = expected
    difference, comparison = record.check.difference, record.check.comparison
    assert difference.requested_step == step
    assert comparison.analytic == 4.75
    assert _as_printed(difference.derivative, numerical) == numerical
    assert _as_printed(comparison.scaled_error, scaled_error) == scaled_error
    assert rust_exp(difference.minus_spacing, 17) == spacing
    assert rust_exp(difference.plus_spacing, 17) == spacing
    assert record.regime == phase
    assert comparison.passed is passed


def test_smallest_scan_step_has_the_chapters_slopes():
    # Chapter: at h = 1e-15 the one-sided slopes become 4.4 and 5.2.
    difference = cubic_step_scan()[-1].check.difference
    assert round(difference.left_slope, 12) == 4.4 and round(difference.right_slope, 12) == 5.2


def test_scan_at_another_point_uses_the_same_rule():
    records = cubic_step_scan(point=-2.0, steps=(1e-1, 1e-7, 1e-4, 1.0))
    assert [r.check.comparison.analytic for r in records] == [10.0] * 4
    # Ordered by step: 1 (fails), 1e-1 (fails), 1e-4 (passes), 1e-7 (the best).
    assert [r.regime for r in records] == ["truncation", "trusted range", "converging", "truncation"]


def test_regime_rule_when_nothing_passes():
    assert error_regimes([1.0, 0.1, 0.01], [3e-1, 1e-2, 5e-2], [False] * 3) == ["truncation", "crossover", "rounding"]


def test_regime_rule_prefers_the_larger_step_on_ties():
    assert error_regimes([1e-3, 1e-5], [0.0, 0.0], [True, True]) == ["trusted range", "trusted range"]
    assert error_regimes([1e-5, 1e-3], [0.0, 0.0], [True, True]) == ["trusted range", "trusted range"]


@given(
    st.lists(
        st.tuples(st.floats(min_value=1e-16, max_value=1.0), st.floats(min_value=0.0, max_value=1.0)),
        min_size=1,
        max_size=12,
    ),
    st.floats(min_value=0.0, max_value=1.0),
)
def test_regime_rule_has_exactly_one_best_and_is_ordered(pairs, tolerance):
    steps = [step for step, _ in pairs]
    errors = [error for _, error in pairs]
    passed = [error <= tolerance for error in errors]
    labels = error_regimes(steps, errors, passed)
    assert len(labels) == len(steps)
    order = sorted(range(len(steps)), key=lambda i: (-steps[i], i))
    best = min(order, key=lambda i: (errors[i], -steps[i]))
    assert labels[best] in ("trusted range", "crossover")
    for i in order[: order.index(best)]:
        assert labels[i] == ("converging" if passed[i] else "truncation")
    for i in order[order.index(best) + 1 :]:
        assert labels[i] == ("trusted range" if passed[i] else "rounding")


def test_cubic_fixture_functions():
    assert cubic(CUBIC_POINT) == 1.5**3 - 3.0
    assert cubic_derivative(CUBIC_POINT) == 4.75


def test_nll_fixture_matches_the_chapter():
    # Chapter: "nll logits: shape=[2, 3] values=[0.0, 1.0, -1.0, 2.0, 0.0, -2.0] targets=[0, 2]
    # loss=2.775268796472", "sampled coordinates: [[0, 0], [0, 1], [1, 0], [1, 2]]",
    # "tensor restored exactly: true", and the figure's four coordinate records.
    example = nll_gradient_check()
    assert rust_list(list(example.shape)) == "[2, 3]"
    assert rust_list(list(example.logits)) == "[0.0, 1.0, -1.0, 2.0, 0.0, -2.0]"
    assert rust_list(list(example.targets)) == "[0, 2]"
    assert rust_fixed(example.loss) == "2.775268796472"
    assert rust_list([list(c.coordinate) for c in example.check.checks]) == "[[0, 0], [0, 1], [1, 0], [1, 2]]"
    assert [c.flat_index for c in example.check.checks] == [0, 1, 3, 5]
    assert example.restored_exactly is True
    assert example.analytic_path == "local-row-max-exp-sum-normalize-target-gradient"
    printed = [
        ("-0.377635764473", "-0.377635764481", "8.75e-12"),
        ("0.332620477887", "0.332620477894", "6.43e-12"),
        ("0.433406666099", "0.433406666087", "1.21e-11"),
        ("-0.492061880012", "-0.492061879994", "1.75e-11"),
    ]
    for record, (analytic, numerical, scaled) in zip(example.check.checks, printed):
        assert rust_fixed(record.comparison.analytic) == analytic
        assert rust_fixed(record.comparison.numerical) == numerical
        assert rust_exp(record.comparison.scaled_error, 2) == scaled
        assert record.comparison.passed
    assert example.check.passed


def test_nll_loss_by_hand():
    # Row 0: log(1 + e + e^-1) - 0; row 1: log(e^2 + 1 + e^-2) - (-2); mean of the two.
    row0 = math.log(1 + math.e + math.exp(-1.0))
    row1 = math.log(math.exp(2.0) + 1 + math.exp(-2.0)) + 2.0
    assert indexed_mean_nll(chapter_logits(), np.array([0, 2])) == pytest.approx((row0 + row1) / 2, abs=1e-15)


def test_hand_derived_gradient_by_hand():
    gradient = hand_derived_nll_gradient(chapter_logits(), np.array([0, 2]))
    z = 1 + math.e + math.exp(-1.0)
    assert gradient[0, 0] == pytest.approx((1 / z - 1) / 2, abs=1e-16)
    assert gradient[0, 1] == pytest.approx((math.e / z) / 2, abs=1e-16)
    assert np.allclose(gradient.sum(axis=1), 0.0, atol=1e-16)


def test_a_users_wrong_backward_fails_the_nll_check():
    wrong = hand_derived_nll_gradient(chapter_logits(), np.array([0, 2])) * 2.0  # forgot the 1/rows
    example = nll_gradient_check(analytic=wrong)
    assert example.analytic_path == "user-supplied"
    assert not example.check.passed
    assert example.restored_exactly


def test_larger_logits_check_every_row_convention():
    rng = np.random.default_rng(13)
    logits = rng.normal(size=(5, 7))
    targets = [6, 0, 3, 3, 1]
    before = logits.tobytes()
    example = nll_gradient_check(logits, targets, samples=35)
    assert example.check.passed and len(example.check.checks) == 35
    assert logits.tobytes() == before


@pytest.mark.parametrize(
    "logits, targets, error, message",
    [
        (np.zeros(3), [0], InvalidLogits, "logits must be a nonempty [rows, vocab] array, got shape [3]"),
        (np.zeros((2, 3), dtype=np.float32), [0, 0], InvalidLogits, "logits must be float64, got float32"),
        (np.array([[0.0, math.nan]]), [0], InvalidLogits, "logits value at [0, 1] is not finite"),
        (np.zeros((2, 3)), [0], InvalidTargets, "targets need one class per row: 2 rows, got 1 targets"),
        (np.zeros((2, 3)), [0, 3], InvalidTargets, "targets row 1 target 3 is not a class in 0..2"),
        (np.zeros((2, 3)), [-1, 0], InvalidTargets, "targets row 0 target -1 is not a class in 0..2"),
    ],
)
def test_nll_input_errors(logits, targets, error, message):
    with pytest.raises(error) as caught:
        nll_gradient_check(logits, targets)
    assert str(caught.value) == message


def _libm_nll(logits, targets):
    # The chapter's Rust arithmetic: libm exp and ln, row by row, left to right.
    total = 0.0
    for row, target in zip(logits.tolist(), targets):
        maximum = max(row)
        normalizer = 0.0
        for logit in row:
            normalizer += math.exp(logit - maximum)
        total += math.log(normalizer) - (row[target] - maximum)
    return total / len(targets)


def test_nll_values_are_libm_arithmetic_bit_for_bit_on_every_chapter_probe():
    # The chapter's Rust calls libm's exp and ln and sums left to right; numpy's SIMD exp
    # differs from libm in the last bit for a few percent of inputs on AVX-512 CPUs, so the
    # fixture must not use it. Every recorded value equals this independent libm computation.
    targets = np.array(TARGETS)
    for record in nll_gradient_check().check.checks:
        difference = record.difference
        for probe, value in (
            (difference.minus_point, difference.minus_value),
            (difference.point, difference.center_value),
            (difference.plus_point, difference.plus_value),
        ):
            logits = chapter_logits()
            logits[record.coordinate] = probe
            assert value == _libm_nll(logits, targets)


def test_the_check_and_taylor_defaults_live_in_a_numpy_free_module():
    # The command line reads them from here without importing numpy (check.py and taylor.py do).
    import inspect
    import subprocess
    import sys

    from gradcheck_cli.check import Options
    from gradcheck_cli.core import defaults
    from gradcheck_cli.taylor.remainder import check_taylor

    seed = inspect.signature(check_taylor).parameters["seed"].default
    assert (defaults.CHECK_SAMPLES, defaults.SEED) == (Options().samples, Options().seed) == (16, seed) == (16, 0)
    code = "import sys\nfrom gradcheck_cli.core import defaults\nassert 'numpy' not in sys.modules\n"
    subprocess.run([sys.executable, "-c", code], check=True)
