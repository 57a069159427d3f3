"""The `gradcheck` command: exact output, exit statuses, help, and bad input that never crashes.

Every run goes through click's CliRunner with stdout and stderr kept apart.
Expected chapter lines are the chapter's printed output (acceptance data);
expected JSON is the library's own ``to_dict()``, computed here by calling
the library, never copied from the command's output.
"""

import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import click
import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from gradcheck_cli import __version__
from gradcheck_cli.chapter import fixtures, nll, scan
from gradcheck_cli.cli.app import (
    EXIT_BAD_INPUT,
    EXIT_CANDIDATE_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    CommandLineError,
    GradcheckGroup,
    Report,
    exit_status,
    main,
    output_options,
    run,
)
from gradcheck_cli.display import output, render, tables
from gradcheck_cli.engine.estimator import scalar_gradient_check
from gradcheck_cli.errors import GradCheckError, InvalidStep

ROOT = Path(__file__).resolve().parent.parent
SUBCOMMANDS = main.list_commands(None)
#: The smallest valid argument list of each subcommand.
MINIMAL_ARGUMENTS = {
    "sample": ["--shape", "2,3"],
    "check": [str(ROOT / "examples" / "mlp.py") + ":problem"],
    "taylor": [str(ROOT / "examples" / "mlp.py") + ":problem"],
}

# The chapter's printed demo output, byte for byte.
CHAPTER_QUADRATIC = (
    "quadratic: theta=3.000000000000 requested_h=1.00000000000000006e-1 actual_h_minus=1.00000000000000089e-1 "
    "actual_h_plus=1.00000000000000089e-1 f_minus=8.410000000000 f_center=9.000000000000 f_plus=9.610000000000 "
    "left_slope=5.900000000000 right_slope=6.100000000000 left_weight=5.00000000000000000e-1 "
    "right_weight=5.00000000000000000e-1 numerical=6.000000000000"
)
CHAPTER_WRONG = (
    "wrong candidate: analytic=5.500000000000 scaled_error=8.333333333333e-2 tolerance=1.000000000000e-6 pass=false"
)
CHAPTER_NLL = "nll logits: shape=[2, 3] values=[0.0, 1.0, -1.0, 2.0, 0.0, -2.0] targets=[0, 2] loss=2.775268796472"
CHAPTER_COORDINATES = "sampled coordinates: [[0, 0], [0, 1], [1, 0], [1, 2]]"
CHAPTER_RESTORED = "tensor restored exactly: true"
CHAPTER_LINES = [CHAPTER_QUADRATIC, CHAPTER_WRONG, CHAPTER_NLL, CHAPTER_COORDINATES, CHAPTER_RESTORED]


def invoke(*arguments, env=None):
    runner = CliRunner(env={"NO_COLOR": "1", "COLUMNS": None, **(env or {})})
    return runner.invoke(main, list(arguments), prog_name="gradcheck", catch_exceptions=False)


def lines(result):
    return result.stdout.splitlines()


def in_order(expected, actual):
    positions = [actual.index(line) for line in expected]
    return positions == sorted(positions)


def assert_one_line_error(result, message):
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr == f"Error: {message}\n"
    assert "Traceback" not in result.stdout + result.stderr


# ------------------------------------------------------------ chapter lines


def test_demo_prints_the_chapters_five_lines_in_order():
    result = invoke("demo")
    assert result.exit_code == EXIT_OK
    assert result.stderr == ""
    assert in_order(CHAPTER_LINES, lines(result))


def test_demo_runs_every_record_in_the_chapters_order():
    labels = [line.split(":")[0] for line in lines(invoke("demo"))]
    first = {label: labels.index(label) for label in labels}
    order = ["quadratic", "wrong candidate", "identity", "kink", "scan step 1", "nll logits", "rejected zero step"]
    assert [first[label] for label in order] == sorted(first[label] for label in order)


def test_demo_prints_the_chapters_rejected_requests():
    assert lines(invoke("demo"))[-4:] == [
        "rejected zero step: central-difference requested step 0.0 must be positive and finite",
        "rejected step leaves the point unchanged: minus perturbation from point 1.0 by step 1e-20 "
        "rounds back to the point",
        "rejected non-finite objective value: minus function evaluation returned NaN",
        "rejected shape mismatch: parameter shape [2] does not match analytic-gradient shape [1, 2]",
    ]


def test_quadratic_prints_its_chapter_lines():
    result = invoke("quadratic")
    assert result.exit_code == EXIT_OK
    assert lines(result) == [
        CHAPTER_QUADRATIC,
        # The probes print as Rust's {:?}: the chapter's figure writes them θ₋ = 2.9 and θ₊ = 3.1.
        "quadratic probes: theta_minus=2.9 theta_plus=3.1 stencil=symmetric",
        "correct candidate: analytic=6.000000000000 scaled_error=0.000000000000e0 "
        "tolerance=1.000000000000e-6 pass=true",
        CHAPTER_WRONG,
    ]


def test_nll_prints_its_chapter_lines():
    result = invoke("nll")
    assert result.exit_code == EXIT_OK
    assert in_order([CHAPTER_NLL, CHAPTER_COORDINATES, CHAPTER_RESTORED], lines(result))
    assert "sampled flat offsets: [0, 1, 3, 5]" in lines(result)


def test_scan_labels_the_chapters_six_regimes():
    regimes = [line.split(": ", 1)[1] for line in lines(invoke("scan")) if " regime: " in line]
    assert regimes == ["truncation", "truncation", "converging", "trusted range", "rounding", "rounding"]


