"""The three verdicts of check_gradients: classic bugs fail, rounding noise and jitter do not.

Each problem below is small and exact: its correct gradient is written by hand, and each bug is
one line changed. The numbers that decide (tolerances, error bars) are docs/method.md's.
"""

import math

import numpy as np
import pytest

from extras import require
from gradcheck_cli import check_gradients
from gradcheck_cli.check.selection import structured_coordinates
from gradcheck_cli.testing import assert_gradients
from gradcheck_cli.verdict.estimates import estimate_columns
from gradcheck_cli.verdict.rules import judge_confirmed, judge_primary, with_step_sensitivity
from gradcheck_cli.verdict.terms import FAILED, INCONCLUSIVE, KINK, PASSED, Resolution, Standard

RNG = np.random.default_rng(20261201)


def _bilinear(n: int):
    """f(W) = Σ C ∘ (W X): gradient C Xᵀ, a square n×n matrix that is not symmetric."""
    x = RNG.normal(size=(n, 3))
    c = RNG.normal(size=(n, 3))
    weight = RNG.normal(size=(n, n))

    def objective(parameters):
        return float(np.sum(c * (parameters["W"] @ x)))

    return objective, {"W": weight}, c @ x.T


@pytest.mark.parametrize("n", [*range(2, 65), 256])
def test_a_transposed_square_weight_fails_and_the_correct_one_passes(n):
    objective, parameters, gradient = _bilinear(n)
    assert check_gradients(objective, parameters, {"W": gradient}).verdict == PASSED
    assert check_gradients(objective, parameters, {"W": gradient.T.copy()}).verdict == FAILED


@pytest.mark.parametrize("scale", [1e-6, 1e-9])
@pytest.mark.parametrize("bug", [-1.0, 10.0])
def test_sign_and_tenfold_errors_fail_at_tiny_loss_scales(scale, bug):
    x = RNG.normal(size=20)

    def objective(parameters):
        return scale * float(np.sum(parameters["x"] ** 2))

    correct = 2 * scale * x
    assert check_gradients(objective, {"x": x}, {"x": correct}).verdict == PASSED
    assert check_gradients(objective, {"x": x}, {"x": bug * correct}).verdict == FAILED


def test_a_float32_bias_five_times_too_large_fails():
    inputs = RNG.normal(size=(16, 4)).astype(np.float32)
    targets = RNG.normal(size=(16, 3)).astype(np.float32)
    parameters = {"W": RNG.normal(size=(4, 3)).astype(np.float32), "b": (0.1 * RNG.normal(size=3)).astype(np.float32)}

    def objective(current):
        residual = inputs @ current["W"] + current["b"] - targets
        return float(np.mean(residual.astype(np.float64) ** 2))

    residual = (inputs @ parameters["W"] + parameters["b"] - targets).astype(np.float64)
    gradients = {
        "W": 2 * inputs.T.astype(np.float64) @ residual / residual.size,
        "b": 2 * residual.sum(0) / residual.size,
    }
    assert check_gradients(objective, parameters, gradients).verdict == PASSED
    report = check_gradients(objective, parameters, {**gradients, "b": 5 * gradients["b"]})
    assert report.verdict == FAILED and report.failing_parameters == ("b",)


def test_a_missing_one_over_batch_fails_in_that_parameter_only():
    from examples.mlp import problem, wrong_problem

    assert check_gradients(*_parts(problem())).verdict == PASSED
    report = check_gradients(*_parts(wrong_problem()))
    assert report.verdict == FAILED and report.failing_parameters == ("W2",)


def _parts(problem):
    return problem.objective, problem.parameters, problem.gradients


@pytest.mark.parametrize("bug", ["doubled", "missing"])
def test_a_wrong_gradient_at_the_argmax_of_max_fails(bug):
    x = RNG.normal(size=1000)
    top = int(np.argmax(x))
    correct = np.zeros(1000)
    correct[top] = 1.0
    wrong = correct.copy()
    wrong[top] = 2.0 if bug == "doubled" else 0.0

    def objective(parameters):
        return float(np.max(parameters["x"]))

    assert check_gradients(objective, {"x": x}, {"x": correct}).verdict == PASSED
    assert check_gradients(objective, {"x": x}, {"x": wrong}).verdict == FAILED


