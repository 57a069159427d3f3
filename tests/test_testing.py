"""assert_gradients: the pytest helper and its failure table."""

import math
import subprocess
import sys

import numpy as np
import pytest

from gradcheck_cli import GradientProblem, check_gradients
from gradcheck_cli.errors import AtParameter, UnknownOption, UnsupportedDtype
from gradcheck_cli.testing import MAX_ROWS, assert_gradients, failure_table


def squares_and_corners(parameters):
    return float(np.sum(parameters["x"] ** 2) + np.sum(np.abs(parameters["k"])))


def test_a_passing_check_returns_its_report():
    x = np.array([1.0, 2.0, 3.0])
    report = assert_gradients(lambda p: float(np.sum(p["x"] ** 2)), {"x": x}, {"x": 2 * x})
    assert report.passed and report.checked == 3


def test_the_failure_message_is_a_table_of_the_failing_coordinates():
    # x²: the numerical derivative at 3 is 6 (symmetric spacings, exact for a quadratic), so candidate 5
    # has scale 6 and scaled error 1/6 = 1.667e-01; the default step there is 3·6.055e-6 = 1.817e-05.
    # |k| at 0: slopes −1 and 1, numerical 0; candidate 0.5 lies between them: a suspected kink,
    # scaled error |0.5 − 0|/1 = 5.000e-01, spacing 6.055e-06 (the default step at |θ| < 1).
    parameters = {"x": np.array([1.0, 2.0, 3.0]), "k": np.array([0.0, 1.0])}
    gradients = {"x": np.array([2.0, 4.0, 5.0]), "k": np.array([0.5, 1.0])}
    with pytest.raises(AssertionError) as caught:
        assert_gradients(squares_and_corners, parameters, gradients)
    # Each row is at the step the verdict rests on: the one with the smallest error bar of h, h/10
    # and 10h (here 10h: 1.817e-04 and 6.055e-05; 100h, tried for the kink, is kept only when it
    # passes), relative error |a − n| / max(|a|, |n|).
    lines = str(caught.value).splitlines()
    # The diagnosis comes first: x fails at x[2] only, and there 5 = 0.8333 × 6.
    assert lines.pop(1) == (
        "x: localized at element 2: only element 2 fails and the rest passes (there analytic = 0.8333 × numerical): "
        "an indexing or broadcasting slip there"
    )
    assert lines[:5] == [
        "gradient check failed: 1 of 5 coordinates failed, 1 of 5 were inconclusive and a directional test did "
        "not pass in x, k",
        "",
        "parameter  coordinate  verdict               analytic  numerical  relative error  error bar       step",
        "x          [2]         failed                       5          6       1.667e-01  7.334e-11  1.817e-04",
        "k          [0]         kink, between slopes       0.5          0       1.000e+00  2.200e-10  6.055e-05",
    ]
    assert lines[6:8] == [
        "x: float64, step ε^(1/3)·max(1, |θ|), tolerance 6.055e-06, kink tolerance 2.461e-03",
        "k: float64, step ε^(1/3)·max(1, |θ|), tolerance 6.055e-06, kink tolerance 2.461e-03",
    ]
    assert lines[8].startswith("x directional test: failed; analytic ")
    assert lines[9].startswith("k directional test: suspected kink; ")
    assert lines[10] == (
        "suspected kink: the one-sided slopes disagree (a corner, a step too large for the curvature, "
        "or rounding); it never counts as evidence that the gradient is right"
    )


def test_a_kink_outside_the_slopes_and_an_explicit_step_are_shown():
    with pytest.raises(AssertionError) as caught:
        assert_gradients(lambda p: float(np.sum(np.abs(p["k"]))), {"k": np.zeros(1)}, {"k": np.array([2.0])}, step=0.25)
    lines = str(caught.value).splitlines()
    assert lines[3].split()[:4] == ["k", "[0]", "kink,", "outside"]
    # The kink tolerance goes with the step: √0.25 = 0.5, still far below the slopes' gap 2.
    assert lines[5] == "k: float64, step 2.500e-01, tolerance 6.055e-06, kink tolerance 5.000e-01"


