"""Strict JSON: every JSON document gradcheck writes is RFC 8259 and round-trips every float bit-exactly.

For each golden case whose command asks for JSON (``--json`` or ``--format
json``), the committed stdout and a fresh run's stdout are parsed with a parser
that refuses the NaN, Infinity and -Infinity tokens and every float token
that is not the shortest repr of its value; re-serialising the parsed
document with the one JSON writer's settings must give the same text back.
Every object holding ``difference`` or ``comparison`` must hold exactly the
library's fields (CentralDifference, GradientComparison), in order. The
same holds for ``gradcheck check``, ``taylor`` and ``scan --advise`` on the
examples, whose documents must also equal the library's own ``to_dict()``.
"""

import json
import math
import shlex
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

import golden
from gradcheck_cli.cli import main
from gradcheck_cli.core.record import json_fields
from gradcheck_cli.display import output
from gradcheck_cli.engine.estimator import CentralDifference, GradientComparison

ROOT = Path(__file__).resolve().parent.parent
DIFFERENCE_FIELDS = [key for _, key in json_fields(CentralDifference)]
COMPARISON_FIELDS = [key for _, key in json_fields(GradientComparison)]


def asks_for_json(command: str) -> bool:
    words = shlex.split(command)
    pairs = zip(words, words[1:])
    return "--json" in words or "--format=json" in words or any(pair == ("--format", "json") for pair in pairs)


JSON_CASES = [path for path in golden.case_paths() if asks_for_json(golden.case_command(path)[0])]


def _reject_constant(token):
    raise ValueError(f"non-standard JSON token {token}")


def _shortest_float(token):
    value = float(token)
    if repr(value) != token:
        raise ValueError(f"float token {token} is not the repr of its value {value!r}")
    return value


def parse_strictly(text):
    """RFC 8259 JSON whose every float token is Python's repr (so it round-trips bit-exactly)."""
    return json.loads(text, parse_constant=_reject_constant, parse_float=_shortest_float)


def walk(value):
    """Every value in a parsed JSON document, depth first."""
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        yield from walk(child)


def bits(number: float) -> bytes:
    return struct.pack("<d", number)


def assert_strict_and_exact(stdout: str):
    """Parse ``stdout`` strictly; every float round-trips; re-serialising gives the same text. Returns it."""
    document = parse_strictly(stdout)
    floats = [value for value in walk(document) if isinstance(value, float)]
    for value in floats:
        assert math.isfinite(value)
        assert bits(float(repr(value))) == bits(value)
    # The strings that stand for non-finite floats are the only spellings used.
    for value in walk(document):
        if isinstance(value, str) and value.lower() in ("nan", "inf", "-inf", "infinity", "-infinity"):
            assert value in ("NaN", "inf", "-inf"), value
    assert json.dumps(document, indent=2, allow_nan=False) + "\n" == stdout
    return document


def assert_library_field_names(document) -> int:
    """Every ``difference``/``comparison`` object has exactly the library's fields; returns how many checks."""
    checks = 0
    for value in walk(document):
        if not isinstance(value, dict):
            continue
        if "difference" in value:
            assert list(value["difference"]) == DIFFERENCE_FIELDS
        if "comparison" in value:
            assert list(value["comparison"]) == COMPARISON_FIELDS
            assert "difference" in value
            checks += 1
    return checks


# ------------------------------------------------------------ golden cases


def test_the_golden_json_cases_are_found():
    names = {path.stem for path in JSON_CASES}
    assert {"demo-json", "quadratic-json", "scan-json", "nll-json", "quadratic-error-zero-step-json"} <= names
    assert asks_for_json("gradcheck quadratic --format json") and not asks_for_json("gradcheck quadratic")