def test_scan_prints_the_chapters_best_and_rounded_records():
    output = lines(invoke("scan"))
    assert (
        "scan step 4 candidate: analytic=4.750000000000 scaled_error=2.103583973678e-11 "
        "tolerance=1.000000000000e-6 pass=true"
    ) in output
    step_6 = next(line for line in output if line.startswith("scan step 6: "))
    assert "left_slope=4.400000000000 right_slope=5.200000000000" in step_6
    assert step_6.endswith(" numerical=4.800000000000")


def test_identity_shows_unequal_spacings_and_an_estimate_of_one():
    first, probes, candidate = lines(invoke("identity"))
    assert "requested_h=1.33226762955018780e-16" in first
    assert "actual_h_minus=1.11022302462515654e-16 actual_h_plus=2.22044604925031308e-16" in first
    assert first.endswith("numerical=1.000000000000")
    # fl(1 − h) = 1 − 2⁻⁵³ and fl(1 + h) = 1 + 2⁻⁵²: {:.12} would print both as 1.000000000000.
    assert probes == "identity probes: theta_minus=0.9999999999999999 theta_plus=1.0000000000000002 stencil=unequal"
    assert candidate.endswith("pass=true")


def test_kink_shows_the_false_pass_and_the_disagreeing_slopes():
    output = lines(invoke("kink"))
    assert output[2] == (
        "kink candidate: analytic=0.000000000000 scaled_error=0.000000000000e0 tolerance=1.000000000000e-12 pass=true"
    )
    assert output[3] == (
        "kink one-sided slopes: left=-1.000000000000 right=1.000000000000 scaled_gap=2.000000000000e0 "
        "tolerance=1.000000000000e-12 consistent=false"
    )


def test_sample_answers_for_a_shape_far_larger_than_memory():
    # N = 10¹⁸, S = 4: flats ⌊k(N−1)/3⌋ = 0, 333…3 (18 threes), 666…6, 10¹⁸−1;
    # coordinates are divmod(flat, 10⁶).
    result = invoke("sample", "--shape", "1000000000000,1000000")
    assert result.exit_code == EXIT_OK
    assert lines(result) == [
        "sampled flat offsets: [0, 333333333333333333, 666666666666666666, 999999999999999999]",
        "sampled coordinates: [[0, 0], [333333333333, 333333], [666666666666, 666666], [999999999999, 999999]]",
    ]


def test_sample_accepts_the_shape_as_printed_in_brackets():
    assert invoke("sample", "--shape", "[2, 3]").stdout == invoke("sample", "--shape", "2,3").stdout


# --------------------------------------------------------------------- JSON


def test_quadratic_json_is_the_librarys_to_dict():
    checks = [fixtures.quadratic_gradient_check(candidate) for candidate in (6.0, 5.5)]
    result = invoke("quadratic", "--json")
    assert result.exit_code == EXIT_OK
    assert json.loads(result.stdout) == {"quadratic": [check.to_dict() for check in checks]}


def test_demo_json_holds_every_section_from_to_dict():
    document = json.loads(invoke("demo", "--json").stdout)
    assert list(document) == ["quadratic", "identity", "kink", "scan", "nll", "rejected"]
    assert document["scan"] == [record.to_dict() for record in fixtures.cubic_step_scan()]
    assert document["kink"] == fixtures.absolute_kink_diagnostic().to_dict()
    assert document["nll"] == nll.nll_gradient_check().to_dict()
    assert document["rejected"]["step_leaves_point_unchanged"] == fixtures.collapsed_step_error().to_dict()


def test_json_holds_the_schema_the_issue_names():
    document = json.loads(invoke("demo", "--format", "json").stdout)
    assert set(document["quadratic"][0]) == {"difference", "comparison"}
    assert set(document["scan"][0]) == {"regime", "requested_step", "check", "error"}
    assert {"shape", "requested_samples", "pass", "checks"} <= set(document["nll"]["check"])


def test_sample_json_is_the_samplers_to_dict():
    from gradcheck_cli.engine.tensors import sample_tensor_coordinates

    expected = [sample.to_dict() for sample in sample_tensor_coordinates((4, 5), 3)]
    assert json.loads(invoke("sample", "--shape", "4,5", "--max-samples", "3", "--json").stdout) == {"sample": expected}


def test_json_floats_round_trip_bit_exactly():
    stdout = invoke("scan", "--json").stdout
    parsed = json.loads(stdout)
    for record, expected in zip(parsed["scan"], fixtures.cubic_step_scan()):
        for name, value in expected.check.difference.to_dict().items():
            if isinstance(value, float):
                assert record["check"]["difference"][name].hex() == value.hex()


def test_write_json_refuses_nan_and_writes_non_finite_floats_as_strings():
    stream = io.StringIO()
    output.write_json({"value": math.nan, "values": [math.inf, -math.inf, 0.5]}, stream)
    assert json.loads(stream.getvalue()) == {"value": "NaN", "values": ["inf", "-inf", 0.5]}


def _parse_strictly(text):
    def reject(token):
        raise ValueError(token)

    return json.loads(text, parse_constant=reject)


