"""Smoke test of benchmarks/fast_joint.py: it runs at tiny settings and prints its table.

Rates are not asserted (a benchmark measures); here its lines are checked to be there, and the
right gradients' calls: the joint direction makes fewer."""

import re
import subprocess
import sys
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_prints_each_mistake_with_and_without_the_joint_direction():
    command = [sys.executable, str(BENCHMARKS / "fast_joint.py"), "--trials", "3", "--seed", "0"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    stdout = completed.stdout
    assert stdout.startswith("== fast check: the joint direction against each parameter's own")
    assert "reproduce: python benchmarks/fast_joint.py --trials 3 --seed 0" in stdout
    assert "| gradient | joint | own only |" in stdout
    for kind in ("×2", "×2 on half", "a tenth's sign", "zero", "×1.01 on half", "10 % noise"):
        assert re.search(rf"^\| {re.escape(kind)} \| \d+ / \d+ / \d+ \| \d+ / \d+ / \d+ \|$", stdout, re.MULTILINE)
    joint, own = map(float, re.search(r"joint ([\d.]+), own only ([\d.]+)$", stdout, re.MULTILINE).groups())
    assert joint < own