def test_a_large_constant_blurs_but_never_fails_a_correct_gradient():
    x = RNG.normal(size=12)

    def objective(parameters):
        return 1e8 + float(np.sum(np.sin(parameters["x"])))

    correct = check_gradients(objective, {"x": x}, {"x": np.cos(x)})
    assert correct.verdict != FAILED
    for record in correct.parameters[0].checks:
        assert record.verdict in (PASSED, INCONCLUSIVE)
        if record.verdict == INCONCLUSIVE:
            assert "rounding of f" in record.reason
    assert check_gradients(objective, {"x": x}, {"x": 1.5 * np.cos(x)}).verdict == FAILED


def test_last_bit_jitter_does_not_fail_a_correct_gradient():
    terms = RNG.normal(size=(200, 8))
    order = np.random.default_rng(7)

    def objective(parameters):
        values = np.tanh(terms @ parameters["w"])
        return float(np.sum(values[order.permutation(len(values))]))  # summation order changes per call

    w = RNG.normal(size=8)
    gradient = terms.T @ (1 - np.tanh(terms @ w) ** 2)
    report = check_gradients(objective, {"w": w}, {"w": gradient})
    assert not report.purity.pure and not report.purity.stateful
    assert report.verdict == PASSED


@pytest.mark.parametrize("seed", range(5))
def test_additive_noise_never_passes(seed):
    noise = np.random.default_rng(seed)
    x = RNG.normal(size=10)

    def objective(parameters):
        return float(np.sum(parameters["x"] ** 2)) + 1e-3 * noise.normal()

    report = check_gradients(objective, {"x": x}, {"x": 2 * x})
    assert report.purity.stateful
    assert report.verdict == INCONCLUSIVE


@pytest.mark.parametrize("drift", [1e-12, 1e-6])
def test_a_drifting_objective_never_passes_labels_no_kink_and_names_its_parameter(drift):
    # A call counter in the loss: at 1e-6 per call its slopes disagree at every step (f(θ) drifts
    # between calls), which was "suspected kink"; a corner it is not, and the parameter is named.
    x = RNG.normal(size=10)
    calls = [0]

    def objective(parameters):
        calls[0] += 1
        return float(np.sum(parameters["x"] ** 2)) + drift * calls[0]

    report = check_gradients(objective, {"x": x}, {"x": 2 * x})
    assert report.purity.stateful and report.verdict == INCONCLUSIVE
    assert KINK not in {record.verdict for record in report.parameters[0].checks}
    assert report.parameters[0].verdict == INCONCLUSIVE and report.failing_parameters == ("x",)


def test_a_noisy_objective_whose_coordinates_pass_within_its_noise_still_names_its_parameter():
    # Every comparison is within the bars the observed noise sets, but a stateful f makes none of them
    # evidence: the parameter is inconclusive, so failing_parameters (text and JSON) names it.
    noise = np.random.default_rng(0)
    x = np.array([0.5, -1.0, 2.0])

    def objective(parameters):
        return float(np.sum(parameters["x"] ** 2)) + 1e-9 * noise.normal()

    report = check_gradients(objective, {"x": x}, {"x": 2 * x})
    assert report.verdict == INCONCLUSIVE and report.failed == 0
    assert report.parameters[0].verdict == INCONCLUSIVE
    assert report.failing_parameters == ("x",) and report.to_dict()["failing_parameters"] == ["x"]


def test_curvature_near_a_pole_passes_once_the_steps_show_it_smooth():
    # tan near -π/2: at h the one-sided slopes differ by f″·h, beyond the kink tolerance (the
    # chapter's test suspects a corner), but by a tenth of that at h/10: a curvature, not a corner.
    x = np.array([-math.pi / 2 + 0.007, 0.3, 1.0])

    def objective(parameters):
        return float(np.sum(np.tan(parameters["x"])))

    report = check_gradients(objective, {"x": x}, {"x": 1 / np.cos(x) ** 2})
    near = report.parameters[0].checks[0]
    assert near.verdict == PASSED and near.kink.suspected
    assert [estimate.slopes_consistent for estimate in near.estimates] == [True, True, True]
    assert min(estimate.step for estimate in near.estimates) < near.difference.requested_step
    assert report.verdict == PASSED


def test_a_corner_is_no_curvature_at_any_step():
    # |x| at 0 beside a smooth term: the slopes' gap is 2 at every step, so no step shows it smooth.
    x = np.array([0.0, 0.4])

    def objective(parameters):
        return float(abs(parameters["x"][0]) + parameters["x"][1] ** 2)

    report = check_gradients(objective, {"x": x}, {"x": np.array([0.0, 0.8])})
    assert report.parameters[0].checks[0].verdict == KINK