@settings(max_examples=60)
@given(
    point=st.floats(allow_nan=True, allow_infinity=True, width=64),
    step=st.floats(allow_nan=True, allow_infinity=True, width=64),
)
def test_quadratic_json_matches_the_library_for_any_point_and_step(point, step):
    result = invoke("quadratic", f"--point={point!r}", f"--step={step!r}", "--analytic", "1.5", "--json")
    try:
        check = fixtures.quadratic_gradient_check(1.5, point, step)
    except GradCheckError as error:
        assert result.exit_code == EXIT_BAD_INPUT
        assert _parse_strictly(result.stdout) == {"error": error.to_dict()}
        assert result.stderr == f"Error: {error}\n"
    else:
        assert result.exit_code == (EXIT_OK if check.comparison.passed else EXIT_CANDIDATE_FAILED)
        assert _parse_strictly(result.stdout) == {"quadratic": [check.to_dict()]}


# ------------------------------------------------------------- exit status


@pytest.mark.parametrize(
    "arguments, status",
    [
        (["demo"], EXIT_OK),
        (["quadratic"], EXIT_OK),  # the chapter's wrong candidate is a demonstration
        (["scan"], EXIT_OK),  # so are the failing scan steps
        (["quadratic", "--analytic", "6"], EXIT_OK),
        (["quadratic", "--analytic", "6", "--analytic", "5.5"], EXIT_CANDIDATE_FAILED),
        (["quadratic", "--point", "2", "--analytic", "4"], EXIT_OK),
        (["quadratic", "--point", "2", "--analytic", "6"], EXIT_CANDIDATE_FAILED),
        (["quadratic", "--step", "0"], EXIT_BAD_INPUT),
        (["sample", "--shape", "2,3"], EXIT_OK),
        (["quadratic", "--no-such-option"], EXIT_BAD_INPUT),
    ],
)
def test_exit_status(arguments, status):
    assert invoke(*arguments).exit_code == status


def test_exit_status_is_decided_in_one_place():
    assert exit_status(Report(())) == EXIT_OK
    assert exit_status(Report((), (True, True))) == EXIT_OK
    assert exit_status(Report((), (True, False))) == EXIT_CANDIDATE_FAILED
    assert exit_status(InvalidStep(step=0.0)) == EXIT_BAD_INPUT
    assert exit_status(click.UsageError("bad")) == EXIT_BAD_INPUT
    assert exit_status(click.Abort()) == EXIT_INTERRUPTED


def test_nll_exits_1_when_a_users_gradient_fails(tmp_path):
    logits = nll.chapter_logits()
    wrong = nll.hand_derived_nll_gradient(logits, np.array(nll.TARGETS)) * 2.0  # missing 1/rows
    path = tmp_path / "gradient.npy"
    np.save(path, wrong)
    result = invoke("nll", "--analytic", str(path))
    assert result.exit_code == EXIT_CANDIDATE_FAILED
    assert "nll analytic path: user-supplied" in lines(result)
    assert "nll check: shape=[2, 3] requested_samples=4 pass=false" in lines(result)


def test_nll_exits_0_when_a_users_correct_gradient_passes(tmp_path):
    logits = nll.chapter_logits()
    path = tmp_path / "gradient.json"
    path.write_text(json.dumps(nll.hand_derived_nll_gradient(logits, np.array(nll.TARGETS)).tolist()))
    result = invoke("nll", "--analytic", str(path))
    assert result.exit_code == EXIT_OK
    assert "nll check: shape=[2, 3] requested_samples=4 pass=true" in lines(result)


# ---------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["quadratic", "--step", "0"], "central-difference requested step 0.0 must be positive and finite"),
        (["quadratic", "--step=-0.1"], "central-difference requested step -0.1 must be positive and finite"),
        (["identity", "--step", "nan"], "central-difference requested step NaN must be positive and finite"),
        (["kink", "--step", "inf"], "central-difference requested step inf must be positive and finite"),
        (["quadratic", "--point", "nan"], "gradient-check point NaN must be finite"),
        (["scan", "--point", "-inf"], "gradient-check point -inf must be finite"),
        (["quadratic", "--tolerance", "-1e-6"], "gradient-check tolerance -1e-6 must be finite and nonnegative"),
        (["kink", "--tolerance", "nan"], "gradient-check tolerance NaN must be finite and nonnegative"),
        (["quadratic", "--analytic", "inf"], "analytic gradient inf must be finite"),
        (
            ["quadratic", "--point", "1", "--step", "1e-20"],
            "minus perturbation from point 1.0 by step 1e-20 rounds back to the point; "
            "a step of at least 1.1102230246251568e-16 moves both probes",
        ),
        (["scan", "--steps", "1e-1,0"], "central-difference requested step 0.0 must be positive and finite"),
        (
            ["scan", "--steps", "1,,1e-3"],
            "Invalid value for '--steps': '' in '1,,1e-3' is not a number; "
            "expected comma-separated numbers like 1,1e-1,1e-3",
        ),
        (
            ["scan", "--steps", "tiny"],
            "Invalid value for '--steps': 'tiny' is not a number; expected comma-separated numbers like 1,1e-1,1e-3",
        ),
        (
            ["scan", "--steps", ""],
            "Invalid value for '--steps': '' is empty; expected comma-separated numbers like 1,1e-1,1e-3",
        ),
        (
            ["sample", "--shape", "2,x"],
            "Invalid value for '--shape': 'x' in '2,x' is not a whole number; "
            "expected comma-separated whole numbers like 2,3",
        ),
        (
            ["sample", "--shape", "2.5"],
            "Invalid value for '--shape': '2.5' is not a whole number; expected comma-separated whole numbers like 2,3",
        ),
        (["sample", "--shape", "2,-3"], "tensor shape [2, -3] must contain only nonnegative whole numbers"),
        (["sample", "--shape", "3,0"], "sampled tensor gradient check needs at least one value"),
        (["sample", "--shape", "2,3", "--max-samples", "0"], "sampled tensor gradient check needs at least one sample"),
        (
            ["sample", "--shape", "1000000000000,1000000000000"],
            "sampled tensor shape overflows a signed 64-bit element count",
        ),
        (["sample"], "Missing option '--shape'."),
        (["nll", "--targets", "0,3"], "targets row 1 target 3 is not a class in 0..2"),
        (["nll", "--targets", "0"], "targets need one class per row: 2 rows, got 1 targets"),
        (
            ["nll", "--targets", "0,two"],
            "Invalid value for '--targets': 'two' in '0,two' is not a whole number; "
            "expected comma-separated whole numbers like 2,3",
        ),
        (["nll", "--step", "0"], "central-difference requested step 0.0 must be positive and finite"),
        (
            ["nll", "--logits", "no/such/logits.npy"],
            "Invalid value for '--logits': File 'no/such/logits.npy' does not exist.",
        ),
        (["quadratic", "--json", "--format", "text"], "--json conflicts with --format text; choose one output format"),
        (
            ["quadratic", "--format", "xml"],
            "Invalid value for '--format': 'xml' is not one of 'text', 'json', 'table'.",
        ),
        (["quadratic", "--step", "small"], "Invalid value for '--step': 'small' is not a valid float."),
        (["quadratic", "--stp", "1"], "No such option '--stp'. Did you mean '--step'?"),
        (["scan", "--pont", "1.5"], "No such option '--pont'. (Did you mean one of: '--plot', '--point'?)"),
        (["check", "--zzz", "1"], "No such option '--zzz'."),
        (["quadratic", "--step"], "Option '--step' requires an argument."),
        (["quadratically"], "No such command 'quadratically'. Did you mean 'quadratic'?"),
    ],
)
def test_bad_input_is_one_line_on_stderr_and_exit_2(arguments, message):
    result = invoke(*arguments)
    assert_one_line_error(result, message)
    assert result.stdout == ""


