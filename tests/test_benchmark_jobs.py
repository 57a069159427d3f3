"""Smoke test of benchmarks/jobs.py: it runs at tiny settings and prints its figures.

Times are not asserted (a benchmark measures); that the reports with and without workers are
equal is, since the script says so and exits 1 otherwise.
"""

import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_prints_both_problems_with_their_speed_up_and_equal_reports():
    command = [sys.executable, str(BENCHMARKS / "jobs.py"), "--samples", "2", "--repeats", "1", "--warmup", "0"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    stdout = completed.stdout
    assert stdout.startswith("== --jobs: check_problem with jobs=1 and jobs=2")
    assert "reproduce: python benchmarks/jobs.py --samples 2 --repeats 1 --warmup 0" in stdout
    for label in ("CPU-bound: benchmarks/_recurrent.py:problem", "cheap: benchmarks/_recurrent.py:cheap_problem"):
        assert label in stdout
    assert stdout.count("   jobs=1: ") == stdout.count("   jobs=2: ") == 2
    assert stdout.count("speed-up jobs=1 ÷ jobs=2: ") == 2
    assert "goal ≥ 1.5 on 2 usable cores: " in stdout
    assert stdout.count("reports equal (to_dict): yes") == 2
