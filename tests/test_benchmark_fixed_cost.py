"""Smoke test of benchmarks/fixed_cost.py: it runs at a small size and prints its table."""

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_prints_the_fixed_cost_and_peak_of_a_default_check_per_dtype():
    command = [
        sys.executable,
        str(BENCHMARKS / "fixed_cost.py"),
        "--elements",
        "20000",
        "--repeats",
        "1",
        "--rounds",
        "1",
    ]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert "N = 20000, 1 fresh processes × 1 checks each" in out
    assert "| fixed cost, ns an element (median, min–max) | ÷ one array copy |" in out
    for dtype in ("float64", "float32"):
        assert f"| this checkout | {dtype} | passed, 38 |" in out
    assert "goals: fixed cost ≤ 15 ns an element, peak ≤ 3× the array" in out
