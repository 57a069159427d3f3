"""Smoke test of benchmarks/executors.py: every executor it finds gives the serial report.

The standard library's process pool is always there; loky and mpi4py only where installed (the
script says which are missing). That the reports are equal is asserted, since the script says so
and exits 1 otherwise; times are not.
"""

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_every_installed_executor_gives_the_serial_report_of_every_problem():
    command = [sys.executable, str(BENCHMARKS / "executors.py"), "--workers", "2"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    stdout = completed.stdout
    assert stdout.startswith("== jobs= on every executor installed")
    executors = stdout.count("\n   examples/line.py:problem: ")
    assert executors >= 1 and "concurrent.futures.ProcessPoolExecutor\n" in stdout
    assert stdout.count("reports equal: yes") == 4 * executors and "reports equal: NO" not in stdout
    assert "examples/line.py:wrong_problem: verdict failed, 2 chunks" in stdout
