"""`gradcheck check`, `gradcheck taylor`, `scan --advise` and `--plot`: the commands for a user's own code.

Every run goes through click's CliRunner with stdout and stderr kept apart,
except the Ctrl-C tests, which need a real process and a real SIGINT.
Expected output is computed by calling the library on the same problem
(``load_problem`` + ``check_problem`` / ``check_taylor`` / ``advise_step``),
never copied from the command's own output.
"""

import io
import json
import os
import re
import select
import signal
import subprocess
import sys
import textwrap
import time
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
from click.testing import CliRunner

from extras import require
from gradcheck_cli import check
from gradcheck_cli.advice.steps import advise_problem_steps, advise_step
from gradcheck_cli.chapter import fixtures
from gradcheck_cli.check import check_problem
from gradcheck_cli.cli.app import EXIT_BAD_INPUT, EXIT_CANDIDATE_FAILED, EXIT_INTERRUPTED, EXIT_OK, main
from gradcheck_cli.core import formatting
from gradcheck_cli.display import chapter_lines, output, render
from gradcheck_cli.display.progress import ProgressBar
from gradcheck_cli.engine.dtypes import probe_dtype
from gradcheck_cli.errors.command_line import ObjectiveRaised
from gradcheck_cli.problem import load_problem
from gradcheck_cli.taylor.remainder import check_taylor

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
MLP = f"{EXAMPLES / 'mlp.py'}:problem"
WRONG_MLP = f"{EXAMPLES / 'mlp.py'}:wrong_problem"
ATTENTION = f"{EXAMPLES / 'attention.py'}:problem"
WRONG_ATTENTION = f"{EXAMPLES / 'attention.py'}:wrong_problem"
MLP_FLOAT32 = f"{EXAMPLES / 'mlp_float32.py'}:problem"
WRONG_MLP_FLOAT32 = f"{EXAMPLES / 'mlp_float32.py'}:wrong_problem"


def invoke(*arguments, env=None):
    runner = CliRunner(env={"NO_COLOR": "1", "COLUMNS": None, **(env or {})})
    return runner.invoke(main, list(arguments), prog_name="gradcheck", catch_exceptions=False)


def lines(result):
    return result.stdout.splitlines()


def parse_strictly(text):
    def reject(token):
        raise ValueError(f"non-strict JSON token {token}")

    return json.loads(text, parse_constant=reject)


#: What names the line of the user's code that raised, at the end of its exception's message.
USER_LOCATION = re.compile(r" \(at [^()]+\.py:\d+ in [\w<>.]+\)$")


def without_user_location(text: str) -> str:
    """``text`` without the `` (at mymodel.py:41 in loss)`` that ends a user exception's line."""
    return USER_LOCATION.sub("", text)


def assert_one_line_error(result, message, json_error=None):
    assert result.exit_code == EXIT_BAD_INPUT
    stderr = result.stderr
    if "(at " not in message and ("raised" in message):  # the user's code raised: its line is named
        assert USER_LOCATION.search(stderr.rstrip("\n")), stderr
        stderr = without_user_location(stderr.rstrip("\n")) + "\n"
    assert stderr == f"Error: {message}\n"
    assert "Traceback" not in result.stdout + result.stderr
    if json_error is None:
        assert result.stdout == ""
    else:
        assert parse_strictly(result.stdout) == {"error": json_error}


def write_problem(directory: Path, source: str, name: str = "problem.py") -> Path:
    path = directory / name
    path.write_text(textwrap.dedent(source))
    return path


# A problem file with every way a user's problem can go wrong, one function each.
PROBLEMS = """
import numpy as np

from gradcheck_cli import GradientProblem


def squares(w):
    return float(np.sum(w["w"] ** 2))


def correct():
    w = np.array([0.5, -1.5, 2.0])
    return GradientProblem(squares, {"w": w}, {"w": 2 * w})


def as_tuple():
    w = np.array([0.5, -1.5, 2.0])
    return squares, {"w": w}, {"w": 2 * w}


def off_by_one():
    w = np.array([0.5, -1.5, 2.0])
    return GradientProblem(squares, {"w": w}, {"w": 2 * w + np.array([0.0, 1.0, 0.0])})


def corner():
    # |w₀| + (w₁ − 1)² at (0, 1): at w₀ the symmetric estimate is 0, so the analytic 0 "agrees"
    # (the chapter's false pass), but the one-sided slopes are exactly -1 and 1; w₁ is smooth.
    w = np.array([0.0, 1.0])
    return GradientProblem(lambda p: float(abs(p["w"][0]) + (p["w"][1] - 1.0) ** 2), {"w": w}, {"w": np.zeros(2)})


def stateful():
    w = np.array([0.5, -1.5, 2.0])
    calls = []

    def objective(p):
        calls.append(1)
        return squares(p) + 1e-9 * len(calls)

    return GradientProblem(objective, {"w": w}, {"w": 2 * w})


def step_function():
    # sign(w) at 0 jumps at every step h > 0: the Taylor remainder does not shrink, so no verdict.
    w = np.zeros(2)
    return GradientProblem(lambda p: float(np.sum(np.sign(p["w"]))), {"w": w}, {"w": np.zeros(2)})


def raising():
    w = np.array([0.5, -1.5, 2.0])

    def objective(p):
        if p["w"][0] != 0.5:
            raise ZeroDivisionError("no probes, please")
        return squares(p)

    return GradientProblem(objective, {"w": w}, {"w": 2 * w})


def broken():
    raise RuntimeError("cannot build the model")


def not_a_problem():
    return 42


def shape_mismatch():
    w = np.ones(3)
    return GradientProblem(squares, {"w": w}, {"w": np.ones((1, 3))})


def integers():
    w = np.arange(3)
    return GradientProblem(squares, {"w": w}, {"w": 2 * w})


def nan_parameter():
    w = np.array([0.5, np.nan])
    return GradientProblem(squares, {"w": w}, {"w": 2 * w})


def nan_objective():
    w = np.array([0.5, -1.5])
    return GradientProblem(lambda p: float("nan"), {"w": w}, {"w": 2 * w})


def vector_objective():
    w = np.array([0.5, -1.5])
    return GradientProblem(lambda p: p["w"] * 2, {"w": w}, {"w": 2 * w})


def numpy_scalar():
    return GradientProblem(lambda p: float(p["w"]) ** 2, {"w": np.float64(3.0)}, {"w": np.float64(6.0)})


def exits():
    w = np.array([0.5, -1.5])

    def objective(p):
        raise SystemExit(3)

    return GradientProblem(objective, {"w": w}, {"w": 2 * w})


class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("cannot be described")


def unprintable():
    w = np.array([0.5, -1.5])

    def objective(p):
        raise Unprintable()

    return GradientProblem(objective, {"w": w}, {"w": 2 * w})


def chatty():
    print("building the model")
    w = np.array([0.5, -1.5, 2.0])

    def objective(p):
        print("loss computed")
        return squares(p)

    return GradientProblem(objective, {"w": w}, {"w": 2 * w})


def offset():
    # 1e7 + 1e-3·Σw²: at h the rounding of f hides the gradient 1e-3, so the coordinates go on at 10h and 100h
    w = np.array([0.5, -1.5])
    return GradientProblem(lambda p: 1e7 + 1e-3 * float(np.sum(p["w"] ** 2)), {"w": w}, {"w": 2e-3 * w})


not_callable = 3
"""