def test_a_correct_mlp_costs_at_most_two_and_a_half_calls_per_coordinate():
    from examples.mlp import problem

    report = check_gradients(*_parts(problem()))
    assert report.verdict == PASSED
    assert report.evaluations / report.checked <= 2.5


def test_the_structured_selection_never_collapses_onto_a_diagonal_row_or_column():
    for n in [*range(5, 65), 256]:
        chosen = [sample.coordinate for sample in structured_coordinates((n, n), 16, np.zeros((n, n)))]
        assert len(chosen) == 16
        assert len({i for i, _ in chosen}) > 1 and len({j for _, j in chosen}) > 1
        assert any(i != j for i, j in chosen)
        assert any((j, i) in chosen for i, j in chosen if i != j)  # mirrored pairs


def test_the_structured_selection_includes_the_largest_gradients():
    gradient = np.zeros((40, 50))
    gradient[17, 3], gradient[39, 49] = 5.0, -7.0
    chosen = {sample.coordinate for sample in structured_coordinates((40, 50), 16, gradient)}
    assert {(17, 3), (39, 49)} <= chosen


def test_the_chapter_sampler_is_still_one_option():
    objective, parameters, gradient = _bilinear(6)
    report = check_gradients(objective, parameters, {"W": gradient}, sampler="chapter", samples=4)
    assert [record.flat_index for record in report.parameters[0].checks] == [0, 11, 23, 35]
    assert report.parameters[0].selection == "chapter"


def test_a_failure_raises_in_the_pytest_helper_and_names_the_verdict():
    objective, parameters, gradient = _bilinear(8)
    with pytest.raises(AssertionError, match="gradient check failed"):
        assert_gradients(objective, parameters, {"W": gradient.T.copy()})


@pytest.mark.parametrize("when", ["plus", "minus"])
def test_the_directional_probes_restore_the_array_when_the_objective_raises(when):
    x = RNG.normal(size=(7, 5))
    before = x.tobytes()
    calls = [0]
    total_calls = 1 + 2 * 16 + 3  # the center, 16 coordinates, the checkpoints: then the direction

    def objective(parameters):
        calls[0] += 1
        if calls[0] == total_calls + (1 if when == "plus" else 2):
            raise KeyboardInterrupt
        return float(np.sum(parameters["x"] ** 3))

    with pytest.raises(KeyboardInterrupt):
        check_gradients(objective, {"x": x}, {"x": 3 * x**2})
    assert x.tobytes() == before


def step_estimate(step, analytic, numerical, *, largest_value, epsilon, jitter, gain):
    """One JudgedEstimate from the engine's columns, its bar ROUNDING_FACTOR·ε·largest_value·gain."""
    columns = estimate_columns(
        step,
        analytic,
        numerical,
        largest_value=largest_value,
        epsilons=epsilon,
        jitter=jitter,
        gain=gain,
        consistent=True,
    )
    return columns.estimate(())


def _estimate(numerical, analytic=1.0, bar=1e-12, step=1e-5):
    return step_estimate(
        step, analytic, numerical, largest_value=bar / 4 / 2.2e-16, epsilon=2.2e-16, jitter=0.0, gain=1.0
    )


def _at_three_steps(at_h, at_tenth, at_ten):
    """Estimates at h = 1e-5, h/10 and 10h, the order check_gradients tries them in."""
    return with_step_sensitivity([_estimate(at_h), _estimate(at_tenth, step=1e-6), _estimate(at_ten, step=1e-4)])


def test_a_gap_that_persists_across_steps_fails_and_one_that_does_not_is_inconclusive():
    assert (
        judge_confirmed(_at_three_steps(1.5, 1.5 + 1e-9, 1.5 - 1e-9), Standard(1e-6, Resolution(1.0, 1.0))).verdict
        == FAILED
    )
    assert (
        judge_confirmed(_at_three_steps(1.5, 1.0 + 1e-3, 3.0), Standard(1e-6, Resolution(1.0, 1.0))).verdict
        == INCONCLUSIVE
    )


