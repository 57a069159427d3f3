"""Smoke test of benchmarks/memory.py: it runs at a small size and prints its figures."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.skipif(sys.platform != "linux", reason="ru_maxrss is read in kilobytes, as Linux reports it")
def test_prints_the_peak_of_a_check_beside_the_problem_alone():
    command = [sys.executable, str(BENCHMARKS / "memory.py"), "--elements", "100000"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    assert "parameter: 100000 float32 elements, 0.4 MB" in completed.stdout
    assert "problem built, nothing checked: peak" in completed.stdout
    assert "gradcheck check --samples 1: peak" in completed.stdout and "(goal ≤ 4×)" in completed.stdout