def test_a_rejected_request_with_json_prints_the_errors_to_dict():
    result = invoke("quadratic", "--step", "0", "--json")
    assert_one_line_error(result, "central-difference requested step 0.0 must be positive and finite")
    assert _parse_strictly(result.stdout) == {"error": InvalidStep(step=0.0).to_dict()}


def test_a_malformed_option_with_json_prints_a_command_line_error():
    # --json comes last on the command line, yet it is settled before --steps is read.
    result = invoke("scan", "--steps", "1,x", "--json")
    message = (
        "Invalid value for '--steps': 'x' in '1,x' is not a number; expected comma-separated numbers like 1,1e-1,1e-3"
    )
    assert_one_line_error(result, message)
    assert _parse_strictly(result.stdout) == {"error": CommandLineError(option="--steps", problem=message).to_dict()}


@pytest.mark.parametrize(
    "arguments, option, message",
    [
        (["quadratic", "--json", "--stp", "1"], None, "No such option '--stp'. Did you mean '--step'?"),
        (["kink", "--json", "--step"], None, "Option '--step' requires an argument."),
        (
            ["check", "--format=json"],
            "PROBLEM",
            "Missing argument 'PROBLEM'. Name it FILE.py:FUNCTION or package.module:FUNCTION, e.g. gradcheck check examples/line.py:problem",
        ),
    ],
)
def test_a_usage_error_found_while_parsing_is_json_too_when_json_is_asked_for(arguments, option, message):
    # click stops at an unknown option before any option callback runs; the words still ask for JSON.
    result = invoke(*arguments)
    assert (result.exit_code, result.stderr) == (EXIT_BAD_INPUT, f"Error: {message}\n")
    assert _parse_strictly(result.stdout) == {"error": CommandLineError(option=option, problem=message).to_dict()}


def test_json_as_the_value_of_another_option_does_not_ask_for_json():
    result = invoke("kink", "--step", "--json")
    assert (result.exit_code, result.stdout) == (EXIT_BAD_INPUT, "")
    assert result.stderr == "Error: Invalid value for '--step': '--json' is not a valid float.\n"


def test_a_shape_mismatch_is_rejected_with_both_shapes(tmp_path):
    path = tmp_path / "gradient.json"
    path.write_text("[[0.1, 0.2, 0.3]]")
    result = invoke("nll", "--analytic", str(path), "--json")
    assert_one_line_error(result, "parameter shape [2, 3] does not match analytic-gradient shape [1, 3]")
    assert _parse_strictly(result.stdout)["error"] == {
        "kind": "GradientShapeMismatch",
        "parameters": [2, 3],
        "analytic": [1, 3],
        "message": "parameter shape [2, 3] does not match analytic-gradient shape [1, 3]",
    }


def test_conflicting_format_flags_are_rejected_before_any_work(monkeypatch):
    def must_not_run(*arguments, **keywords):
        raise AssertionError("the library ran although the command line was rejected")

    monkeypatch.setattr(fixtures, "quadratic_gradient_check", must_not_run)
    result = invoke("quadratic", "--step", "not-a-number", "--format", "table", "--json")
    assert_one_line_error(result, "--json conflicts with --format table; choose one output format")