def test_curvature_resolved_at_a_smaller_step_passes_but_a_coincidence_there_does_not():
    # Truncation ∝ h²: 1 + 5e-6 at h, 1 + 5e-8 at h/10, 1 + 5e-4 at 10h; the analytic 1 passes
    # at h/10 (their extrapolation is 1 too).
    assert (
        judge_confirmed(_at_three_steps(1 + 5e-6, 1 + 5e-8, 1 + 5e-4), Standard(1e-7, Resolution(1.0, 1.0))).verdict
        == PASSED
    )
    # A wrong analytic 1.001 that the estimate at h/10 happens to equal (its truncation is 1e-3)
    # does not pass there: the extrapolation with h lands on the true 1.
    estimates = [
        step_estimate(step, 1.001, numerical, largest_value=1.0, epsilon=2.2e-16, jitter=0.0, gain=1.0)
        for step, numerical in ((1e-5, 1.1), (1e-6, 1.001), (1e-4, 11.0))
    ]
    assert judge_confirmed(with_step_sensitivity(estimates), Standard(1e-6, Resolution(1.0, 1.0))).verdict != PASSED


def test_a_zero_gradient_whose_truncation_shrinks_with_the_step_passes_beside_larger_gradients():
    # f = Σ x³ at x = 0: the central difference is h² (truncation), 0 at h/10 where f does not move,
    # 100h² at 10h. Each is zero within its bar, and the bars are small beside the gradient 3 of
    # the other coordinates: passed. Not when nothing larger matters (every gradient that small).
    h = 6.055454452393343e-06
    estimates = with_step_sensitivity(
        [_estimate(h * h, analytic=0.0, bar=2.3e-12), _estimate(0.0, analytic=0.0, bar=1.15e-11, step=h / 10)]
        + [_estimate(100 * h * h, analytic=0.0, bar=1.8e-15, step=10 * h)]
    )
    assert judge_confirmed(estimates, Standard(1e-7, Resolution(gradient=3.0, check=3.0))).verdict == PASSED
    assert judge_confirmed(estimates, Standard(1e-7, Resolution(gradient=1e-9, check=1e-9))).verdict != PASSED


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_cube_passes_at_its_stationary_point_and_a_wrong_value_there_does_not(dtype):
    x = np.linspace(-1, 1, 7).astype(dtype)

    def objective(parameters):
        return float(np.sum(parameters["x"].astype(np.float64) ** 3))

    report = check_gradients(objective, {"x": x}, {"x": 3 * x.astype(np.float64) ** 2})
    assert report.verdict == PASSED, [(c.verdict, c.reason) for c in report.parameters[0].checks]
    wrong = 3 * x.astype(np.float64) ** 2
    wrong[3] = 0.03  # 1e-2 of the largest gradient 3
    report = check_gradients(objective, {"x": x}, {"x": wrong})
    assert report.parameters[0].checks[3].verdict == FAILED


def test_values_that_cancel_to_near_zero_are_not_blamed_on_precision_or_noise_alone():
    # Σ x³ at x = 0 among ±1, ±2/3, ±1/3: f is the rounding of terms of order 1 that cancel, 0 and
    # k·2⁻⁵² of a few bits, which are numbers of every binary precision: no lower precision is shown.
    # The estimates are the truncation h² at h and 10h (0 at h/10): the derivative is 0, and an
    # analytic value is decided by its distance from 0 in bars (±7.56e-11 at h, the smallest usable).
    x = np.linspace(-1, 1, 7)
    verdicts = {}
    for value in (1e-11, 1e-10, 3e-10, 1e-9):
        wrong = 3 * x**2
        wrong[3] = value
        record = check_gradients(lambda p: float(np.sum(p["x"] ** 3)), {"x": x}, {"x": wrong}).parameters[0].checks[3]
        differences = [abs(estimate.numerical) for estimate in record.estimates]
        assert differences == [
            pytest.approx(h**2, rel=1e-9) for h in (6.055454452393343e-06, 0.0, 6.055454452393343e-05)
        ]
        assert "numbers: the objective computes in lower precision" not in record.reason
        verdicts[value] = record.verdict
        if value == 1e-10:  # within 2 bars: the reason names the cancellation beside the other causes
            assert "is a small difference of much larger terms" in record.reason
    assert verdicts == {1e-11: PASSED, 1e-10: INCONCLUSIVE, 3e-10: FAILED, 1e-9: FAILED}


