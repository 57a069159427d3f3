"""Smoke test of benchmarks/jax_peers.py: it runs on a few functions and writes its tables and JSON.

Rates and times are not asserted (a benchmark measures); the structure the docs' table comes from is.
"""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from extras import require

require("jax")

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
MUTATIONS = {"none", "×2", "sign", "transpose", "largest ×2"}


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    json_out = tmp_path_factory.mktemp("jax_peers") / "cases.json"
    command = [sys.executable, str(BENCHMARKS / "jax_peers.py"), "--limit", "2", "--json-out", str(json_out)]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    return completed.stdout, json.loads(json_out.read_text(encoding="utf-8"))


def test_prints_a_table_per_dtype_with_both_checkers(run):
    stdout, _ = run
    assert "2 functions, 4 mutations of the first argument's gradient" in stdout
    for dtype in ("float64", "float32"):
        assert f"| {dtype} | cases | gradcheck passed |" in stdout
    for label in ("correct", "×2", "sign", "transpose", "largest ×2"):
        assert f"\n| {label} | " in stdout
    assert stdout.count("gradcheck/check_grads") == 4


def test_json_has_every_case_with_both_verdicts(run):
    _, results = run
    assert results["functions"] == 2
    rows = results["rows"]
    assert {row["dtype"] for row in rows} == {"float64", "float32"}
    assert {row["mutation"] for row in rows} <= MUTATIONS and "none" in {row["mutation"] for row in rows}
    for row in rows:
        assert row["gradcheck"] in {"passed", "failed", "inconclusive", "suspected kink"} or row[
            "gradcheck"
        ].startswith("error")
        assert row["check_grads"] in {"passed", "failed"} or row["check_grads"].startswith("error")
        for run in ("cold", "warm"):
            assert row[f"gradcheck_{run}_cpu"] >= 0.0 and row[f"check_grads_{run}_cpu"] >= 0.0