@pytest.fixture(scope="module")
def problems(tmp_path_factory):
    """``reference("correct")`` → ``"<dir>/problems.py:correct"``."""
    path = write_problem(tmp_path_factory.mktemp("problems"), PROBLEMS, "problems.py")
    return lambda function: f"{path}:{function}"


# ------------------------------------------------------------------- check


@pytest.mark.parametrize(
    "reference, status, failing",
    [
        (MLP, EXIT_OK, []),
        (WRONG_MLP, EXIT_CANDIDATE_FAILED, ["W2"]),
        (ATTENTION, EXIT_OK, []),
        (WRONG_ATTENTION, EXIT_CANDIDATE_FAILED, ["X", "gamma", "beta", "Wk"]),
        (MLP_FLOAT32, EXIT_OK, []),
        (WRONG_MLP_FLOAT32, EXIT_CANDIDATE_FAILED, ["W2"]),
    ],
)
def test_check_exits_0_or_1_and_names_the_failing_parameters(reference, status, failing):
    result = invoke("check", reference)
    assert (result.exit_code, result.stderr) == (status, "")
    names = "[" + ", ".join(f'"{name}"' for name in failing) + "]"
    assert lines(result)[-1].startswith("check: checked=")
    verdict = "passed" if status == EXIT_OK else "failed"
    assert f" failing_parameters={names} " in lines(result)[-1]
    assert lines(result)[-1].endswith(f" verdict={verdict} pass={'true' if status == EXIT_OK else 'false'}")


def test_check_json_is_the_reports_to_dict():
    expected = check_problem(load_problem(WRONG_MLP))
    result = invoke("check", WRONG_MLP, "--json")
    assert result.exit_code == EXIT_CANDIDATE_FAILED
    assert parse_strictly(result.stdout) == {"check": expected.to_dict()}


@pytest.mark.parametrize("reference, status", [(MLP, EXIT_OK), (WRONG_MLP, EXIT_CANDIDATE_FAILED)])
def test_check_fast_is_the_fast_reports_json_and_text(reference, status):
    expected = check_problem(load_problem(reference), fast=True)
    result = invoke("check", reference, "--fast", "--json")
    assert (result.exit_code, result.stderr) == (status, "")
    assert parse_strictly(result.stdout) == {"check": expected.to_dict()}
    text = lines(invoke("check", reference, "--fast"))
    # a parameter that passed its directional test has no coordinate: its line shows the test's relative error
    passed = expected.parameters[0].directional.estimates[0].relative_error
    assert text[0] == (
        "W1: verdict=passed dtype=float64 shape=[5, 6] checked=0 failed=0 inconclusive=0 directional=passed "
        f"relative_error={chapter_lines.error_text(passed)}"
    )
    assert text[-1].endswith(
        f"evaluations={expected.evaluations} verdict={expected.verdict} pass={'true' if status == EXIT_OK else 'false'}"
    )


def test_check_text_prints_every_coordinate_with_the_shared_renderer():
    report = check_problem(load_problem(WRONG_MLP))
    output = lines(invoke("check", WRONG_MLP, "--verbose"))
    for parameter in report.parameters:
        for record in parameter.checks:
            label = f"{parameter.name}{formatting.rust_list(record.coordinate)}"
            block = [*render.coordinate_check_lines(label, record)]
            start = output.index(block[0])
            assert output[start : start + len(block)] == block
            verdicts = [line for line in output[start:] if line.startswith(f"{label} verdict: ")]
            assert verdicts[0] == f"{label} verdict: {record.verdict}; {record.reason}"
    # W2's analytic gradient is 8× the true one (the batch size): where |analytic| > 1 the scale is
    # |analytic|, so the scaled error is |8n − n| / |8n| = 1 − 1/8, up to the estimate's own error.
    candidates = [line for line in output if line.startswith("W2[") and " candidate: " in line]
    large = [line for line in candidates if abs(float(re.search(r"analytic=(\S+)", line).group(1))) > 1.0]
    assert large, "the example's W2 gradient has no entry above 1 any more"
    for candidate in large:
        scaled_error = float(re.search(r"scaled_error=(\S+)", candidate).group(1))
        assert scaled_error == pytest.approx(0.875, abs=1e-9)
    assert output[-1] == (
        'check: checked=42 failed=16 inconclusive=0 failing_parameters=["W2"] evaluations=164 verdict=failed pass=false'
    )


def test_check_prints_a_header_a_directional_test_and_the_purity(problems):
    output = lines(invoke("check", problems("correct"), "--verbose"))
    float64_tolerance, float64_kink = "6.055454452393e-6", "2.460783300576e-3"
    assert output[0] == (
        "parameter w: dtype=float64 shape=[3] selection=structured requested_samples=16 step=default "
        f"tolerance={float64_tolerance} kink_tolerance={float64_kink}"
    )
    assert "w directional: elements=3 moved=6" in output
    assert any(line.startswith("w directional verdict: passed; relative error ") for line in output)
    assert "w check: checked=3 failed=0 verdict=passed pass=true" in output
    # f(θ) at the start, after coordinates 1 and 2 and at the end: 3 coordinates, 3 directions... 1 + 2·3 + 2 + 2 + 1.
    assert output[-2:] == [
        "purity: pure=true stateful=false evaluations=4 distinct=1 spread=0.000000000000e0; "
        "all 4 evaluations of f(θ) are bit-identical",
        "check: checked=3 failed=0 inconclusive=0 failing_parameters=[] evaluations=12 verdict=passed pass=true",
    ]


def test_check_accepts_the_tuple_form_too(problems):
    assert invoke("check", problems("as_tuple")).stdout == invoke("check", problems("correct")).stdout


def test_a_wrong_coordinate_fails_with_exit_1(problems):
    result = invoke("check", problems("off_by_one"), "--verbose")
    assert result.exit_code == EXIT_CANDIDATE_FAILED
    assert any(line.startswith("w[1] verdict: failed; ") for line in lines(result))
    assert any(line.startswith("w[0] verdict: passed; ") for line in lines(result))


