"""`--jobs`: check_problem with jobs=1 and jobs=2, on a CPU-bound objective and on a cheap one.

The problems are benchmarks/_recurrent.py's, loaded by reference as `gradcheck check` loads
them (so each worker loads them again): `problem`, a tanh recurrence of about 10 ms a call,
and `cheap_problem`, the same over a few steps, about 20 µs a call. Each check runs at
`--samples` (default all 272 coordinates) with jobs=1 and jobs=2 in the same interleaved
rounds; the figures are wall-clock medians and the median of the per-round ratios
jobs=1 ÷ jobs=2, the speed-up. Goal for the CPU-bound problem on 2 usable cores: ≥ 1.5. The
cheap problem shows where workers do not pay: their start-up is most of the time. Both
reports must be equal (`to_dict()`); the script exits 1 if they are not, never for a time.

BLAS is held to one thread (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, MKL_NUM_THREADS, unless
set), so that one call is one core's work, in this process and in the workers alike.

Usage: python benchmarks/jobs.py [--samples all|N] [--repeats 3] [--warmup 1]
"""

import os

THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
for _variable in THREADS:
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402 - the thread counts above must be set before numpy is imported
import sys  # noqa: E402
import time  # noqa: E402

from _common import REPOSITORY, header, interleaved, median, seconds, spread  # noqa: E402
from gradcheck_cli import check_problem, load_problem  # noqa: E402

GOAL = 1.5
#: (problem function of benchmarks/_recurrent.py, what it shows, whether the goal applies)
PROBLEMS = (("problem", "CPU-bound", True), ("cheap_problem", "cheap", False))


def per_call(problem, calls: int) -> float:
    """The median seconds of one objective call, over ``calls`` calls."""
    durations = []
    for _ in range(calls):
        started = time.perf_counter()
        problem.objective(problem.parameters)
        durations.append(time.perf_counter() - started)
    return median(durations)


def samples_argument(text: str):
    return text if text == "all" else int(text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=samples_argument, default="all", help="coordinates per parameter, or all")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds of each pair of checks")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    arguments = parser.parse_args()
    header("--jobs: check_problem with jobs=1 and jobs=2 (wall clock)")
    print("threads: " + ", ".join(f"{name}={os.environ[name]}" for name in THREADS))
    mismatched = False
    for function, label, goal_applies in PROBLEMS:
        reference = f"benchmarks/_recurrent.py:{function}"
        os.chdir(REPOSITORY)
        problem = load_problem(reference)
        call = per_call(problem, 20)
        reports = {}

        def run(jobs, problem=problem, reports=reports):
            reports[jobs] = check_problem(problem, samples=arguments.samples, jobs=jobs)

        walls = interleaved({1: lambda: run(1), 2: lambda: run(2)}, arguments.repeats, arguments.warmup)
        walls = {jobs: durations["wall"] for jobs, durations in walls.items()}
        ratio = median([serial / parallel for serial, parallel in zip(walls[1], walls[2])])
        report = reports[1]
        equal = report.to_dict() == reports[2].to_dict()
        mismatched |= not equal
        print(
            f"{label}: {reference}, {seconds(call)} a call; {report.checked} coordinates, "
            f"{report.evaluations} evaluations, verdict {report.verdict}"
        )
        print(f"   jobs=1: {spread(walls[1])}")
        print(f"   jobs=2: {spread(walls[2])}")
        goal = f"   goal ≥ {GOAL:g} on 2 usable cores: {'met' if ratio >= GOAL else 'MISSED'}" if goal_applies else ""
        print(f"   speed-up jobs=1 ÷ jobs=2: {ratio:.2f}×{goal}")
        print(f"   reports equal (to_dict): {'yes' if equal else 'NO: MISMATCH'}")
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
