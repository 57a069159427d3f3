"""Smoke test of benchmarks/layers.py: it runs on two layers and writes its tables and JSON.

Rates are not asserted (a benchmark measures); the structure, and that each bug changes the
gradient at the data (the script asserts it), are.
"""

import json
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_the_layer_corpus_runs_and_writes_every_case(tmp_path):
    json_out = tmp_path / "layers.json"
    command = [
        sys.executable,
        str(BENCHMARKS / "layers.py"),
        "--layers",
        "affine,embedding",
        "--json-out",
        str(json_out),
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    for dtype in ("float64", "float32"):
        assert f"--- {dtype}: 4 correct cases, 11 bug cases" in completed.stdout
    assert "classic recipe: passed" in completed.stdout
    cases = json.loads(json_out.read_text(encoding="utf-8"))["cases"]
    assert {case["layer"] for case in cases} == {"affine", "embedding"}
    assert {case["shape"] for case in cases} == {"narrow", "wide"}
    for case in cases:
        assert case["verdict"] in {"passed", "failed", "inconclusive"}
        assert isinstance(case["classic_passed"], bool)
        if case["bug"] is not None:
            assert isinstance(case["called_right"], bool) and case["reaches"]