def test_a_suspected_kink_is_a_failure_with_its_slopes_and_where_the_analytic_lies(problems):
    result = invoke("check", problems("corner"), "--verbose")
    assert result.exit_code == EXIT_CANDIDATE_FAILED
    output = lines(result)
    # The comparison itself passes (0 against 0): the chapter's false pass, caught by the slopes.
    assert output[3].startswith("w[0] candidate: analytic=0.000000000000 scaled_error=0.000000000000e0")
    assert output[3].endswith("pass=true")
    assert output[4] == (
        "w[0] one-sided slopes: left=-1.000000000000 right=1.000000000000 scaled_gap=2.000000000000e0 "
        "tolerance=2.460783300576e-3 consistent=false"
    )
    # h/10 and 10h are tried too (and 100h, which only a pass would keep): the slopes disagree by the
    # same jump at every step, so it stays a suspected kink.
    assert [line.split(":")[0] for line in output[5:7]] == [
        "w[0] step=6.05545445239334308e-7",
        "w[0] step=6.05545445239334269e-5",
    ]
    assert output[7].startswith(
        "w[0] verdict: suspected kink, analytic between the one-sided slopes (consistent with a subgradient); "
        "the one-sided slopes disagree at every step tried"
    )
    # The direction crosses the corner too: its slopes ∓|Δ₀| disagree beside ‖ĝ∘Δ‖₂ (ĝ₀ = 1, the
    # corner's slope), so it is confirmed at 0.1, 10 and 100 (6 calls) and stays a suspected kink.
    assert any(line.startswith("w directional verdict: suspected kink;") for line in output)
    assert output[-1] == (
        'check: checked=2 failed=0 inconclusive=1 failing_parameters=["w"] evaluations=26 verdict=inconclusive '
        "pass=false"
    )


def test_a_stateful_objective_is_inconclusive_whatever_its_comparisons(problems):
    result = invoke("check", problems("stateful"))
    assert result.exit_code == EXIT_CANDIDATE_FAILED
    purity = next(line for line in lines(result) if line.startswith("purity: "))
    assert purity.startswith("purity: pure=false stateful=true evaluations=4 ")
    assert "; the objective is nondeterministic or stateful: f(θ) took " in purity
    assert lines(result)[-1].endswith(" verdict=inconclusive pass=false")


@pytest.mark.parametrize(
    "arguments, checked",
    [
        (["--samples", "all"], 30 + 6 + 24 + 4),
        (["--samples", "2"], 2 + 2 + 2 + 2),
        (["--samples", "all", "--param", "b2", "--param", "W1"], 30 + 4),
        (["--param", "W2"], 16),
    ],
)
def test_samples_and_param_choose_the_coordinates(arguments, checked):
    document = parse_strictly(invoke("check", MLP, *arguments, "--json").stdout)
    assert document["check"]["checked"] == checked


def test_param_keeps_the_problems_order_and_the_json_matches_the_library():
    options = {"samples": "all", "names": ["b2", "b1"]}
    expected = check_problem(load_problem(MLP), **options)
    result = invoke("check", MLP, "--samples", "all", "--param", "b2", "--param", "b1", "--json")
    assert parse_strictly(result.stdout) == {"check": expected.to_dict()}
    assert [parameter.name for parameter in expected.parameters] == ["b1", "b2"]


def test_step_and_tolerance_apply_to_every_coordinate():
    expected = check_problem(load_problem(WRONG_MLP), step=1e-4, tolerance=1e-9, names=["b2"])
    result = invoke("check", WRONG_MLP, "--param", "b2", "--step", "1e-4", "--tolerance", "1e-9", "--json")
    assert parse_strictly(result.stdout) == {"check": expected.to_dict()}
    assert lines(invoke("check", WRONG_MLP, "--param", "b2", "--step", "1e-4", "--verbose"))[0].startswith(
        "parameter b2: dtype=float64 shape=[4] selection=structured requested_samples=16 step=1.00000000000000005e-4 "
    )


def test_step_auto_checks_each_parameter_at_its_advised_step_and_a_matching_kink_tolerance():
    problem = load_problem(ATTENTION)
    advice = advise_problem_steps(problem, names=["Wq", "Wv"])
    expected = check_problem(load_problem(ATTENTION), step="auto", names=["Wq", "Wv"], samples=3)
    result = invoke("check", ATTENTION, "--step", "auto", "--param", "Wq", "--param", "Wv", "--samples", "3", "--json")
    assert result.exit_code == EXIT_OK
    document = parse_strictly(result.stdout)
    # One document: the advice travels inside the report, once.
    assert document == {"check": expected.to_dict()}
    assert document["check"]["step_advice"] == advice.to_dict()
    for parameter in document["check"]["parameters"]:
        assert parameter["step"] == advice.steps[parameter["name"]]
        for record in parameter["checks"]:
            # Each coordinate's kink test goes with the advised step (and that coordinate's θ).
            expected_tolerance = check.kink_tolerance_for_step(
                advice.steps[parameter["name"]], record["difference"]["theta"], "float64"
            )
            assert record["kink"]["slopes"]["tolerance"] == expected_tolerance


def test_step_auto_passes_a_parameter_the_loss_is_quadratic_in():
    # The loss is quadratic in Wv and Wo (no third derivative), so each is advised one of the largest
    # steps tried (6.2e-3 at the edge, or 3.1e-3): their Richardson truncation estimates are the rounding
    # of f's last bits, which differ with the matrix kernel the CPU runs (numpy 1.24's AVX-512 OpenBLAS
    # advises 3.1e-3); each is below four rounding floors, and the floors double at every halving. At the
    # default kink tolerance ε^(1/6) = 2.46e-3 its curvature, |f″|·h, would be taken for a kink. The
    # matched tolerance √h ≈ 0.056-0.079 is not.
    advice = advise_problem_steps(load_problem(ATTENTION), names=["Wv"]).parameters[0].advice
    largest = [estimate.requested_step for estimate in advice.estimates[:2]]
    assert advice.advised_step in largest and advice.advised_step > 1e-3
    first = advice.estimates[0]
    assert first.truncation_estimate < 4 * first.rounding_floor  # no third derivative to measure: rounding
    at_default = check_problem(
        load_problem(ATTENTION),
        step={"Wv": advice.advised_step},
        kink_tolerance=probe_dtype("float64").kink_tolerance,
        names=["Wv"],
    )
    # At the advised step the curvature looks like a kink; the confirmation at h/10 resolves it.
    suspected = [record for check in at_default.parameters for record in check.checks if record.kink.suspected]
    assert suspected and all(record.verdict == "passed" and record.decided_at > 0 for record in suspected)
    result = invoke("check", ATTENTION, "--step", "auto")
    assert result.exit_code == EXIT_OK


def test_step_auto_prints_one_advice_line_per_parameter_before_the_check():
    output = lines(invoke("check", MLP, "--step", "auto", "--samples", "1", "--verbose"))
    advice_lines = [line for line in output if line.startswith("step advice ")]
    assert [line.split(":")[0] for line in advice_lines] == [f"step advice {name}" for name in ("W1", "b1", "W2", "b2")]
    assert output[:4] == advice_lines
    advice = advise_problem_steps(load_problem(MLP)).parameters[2]
    assert advice_lines[2].startswith(f"step advice W2: coordinate={formatting.rust_list(advice.coordinate)} point=")
    assert f" advised_step={formatting.rust_exp(advice.advice.advised_step, 17)} " in advice_lines[2]


