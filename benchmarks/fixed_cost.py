"""The fixed O(N) cost of a default check and its peak memory beyond the arrays (issue 23, first row).

A default ``check_gradients`` on one parameter of N elements makes 38 objective calls (f(θ), 16
coordinates' two probes, the direction's two, two checkpoints and a last f(θ)) and, beside them,
passes over the whole array: validation, the selection of the largest entries, the restoration
snapshot, the directional test. The objective here is f = θ[0] (a fraction of a microsecond a
call) and the gradient e₀ plus entries of 1e-30 everywhere else (dense, so the selection reads
real values; the check passes), so that what is measured is the harness: (the check's CPU time −
the same number of bare objective calls) ÷ N, in ns an element. Peak memory is tracemalloc's peak
during the check (numpy reports its buffers to it) ÷ the parameter's bytes: what gradcheck
allocates beyond the user's arrays. The first check in a process is shown apart: it also imports
what a check imports lazily and computes the direction's ±1 signs, which later checks of the
same size reuse (N/8 bytes kept).

Every figure comes from a fresh interpreter. ``--baseline PATH`` runs the same child with
``PYTHONPATH=PATH`` (another checkout, e.g. ``/work/main``) in the same rounds, the order
rotating, so that before and after are side by side under the same load. Nothing here asserts a
number; the goals (≤ 15 ns an element, ≤ 3× the array) are printed beside the figures. Beside
the nanoseconds, the cost in copies of the array (``np.copyto``, timed after each check in the same
process): what the memory system of the moment makes of a pass, so a loaded machine's figure can be
read against its floor.

Usage: python benchmarks/fixed_cost.py [--elements 10000000] [--repeats 5] [--baseline PATH]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPOSITORY, machine_line, reproduce_line  # noqa: E402

CHILD = r"""
import json, sys, time, tracemalloc
import numpy as np
import gradcheck_cli
from gradcheck_cli import check_gradients

elements, dtype, repeats = int(sys.argv[1]), np.dtype(sys.argv[2]), int(sys.argv[3])
w = np.random.default_rng(1).standard_normal(elements).astype(dtype)
g = np.full(elements, 1e-30, dtype=dtype)
g[0] = 1.0
parameters, gradients = {"w": w}, {"w": g}

def objective(p):
    return float(p["w"][0])

def check():
    return check_gradients(objective, parameters, gradients)

started = time.process_time()
report = check()  # the first check of this size: it also computes the direction's signs (then kept)
first = time.process_time() - started
spare = np.zeros_like(w)  # the floor: one copy of the array (a read and a write stream), timed between checks
times, copies = [], []
for _ in range(repeats):
    started = time.process_time()
    report = check()
    times.append(time.process_time() - started)
    started = time.process_time()
    np.copyto(spare, w)
    copies.append(time.process_time() - started)
started = time.process_time()
for _ in range(report.evaluations):
    objective(parameters)
calls = time.process_time() - started
tracemalloc.start()
check()
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
print(json.dumps({"verdict": report.verdict, "evaluations": report.evaluations, "times": times, "first": first,
                  "copies": copies,
                  "calls": calls, "peak": peak, "bytes": w.nbytes, "module": gradcheck_cli.__file__}))
"""


def run_child(path: str | None, elements: int, dtype: str, repeats: int) -> dict:
    """One fresh interpreter's figures, with ``path`` ahead on PYTHONPATH (None: this checkout)."""
    environment = dict(os.environ)
    source = str(REPOSITORY) if path is None else path
    environment["PYTHONPATH"] = source + os.pathsep + environment.get("PYTHONPATH", "")
    completed = subprocess.run(
        [sys.executable, "-c", CHILD, str(elements), dtype, str(repeats)],
        capture_output=True,
        text=True,
        cwd=source,
        env=environment,
        check=False,
    )
    if completed.returncode != 0:
        sys.exit(f"the check under {source} failed: {completed.stderr}")
    return json.loads(completed.stdout)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=10**7)
    parser.add_argument("--repeats", type=int, default=5, help="timed checks per child process")
    parser.add_argument("--rounds", type=int, default=2, help="child processes per checkout and dtype")
    parser.add_argument("--baseline", help="another checkout, measured in the same rounds")
    arguments = parser.parse_args()
    print(machine_line())
    print(reproduce_line())
    checkouts = {"this checkout": None}
    if arguments.baseline:
        checkouts = {f"baseline {arguments.baseline}": arguments.baseline, **checkouts}
    figures = {(name, dtype): [] for name in checkouts for dtype in ("float64", "float32")}
    keys = list(figures)
    for round_number in range(arguments.rounds):
        shift = round_number % len(keys)
        for name, dtype in keys[shift:] + keys[:shift]:
            figures[name, dtype].append(run_child(checkouts[name], arguments.elements, dtype, arguments.repeats))
    print(f"N = {arguments.elements}, {arguments.rounds} fresh processes × {arguments.repeats} checks each")
    print(
        "| checkout | dtype | verdict, calls | fixed cost, ns an element (median, min–max) "
        "| ÷ one array copy | first check in the process | peak ÷ array |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    medians = {}
    for (name, dtype), runs in figures.items():
        costs = [(t - run["calls"]) / arguments.elements * 1e9 for run in runs for t in run["times"]]
        peak = max(run["peak"] / run["bytes"] for run in runs)
        first = statistics.median((run["first"] - run["calls"]) / arguments.elements * 1e9 for run in runs)
        medians[name, dtype] = statistics.median(costs)
        in_copies = statistics.median(
            (t - run["calls"]) / c for run in runs for t, c in zip(run["times"], run["copies"])
        )
        print(
            f"| {name} | {dtype} | {runs[0]['verdict']}, {runs[0]['evaluations']} | "
            f"{medians[name, dtype]:.1f} ({min(costs):.1f}–{max(costs):.1f}) | {in_copies:.1f} | {first:.1f} "
            f"| {peak:.2f}× |"
        )
    print("goals: fixed cost ≤ 15 ns an element, peak ≤ 3× the array")
    if arguments.baseline:
        for dtype in ("float64", "float32"):
            ratio = medians["this checkout", dtype] / medians[keys[0][0], dtype]
            print(f"{dtype}: this checkout's fixed cost ÷ the baseline's, same rounds: {ratio:.2f}")


if __name__ == "__main__":
    main()
