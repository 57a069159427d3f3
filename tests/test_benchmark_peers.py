"""Smoke test of benchmarks/peers.py's fast section (_fast_peers.py): it runs on tiny models and prints
its rows. Times are not asserted (a benchmark measures); the rows and their goals are checked to be
there, the torch and JAX rows only where those are installed."""

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

from extras import require

require("scipy")  # peers.py measures scipy's checks beside ours; the oldest-versions leg has none

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def test_the_fast_section_prints_each_row_with_its_goal():
    command = [sys.executable, str(BENCHMARKS / "peers.py"), "--fast-only", "--fast-tiny", "--fast-repeats", "1"]
    command += ["--fast-seeds", "2"]
    completed = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=BENCHMARKS.parent)
    assert completed.returncode == 0, completed.stderr
    stdout = completed.stdout
    assert stdout.startswith("== peers: the fast check beside the projection peers ==")
    assert "reproduce: python benchmarks/peers.py --fast-only --fast-tiny --fast-repeats 1 --fast-seeds 2" in stdout
    for dtype in ("float64", "float32"):
        assert re.search(rf"^  numpy small MLP {dtype}: check_gradients .*, \d+ calls, passed", stdout, re.MULTILINE)
    assert stdout.count("time ÷ bare loop: ") == 2 and "calls ÷ bare loop's: " in stdout
    assert re.search(
        r"^  check_problem\(examples/mlp.py:problem\): .* at its defaults   goal ≤ 4 ms: ", stdout, re.MULTILINE
    )
    if importlib.util.find_spec("torch") is not None:
        assert stdout.count("gradcheck fast ÷ torch fast_mode: ") == 3
        assert re.search(r"fast calls \d+ against 2 \+ 4 × inputs = 26: ", stdout)
        assert len(re.findall(r"2 seeds: gradcheck fast failed 2/2, torch fast_mode failed \d/2", stdout)) == 2
    else:
        assert "torch not installed: the torch rows are not measured" in stdout
    if importlib.util.find_spec("jax") is not None:
        assert "default ÷ bare loop: " in stdout and "fast ÷ check_grads: " in stdout
        assert "float32: default passed, fast passed" in stdout
    else:
        assert "jax not installed: the JAX rows are not measured" in stdout
