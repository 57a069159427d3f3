"""`jobs=` on every executor this machine has: the serial report against each executor's, by `to_dict()`.

docs/parallel.md promises that any `concurrent.futures.Executor` gives the serial report: the
suite tests the standard library's pools and a dask.distributed LocalCluster; this script runs the
others a user would hand over, where installed: loky's reusable executor and mpi4py's
MPIPoolExecutor (under MPI: `mpiexec -n 1 python benchmarks/executors.py`, which spawns its
workers). For each problem it prints whether the reports are equal, how many chunks went to the
executor, and the wall-clock seconds of the serial and the executor's check. It exits 1 if a
report differs, never for a time.

Usage: python benchmarks/executors.py [--workers 2]
"""

import argparse
import concurrent.futures
import contextlib
import sys
import time

from _common import REPOSITORY, header
from gradcheck_cli import check_problem, load_problem

PROBLEMS = (
    "examples/line.py:problem",
    "examples/line.py:wrong_problem",
    "examples/mlp.py:problem",
    "benchmarks/_recurrent.py:cheap_problem",
)


class Counting(concurrent.futures.Executor):
    """An executor's submit, counted: the chunks a check hands it."""

    def __init__(self, executor):
        self.executor, self.chunks = executor, 0

    def submit(self, function, /, *arguments, **keywords):
        self.chunks += 1
        return self.executor.submit(function, *arguments, **keywords)

    def shutdown(self, wait=True, *, cancel_futures=False):
        self.executor.shutdown(wait=wait, cancel_futures=cancel_futures)


def executors(workers: int):
    """(name, context manager of an executor) for each executor that imports here."""
    yield "concurrent.futures.ProcessPoolExecutor", concurrent.futures.ProcessPoolExecutor(workers)
    try:
        import loky
    except ImportError:
        print("loky: not installed (pip install loky)")
    else:
        yield (
            f"loky {loky.__version__} get_reusable_executor",
            contextlib.nullcontext(loky.get_reusable_executor(max_workers=workers)),
        )
    try:
        import mpi4py
        from mpi4py.futures import MPIPoolExecutor
    except ImportError:
        print("mpi4py: not installed (pip install mpi4py mpich), or no MPI library")
    else:
        yield f"mpi4py {mpi4py.__version__} MPIPoolExecutor", MPIPoolExecutor(max_workers=workers)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    arguments = parser.parse_args()
    header("jobs= on every executor installed (reports against the serial one)")
    differ = 0
    for name, context in executors(arguments.workers):
        with context as executor:
            counted = Counting(executor)
            print(name)
            for reference in PROBLEMS:
                started = time.perf_counter()
                serial = check_problem(load_problem(str(REPOSITORY / reference)))
                serial_seconds = time.perf_counter() - started
                before, started = counted.chunks, time.perf_counter()
                parallel = check_problem(load_problem(str(REPOSITORY / reference)), jobs=counted)
                seconds = time.perf_counter() - started
                equal = serial.to_dict() == parallel.to_dict()
                differ += not equal
                print(
                    f"   {reference}: verdict {serial.verdict}, {counted.chunks - before} chunks, "
                    f"serial {serial_seconds:.3f} s, executor {seconds:.3f} s, reports equal: {'yes' if equal else 'NO'}"
                )
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
