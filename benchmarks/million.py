"""A million coordinates: `check_gradients(samples="all")` and `gradcheck check --samples all`.

1. The library, in a fresh interpreter: one float64 parameter of --elements
   (10^6) elements, the objective f = θ[0] (a Python float: the cheapest
   objective there is, so the harness shows), its exact gradient. Peak
   resident memory during the check beyond what the process held before it
   (the arrays included), and the check's time ÷ a bare loop making the same
   number of objective calls (write θ±h in place, call, restore), measured in
   the same interpreter right after. The cyclic garbage collector is on.
2. The command line, each run in its own process writing to /dev/null: the
   short text at --elements, and the JSON and --verbose text (every
   coordinate, about 2 KB and 0.7 KB each) at --output-elements (10^5 by
   default; 10^6 takes a few minutes). Peak RSS of the process (ru_maxrss)
   beside the same command with --samples 1, and the bytes written, so that
   the output is seen to be streamed: its size grows, the memory does not.

Usage: python benchmarks/million.py [--elements 1000000] [--output-elements 100000]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from _common import REPOSITORY, header, reset_peak, status_kb

PROBLEM = textwrap.dedent(
    """
    import numpy as np

    def problem(elements={elements}):
        theta = np.linspace(-1.0, 1.0, elements)
        gradient = np.zeros(elements)
        gradient[0] = 1.0
        return (lambda parameters: float(parameters["x"][0])), {{"x": theta}}, {{"x": gradient}}
    """
)


def library_child(elements: int) -> dict:
    """In a fresh interpreter: the check's peak memory and time, and the bare loop's time."""
    import gc

    import numpy as np

    from gradcheck_cli.check import check_gradients

    assert gc.isenabled()
    theta = np.linspace(-1.0, 1.0, elements)
    gradient = np.zeros(elements)
    gradient[0] = 1.0
    calls = [0]

    def objective(parameters):
        calls[0] += 1
        return float(parameters["x"][0])

    reset_peak()  # VmHWM := VmRSS
    before_kb = status_kb("VmRSS")
    start = time.perf_counter()
    report = check_gradients(objective, {"x": theta}, {"x": gradient}, samples="all")
    check_seconds = time.perf_counter() - start
    peak_kb = status_kb("VmHWM")
    checked, verdict, evaluations = report.checked, report.verdict, report.evaluations
    del report
    flat, step, argument = theta.reshape(-1), 1e-5, {"x": theta}
    start = time.perf_counter()
    made = 0
    for index in range(elements):  # the same calls: θ−h and θ+h of every coordinate, and f(θ) 4 times
        original = flat[index]
        for shift in (-step, step):
            flat[index] = original + shift
            objective(argument)
            flat[index] = original
            made += 1
    bare_seconds = (time.perf_counter() - start) * evaluations / made
    return {
        "elements": elements,
        "checked": checked,
        "verdict": verdict,
        "evaluations": evaluations,
        "counted": calls[0] - made,
        "arrays_mb": (theta.nbytes + gradient.nbytes) / 1e6,
        "before_mb": before_kb / 1e3,
        "peak_beyond_mb": (peak_kb - before_kb) / 1e3,
        "check_seconds": check_seconds,
        "bare_seconds": bare_seconds,
    }


def cli_run(problem: str, arguments: list) -> dict:
    """One `gradcheck check` in a child process, its stdout drained and counted: peak RSS, time, size."""
    command = [sys.executable, "-m", "gradcheck_cli", "check", problem, *arguments]
    completed = subprocess.run(
        [sys.executable, "-c", _COUNTING, *command], capture_output=True, text=True, check=True, cwd=REPOSITORY
    )
    status, written, seconds, peak_kb = completed.stdout.split()
    return {"status": int(status), "bytes": int(written), "seconds": float(seconds), "peak_mb": int(peak_kb) / 1e3}


# Runs gradcheck with stdout on a pipe it drains and counts a megabyte at a time (never holding it).
_COUNTING = (
    "import os, resource, subprocess, sys, time\n"
    "start = time.perf_counter()\n"
    "process = subprocess.Popen(sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)\n"
    "written = 0\n"
    "while chunk := process.stdout.read(1 << 20):\n"
    "    written += len(chunk)\n"
    "status = process.wait()\n"
    "print(status, written, time.perf_counter() - start, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=10**6)
    parser.add_argument("--output-elements", type=int, default=10**5)
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.child:
        print(json.dumps(library_child(arguments.child)))
        return 0
    header("a million coordinates: check_gradients(samples='all') and gradcheck check --samples all")
    child = subprocess.run(
        [sys.executable, os.path.abspath(__file__), "--child", str(arguments.elements)],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(child.stdout)
    ratio = result["check_seconds"] / result["bare_seconds"]
    print(f"1. check_gradients(samples='all') on {result['elements']} float64 elements, f = θ[0], GC on:")
    print(
        f"   {result['verdict']}, {result['checked']} coordinates, {result['evaluations']} evaluations "
        f"(counted {result['counted']})"
    )
    print(
        f"   memory: {result['before_mb']:.0f} MB resident before the check (the arrays: "
        f"{result['arrays_mb']:.0f} MB); peak during the check {result['peak_beyond_mb']:.0f} MB beyond that, "
        f"{result['peak_beyond_mb'] * 1e6 / result['elements']:.0f} bytes a coordinate   goal ≤ 500 MB: "
        + ("met" if result["peak_beyond_mb"] <= 500 else "MISSED")
    )
    print(
        f"   time: check {result['check_seconds']:.2f} s, bare loop of the same calls {result['bare_seconds']:.2f} s: "
        f"ratio {ratio:.2f}"
    )
    with tempfile.TemporaryDirectory() as directory:
        print("2. gradcheck check --samples all, stdout drained through a pipe (peak RSS of the gradcheck process):")
        for elements, options in [
            (arguments.elements, []),
            (arguments.output_elements, ["--json"]),
            (arguments.output_elements, ["--verbose"]),
        ]:
            path = Path(directory) / f"problem_{elements}.py"
            path.write_text(PROBLEM.format(elements=elements), encoding="utf-8")
            problem = f"{path}:problem"
            one = cli_run(problem, ["--samples", "1", *options])
            every = cli_run(problem, ["--samples", "all", *options])
            label = " ".join(options) or "(short text)"
            print(
                f"   {elements:>8} elements {label:<14} exit {every['status']}, {every['bytes'] / 1e6:9.1f} MB written in "
                f"{every['seconds']:6.1f} s, peak {every['peak_mb']:6.0f} MB; with --samples 1: peak "
                f"{one['peak_mb']:4.0f} MB, so {every['peak_mb'] - one['peak_mb']:5.0f} MB for the coordinates"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