def test_a_package_module_reference_loads_from_the_current_directory(tmp_path, monkeypatch):
    package = tmp_path / "userpkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    write_problem(package, PROBLEMS, "model.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    try:
        result = invoke("check", "userpkg.model:correct")
    finally:
        for name in [name for name in sys.modules if name == "userpkg" or name.startswith("userpkg.")]:
            del sys.modules[name]
    assert result.exit_code == EXIT_OK
    assert lines(result)[-1] == (
        "check: checked=3 failed=0 inconclusive=0 failing_parameters=[] evaluations=12 verdict=passed pass=true"
    )


# ------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "function, message",
    [
        (
            "no_such_function",
            "{path} has no function no_such_function; its functions are squares, correct, as_tuple, off_by_one, "
            "corner, stateful, step_function, raising, broken, not_a_problem, shape_mismatch, integers, nan_parameter, "
            "nan_objective, vector_objective, numpy_scalar, exits, unprintable, chatty, offset",
        ),
        ("not_callable", "{path}:not_callable must be callable, got int"),
        ("broken", "{path}:broken() raised RuntimeError: cannot build the model"),
        (
            "not_a_problem",
            "expected a GradientProblem or (objective, parameters, gradients) from {path}:not_a_problem(), "
            "got a value of type int",
        ),
        ("shape_mismatch", "parameter 'w': parameter shape [3] does not match analytic-gradient shape [1, 3]"),
        (
            "integers",
            "parameter 'w': parameters array has dtype int64; expected float64, float32, float16, bfloat16, "
            "complex128 or complex64; the nearest is float64: pass .astype('float64')",
        ),
        (
            "nan_parameter",
            "parameter 'w': gradient check at coordinate [1] failed: gradient-check point NaN must be finite",
        ),
        ("nan_objective", "the objective of {path}:nan_objective: center function evaluation returned NaN"),
        (
            "vector_objective",
            "the objective of {path}:vector_objective: center function evaluation must return one real number, "
            "got ndarray of shape (2,)",
        ),
        (
            "numpy_scalar",
            "parameter 'w': parameters must be a numpy array, got the numpy scalar {scalar}, which cannot be "
            "probed in place: np.array(3.0) is a 0-d array that can",
        ),
        ("raising", "the objective of {path}:raising raised ZeroDivisionError: no probes, please"),
    ],
)
def test_a_bad_problem_is_one_line_and_exit_2(problems, function, message):
    import numpy as np

    reference = problems(function)
    path = reference.rsplit(":", 1)[0]
    scalar = repr(np.float64(3.0))  # the scalar's repr: np.float64(3.0) from numpy 2 on, 3.0 before
    assert_one_line_error(invoke("check", reference), message.format(path=path, scalar=scalar))


def test_an_exception_from_the_objective_is_a_typed_error_in_json(problems):
    reference = problems("raising")
    result = invoke("check", reference, "--json")
    location = USER_LOCATION.search(result.stderr.rstrip("\n")).group(0)
    error = ObjectiveRaised(reference=reference, error="ZeroDivisionError: no probes, please" + location)
    assert_one_line_error(result, str(error), error.to_dict())
    assert error.to_dict()["kind"] == "ObjectiveRaised"


@pytest.mark.parametrize("command", ["check", "taylor"])
def test_an_objective_that_exits_or_cannot_describe_its_error_is_still_one_line(problems, command):
    exits, unprintable = problems("exits"), problems("unprintable")
    assert_one_line_error(invoke(command, exits), f"the objective of {exits} raised SystemExit: 3")
    assert_one_line_error(invoke(command, unprintable), f"the objective of {unprintable} raised Unprintable")


@pytest.mark.parametrize("command", ["check", "taylor"])
def test_what_the_users_code_prints_goes_to_stderr_so_json_stays_one_document(problems, command):
    result = invoke(command, problems("chatty"), "--json")
    assert result.exit_code == EXIT_OK
    assert list(parse_strictly(result.stdout)) == [command]
    assert result.stderr.startswith("building the model\nloss computed\n")
    assert set(result.stderr.splitlines()) == {"building the model", "loss computed"}


def test_an_exception_from_the_objective_during_step_advice_or_taylor_is_the_same_error(problems):
    reference = problems("raising")
    message = f"the objective of {reference} raised ZeroDivisionError: no probes, please"
    assert_one_line_error(invoke("check", reference, "--step", "auto"), message)
    assert_one_line_error(invoke("taylor", reference), message)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["examples/no_such_file.py:problem"], "problem file examples/no_such_file.py does not exist"),
        (["no_such_module_anywhere:problem"], "problem module no_such_module_anywhere cannot be found"),
        (
            [str(EXAMPLES / "mlp.py")],
            f"problem '{EXAMPLES / 'mlp.py'}' must be FILE.py:FUNCTION or package.module:FUNCTION",
        ),
        (
            [],
            "Missing argument 'PROBLEM'. Name it FILE.py:FUNCTION or package.module:FUNCTION, e.g. gradcheck check examples/line.py:problem",
        ),
        ([MLP, "--samples", "0"], "Invalid value for '--samples': '0' is neither a positive whole number nor \"all\""),
        (
            [MLP, "--samples", "-3"],
            "Invalid value for '--samples': '-3' is neither a positive whole number nor \"all\"",
        ),
        (
            [MLP, "--samples", "1.5"],
            "Invalid value for '--samples': '1.5' is neither a positive whole number nor \"all\"",
        ),
        (
            [MLP, "--samples", "ALL"],
            "Invalid value for '--samples': 'ALL' is neither a positive whole number nor \"all\"",
        ),
        ([MLP, "--step", "tiny"], "Invalid value for '--step': 'tiny' is neither a number nor \"auto\""),
        ([MLP, "--step", "0"], "central-difference requested step 0.0 must be positive and finite"),
        ([MLP, "--step", "nan"], "central-difference requested step NaN must be positive and finite"),
        ([MLP, "--tolerance", "-1e-6"], "gradient-check tolerance -1e-6 must be finite and nonnegative"),
        ([MLP, "--param", "W3"], "parameter 'W3' is not one of the problem's parameters ['W1', 'b1', 'W2', 'b2']"),
        (
            [MLP, "--step", "auto", "--param", "W3"],
            "parameter 'W3' is not one of the problem's parameters ['W1', 'b1', 'W2', 'b2']",
        ),
    ],
)
def test_bad_check_input_is_one_line_and_exit_2(arguments, message):
    assert_one_line_error(invoke("check", *arguments), message)