@pytest.mark.parametrize(
    "content, problem",
    [
        (b"", "is empty"),
        (b"[[0, 1], [2]]", "is not a rectangular nested list of numbers"),
        (b'[["a", "b", "c"], ["d", "e", "f"]]', "must hold real numbers, got dtype <U1"),
        (b"[[true, false, true], [true, true, true]]", "must hold real numbers, got dtype bool"),
        (
            b"{not json",
            "is neither a .npy array nor JSON: Expecting property name enclosed in double quotes: "
            "line 1 column 2 (char 1)",
        ),
        (
            b"\x80abc",
            "is neither a .npy array nor JSON: 'utf-8' codec can't decode byte 0x80 in position 0: invalid start byte",
        ),
    ],
)
def test_a_malformed_logits_file_is_rejected_with_its_problem(tmp_path, content, problem):
    path = tmp_path / "logits.json"
    path.write_bytes(content)
    assert_one_line_error(invoke("nll", "--logits", str(path)), f"--logits file '{path}' {problem}")


def test_a_truncated_npy_file_is_rejected(tmp_path):
    path = tmp_path / "logits.npy"
    np.save(path, nll.chapter_logits())
    path.write_bytes(path.read_bytes()[:-8])
    result = invoke("nll", "--logits", str(path))
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stderr.startswith(f"Error: --logits file '{path}' is not a readable .npy array: ")
    assert result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    "array, problem",
    [
        (np.array([[1j, 0, 0], [0, 0, 0]]), "must hold real numbers, got dtype complex128"),
        (
            np.array([[1, None, 3], [4, 5, 6]], dtype=object),
            "is not a readable .npy array: Object arrays cannot be loaded when allow_pickle=False",
        ),
    ],
)
def test_an_npy_file_without_real_numbers_is_rejected(tmp_path, array, problem):
    path = tmp_path / "analytic.npy"
    np.save(path, array, allow_pickle=True)
    assert_one_line_error(invoke("nll", "--analytic", str(path)), f"--analytic file '{path}' {problem}")


def test_a_directory_is_not_a_logits_file(tmp_path):
    result = invoke("nll", "--logits", str(tmp_path))
    assert_one_line_error(result, f"Invalid value for '--logits': File '{tmp_path}' is a directory.")


@pytest.mark.parametrize("suffix, save", [(".npy", np.save), (".json", None), (".txt", None)])
def test_logits_load_from_npy_or_json_whatever_the_file_name(tmp_path, suffix, save):
    logits = np.array([[1.5, -0.5, 0.25], [0.0, 3.0, -1.0], [2.0, 0.75, 1.25]])
    path = tmp_path / f"logits{suffix}"
    if save is not None:
        save(path, logits)
    else:
        path.write_text(json.dumps(logits.tolist()))
    result = invoke("nll", "--logits", str(path), "--targets", "2,1,0", "--samples", "9", "--json")
    expected = nll.nll_gradient_check(logits.copy(), (2, 1, 0), samples=9)
    assert result.exit_code == EXIT_OK
    assert json.loads(result.stdout) == {"nll": expected.to_dict()}


def test_non_finite_logits_are_the_librarys_rejected_request(tmp_path):
    path = tmp_path / "logits.json"
    path.write_text("[[0, NaN, 1], [2, 0, -2]]")  # Python's JSON reader accepts the NaN token
    assert_one_line_error(invoke("nll", "--logits", str(path)), "logits value at [0, 1] is not finite")


def test_many_logits_are_omitted_from_text_and_null_in_json(tmp_path):
    logits = np.linspace(-3.0, 3.0, 2 * 600).reshape(2, 600)
    path = tmp_path / "logits.npy"
    np.save(path, logits)
    text = invoke("nll", "--logits", str(path), "--targets", "5,599")
    assert text.exit_code == EXIT_OK
    assert text.stdout.startswith("nll logits: shape=[2, 600] values=omitted targets=[5, 599] loss=")
    document = json.loads(invoke("nll", "--logits", str(path), "--targets", "5,599", "--json").stdout)
    assert document["nll"]["values"] is None
    assert document["nll"] == nll.nll_gradient_check(logits.copy(), (5, 599)).to_dict()


def test_float32_and_integer_logits_are_widened_to_float64(tmp_path):
    path = tmp_path / "logits.npy"
    np.save(path, np.array([[0, 1, -1], [2, 0, -2]], dtype=np.int32))
    assert CHAPTER_NLL in lines(invoke("nll", "--logits", str(path)))
    np.save(path, np.array([[0, 1, -1], [2, 0, -2]], dtype=np.float32))
    assert CHAPTER_NLL in lines(invoke("nll", "--logits", str(path)))


@settings(max_examples=80)
@given(value=st.text(max_size=30))
def test_any_shape_text_exits_0_or_2_without_a_traceback(value):
    result = invoke("sample", f"--shape={value}")
    assert result.exit_code in (EXIT_OK, EXIT_BAD_INPUT)
    if result.exit_code == EXIT_BAD_INPUT:
        assert result.stdout == ""
        assert result.stderr.startswith("Error: ") and result.stderr.count("\n") == 1


@settings(max_examples=80)
@given(value=st.text(alphabet="0123456789.,-+einaf[] ", max_size=20))
def test_any_steps_text_exits_0_or_2_without_a_traceback(value):
    result = invoke("scan", f"--steps={value}", "--json")
    assert result.exit_code in (EXIT_OK, EXIT_BAD_INPUT)
    document = _parse_strictly(result.stdout)
    if result.exit_code == EXIT_BAD_INPUT:
        assert set(document) == {"error"}
        assert result.stderr == f"Error: {document['error']['message']}\n"
    else:
        assert set(document) == {"scan"}


# ------------------------------------------------------------------- tables


