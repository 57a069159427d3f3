"""Smoke test of benchmarks/million.py: it runs at a small size and prints every figure."""

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.mark.skipif(not Path("/proc/self/clear_refs").exists(), reason="the peak memory is read from Linux's /proc")
def test_prints_the_memory_and_time_of_the_library_and_the_command_line():
    completed = subprocess.run(
        [sys.executable, str(BENCHMARKS / "million.py"), "--elements", "3000", "--output-elements", "300"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=BENCHMARKS.parent,
    )
    assert completed.returncode == 0, completed.stderr
    out = completed.stdout
    assert "passed, 3000 coordinates, 6006 evaluations (counted 6006)" in out
    assert "bytes a coordinate" in out and "bare loop of the same calls" in out
    for label in ("(short text)", "--json", "--verbose"):
        assert f"elements {label}" in out
    assert out.count("exit 0,") == 3
