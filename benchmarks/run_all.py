"""Run every benchmark, one fresh interpreter each, and print their figures (`make bench`).

Each script prints its own machine line, the command that reproduces it and
the ratios it measured side by side; none asserts a time. This exits
non-zero only when a script fails to run (a crash, a failing command it
times), never because a goal was missed.

Usage: python benchmarks/run_all.py
"""

import subprocess
import sys
import time
from pathlib import Path

BENCHMARKS = Path(__file__).resolve().parent
SCRIPTS = (
    "startup.py",
    "overhead.py",
    "probe_loop.py",
    "evaluations.py",
    "scale.py",
    "million.py",
    "memory.py",
    "fixed_cost.py",
    "parameters.py",
    "jobs.py",
    "peers.py",
    "torch_peers.py",
    "jax_peers.py",
    "parity.py",
    "taylor_localization.py",
)


def main():
    started = time.perf_counter()
    failed = []
    for script in SCRIPTS:
        script_started = time.perf_counter()
        completed = subprocess.run([sys.executable, str(BENCHMARKS / script)], cwd=BENCHMARKS.parent)
        print(f"-- {script}: {time.perf_counter() - script_started:.1f} s, exit {completed.returncode}\n", flush=True)
        if completed.returncode != 0:
            failed.append(script)
    print(
        f"all benchmarks: {time.perf_counter() - started:.1f} s" + (f"; FAILED: {', '.join(failed)}" if failed else "")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