@pytest.mark.parametrize("subcommand", SUBCOMMANDS)
def test_every_subcommand_draws_a_table(subcommand):
    result = invoke(subcommand, *MINIMAL_ARGUMENTS.get(subcommand, []), "--format", "table")
    assert result.exit_code == EXIT_OK
    assert result.stdout.strip()
    assert "\x1b[" not in result.stdout  # NO_COLOR, and the runner's stdout is no terminal


def test_the_scan_table_names_every_regime_and_verdict():
    table = invoke("scan", "--format", "table").stdout
    for regime in ("truncation", "converging", "trusted range", "rounding"):
        assert regime in table
    assert table.count("✓") == 2 and table.count("✗") == 4
    assert "2.10×10⁻¹¹" in table  # the chapter's figure: $2.10\times10^{-11}$


def test_the_kink_table_warns_about_the_false_pass():
    assert "false pass" in invoke("kink", "--format", "table").stdout


@pytest.mark.parametrize(
    "number, text",
    [(0.0, "0"), (0.1739130434782609, "1.74×10⁻¹"), (2.103583973678e-11, "2.10×10⁻¹¹"), (2.0, "2.00")],
)
def test_compact_scientific(number, text):
    assert tables.compact_scientific(number) == text


class _Terminal(io.StringIO):
    def isatty(self):
        return True


@pytest.mark.parametrize("no_color, coloured", [(None, True), ("1", False)])
def test_tables_colour_verdicts_on_a_terminal_unless_no_color(monkeypatch, no_color, coloured):
    monkeypatch.setenv("TERM", "xterm-256color")
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    if no_color is None:
        monkeypatch.delenv("NO_COLOR", raising=False)
    else:
        monkeypatch.setenv("NO_COLOR", no_color)
    stream = _Terminal()
    render.write([render.scan(fixtures.cubic_step_scan())], "table", stream)
    # NO_COLOR removes colour only (SGR 30–37, 90–97, 38;…); bold and italic may stay.
    colour_codes = re.findall(r"\x1b\[(?:[0-9]+;)*(?:3[0-8]|9[0-7])[;m]", stream.getvalue())
    assert bool(colour_codes) is coloured
    assert "✓" in stream.getvalue() and "✗" in stream.getvalue()


# ------------------------------------------------------------ help, version


@pytest.mark.parametrize("subcommand", SUBCOMMANDS)
def test_every_subcommand_has_help(subcommand):
    result = invoke(subcommand, "--help")
    assert result.exit_code == EXIT_OK
    command = main.get_command(None, subcommand)
    arguments = [parameter for parameter in command.params if isinstance(parameter, click.Argument)]
    usage = " ".join(["Usage: gradcheck", subcommand, "[OPTIONS]", *(a.make_metavar(None) for a in arguments)])
    assert result.stdout.startswith(usage + "\n")
    assert command.help and command.get_short_help_str()
    for parameter in command.params:
        if isinstance(parameter, click.Argument):
            # click arguments carry no help of their own: the command's help explains each one.
            assert f"{parameter.make_metavar(None)} is " in " ".join(result.stdout.split())
        else:
            assert getattr(parameter, "help", None), f"gradcheck {subcommand} {parameter.opts[0]} has no help"


@pytest.mark.parametrize("subcommand", SUBCOMMANDS)
def test_every_subcommand_has_the_shared_output_options(subcommand):
    options = {option for parameter in main.get_command(None, subcommand).params for option in parameter.opts}
    assert {"--format", "--json"} <= options


def test_the_group_help_lists_every_subcommand_and_the_exit_statuses():
    result = invoke("--help")
    assert result.exit_code == EXIT_OK
    for subcommand in SUBCOMMANDS:
        assert re.search(rf"^  {subcommand} ", result.stdout, re.MULTILINE)
    assert "Exit status: 0" in " ".join(result.stdout.split())


#: The regime rule that error_regimes implements, stated here once so that each place stating it is held to it.
REGIME_RULE = (
    "1. Order the records by requested step, largest first, and find the one with the smallest scaled error "
    "(the larger step wins a tie). "
    "2. Steps larger than that best step are truncation when they fail the tolerance (the O(h²) term still "
    "dominates) and converging when they pass. "
    "3. The best step is trusted range when it passes. "
    "4. Steps smaller than the best step are rounding when they fail (rounded probes and cancelling values "
    "dominate) and trusted range when they still pass. "
    "5. When even the best step fails there is no trusted range: the best step is crossover, where truncation "
    "and rounding error meet."
)


def _words(text: str) -> str:
    return " ".join(text.replace("`", "").split())


def test_scan_help_states_the_regime_rule():
    assert REGIME_RULE in _words(invoke("scan", "--help").stdout)


def test_the_scan_module_and_the_cli_reference_state_the_same_regime_rule():
    assert REGIME_RULE in _words(scan.__doc__)
    assert REGIME_RULE in _words((ROOT / "docs" / "cli.md").read_text(encoding="utf-8"))


def test_help_shows_library_defaults_as_the_chapter_prints_them():
    assert "[default: 1e-5]" in invoke("nll", "--help").stdout
    assert "1.0,0.1,0.001,1e-5,1e-13,1e-15]" in invoke("scan", "--help").stdout


def test_version():
    result = invoke("--version")
    assert (result.exit_code, result.stdout) == (EXIT_OK, f"gradcheck {__version__}\n")


def test_bare_gradcheck_shows_help_on_stderr():
    result = invoke()
    assert result.exit_code == EXIT_BAD_INPUT
    assert result.stdout == ""
    assert "Commands:" in result.stderr


# ----------------------------------------------- process start-up and -m