@pytest.mark.parametrize(
    "option, message",
    [
        (("--step", "-1"), "central-difference requested step -1.0 must be positive and finite"),
        (("--tolerance", "nan"), "gradient-check tolerance NaN must be finite and nonnegative"),
        (
            ("--jobs", "-2"),
            "jobs must be a whole number: 0 for one worker per core, 1 (or None) for none, N ≥ 2 for N; or a concurrent.futures.Executor, got -2",
        ),
    ],
)
def test_a_bad_step_tolerance_or_jobs_is_refused_before_the_users_module_runs(tmp_path, option, message):
    marker = tmp_path / "imported"
    path = write_problem(tmp_path, f"open({str(marker)!r}, 'w').close()\n\ndef problem():\n    pass\n")
    assert_one_line_error(invoke("check", f"{path}:problem", *option), message)
    assert not marker.exists()
    invoke("check", f"{path}:problem")
    assert marker.exists()  # the marker works: the module does run when the options are fine


def test_check_with_a_missing_file_and_json_prints_the_error_document():
    result = invoke("check", "examples/no_such_file.py:problem", "--json")
    assert_one_line_error(
        result,
        "problem file examples/no_such_file.py does not exist",
        {
            "kind": "ProblemFileNotFound",
            "path": "examples/no_such_file.py",
            "message": "problem file examples/no_such_file.py does not exist",
        },
    )


# ------------------------------------------------------------------ taylor


PASSED = "taylor verdict: passed (second order) pass=true failing_parameters=[] localization_evaluations=0"
FAILED = "taylor verdict: failed (first order) pass=false failing_parameters={} localization_evaluations={}"


@pytest.mark.parametrize(
    "reference, status, verdict",
    [
        # The wrong examples' localization: 3 subset tests of 42 calls for the MLP, 12 for attention
        # (whose dK error reaches X, γ and β through layer norm), 3 of 21 (float32 steps) for float32.
        (MLP, EXIT_OK, PASSED),
        (WRONG_MLP, EXIT_CANDIDATE_FAILED, FAILED.format('["W2"]', 3 * 42)),
        (ATTENTION, EXIT_OK, PASSED),
        (WRONG_ATTENTION, EXIT_CANDIDATE_FAILED, FAILED.format('["X", "gamma", "beta", "Wk"]', 12 * 42)),
        (MLP_FLOAT32, EXIT_OK, PASSED),
        (WRONG_MLP_FLOAT32, EXIT_CANDIDATE_FAILED, FAILED.format('["W2"]', 3 * 21)),
    ],
)
def test_taylor_passes_correct_examples_and_fails_wrong_ones(reference, status, verdict):
    result = invoke("taylor", reference)
    assert (result.exit_code, result.stderr) == (status, "")
    assert lines(result)[-1] == verdict


def test_taylor_json_is_the_results_to_dict():
    expected = check_taylor(load_problem(WRONG_ATTENTION), names=["Wk"], seed=3)
    result = invoke("taylor", WRONG_ATTENTION, "--param", "Wk", "--seed", "3", "--json")
    assert result.exit_code == EXIT_CANDIDATE_FAILED
    assert parse_strictly(result.stdout) == {"taylor": expected.to_dict()}


def test_taylor_text_is_the_setting_the_points_in_the_fit_the_fit_and_the_verdict():
    result = check_taylor(load_problem(MLP))
    output = lines(invoke("taylor", MLP))
    verbose = lines(invoke("taylor", MLP, "--verbose"))
    in_fit = [line for line in verbose[1:-2] if line.endswith("in_fit=true")]
    assert len(in_fit) == result.fit_points == 5
    assert output == [
        verbose[0],
        *in_fit,
        "taylor steps: 5 of 40 shown, those in the fit (--verbose shows every one)",
        *verbose[-2:],
    ]
    assert output[-1].startswith("taylor verdict: passed (second order) pass=true failing_parameters=[]")


def test_taylor_verbose_text_is_the_setting_every_point_the_fit_and_the_verdict():
    result = check_taylor(load_problem(MLP))
    output = lines(invoke("taylor", MLP, "--verbose"))
    assert len(output) == 1 + len(result.points) + 2
    assert output[0].startswith('taylor: parameters=["W1", "b1", "W2", "b2"] dtypes=["float64", "float64", ')
    assert " direction=splitmix64 seed=0 " in output[0]
    for number, (line, point) in enumerate(zip(output[1:], result.points), start=1):
        assert line.startswith(f"taylor step {number}: step={formatting.rust_exp(point.step, 17)} ")
        assert line.endswith(
            f"state={point.state} usable={str(point.usable).lower()} in_fit={str(point.in_fit).lower()}"
        )
    assert sum(line.endswith("in_fit=true") for line in output) == result.fit_points == 5
    assert output[-2].startswith(f"taylor fit: fit_points=5 order={formatting.rust_fixed(result.order, 12)} ")


def test_another_seed_is_another_direction():
    first, other = (parse_strictly(invoke("taylor", MLP, "--seed", seed, "--json").stdout) for seed in ("0", "1"))
    assert first["taylor"]["seed"] == 0 and other["taylor"]["seed"] == 1
    assert first["taylor"]["directional_derivative"] != other["taylor"]["directional_derivative"]


def test_an_inconclusive_taylor_verdict_exits_1(problems):
    result = invoke("taylor", problems("step_function"))
    assert result.exit_code == EXIT_CANDIDATE_FAILED
    verdict = "taylor verdict: inconclusive (remainder does not shrink) pass=false"
    assert lines(result)[-1] == f"{verdict} failing_parameters=[] localization_evaluations=0"


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["examples/no_such_file.py:problem"], "problem file examples/no_such_file.py does not exist"),
        (
            [f"{EXAMPLES / 'mlp.py'}:problme"],
            f"{EXAMPLES / 'mlp.py'} has no function problme (did you mean 'problem'?); its functions are "
            "make_model, forward, backward, build, problem, wrong_problem, main",
        ),
        ([MLP, "--param", "W3"], "parameter 'W3' is not one of the problem's parameters ['W1', 'b1', 'W2', 'b2']"),
        ([MLP, "--seed", "one"], "Invalid value for '--seed': 'one' is not a valid integer."),
        ([MLP, "--plot", "remainder.pdf"], "plot file 'remainder.pdf' must end in .png or .svg"),
        (
            [],
            "Missing argument 'PROBLEM'. Name it FILE.py:FUNCTION or package.module:FUNCTION, e.g. gradcheck taylor examples/line.py:problem",
        ),
    ],
)
def test_bad_taylor_input_is_one_line_and_exit_2(arguments, message):
    assert_one_line_error(invoke("taylor", *arguments), message)


# ------------------------------------------------------------ scan --advise


def test_scan_advise_adds_the_advice_to_json():
    result = invoke("scan", "--advise", "--json")
    assert result.exit_code == EXIT_OK
    assert parse_strictly(result.stdout) == {
        "scan": [record.to_dict() for record in fixtures.cubic_step_scan()],
        "advice": advise_step(fixtures.cubic, fixtures.CUBIC_POINT).to_dict(),
    }