@pytest.mark.parametrize("path", JSON_CASES, ids=[path.stem for path in JSON_CASES])
def test_golden_json_is_strict_and_every_float_round_trips(path):
    committed = golden.parse_case(path.read_text(encoding="utf-8"))
    exit_code, stdout, stderr = golden.run(committed["command"])
    if committed["stdout"]:  # the committed file holds strict JSON too, not only a fresh run
        assert_strict_and_exact(committed["stdout"])
    if not stdout:
        # Only a rejected choice of output format writes no document at all.
        assert exit_code == 2 and "conflicts with --format" in stderr, (exit_code, stderr)
        return
    document = assert_strict_and_exact(stdout)
    if exit_code == 2:
        assert list(document) == ["error"]
        assert stderr == f"Error: {document['error']['message']}\n"
    else:
        assert "error" not in document
    assert_library_field_names(document)


def test_the_chapter_demo_json_holds_checks_with_the_library_field_names():
    exit_code, stdout, _ = golden.run("gradcheck demo --json")
    assert exit_code == 0
    # Quadratic 2, identity 1, kink 1, scan 6, NLL 4 coordinates.
    assert assert_library_field_names(assert_strict_and_exact(stdout)) == 2 + 1 + 1 + 6 + 4


def test_the_strict_parser_refuses_what_python_would_accept():
    for text in ('{"x": NaN}', '{"x": Infinity}', '{"x": -Infinity}', '{"x": 0.10000000000000001}'):
        with pytest.raises(ValueError):
            parse_strictly(text)
    assert parse_strictly('{"x": 0.1, "y": 1e-320, "z": -0.0}') == {"x": 0.1, "y": 1e-320, "z": -0.0}


# ---------------------------------------------------- check, taylor, advice


def invoke(*arguments):
    runner = CliRunner(env={"NO_COLOR": "1", "COLUMNS": None, "FORCE_COLOR": None})
    return runner.invoke(main, list(arguments), prog_name="gradcheck", catch_exceptions=False)


EXAMPLES = [
    ("mlp.py", "problem", 0),
    ("mlp.py", "wrong_problem", 1),
    ("mlp_float32.py", "problem", 0),
    ("attention.py", "wrong_problem", 1),
]


@pytest.mark.parametrize("example, function, status", EXAMPLES)
def test_check_json_is_strict_and_is_the_reports_to_dict(example, function, status):
    from gradcheck_cli import check_problem, load_problem

    reference = f"{ROOT / 'examples' / example}:{function}"
    result = invoke("check", reference, "--json")
    assert result.exit_code == status, result.stderr
    document = assert_strict_and_exact(result.stdout)
    report = check_problem(load_problem(reference))
    assert document == {"check": json.loads(json.dumps(report.to_dict()))}
    assert assert_library_field_names(document) == report.checked
    for parameter in document["check"]["parameters"]:
        for record in parameter["checks"]:
            assert {"difference", "comparison"} <= set(record)


@pytest.mark.parametrize("example, function, status", EXAMPLES)
def test_taylor_json_is_strict_and_is_the_results_to_dict(example, function, status):
    from gradcheck_cli import check_taylor, load_problem

    reference = f"{ROOT / 'examples' / example}:{function}"
    result = invoke("taylor", reference, "--json")
    assert result.exit_code == status, result.stderr
    document = assert_strict_and_exact(result.stdout)
    assert document == {"taylor": json.loads(json.dumps(check_taylor(load_problem(reference)).to_dict()))}


def test_check_with_the_advised_step_writes_strict_json():
    result = invoke("check", f"{ROOT / 'examples' / 'mlp.py'}:problem", "--step", "auto", "--json")
    assert result.exit_code == 0, result.stderr
    document = assert_strict_and_exact(result.stdout)
    assert "check" in document
    assert assert_library_field_names(document) == document["check"]["checked"]


@pytest.mark.parametrize("point", ["1.5", "1e-3", "-3"])
def test_scan_advice_json_is_strict(point):
    result = invoke("scan", "--point", point, "--advise", "--json")
    assert result.exit_code == 0, result.stderr
    document = assert_strict_and_exact(result.stdout)
    assert assert_library_field_names(document) >= 6  # the scan's six records, at least


_JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda children: (
        st.lists(children, max_size=4)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@given(_JSON_VALUES)
def test_the_json_writer_is_json_dumps_with_indent_2_byte_for_byte(document):
    from gradcheck_cli.core.record import json_ready

    assert output.json_text(document) == json.dumps(json_ready(document), indent=2, allow_nan=False) + "\n"