def _python(*arguments):
    env = {**os.environ, "NO_COLOR": "1"}
    return subprocess.run([sys.executable, *arguments], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)


def test_python_dash_m_runs_the_same_command():
    completed = _python("-m", "gradcheck_cli", "quadratic", "--analytic", "5.5")
    assert completed.returncode == EXIT_CANDIDATE_FAILED
    assert completed.stdout == invoke("quadratic", "--analytic", "5.5").stdout


def test_scalar_subcommands_import_neither_numpy_nor_rich():
    completed = _python("-X", "importtime", "-m", "gradcheck_cli", "quadratic")
    assert completed.returncode == EXIT_OK
    imported = {line.rsplit("|", 1)[-1].strip() for line in completed.stderr.splitlines() if "|" in line}
    assert "click" in imported  # the check sees imports at all
    assert not {name for name in imported if name.split(".")[0] in ("numpy", "rich")}


#: All that `gradcheck quadratic` may load beyond click (start-up is benchmarked against `import click`).
QUADRATIC_MODULES = {
    "gradcheck_cli",
    "gradcheck_cli.cli",
    "gradcheck_cli.core",
    "gradcheck_cli.display",
    "gradcheck_cli.engine",
    "gradcheck_cli.verdict",
    "gradcheck_cli.chapter",
    "gradcheck_cli.chapter.fixtures",
    "gradcheck_cli.display.chapter_lines",
    "gradcheck_cli.cli.app",
    "gradcheck_cli.errors.command_line",
    "gradcheck_cli.cli.commands",
    "gradcheck_cli.cli.commands.quadratic",
    "gradcheck_cli.errors",
    "gradcheck_cli.errors.record",
    "gradcheck_cli.errors.requests",
    "gradcheck_cli.engine.estimator",
    "gradcheck_cli.core.formatting",
    "gradcheck_cli.core.installs",
    "gradcheck_cli.display.output",
    "gradcheck_cli.display.ownership",
    "gradcheck_cli.core.record",
    "gradcheck_cli.display.render",
    "gradcheck_cli.verdict.words",
}


def _modules_loaded_by(*arguments) -> set:
    """The modules that ``gradcheck ARGUMENTS`` imports beyond click, in a fresh interpreter."""
    code = (
        "import sys, click\n"
        "before = set(sys.modules)\n"
        "from gradcheck_cli.cli import main\n"
        f"status = main({list(arguments)!r}, standalone_mode=False)\n"
        "print(*sorted(set(sys.modules) - before), file=sys.stderr)\n"
    )
    completed = _python("-c", code)
    assert completed.returncode == EXIT_OK, completed.stderr
    return set(completed.stderr.split())


def test_quadratic_loads_nothing_it_does_not_use():
    loaded = _modules_loaded_by("quadratic")
    assert {name for name in loaded if name.startswith("gradcheck_cli")} == QUADRATIC_MODULES
    # Beyond gradcheck's own modules, only the standard library (dataclasses, struct, ...): no numpy, no rich.
    others = {name.split(".")[0] for name in loaded if not name.startswith("gradcheck_cli")}
    assert others <= set(sys.stdlib_module_names), others - set(sys.stdlib_module_names)


NOISY_PROBLEM = """
import os

import numpy as np

from gradcheck_cli import GradientProblem


class Noisy:
    def __del__(self):
        os.write(2, b"finalized\\n")


cycle = Noisy()
cycle.itself = cycle  # only the garbage collector can finalize it, at exit


def problem():
    return GradientProblem(lambda p: float(p["w"][0] ** 2), {"w": np.array([1.0])}, {"w": np.array([2.0])})
"""


def test_a_command_line_exempts_what_start_up_made_from_collection_and_nothing_the_command_makes(tmp_path):
    import gc

    frozen = gc.get_freeze_count()
    assert invoke("quadratic").exit_code == EXIT_OK  # CliRunner: this process goes on, and is not frozen
    assert gc.get_freeze_count() == frozen
    problem = tmp_path / "noisy.py"
    problem.write_text(NOISY_PROBLEM, encoding="utf-8")
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, file=sys.stderr))\n"
        "from gradcheck_cli.cli import main\n"
        "sys.argv[0] = 'gradcheck'\n"
        "main()\n"
    )
    completed = _python("-c", code, "check", f"{problem}:problem")
    assert completed.returncode == EXIT_OK, completed.stderr
    # Start-up's objects were frozen; the user's module, made later, was still collected and finalized at exit.
    assert completed.stderr == "frozen True\nfinalized\n"


def test_help_lists_the_subcommands_without_importing_them():
    loaded = _modules_loaded_by("--help")
    assert "gradcheck_cli.cli.app" in loaded  # the check sees gradcheck's modules at all
    # Nor what only a command uses: the rendering and the chapter's text lines.
    assert not {name for name in loaded if name.startswith(("gradcheck_cli.cli.commands.", "gradcheck_cli.chapter."))}
    assert "gradcheck_cli.display.render" not in loaded


def test_help_loads_no_module_only_a_command_or_clicks_terminal_width_needs():
    loaded = _modules_loaded_by("--help")
    assert "gradcheck_cli.cli.app" in loaded  # the check sees gradcheck's modules at all
    # shutil, which click's formatter imports for the terminal's width, loads zlib, bz2 and lzma.
    assert not {"shutil", "zlib", "dataclasses", "struct"} & loaded
    # Of the errors, only the base class and the command line's own (errors/command_line.py).
    assert {name for name in loaded if name.startswith("gradcheck_cli.errors")} == {
        "gradcheck_cli.errors",
        "gradcheck_cli.errors.record",
        "gradcheck_cli.errors.command_line",
    }


