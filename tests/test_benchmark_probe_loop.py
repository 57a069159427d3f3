"""Smoke test of benchmarks/probe_loop.py: it runs at tiny settings and prints its figures.

Times are not asserted (a benchmark measures); the script checks that report.evaluations equals
the counted calls and exits 1 otherwise, and here its lines are checked to be there.
"""

import re
import subprocess
import sys
from pathlib import Path

from extras import require

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_prints_each_check_against_its_bare_loop_with_the_goals():
    command = [sys.executable, str(BENCHMARKS / "probe_loop.py"), "--samples", "8", "--shape", "6,5", "--repeats", "1"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    stdout = completed.stdout
    assert stdout.startswith("== the probe loop: the checks ÷ a bare perturb/call/restore loop")
    assert "reproduce: python benchmarks/probe_loop.py --samples 8 --shape 6,5 --repeats 1" in stdout
    assert "8 coordinates of a [6, 5] float64 array; 1 rounds" in stdout
    # 8 coordinates: f(θ) 4 times, 2 probes each, 2 for the directional test; the chapter's 3 each
    assert re.search(r"^  check_gradients +22 calls, ", stdout, re.MULTILINE)
    assert re.search(r"^  check_gradients, 2 coordinates +10 calls, ", stdout, re.MULTILINE)
    assert re.search(r"^  chapter's check +24 calls, ", stdout, re.MULTILINE)
    assert stdout.count("÷ bare loop ") == 3
    assert "goal ≤ 8: " in stdout and "goal ≤ 12: " in stdout
    assert "check_gradients: " in stdout and " µs per further call (" in stdout


def test_peers_projection_section_prints_our_share_outside_the_objective_and_each_peer():
    require("scipy")  # the peer it measures against (installed beside jax, not a dependency)
    command = [sys.executable, str(BENCHMARKS / "peers.py"), "--projection-only", "--projection-n", "200"]
    command += ["--projection-repeats", "1", "--natural-malloc"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    stdout = completed.stdout
    assert "numpy logistic regression, 200 weights, 64 rows" in stdout
    assert "scipy check_grad, direction='random': " in stdout
    shares = re.findall(r"outside the objective's calls [0-9.]+% \(range ", stdout)
    assert stdout.count("gradcheck at its defaults: ") == len(shares) >= 1
    assert "goal ≤ 30 %: " in stdout