def test_an_impure_objective_is_explained_even_when_every_comparison_passes():
    calls = []

    def stateful(parameters):
        calls.append(1)
        # Drifts by 1e-13 per coordinate: far too little to move a comparison past its tolerance.
        return float(np.sum(parameters["x"] ** 2)) + 1e-13 * (len(calls) // 3)

    x = np.array([1.0, 2.0])
    with pytest.raises(AssertionError) as caught:
        assert_gradients(stateful, {"x": x}, {"x": 2 * x})
    message = str(caught.value)
    # every comparison passed, and x is named all the same: on a stateful f it is inconclusive
    assert message.splitlines()[0] == "gradient check inconclusive: the objective is nondeterministic or stateful in x"
    assert message.splitlines()[-1].startswith(
        "the objective is nondeterministic or stateful: f(θ) took 4 different values in 4 evaluations"
    )


def test_long_tables_are_cut_short():
    x = np.arange(1.0, 31.0)
    report = check_gradients(lambda p: float(np.sum(p["x"] ** 2)), {"x": x}, {"x": 3 * x}, samples="all")
    lines = failure_table(report).splitlines()
    assert MAX_ROWS == 20
    assert lines[0] == "gradient check failed: 30 of 30 coordinates failed and a directional test did not pass in x"
    assert len([line for line in lines if line.startswith("x  ")]) == 20
    assert "... and 10 more" in lines
    assert failure_table(report, max_rows=2).splitlines()[6] == "... and 28 more"  # after the diagnosis line


def test_a_bad_request_is_a_typed_error_not_an_assertion():
    with pytest.raises(AtParameter) as caught:
        assert_gradients(np.sum, {"x": np.ones(2, dtype=np.int32)}, {"x": np.ones(2)})
    assert isinstance(caught.value.source, UnsupportedDtype)


def test_every_option_of_the_api_and_a_problem_too():
    from gradcheck_cli.check.options import OPTION_NAMES

    x = np.array([1.0, 2.0])
    seen = []
    report = assert_gradients(
        lambda p: float(np.sum(p["x"] ** 2)),
        {"x": x},
        {"x": 2 * x},
        samples="all",
        seed=3,
        progress=lambda done, total: seen.append(done),
    )
    assert report.passed and seen[0] == 0  # progress, like every option, reaches the check
    assert assert_gradients(GradientProblem(lambda p: float(np.sum(p["x"] ** 2)), {"x": x}, {"x": 2 * x})).passed
    with pytest.raises(UnknownOption, match="assert_gradients|check_gradients"):
        assert_gradients(lambda p: 0.0, {"x": x}, {"x": x}, sampels=2)
    assert "progress" in OPTION_NAMES and "seed" in OPTION_NAMES


def test_pytest_shows_the_table_and_hides_the_helper_frame(tmp_path):
    # Run the helper inside a real pytest session: the report carries the table, not our frame.
    test_file = tmp_path / "test_user_backward.py"
    test_file.write_text(
        "import numpy as np\n"
        "from gradcheck_cli.testing import assert_gradients\n"
        "def test_backward():\n"
        "    x = np.array([1.0, 2.0])\n"
        "    assert_gradients(lambda p: float(np.sum(p['x'] ** 2)), {'x': x}, {'x': x})\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert result.returncode == 1
    failure_lines = [line[1:].strip() for line in result.stdout.splitlines() if line.startswith("E ")]
    assert failure_lines[0] == (
        "AssertionError: gradient check failed: 2 of 2 coordinates failed and a directional test did not pass in x"
    )
    assert failure_lines[1].startswith("x: scale ×0.5: analytic = 0.5 × numerical at every failing coordinate")
    assert failure_lines[4].split()[:5] == ["x", "[0]", "failed", "1", "2"]
    assert "report = check_gradients(" not in result.stdout


def test_the_project_checks_its_own_nll_gradient_with_the_helper():
    # The helper in use: the chapter's hand-derived NLL gradient on a larger random batch.
    from gradcheck_cli.chapter.nll import hand_derived_nll_gradient, indexed_mean_nll

    rng = np.random.default_rng(13)
    logits = rng.normal(size=(7, 11))
    targets = rng.integers(0, 11, size=7)
    report = assert_gradients(
        lambda p: indexed_mean_nll(p["logits"], targets),
        {"logits": logits},
        {"logits": hand_derived_nll_gradient(logits, targets)},
        samples="all",
    )
    assert report.checked == 77 and max(
        record.comparison.scaled_error for record in report.parameters[0].checks
    ) < math.sqrt(report.parameters[0].tolerance)


def test_the_helper_imports_no_rich_and_no_click():
    code = "import sys, gradcheck_cli.testing\nassert not {'rich', 'click'} & set(sys.modules), sorted(sys.modules)\n"
    subprocess.run([sys.executable, "-c", code], check=True)