def test_a_float32_objective_frozen_at_one_is_not_failed_whatever_the_analytic_value():
    # f = 1 + 1e-9·Σt in float32 is 1.0 at every probe: its values, one bit each, are read as the
    # float32 numbers they are (all the same number: f frozen), and a nonzero analytic value, right
    # or not, is not decided.
    t = np.array([0.3, -0.7])

    def objective(parameters):
        return float(np.float32(1.0) + np.float32(1e-9) * np.sum(parameters["t"].astype(np.float32)))

    for analytic in (1e-9, 1.0):
        report = check_gradients(objective, {"t": t}, {"t": np.full(2, analytic)})
        assert [record.verdict for record in report.parameters[0].checks] == [INCONCLUSIVE, INCONCLUSIVE]
        assert report.parameters[0].checks[0].reason.startswith("f did not change at any step tried")


def test_values_within_the_bar_of_zero_pass_only_beside_larger_gradients():
    tiny = _estimate(3e-13, analytic=0.0, bar=1e-12)
    # Beside the parameter's own largest gradient, or the check's: 1e-12 is within 1e-6 of 1.
    assert judge_primary(tiny, Standard(1e-6, Resolution(gradient=1.0, check=0.0))).verdict == PASSED
    # Beside the check's largest gradient only once confirmed, at the estimate with the smallest bar.
    assert judge_primary(tiny, Standard(1e-6, Resolution(gradient=0.0, check=1.0))) is None
    confirmed = with_step_sensitivity([tiny, _estimate(2e-13, analytic=0.0, bar=1e-12, step=1e-6)])
    assert judge_confirmed(confirmed, Standard(1e-6, Resolution(gradient=0.0, check=1.0))).verdict == PASSED
    # Not when every gradient is that small: nothing is resolved.
    assert judge_primary(tiny, Standard(1e-6, Resolution(gradient=1e-9, check=1e-9))) is None
    # A small gradient agrees when even its worst case, gap plus bar, is within the tolerance of the
    # parameter's own largest gradient; never by the check's largest gradient (a whole parameter's
    # gradient 10 times too small would pass beside a larger parameter).
    small = _estimate(1.0e-9, analytic=1.0005e-9, bar=1e-12)  # relative error 5e-4, gap 5e-13
    assert judge_primary(small, Standard(1e-6, Resolution(gradient=1.0, check=1.0))).verdict == PASSED
    assert judge_primary(small, Standard(1e-6, Resolution(gradient=1e-9, check=1.0))) is None


def test_an_objective_computed_in_float32_does_not_fail_correct_float64_gradients():
    # f carries float32's precision although the parameters are float64: the bars use float32's ε.
    failed = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        weights, inputs = rng.standard_normal((4, 3)), rng.standard_normal((8, 4))

        def objective(parameters):
            outputs = np.tanh(inputs.astype(np.float32) @ parameters["W"].astype(np.float32))
            return float(np.sum(outputs * outputs))

        outputs = np.tanh(inputs @ weights)
        gradient = inputs.T @ (2 * outputs * (1 - outputs**2))
        failed += check_gradients(objective, {"W": weights}, {"W": gradient}).verdict == FAILED
    assert failed == 0


def test_a_zero_initialised_bias_at_a_stationary_point_passes_its_directional_test():
    parameters = {"w": np.linspace(0.5, 2.0, 8), "b": np.zeros(8)}

    def objective(current):
        return float(np.sum(current["w"] ** 2) + np.sum(np.cos(current["b"])))

    report = check_gradients(objective, parameters, {"w": 2 * parameters["w"], "b": -np.sin(parameters["b"])})
    assert report.verdict == PASSED and report.parameter("b").directional.verdict == PASSED


def test_strong_curvature_the_estimate_approaches_is_not_failed():
    x = np.zeros(1, dtype=np.float32)  # sin(1000x): far outside the Taylor regime at float32's step
    report = check_gradients(lambda p: float(np.sin(1000.0 * p["x"][0])), {"x": x}, {"x": np.array([1000.0])})
    record = report.parameters[0].checks[0]
    assert record.verdict == INCONCLUSIVE and "approaches the analytic value" in record.reason


def test_an_unchecked_absurd_entry_does_not_set_the_tolerance_of_the_others():
    rng = np.random.default_rng(3)
    x = rng.normal(size=64)
    wrong = 1.5 * 2 * x
    wrong[37] = 1e7  # never sampled by the chapter's offsets for 4 samples
    report = check_gradients(lambda p: float(np.sum(p["x"] ** 2)), {"x": x}, {"x": wrong}, sampler="chapter", samples=4)
    assert all(record.verdict == FAILED for record in report.parameters[0].checks)