def test_scan_advise_prints_every_step_its_regime_and_the_advised_step():
    advice = advise_step(fixtures.cubic, fixtures.CUBIC_POINT)
    output = lines(invoke("scan", "--advise"))
    assert output[: 6 * 4] == lines(invoke("scan"))
    estimates = [line for line in output if re.match(r"advice step \d+ estimate: ", line)]
    assert [line.rsplit("regime=", 1)[1] for line in estimates] == [estimate.regime for estimate in advice.estimates]
    assert [line.rsplit("regime=", 1)[1] for line in estimates].count("advised") == 1
    assert output[-1].startswith("advice: point=1.500000000000 dtype=float64 ")
    assert f" advised_step={formatting.rust_exp(advice.advised_step, 17)} " in output[-1]
    assert output[-1].endswith(" advised_at_edge=false deterministic=true")


def test_scan_advise_at_another_point_advises_there():
    document = parse_strictly(invoke("scan", "--point", "-0.5", "--advise", "--json").stdout)
    assert document["advice"] == advise_step(fixtures.cubic, -0.5).to_dict()


# ------------------------------------------------------------------ tables


def test_the_check_table_has_one_table_per_parameter_and_the_summary():
    table = invoke("check", WRONG_MLP, "--format", "table").stdout
    for name, shape in (("W1", "[5, 6]"), ("b1", "[6]"), ("W2", "[6, 4]"), ("b2", "[4]")):
        assert f"{name}: float64 {shape}, " in table
    assert sum(line.rstrip().endswith(" failed") for line in table.splitlines()) == 16  # W2's verdict cells
    assert table.count("✗") == 1  # the summary line
    assert "✗ failed: 16 of 42 coordinates failed and a directional test did not pass in W2" in table
    assert "8.75×10⁻¹" in table


def test_every_number_of_a_check_table_row_comes_from_the_step_its_verdict_rests_on(problems):
    report = parse_strictly(invoke("check", problems("offset"), "--json").stdout)["check"]
    table = invoke("check", problems("offset"), "--format", "table").stdout
    for record in report["parameters"][0]["checks"]:
        assert record["decided_at"] > 0  # its numbers are at another step than h
        decided = record["estimates"][record["decided_at"]]
        row = next(
            line for line in table.splitlines() if line.strip().startswith(formatting.rust_list(record["coordinate"]))
        )
        assert formatting.rust_debug(decided["step"]) in row
        assert formatting.rust_debug(record["difference"]["actual_h_minus"]) not in row  # h's spacing: another step


def test_the_check_table_marks_a_kink(problems):
    assert "kink, between slopes" in invoke("check", problems("corner"), "--format", "table").stdout


def test_the_step_auto_table_shows_the_advice():
    table = invoke("check", MLP, "--step", "auto", "--samples", "1", "--format", "table").stdout
    assert "Step advice (--step auto)" in table


def test_the_taylor_table_has_the_points_the_chart_and_the_verdict():
    table = invoke("taylor", WRONG_MLP, "--format", "table").stdout
    assert "◆" in table and "● usable" in table and "┤" in table
    last = table.rstrip().splitlines()[-1]
    localized = r"; wrong: W2 \(3 subset tests, 126 extra objective calls\)"
    verdict = re.fullmatch(r"failed: first order, fitted order (\S+) over 5 points" + localized, last)
    assert abs(float(verdict.group(1)) - 1.0) < 0.25  # the library's fail band, 0.75 to 1.25


def test_the_scan_table_shows_the_text_chart_with_the_advice():
    plain = invoke("scan", "--format", "table").stdout
    advised = invoke("scan", "--advise", "--format", "table").stdout
    assert "●" in plain and "┤" in plain and "◆" not in plain.split("● scaled error")[0]
    assert "○" in advised and "◆" in advised and "Step advice for g(θ) = θ³ − 2θ" in advised


# ------------------------------------------------------------------- plots

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_image(path: Path, suffix: str):
    data = path.read_bytes()
    if suffix == ".png":
        assert data.startswith(PNG_SIGNATURE) and data[12:16] == b"IHDR"
    else:
        assert ElementTree.fromstring(data).tag == "{http://www.w3.org/2000/svg}svg"


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_scan_plot_writes_a_valid_image_and_still_prints_the_results(tmp_path, suffix):
    require("matplotlib")
    path = tmp_path / f"scan{suffix}"
    result = invoke("scan", "--advise", "--plot", str(path))
    assert result.exit_code == EXIT_OK
    assert result.stderr == f"wrote {path}\n"
    assert result.stdout == invoke("scan", "--advise").stdout
    assert_image(path, suffix)


@pytest.mark.parametrize("suffix", [".png", ".SVG"])
def test_taylor_plot_writes_a_valid_image(tmp_path, suffix):
    require("matplotlib")
    path = tmp_path / f"remainder{suffix}"
    result = invoke("taylor", WRONG_MLP, "--plot", str(path), "--json")
    assert result.exit_code == EXIT_CANDIDATE_FAILED
    assert list(parse_strictly(result.stdout)) == ["taylor"]
    assert_image(path, suffix.lower())


def test_a_plot_suffix_is_checked_before_any_work(monkeypatch, tmp_path):
    def must_not_run(*arguments, **keywords):
        raise AssertionError("the scan ran although --plot was refused")

    monkeypatch.setattr(fixtures, "cubic_step_scan", must_not_run)
    assert_one_line_error(
        invoke("scan", "--plot", str(tmp_path / "scan.pdf")),
        f"plot file '{tmp_path / 'scan.pdf'}' must end in .png or .svg",
    )
    result = invoke("scan", "--plot", str(tmp_path / "scan"), "--json")
    error = {
        "kind": "UnsupportedPlotFormat",
        "path": str(tmp_path / "scan"),
        "message": f"plot file '{tmp_path / 'scan'}' must end in .png or .svg",
    }
    assert_one_line_error(result, error["message"], error)