@pytest.fixture(params=["none", "pipe", "terminal 132", "terminal 20", "terminal 0"])
def stdout_at_start(request, monkeypatch):
    """``sys.__stdout__`` as gradcheck may find it: none, a pipe, or a terminal of 132, 20 or 0 columns;
    the terminal's width, or None without one."""
    if request.param == "none":
        monkeypatch.setattr(sys, "__stdout__", None)
        yield None
        return
    columns = None
    if request.param == "pipe":
        reader, writer = os.pipe()
    else:
        import fcntl
        import struct
        import termios

        reader, writer = os.openpty()
        columns = int(request.param.split()[1])
        fcntl.ioctl(writer, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    with open(writer, "w") as stream:
        monkeypatch.setattr(sys, "__stdout__", stream)
        yield columns
    os.close(reader)


@pytest.mark.skipif(not hasattr(os, "openpty"), reason="a terminal of a chosen width needs a pseudo-terminal")
@pytest.mark.parametrize("columns", [None, "0", "-1", "wide", "30", "100", "300"])
def test_help_is_as_wide_as_clicks_formatter_makes_it(monkeypatch, stdout_at_start, columns):
    """A positive $COLUMNS, else a terminal's nonzero width, else the fallback: shutil's rule from Python
    3.11 on, on every Python (3.10's shutil takes a terminal of 0 columns at its word, and so does click's
    formatter there: 50 columns)."""
    import shutil

    from gradcheck_cli.cli.app import GradcheckContext

    if columns is None:
        monkeypatch.delenv("COLUMNS", raising=False)
    else:
        monkeypatch.setenv("COLUMNS", columns)
    given = int(columns) if columns not in (None, "wide") and int(columns) > 0 else None
    for fallback in (80, 120):
        expected = given or stdout_at_start or fallback
        assert output.terminal_columns(fallback) == expected
        if sys.version_info >= (3, 11):
            assert shutil.get_terminal_size((fallback, 24)).columns == expected
    assert click.formatting.FORCED_WIDTH is None  # not inside CliRunner, which fixes the width
    width = max(min(given or stdout_at_start or 80, 80) - 2, 50)
    assert GradcheckContext(main).make_formatter().width == width
    if sys.version_info >= (3, 11):
        assert click.Context(main).make_formatter().width == width


@pytest.mark.parametrize("width", [60, 80, 120])
def test_help_lists_each_subcommand_as_click_lists_the_loaded_command(width):
    runner = CliRunner(env={"NO_COLOR": "1", "COLUMNS": None})
    listed = runner.invoke(main, ["--help"], prog_name="gradcheck", terminal_width=width).stdout
    group = GradcheckGroup(name="gradcheck")
    for name in SUBCOMMANDS:
        group.add_command(main.get_command(None, name), name)
    formatter = click.HelpFormatter(width=width)
    click.Group.format_commands(group, click.Context(group), formatter)
    assert formatter.getvalue() and formatter.getvalue() in listed


# ------------------------------------------------- adding a subcommand


def test_a_new_subcommand_needs_only_the_shared_decorator_and_run():
    group = GradcheckGroup(name="gradcheck")

    @group.command()
    @click.option("--point", type=float, default=2.0, help="The point θ.")
    @click.option("--analytic", type=float, default=12.0, help="Your candidate for c'(θ).")
    @output_options
    def cube(output_format, point, analytic):
        """c(θ) = θ³."""

        def compute():
            check = scalar_gradient_check(point, analytic, 1e-5, 1e-6, lambda x: x**3)
            return Report((render.scalar_check("cube", check),), user_verdicts=(check.comparison.passed,))

        run(output_format, compute)

    runner = CliRunner(env={"NO_COLOR": "1"})
    expected = scalar_gradient_check(2.0, 12.0, 1e-5, 1e-6, lambda x: x**3)
    passed = runner.invoke(group, ["cube", "--json"], catch_exceptions=False)
    assert (passed.exit_code, json.loads(passed.stdout)) == (EXIT_OK, {"cube": expected.to_dict()})
    text = runner.invoke(group, ["cube"], catch_exceptions=False)
    assert text.stdout.splitlines() == render.check_lines("cube", expected)
    assert runner.invoke(group, ["cube", "--analytic", "11"]).exit_code == EXIT_CANDIDATE_FAILED
    rejected = runner.invoke(group, ["cube", "--point", "nan"])
    assert (rejected.exit_code, rejected.stderr) == (EXIT_BAD_INPUT, "Error: gradient-check point NaN must be finite\n")


def test_sample_takes_samples_as_check_and_nll_spell_it():
    assert (
        invoke("sample", "--shape", "3,4", "--samples", "2").stdout
        == invoke("sample", "--shape", "3,4", "--max-samples", "2").stdout
    )
    assert "sampled flat offsets: [0, 11]" in invoke("sample", "--shape", "3,4", "--samples", "2").stdout


@pytest.mark.parametrize("subcommand", ["demo", "quadratic", "scan", "identity", "kink", "nll", "sample", "schema"])
def test_tables_carry_no_trailing_spaces(subcommand):
    arguments = ["--shape", "2,3"] if subcommand == "sample" else []
    result = invoke(subcommand, *arguments, "--format", "table")
    assert result.exit_code == EXIT_OK and result.stdout.count("\n") > 3
    assert [line for line in result.stdout.splitlines() if line != line.rstrip()] == []