@pytest.mark.parametrize("change", ["in place", "rebound"])
def test_an_objective_that_changes_its_parameters_is_refused_and_restored(change):
    from gradcheck_cli.errors import ParameterChanged

    x = np.linspace(-2.0, 2.0, 9)
    before = x.tobytes()
    parameters = {"x": x}

    def objective(current):
        if change == "in place":
            np.clip(current["x"], -0.9, 0.9, out=current["x"])
        else:
            current["x"] = current["x"] * 1.0
        return float(np.sum(current["x"] ** 2))

    with pytest.raises(ParameterChanged, match="'x' was (modified in place|replaced or removed)"):
        check_gradients(objective, parameters, {"x": 2 * x})
    assert x.tobytes() == before


def _float32_least_squares():
    """f(w) = ½·mean((Xw − y)²) of float32 w, summed in float64: gradient Xᵀ(Xw − y)/8 exactly."""
    random = np.random.default_rng(190)
    x, y = random.normal(size=(8, 5)), random.normal(size=8)
    weight = random.normal(size=5).astype(np.float32)

    def objective(parameters):
        residual = x @ parameters["w"].astype(np.float64) - y
        return float(0.5 * np.mean(residual * residual))

    return objective, {"w": weight}, x.T @ (x @ weight.astype(np.float64) - y) / 8


def test_a_float32_relative_error_of_1e_3_fails_where_the_bar_resolves_it():
    # At the default float32 step the tolerance ε^(1/3) is 4.92e-3, but the sensitivity floor is
    # 16·(r² + ε/r) = 7.75e-4 (r = ε^(1/3)), and at 10h the bar is ~3e-6 relative: 1e-3 is beyond both.
    objective, parameters, gradient = _float32_least_squares()
    assert check_gradients(objective, parameters, {"w": gradient}).verdict == PASSED
    report = check_gradients(objective, parameters, {"w": gradient * (1 + 1e-3)})
    assert report.verdict == FAILED
    assert all(record.verdict != PASSED for record in report.parameters[0].checks)


def test_a_small_coordinate_with_a_flipped_sign_fails_beside_a_large_gradient():
    # f = 10·v₀ + 0.01·v₁² at v = (0.5, 1) in float32: gradient (10, 0.02). The old clause
    # |a − n| + B ≤ tol·G passed v₁ = −0.02 (gap 0.04 < 4.92e-3·10); its own bar is ~1e-3.
    weights = np.array([0.5, 1.0], dtype=np.float32)

    def objective(parameters):
        v = parameters["v"].astype(np.float64)
        return float(10 * v[0] + 0.01 * v[1] ** 2)

    assert check_gradients(objective, {"v": weights}, {"v": np.array([10.0, 0.02])}).verdict == PASSED
    report = check_gradients(objective, {"v": weights}, {"v": np.array([10.0, -0.02])})
    assert [record.verdict for record in report.parameters[0].checks] == [PASSED, FAILED]


def test_an_objective_reading_a_stale_copy_fails_and_says_only_what_it_saw():
    # f never changes along s while the analytic gradient 2s is of order 1: whatever the cause (a
    # stale copy here, a backward that invents a gradient elsewhere), the gradient does not fit f.
    values = np.array([0.3, -1.2, 2.0, 0.7])
    stale = values.copy()
    report = check_gradients(lambda parameters: float(np.sum(stale**2)), {"s": values}, {"s": 2 * values})
    assert report.verdict == FAILED and report.failed == 4
    assert report.parameters[0].checks[0].reason.startswith("f does not change here: bit-identical to f(θ)")
    assert report.parameters[0].directional.verdict == FAILED
    diagnosis = report.parameters[0].diagnosis
    assert diagnosis.kind == "unexplained"
    assert diagnosis.message.startswith("f does not change along s[0], s[1], s[2], s[3] at any step tried, while")
    assert "stale" not in diagnosis.message and "read" not in diagnosis.message  # a cause it cannot know


