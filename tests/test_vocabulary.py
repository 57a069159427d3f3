"""One vocabulary: every ``key=`` a command prints in text is a key of the same command's JSON.

A jq user who reads ``requested_h=`` in the text asks for ``.requested_h`` (docs/json.md). Each
command runs twice in-process, in text (verbose where it has it, so every line shows) and with
``--json``; the keys of the text's ``key=value`` fields, outside quoted prose, must all be keys
somewhere in the JSON document.
"""

import json
import re

import pytest
from click.testing import CliRunner

from gradcheck_cli.cli import main

PORTABLE = "fixtures/golden/inputs/portable.py"
COMMANDS = [
    ["demo"],
    ["quadratic"],
    ["quadratic", "--analytic", "5.5"],
    ["scan"],
    ["scan", "--advise"],
    ["kink"],
    ["nll"],
    ["nll", "--analytic", "fixtures/golden/inputs/gradient-missing-batch-scale.json"],
    ["identity"],
    ["check", f"{PORTABLE}:problem", "--verbose"],
    ["check", f"{PORTABLE}:wrong_problem", "--verbose"],
    ["check", f"{PORTABLE}:kink_problem", "--verbose"],
    ["check", f"{PORTABLE}:impure_problem", "--verbose"],
    ["taylor", f"{PORTABLE}:problem", "--verbose"],
    ["taylor", f"{PORTABLE}:wrong_problem", "--verbose"],
]
#: A field is a word followed by ``=`` at the start of a line or after a space, outside quotes.
FIELD = re.compile(r"(?:^|(?<=[\s:]))([a-z_][a-z0-9_]*)=")


def text_keys(text: str) -> set:
    """The field names of the text's ``key=value`` fields; quoted strings (names, prose) are skipped."""
    keys = set()
    for line in text.splitlines():
        head = line.split(";", 1)[0]  # after ';' a line is a sentence, not fields
        keys |= set(FIELD.findall(re.sub(r'"(?:[^"\\]|\\.)*"', '""', head)))
    return keys


def json_keys(node) -> set:
    if isinstance(node, dict):
        return set(node).union(*(json_keys(value) for value in node.values()))
    if isinstance(node, list):
        return set().union(*(json_keys(value) for value in node)) if node else set()
    return set()


def run(arguments: list) -> str:
    result = CliRunner(env={"NO_COLOR": "1"}).invoke(main, arguments, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output
    return result.stdout


@pytest.mark.parametrize("arguments", COMMANDS, ids=" ".join)
def test_every_text_key_is_a_json_key(arguments):
    text = run(arguments)
    document = json.loads(run([*[a for a in arguments if a != "--verbose"], "--json"]))
    keys = text_keys(text)
    assert keys, text  # the text has fields to compare
    assert sorted(keys - json_keys(document)) == []


def test_a_text_key_missing_from_the_json_would_be_found():
    assert text_keys('check: pass=true verdict=passed names=["a=b"]; see samples=all') == {"pass", "verdict", "names"}
    assert {"pass", "theta"} - json_keys({"passed": True, "items": [{"theta": 1.0}]}) == {"pass"}
