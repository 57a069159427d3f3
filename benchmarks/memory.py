"""The peak memory of ``gradcheck check --samples 1`` on one large float32 parameter (issue 20).

A 10⁸-element float32 parameter is 400 MB; its gradient, float32 too, is another 400 MB that the
user's problem holds anyway. Each run is a fresh ``gradcheck`` process whose peak resident set
(``ru_maxrss`` from ``wait4``) is read when it ends, next to a process that only builds the same
problem, so gradcheck's own share shows apart from the user's arrays. Nothing here asserts a
number; the goal (the whole check's peak at most 4× the parameter) is printed beside the figure.

``--baseline PATH`` runs the same check with another checkout's gradcheck_cli (its directory
first on the path, e.g. ``/work/main``) in the same run, so that before and after are side by side.

Usage: python benchmarks/memory.py [--elements N] [--baseline PATH]   (nice -n 10 on a shared machine)
"""

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import REPOSITORY, machine_line  # noqa: E402

PROBLEM = """
import numpy as np

from gradcheck_cli import GradientProblem

ELEMENTS = {elements}


def objective(parameters):
    return float(np.sum(parameters["w"], dtype=np.float64))


def problem():
    w = np.arange(ELEMENTS, dtype=np.float32)  # no float64 temporary, as np.linspace would make
    w /= ELEMENTS
    return GradientProblem(objective, {{"w": w}}, {{"w": np.ones(ELEMENTS, dtype=np.float32)}})
"""

ONLY_BUILD = "import sys; sys.path.insert(0, {directory!r}); import large; large.problem()"


def peak_of(command: list, source=REPOSITORY) -> tuple:
    """(peak resident set in bytes, exit status, seconds) of one fresh process running ``command``
    with the gradcheck_cli of the checkout ``source`` (its directory first on the path)."""
    started = time.perf_counter()
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(source), os.environ.get("PYTHONPATH", "")]))
    process = subprocess.Popen(command, cwd=source, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read().decode()
    process.stderr.close()
    if process.returncode not in (0, 1):
        sys.exit(f"{' '.join(command)} exited {process.returncode}: {stderr}")
    return usage.ru_maxrss * 1024, process.returncode, time.perf_counter() - started


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--elements", type=int, default=10**8)
    parser.add_argument("--baseline", help="another checkout whose check is measured in the same run")
    arguments = parser.parse_args()
    elements = arguments.elements
    array = 4 * elements
    print(machine_line())
    baseline = f" --baseline {arguments.baseline}" if arguments.baseline else ""
    print(f"command: python benchmarks/memory.py --elements {elements}{baseline}")
    sources = {"": REPOSITORY} if not arguments.baseline else {" (baseline)": arguments.baseline, "": REPOSITORY}
    with tempfile.TemporaryDirectory() as directory:
        (Path(directory) / "large.py").write_text(textwrap.dedent(PROBLEM.format(elements=elements)))
        built, _, _ = peak_of([sys.executable, "-c", ONLY_BUILD.format(directory=directory)])
        check = [sys.executable, "-m", "gradcheck_cli", "check", f"{directory}/large.py:problem", "--samples", "1"]
        peaks = {label: peak_of(check, source) for label, source in sources.items()}
    print(f"parameter: {elements} float32 elements, {array / 1e6:.1f} MB (its float32 gradient as much again)")
    print(f"problem built, nothing checked: peak {built / 1e6:.1f} MB = {built / array:.2f}× the parameter")
    for label, (peak, status, seconds) in peaks.items():
        print(
            f"gradcheck check --samples 1{label}: peak {peak / 1e6:.1f} MB = {peak / array:.2f}× the parameter "
            f"(goal ≤ 4×), gradcheck's own {(peak - built) / 1e6:.1f} MB = {(peak - built) / array:.2f}×; "
            f"exit {status}, {seconds:.1f} s"
        )


if __name__ == "__main__":
    main()