def test_a_flat_objective_with_an_analytic_value_within_what_it_bounds_is_inconclusive():
    # f = 1e6 + 1e-13·x: no probe moves f (the term is below its rounding), and the analytic 1e-13
    # is within the collapsed bar: no evidence either way, and the reason says how to get some.
    x = np.array([0.5, -0.25])
    report = check_gradients(lambda p: 1e6 + 1e-13 * float(np.sum(p["x"])), {"x": x}, {"x": np.full(2, 1e-3)})
    record = report.parameters[0].checks[0]
    assert record.verdict == INCONCLUSIVE and record.reason.startswith("f did not change at any step tried")
    assert "try a larger step" in record.reason


@pytest.mark.parametrize("step", [None, "auto"])
def test_a_float32_objective_of_float64_parameters_never_fails_a_correct_gradient(step):
    theta = np.random.default_rng(191).normal(size=6)

    def objective(parameters):
        return float(np.sum(np.square(parameters["t"].astype(np.float32)), dtype=np.float32))

    report = check_gradients(objective, {"t": theta}, {"t": 2 * theta}, step=step)
    assert report.verdict in (PASSED, INCONCLUSIVE) and report.failed == 0
    for record in report.parameters[0].checks.unpassed():
        assert "f's values are all float32 numbers" in record.reason


def test_noise_far_above_the_rounding_of_float64_is_named_as_lower_precision():
    # f computes its cube in float32 and adds a float64 term, so its values are not float32 numbers
    # (the bar stays float64's) while their noise is float32's: about 1e-7·|f|, 10⁹·ε.
    theta = np.array([0.7, -1.3, 0.4])

    def objective(parameters):
        t = parameters["t"]
        return float(np.sum(t.astype(np.float32) ** 3, dtype=np.float32)) + 1e-3 * float(np.sum(t))

    report = check_gradients(objective, {"t": theta}, {"t": 3 * theta**2 + 1e-3})
    assert report.failed == 0 and report.verdict == INCONCLUSIVE
    parameter = report.parameters[0]
    reasons = [record.reason for record in parameter.checks.unpassed()] + [parameter.directional.reason]
    # Named wherever the smallest step's estimate moves by more than 256·ε·|f| (at one coordinate
    # float32's quantization happens to give h/10 and h the same estimate).
    assert sum("far above the rounding of float64" in reason for reason in reasons) >= 3


def test_a_float32_gradient_computed_in_float64_is_held_to_the_estimates_floor_not_float32s():
    # f = Σ c_i (x_i − θ_i), float32 x, summed in float64: every estimate is exact up to f's rounding.
    # A relative error 5e-4 lies between the floors at float32's default step, 8·(r² + ε/r) = 3.87e-4
    # and 16·(r² + ε/r) = 7.75e-4 (r = ε^(1/3), ε = 2⁻²³). Analytic values that are no float32
    # numbers were computed in float64, whose rounding needs no margin: the error fails; the same
    # values rounded to float32 (a float32 backward pass, which carries its own rounding) pass.
    theta = np.array([0.5, -1.5, 2.0, 0.25], dtype=np.float32)
    c = np.array([0.75, -1.25, 2.0, 0.5])

    def objective(p):
        return math.fsum((c * (p["x"].astype(np.float64) - theta.astype(np.float64))).tolist())

    wrong = c * (1 + 5e-4)
    assert not np.array_equal(wrong.astype(np.float32).astype(np.float64), wrong)
    computed_in_float64 = check_gradients(objective, {"x": theta.copy()}, {"x": wrong}, samples="all")
    assert computed_in_float64.verdict == FAILED
    errors = {
        estimate.relative_error for record in computed_in_float64.parameters[0].checks for estimate in record.estimates
    }
    assert all(abs(error - 5e-4) < 1e-6 for error in errors)
    in_float32 = wrong.astype(np.float32).astype(np.float64)
    assert check_gradients(objective, {"x": theta.copy()}, {"x": in_float32}, samples="all").verdict == PASSED


