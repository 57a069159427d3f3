"""Smoke test of benchmarks/jobs.py: it runs at tiny settings and prints its figures and the load.

Times are not asserted (a benchmark measures); that the reports with and without workers are
equal is, since the script says so and exits 1 otherwise.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_prints_every_problem_and_the_command_line_with_their_speed_ups_and_equal_reports():
    command = [sys.executable, str(BENCHMARKS / "jobs.py"), "--samples", "2", "--repeats", "1", "--warmup", "0"]
    command += ["--command-repeats", "1", "--machine-calls", "2"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    stdout = completed.stdout
    assert stdout.startswith("== --jobs: check_problem with jobs=1 and jobs=2")
    reproduce = "python benchmarks/jobs.py --samples 2 --repeats 1 --warmup 0 --command-repeats 1 --machine-calls 2"
    assert f"reproduce: {reproduce}" in stdout
    assert "machine: 2 calls of problem in one process, and 2 in each of two at once" in stdout
    assert "the machine's speed-up for 2 processes (2 × one ÷ two): " in stdout
    # --samples 2: 4 coordinates, 8 probes and 2 f(θ) in the workers; 4 f(θ) and 4 direction probes here,
    # and each of the 4 chunks' first coordinate probed again: 16 calls.
    assert stdout.count("calls with jobs=2: 16 here (8 of them verifying 4 chunks), 10 in the workers; ") == 3
    labels = (
        "CPU-bound ~5 s: benchmarks/_recurrent.py:problem",
        "CPU-bound ~1 s: benchmarks/_recurrent.py:second_problem",
    )
    for label in (*labels, "cheap: benchmarks/_recurrent.py:cheap_problem"):
        assert label in stdout
    assert stdout.count("   jobs=1: ") == stdout.count("   jobs=2: ") == 3
    assert stdout.count("speed-up jobs=1 ÷ jobs=2: ") == 3
    assert "goal ≥ 1.8 on 2 usable cores: " in stdout and "goal ≥ 1.4 on 2 usable cores: " in stdout
    assert stdout.count("reports equal (to_dict): yes") >= 3
    assert "command line: gradcheck check benchmarks/_recurrent.py:second_problem --samples 2" in stdout
    assert "speed-up --jobs 1 ÷ --jobs 2: " in stdout and "stdout equal: yes" in stdout
    assert stdout.count("load average ") == 2  # before and after
    if importlib.util.find_spec("distributed") is not None:
        assert "dask: benchmarks/_recurrent.py:second_problem on a LocalCluster of 2 worker processes" in stdout
        assert "speed-up serial ÷ dask: " in stdout
        assert stdout.count("reports equal (to_dict): yes") == 4
    else:
        assert "dask: distributed is not installed" in stdout


def test_rows_chooses_the_rows_printed():
    command = [sys.executable, str(BENCHMARKS / "jobs.py"), "--samples", "2", "--warmup", "0", "--command-repeats", "1"]
    completed = subprocess.run([*command, "--rows", "command"], capture_output=True, text=True, timeout=300)
    assert completed.returncode == 0, completed.stderr
    assert "command line: gradcheck check benchmarks/_recurrent.py:second_problem --samples 2" in completed.stdout
    assert "calls of problem in one process" not in completed.stdout and "   jobs=1: " not in completed.stdout
    assert "dask: " not in completed.stdout and completed.stdout.count("load average ") == 2
    refused = subprocess.run([*command, "--rows", "command,nothing"], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "rows are machine,library,dask,command, got 'command,nothing'" in refused.stderr