def test_without_matplotlib_a_plot_is_one_line_and_no_work(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # what an uninstalled package looks like to import
    monkeypatch.setattr(fixtures, "cubic_step_scan", lambda *arguments: pytest.fail("the scan ran"))
    message = "plotting needs matplotlib, which is not installed: pip install matplotlib (make install installs it, the plot extra)"
    assert_one_line_error(invoke("scan", "--plot", str(tmp_path / "scan.png")), message)
    assert_one_line_error(invoke("taylor", MLP, "--plot", str(tmp_path / "remainder.svg")), message)
    assert list(tmp_path.iterdir()) == []


def test_a_plot_that_cannot_be_written_is_one_line_and_exit_2(tmp_path):
    require("matplotlib")
    path = tmp_path / "no" / "such" / "directory" / "scan.png"
    assert_one_line_error(
        invoke("scan", "--plot", str(path)), f"--plot file '{path}' cannot be written: No such file or directory"
    )


# ---------------------------------------------------------- progress bar


class Terminal(io.StringIO):
    def isatty(self):
        return True


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_the_progress_bar_waits_for_the_delay_then_draws_and_removes_itself():
    clock, stream = Clock(), Terminal()
    with ProgressBar("checking coordinates", stream, delay=1.0, clock=clock) as progress:
        progress(0, 10)
        clock.now += 0.99
        progress(4, 10)
        assert stream.getvalue() == ""  # a check shorter than the delay draws nothing
        clock.now += 0.01
        progress(5, 10)
        assert "checking coordinates" in stream.getvalue() and "5/10" in stream.getvalue()
        assert progress.bar.tasks[0].completed == 5
    assert progress.bar is None
    assert stream.getvalue().endswith("\x1b[2K")  # transient: the bar's line is erased at the end


def test_the_progress_bar_never_draws_when_stderr_is_not_a_terminal(monkeypatch):
    # A 50 s check: no bar (no escape, no carriage return), plain lines instead (issue 30).
    monkeypatch.delenv("GRADCHECK_ANNOUNCE_SECONDS", raising=False)
    clock, stream = Clock(), io.StringIO()
    with ProgressBar("checking coordinates", stream, delay=0.0, clock=clock) as progress:
        for done in range(11):
            clock.now += 5.0
            progress(done, 10)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("checking coordinates: 10 coordinates to probe") and len(lines) == 5
    assert "\x1b" not in stream.getvalue() and "\r" not in stream.getvalue()


def test_a_check_on_a_non_terminal_prints_nothing_on_stderr():
    # CliRunner's stderr is no terminal; the check still reports progress to the bar.
    result = invoke("check", MLP, "--samples", "all")
    assert (result.exit_code, result.stderr) == (EXIT_OK, "")


# ---------------------------------------------------------------- Ctrl-C

SLOW_PROBLEM = """
import os
import time

import numpy as np

from gradcheck_cli import GradientProblem

STARTED = {started!r}


def slow():
    w = np.linspace(-1.0, 1.0, 5000)

    def objective(parameters):
        if not os.path.exists(STARTED):
            open(STARTED, "w").close()
        time.sleep(0.002)
        return float(np.sum(parameters["w"] ** 2))

    return GradientProblem(objective, {{"w": w}}, {{"w": 2.0 * w}})
"""

posix_only = pytest.mark.skipif(os.name != "posix", reason="SIGINT to a child process and ptys need POSIX")


def _slow_check(tmp_path, stderr):
    started = tmp_path / "started"
    path = write_problem(tmp_path, SLOW_PROBLEM.format(started=str(started)), "slow.py")
    env = {
        **os.environ,
        "NO_COLOR": "1",
        "TERM": "xterm",
        "COLUMNS": "100",
        "GRADCHECK_ANNOUNCE_SECONDS": "inf",
    }  # Ctrl-C's line alone
    command = [sys.executable, "-m", "gradcheck_cli", "check", f"{path}:slow", "--samples", "all"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr)
    return process, started


def _wait_for(condition, process):
    deadline = time.monotonic() + 60.0  # a safety net against a hung test, not a timing assertion
    while not condition():
        assert process.poll() is None, "the check ended before it could be interrupted"
        assert time.monotonic() < deadline, "the check never got going"
        time.sleep(0.01)


@posix_only
def test_ctrl_c_in_a_pipe_exits_130_with_one_line_and_no_output(tmp_path):
    process, started = _slow_check(tmp_path, subprocess.PIPE)
    try:
        _wait_for(started.exists, process)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == EXIT_INTERRUPTED
    assert (stdout, stderr) == (b"", b"Error: interrupted\n")


@posix_only
def test_ctrl_c_on_a_terminal_removes_the_progress_bar_then_prints_one_line(tmp_path):
    import pty

    controller, terminal = pty.openpty()
    process, _ = _slow_check(tmp_path, terminal)
    os.close(terminal)
    seen = bytearray()

    def bar_is_drawn():
        if select.select([controller], [], [], 0.05)[0]:
            seen.extend(os.read(controller, 65536))
        return b"checking coordinates" in seen and b"/5000" in seen

    try:
        _wait_for(bar_is_drawn, process)  # 15000 calls of at least 2 ms: the bar shows after 1 s
        process.send_signal(signal.SIGINT)
        stdout, _ = process.communicate(timeout=60)
        while select.select([controller], [], [], 0.2)[0]:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # the terminal's other end closed
                break
            if not chunk:
                break
            seen.extend(chunk)
    finally:
        if process.poll() is None:
            process.kill()
        os.close(controller)
    assert process.returncode == EXIT_INTERRUPTED
    assert stdout == b""
    # The bar is transient: its line is erased, and the message is the last line on the terminal.
    before, message = bytes(seen).rsplit(b"\x1b[2K", 1)
    assert message.replace(b"\r", b"").lstrip(b"\n") == b"Error: interrupted\n"
    assert b"Traceback" not in seen


# ------------------------------------------------------------ torch example


def test_the_torch_example_checks_through_numpy_views():
    require("torch")
    reference = f"{EXAMPLES / 'torch_mlp.py'}"
    assert invoke("check", f"{reference}:problem").exit_code == EXIT_OK
    wrong = invoke("check", f"{reference}:wrong_problem")
    assert wrong.exit_code == EXIT_CANDIDATE_FAILED
    assert (
        lines(wrong)[-1].endswith(" verdict=failed pass=false")
        and 'failing_parameters=["out.bias"]' in lines(wrong)[-1]
    )
    assert invoke("taylor", f"{reference}:wrong_problem").exit_code == EXIT_CANDIDATE_FAILED


def test_the_default_report_is_short_and_says_what_is_wrong():
    result = invoke("check", WRONG_MLP)
    output = lines(result)
    assert result.exit_code == EXIT_CANDIDATE_FAILED
    assert len(output) <= 15 and max(len(line) for line in output) <= 160
    assert any(line.startswith("W2 diagnosis: scale ×8: ") for line in output)
    # Only the coordinates that did not pass, at most three per parameter, then a count.
    assert [line.split(":")[0] for line in output if line.startswith("W2[")] == ["W2[0, 0]", "W2[0, 2]", "W2[0, 3]"]
    assert "W2: 13 more coordinates did not pass (--verbose shows every one)" in output
    assert not any(line.startswith(("W1[", "b1[", "b2[")) for line in output)
    assert output[-1].endswith(" verdict=failed pass=false")


RAISING = """
import numpy as np
from gradcheck_cli import GradientProblem


def loss(parameters):
    if parameters["w"][0] != 0.5:  # at the first probe
        raise ValueError("boom")
    return float(np.sum(parameters["w"] ** 2))


def problem():
    w = np.array([0.5, 1.0])
    return GradientProblem(loss, {"w": w}, {"w": 2 * w})


def broken():
    return helper()


def helper():
    raise RuntimeError("cannot build")
"""


@pytest.mark.parametrize("command", ["check", "taylor"])
def test_the_users_exception_names_the_users_file_and_line(tmp_path, monkeypatch, command):
    (tmp_path / "mymodel.py").write_text(RAISING)
    monkeypatch.chdir(tmp_path)
    result = invoke(command, "mymodel.py:problem")
    assert result.exit_code == EXIT_BAD_INPUT and result.stdout == ""
    # Line 8 of the file is the raise (the file starts with an empty line).
    assert result.stderr == (
        "Error: the objective of mymodel.py:problem raised ValueError: boom (at mymodel.py:8 in loss)\n"
    )
    built = invoke(command, "mymodel.py:broken")
    assert built.stderr == "Error: mymodel.py:broken() raised RuntimeError: cannot build (at mymodel.py:22 in helper)\n"


def test_traceback_prints_the_users_frames_in_full_and_still_ends_with_the_one_line(tmp_path, monkeypatch):
    (tmp_path / "mymodel.py").write_text(RAISING)
    monkeypatch.chdir(tmp_path)
    result = invoke("check", "mymodel.py:broken", "--traceback", "--json")
    assert result.exit_code == EXIT_BAD_INPUT
    assert json.loads(result.stdout)["error"]["kind"] == "ProblemFunctionRaised"
    stderr = result.stderr.splitlines()
    assert stderr[0] == "Traceback of your code (most recent call last):"
    assert stderr[1] == f'  File "{tmp_path / "mymodel.py"}", line 18, in broken'
    assert [line for line in stderr if line.startswith("  File ")][-1].endswith(", line 22, in helper")
    assert "gradcheck_cli" not in result.stderr  # only the user's frames
    assert stderr[-2:] == [
        "RuntimeError: cannot build",
        "Error: mymodel.py:broken() raised RuntimeError: cannot build (at mymodel.py:22 in helper)",
    ]
    objective = invoke("check", "mymodel.py:problem", "--traceback").stderr.splitlines()
    assert objective[1:3] == [f'  File "{tmp_path / "mymodel.py"}", line 8, in loss', '    raise ValueError("boom")']


# ------------------------------------------------------------------ streamed output


def test_an_output_longer_than_the_threshold_is_streamed_and_identical(monkeypatch):
    whole = {fmt: invoke("check", MLP, "--samples", "all", *flags) for fmt, flags in _STREAMED_FORMATS}
    monkeypatch.setattr(output, "STREAM_THRESHOLD", 1000)
    from gradcheck_cli.cli import app as cli

    streams, stream = [], cli._stream
    monkeypatch.setattr(cli, "_stream", lambda *arguments: streams.append(1) or stream(*arguments))
    for fmt, flags in _STREAMED_FORMATS:
        streamed = invoke("check", MLP, "--samples", "all", *flags)
        assert streamed.exit_code == whole[fmt].exit_code == 0
        assert len(whole[fmt].stdout) > 40_000  # streamed in 40-odd pieces
        assert streamed.stdout == whole[fmt].stdout, fmt
    assert len(streams) == 2
    parse_strictly(whole["json"].stdout)
    failing = invoke("check", WRONG_MLP, "--samples", "all", "--json")
    assert failing.exit_code == 1, (failing.stdout[-300:], failing.stderr)
    assert json.loads(failing.stdout)["check"]["verdict"] == "failed"


_STREAMED_FORMATS = [("json", ["--json"]), ("verbose", ["--verbose"])]


@pytest.mark.skipif(os.name != "posix", reason="pipes and /dev/full are POSIX notions")
def test_a_streamed_output_to_a_closed_reader_or_a_full_disk_is_141_or_74():
    program = (
        "import sys; from gradcheck_cli.display import output; output.STREAM_THRESHOLD = 1000; "
        "from gradcheck_cli.cli import main; sys.argv[0] = 'gradcheck'; main()"
    )
    command = [sys.executable, "-c", program, "check", MLP, "--samples", "all", "--json"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ})
    with process:
        assert process.stdout.read(10) == b'{\n  "check'
        process.stdout.close()
        assert process.wait(timeout=120) == 141 and process.stderr.read() == b""
    if os.path.exists("/dev/full"):
        with open("/dev/full", "w") as full:
            result = subprocess.run(command, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
        assert result.returncode == 74
        assert result.stderr.strip() == "Error: cannot write the results to stdout: No space left on device"


# ------------------------------------------------------------------ sample PROBLEM


@pytest.mark.parametrize(
    "options",
    [[], ["--samples", "3"], ["--samples", "5", "--sampler", "chapter"], ["--param", "W2", "--samples", "2"]],
)
def test_sample_shows_the_coordinates_check_probes(options):
    shown = parse_strictly(invoke("sample", MLP, *options, "--json").stdout)["sample"]
    checked = parse_strictly(invoke("check", MLP, *options, "--json").stdout)["check"]["parameters"]
    assert [entry["name"] for entry in shown] == [parameter["name"] for parameter in checked]
    for entry, parameter in zip(shown, checked):
        assert entry["coordinates"] == [
            {"flat_index": check["flat_index"], "coordinate": check["coordinate"]} for check in parameter["checks"]
        ]
        assert (entry["selection"], entry["requested_samples"]) == (
            parameter["selection"],
            parameter["requested_samples"],
        )


@pytest.mark.parametrize(
    "arguments, message",
    [
        ([MLP, "--shape", "2,3"], "--shape and PROBLEM exclude each other: give one"),
        (["--shape", "2,3", "--sampler", "chapter"], "--sampler needs PROBLEM: the sampler alone takes --shape"),
        (["--shape", "2,3", "--param", "W1"], "--param needs PROBLEM: the sampler alone takes --shape"),
        ([MLP, "--param", "W3"], "parameter 'W3' is not one of the problem's parameters ['W1', 'b1', 'W2', 'b2']"),
    ],
)
def test_bad_sample_input_is_one_line_and_exit_2(arguments, message):
    assert_one_line_error(invoke("sample", *arguments), message)


@pytest.mark.parametrize(
    "arguments",
    [
        ["quadratic"],
        ["check", MLP],
        ["check", MLP, "--json"],
        ["check", MLP, "--bogus"],
        ["check", "nowhere.py:f", "--json"],
    ],
)
def test_a_command_leaves_no_file_open_for_the_interpreter_to_warn_of(arguments):
    # Under PYTHONWARNINGS=error the interpreter's teardown reports a stream still open (ResourceWarning)
    # on stderr: the results' private duplicate of stdout is closed once the results are written.
    environment = {**os.environ, "PYTHONWARNINGS": "error", "NO_COLOR": "1"}
    command = [sys.executable, "-m", "gradcheck_cli", *arguments]
    result = subprocess.run(command, env=environment, capture_output=True, timeout=120, check=False)
    assert result.returncode in (EXIT_OK, EXIT_BAD_INPUT)
    assert result.stdout or result.stderr
    assert b"ResourceWarning" not in result.stderr and b"Exception ignored" not in result.stderr