@pytest.mark.parametrize("shape", [(5,), (4, 5), (16,)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bfloat16_sum_of_squares_fails_a_doubled_or_sign_flipped_gradient(shape, seed):
    """f = Σx² of bfloat16 x: the three-point estimate is exact for a quadratic (2x), a ×2 or sign
    error is a gap of |g| itself, beyond 2 bars at h while h/10's bar (1.2 at |f| ≈ 1) is wider than
    the gap: the same number at every step, the gap fails (it was inconclusive before; the coordinates near 0, |g| ≈ 0.2 beside a bar of
    0.13, may stay inconclusive)."""
    ml_dtypes = require("ml_dtypes")
    x = np.random.default_rng(seed).normal(size=shape).astype(ml_dtypes.bfloat16)
    gradient = 2 * x.astype(np.float64)

    def objective(parameters):
        return float(np.sum(parameters["x"].astype(np.float64) ** 2))

    assert check_gradients(objective, {"x": x}, {"x": gradient}).verdict == PASSED
    for wrong in (2 * gradient, -gradient):
        report = check_gradients(objective, {"x": x}, {"x": wrong})
        assert report.verdict == FAILED and report.parameters[0].checks.verdict_count(PASSED) == 0


def _dense_layer(dtype, n=1000, batch=32, seed=1):
    """A 1000×1000 dense layer with its bias (1,001,000 parameters) under a mean squared error
    computed in ``dtype``: f ≈ 2, its gradients ≈ 10⁻⁴, each a few float32 quanta of f at h."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, n)).astype(dtype)
    y = rng.standard_normal((batch, n)).astype(dtype)
    parameters = {
        "W": (rng.standard_normal((n, n)) / np.sqrt(n)).astype(dtype),
        "b": (0.1 * rng.standard_normal(n)).astype(dtype),
    }

    def objective(p):
        return float(np.mean((x @ p["W"] + p["b"] - y) ** 2))

    g = 2 * (x @ parameters["W"] + parameters["b"] - y) / (batch * n)
    return objective, parameters, {"W": x.T @ g, "b": g.sum(axis=0)}


def test_a_correct_float32_dense_layer_of_a_million_parameters_passes_and_a_wrong_one_fails():
    # 8 of its 32 coordinates were inconclusive before: at 10h the loss's float32 quantum moves an
    # estimate by 1.4 % of a gradient; 100h resolves them (issue 32).
    objective, parameters, gradients = _dense_layer(np.float32)
    report = check_gradients(objective, parameters, gradients)
    assert report.verdict == PASSED, [(name, r.reason) for name, r in report.failures()]
    wrong = check_gradients(objective, parameters, {"W": 2 * gradients["W"], "b": gradients["b"]})
    assert wrong.verdict == FAILED and wrong.failing_parameters == ("W",)


def test_an_objective_that_raises_only_at_the_last_step_keeps_its_verdict_and_its_bits():
    # 1e7 + 1e-3·Σw²: the rounding of f leaves both coordinates undecided at h/10 to 10h, so 100h is
    # tried, where this objective refuses to go (a probe beyond 1e-4 of θ, as a matrix that is no
    # longer positive definite would): that step is unusable, as a non-finite value's would be.
    w = np.array([0.5, -1.5])
    start = w.copy()

    def objective(parameters):
        if np.max(np.abs(parameters["w"] - start)) > 1e-4:
            raise ValueError("outside the domain")
        return 1e7 + 1e-3 * float(np.sum(parameters["w"] ** 2))

    report = check_gradients(objective, {"w": w}, {"w": 2e-3 * w})
    assert report.verdict == INCONCLUSIVE and np.array_equal(w, start)
    assert all(max(e.step for e in record.estimates) < 1e-4 for record in report.parameters[0].checks)


def test_one_estimate_of_numbers_is_its_columns_estimate_bit_for_bit():
    from gradcheck_cli.verdict.estimates import estimate_of

    rng = np.random.default_rng(7)
    specials = [0.0, -0.0, math.inf, -math.inf, math.nan, 1e308, 5e-324, 1.0]

    def number() -> float:
        if rng.integers(0, 4) == 0:
            return specials[rng.integers(0, len(specials))]
        return float(rng.standard_normal() * 10.0 ** rng.integers(-300, 300))

    for _ in range(2000):
        values = dict(step=abs(number()), analytic=number(), numerical=number(), largest_value=abs(number()))
        values.update(
            jitter=abs(number()), gain=abs(number()), scale=abs(number()), consistent=bool(rng.integers(0, 2))
        )
        epsilon = [2.0**-52, 2.0**-23, 2.0**-7][rng.integers(0, 3)]
        one = estimate_of(**values, epsilon=epsilon)
        with np.errstate(all="ignore"):
            column = estimate_columns(**values, epsilons=epsilon).estimate(())
        assert repr(one) == repr(column), values  # repr: NaN fields compare equal, -0.0 differs from 0.0
