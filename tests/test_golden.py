"""Every golden case in fixtures/golden/ matches a fresh run, and `make golden` would change nothing."""

import difflib
import json
import shlex

import pytest

import golden
from gradcheck_cli.cli import main

CASES = golden.case_paths()


def _unified_diff(expected: str, actual: str, name: str) -> str:
    return "".join(
        difflib.unified_diff(
            expected.splitlines(keepends=True),
            actual.splitlines(keepends=True),
            fromfile=f"fixtures/golden/{name} (committed)",
            tofile=f"fixtures/golden/{name} (fresh run; `make golden` rewrites it)",
        )
    )


@pytest.mark.parametrize("path", CASES, ids=[path.stem for path in CASES])
def test_golden_case(path):
    expected = path.read_bytes().decode("utf-8")
    actual = golden.render_case(*golden.case_command(path))
    if actual != expected:
        pytest.fail("golden output differs:\n" + _unified_diff(expected, actual, path.name), pytrace=False)


def test_regenerating_rewrites_a_stale_case_and_reports_it(tmp_path):
    # test_golden_case already runs every committed case; this one checks what `make golden` does with them.
    committed = next(path for path in CASES if path.name.startswith("quadratic"))
    stale = tmp_path / committed.name
    stale.write_text(golden.command_line(committed.read_text(encoding="utf-8")) + "\nstale output\n", encoding="utf-8")
    assert golden.regenerate(tmp_path, tmp_path) == [committed.name]
    assert stale.read_bytes() == committed.read_bytes()
    assert golden.regenerate(tmp_path, tmp_path) == []


def test_the_case_format_round_trips():
    text = golden.format_case("gradcheck quadratic --step 0", 2, '{\n  "error": 1\n}\n', "Error: zero\n")
    assert text == 'gradcheck quadratic --step 0\n# exit: 2\n# stderr: Error: zero\n{\n  "error": 1\n}\n'
    assert golden.parse_case(text) == {
        "command": "gradcheck quadratic --step 0",
        "exit_code": 2,
        "stderr": "Error: zero\n",
        "stdout": '{\n  "error": 1\n}\n',
    }
    assert golden.format_case("gradcheck demo", 0, "a\n", "") == "gradcheck demo\na\n"
    bare = "quadratic: theta=3.0\n"  # a bare case: the output of gradcheck NAME alone
    assert golden.parse_case(bare, "quadratic") == {
        "command": "gradcheck quadratic",
        "exit_code": 0,
        "stderr": "",
        "stdout": bare,
    }


def test_the_demo_case_is_exactly_what_gradcheck_demo_prints():
    """README.md calls fixtures/golden/demo.txt the demo's full output: it holds that output and nothing else."""
    exit_code, stdout, stderr = golden.run("gradcheck demo")
    assert (exit_code, stderr) == (0, "")
    assert (golden.GOLDEN_DIR / "demo.txt").read_bytes().decode("utf-8") == stdout


def _arguments(path):
    return shlex.split(golden.case_command(path)[0])[1:]


def _asks_for_json(arguments):
    """True when the command line settles on JSON (not when --json conflicts with another --format)."""
    formats = {arguments[i + 1] for i, word in enumerate(arguments[:-1]) if word == "--format"}
    formats |= {word.split("=", 1)[1] for word in arguments if word.startswith("--format=")}
    if "--json" in arguments:
        formats.add("json")
    return formats == {"json"}


JSON_CASES = [path for path in CASES if _asks_for_json(_arguments(path))]


@pytest.mark.parametrize("subcommand", main.list_commands(None))
def test_every_subcommand_has_text_and_json_golden_cases(subcommand):
    cases = [path for path in CASES if _arguments(path)[:1] == [subcommand]]
    as_json = [path for path in cases if path in JSON_CASES]
    assert len(cases) > len(as_json) > 0, f"add text and JSON cases for `gradcheck {subcommand}`"


def test_golden_cases_cover_errors_and_failed_candidates():
    statuses = {golden.parse_case(path.read_text(encoding="utf-8"))["exit_code"] for path in CASES}
    assert statuses == {0, 1, 2}


def _reject_constant(token):
    raise ValueError(f"non-strict JSON token {token}")


@pytest.mark.parametrize("path", JSON_CASES, ids=[path.stem for path in JSON_CASES])
def test_json_golden_output_is_strict_json(path):
    stdout = golden.parse_case(path.read_text(encoding="utf-8"))["stdout"]
    document = json.loads(stdout, parse_constant=_reject_constant)
    assert isinstance(document, dict) and document
