"""`--jobs`: check_problem with jobs=1 and jobs=2 on CPU-bound objectives and a cheap one, and the command line.

The problems are benchmarks/_recurrent.py's, loaded by reference as `gradcheck check` loads
them (so each worker loads them again): `problem`, a tanh recurrence of about 10 ms a call (a
check of about 5 s), `second_problem`, the same over a fifth of the steps (a check of about
1 s), and `cheap_problem`, over a few steps, about 20 µs a call. Each check runs at `--samples`
(default all 272 coordinates) with jobs=1 and jobs=2 in the same interleaved rounds; the
figures are wall-clock medians and the median of the per-round ratios jobs=1 ÷ jobs=2, the
speed-up. In this process the workers' forkserver is started by the warm-up round and then
serves every check, as it does in a program that checks several times; the command-line rows
time `gradcheck check second_problem --jobs 1` and `--jobs 2` as whole commands (the installed
`gradcheck` script beside this interpreter, as a user runs it; `python -m gradcheck_cli` without
one), interleaved after a warm-up round, which start it every time: its serial command is the
issue's "1 s check" (about 0.25 s of start-up and 0.95 s of checking on a quiet machine). Goals on 2 usable cores: ≥ 1.8 for the ~5 s check, ≥ 1.4 for the
~1 s one. The cheap problem shows where workers do not pay. The load averages (1, 5 and 15
minutes) are printed before and after: a goal is only judged on a quiet machine. All reports
must be equal (`to_dict()`, and the command's stdout); the script exits 1 if they are not,
never for a time.

BLAS is held to one thread (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, MKL_NUM_THREADS, unless
set), so that one call is one core's work, in this process and in the workers alike.

Then the same ~1 s check on a dask ``LocalCluster`` of 2 worker processes (``Client.get_executor()``
as ``jobs``), against jobs=2 and serially, interleaved (skipped without dask.distributed).

First, the machine's own speed-up for two processes (one process making N calls of the ~5 s
problem's objective against two making N each at once): the ceiling of any jobs=2. Each library
row also counts where a jobs=2 check makes its calls (this process, the workers) and the bound
that split sets on 2 cores, which does not depend on the load.

Usage: python benchmarks/jobs.py [--samples all|N] [--repeats 3] [--warmup 1] [--command-repeats 3] [--machine-calls 100]
                                 [--rows machine,library,dask,command]
"""

import os

THREADS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
for _variable in THREADS:
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402 - the thread counts above must be set before numpy is imported
import dataclasses  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

from _common import REPOSITORY, header, interleaved, median, seconds, spread  # noqa: E402
from gradcheck_cli import check_problem, load_problem  # noqa: E402

#: (problem function of benchmarks/_recurrent.py, what it shows, the goal on 2 usable cores or None)
PROBLEMS = (
    ("problem", "CPU-bound ~5 s", 1.8),
    ("second_problem", "CPU-bound ~1 s", 1.4),
    ("cheap_problem", "cheap", None),
)
COMMAND_PROBLEM = "second_problem"
ROWS = ("machine", "library", "dask", "command")


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


def rows_argument(text: str) -> tuple:
    rows = tuple(text.split(","))
    if not set(rows) <= set(ROWS):
        raise argparse.ArgumentTypeError(f"rows are {','.join(ROWS)}, got {text!r}")
    return rows


def load() -> str:
    return "load average " + " ".join(f"{value:.2f}" for value in os.getloadavg())


def speed_up(walls: dict) -> float:
    return median([serial / parallel for serial, parallel in zip(walls[1], walls[2])])


def goal_line(ratio: float, goal) -> str:
    return "" if goal is None else f"   goal ≥ {goal:g} on 2 usable cores: {'met' if ratio >= goal else 'MISSED'}"


def _calls_alone(arguments) -> float:
    """Seconds for ``calls`` calls of a problem of benchmarks/_recurrent.py, loaded in this process."""
    function, calls = arguments
    problem = load_problem(f"benchmarks/_recurrent.py:{function}")
    started = time.perf_counter()
    for _ in range(calls):
        problem.objective(problem.parameters)
    return time.perf_counter() - started


def machine_row(function: str, calls: int, repeats: int) -> None:
    """The machine's own speed-up for two processes: one process making ``calls`` calls of the objective
    against two making as many each at once, interleaved, in two spawned processes (not forks of the
    forkserver: started here, it would be the one gradcheck's workers come from, without the imports
    gradcheck has it make first). No split of a check between two processes can do better than this ratio."""
    import multiprocessing

    with multiprocessing.get_context("spawn").Pool(2) as pool:
        pool.map(_calls_alone, [(function, 1)] * 2)  # both loaded, warm
        ratios, ones, twos = [], [], []
        for _ in range(repeats):
            ones.append(pool.apply(_calls_alone, ((function, calls),)))
            started = time.perf_counter()
            pool.map(_calls_alone, [(function, calls)] * 2, chunksize=1)
            twos.append(time.perf_counter() - started)
            ratios.append(2 * ones[-1] / twos[-1])
    print(f"machine: {calls} calls of {function} in one process, and {calls} in each of two at once")
    print(f"   one process: {spread(ones)}; two at once: {spread(twos)}")
    print(f"   the machine's speed-up for 2 processes (2 × one ÷ two): {median(ratios):.2f}×, the ceiling of jobs=2")


def call_breakdown(problem, samples) -> str:
    """Where the calls of a jobs=2 check are made: this process's (counted here: f(θ), the directions,
    the confirmations, the verification probes of every chunk's first coordinate) and the workers'
    (each coordinate's two probes, and one f(θ) per worker as it loads), and the speed-up bound that
    the split alone sets on 2 cores (the serial calls ÷ half of all the calls), whatever the load."""
    from gradcheck_cli.check import parallel

    here, split = [0], []
    objective, chunks = problem.objective, parallel.chunks

    def counting(parameters):
        here[0] += 1
        return objective(parameters)

    def recorded(*arguments):
        split.append(chunks(*arguments))
        return split[-1]

    parallel.chunks = recorded
    try:
        report = check_problem(dataclasses.replace(problem, objective=counting), samples=samples, jobs=2)
    finally:
        parallel.chunks = chunks
    pieces = sum(len(parameter) for parameter in split[0])
    workers = 2 * report.checked + 2
    bound = report.evaluations / ((workers + here[0]) / 2)
    return (
        f"calls with jobs=2: {here[0]} here ({2 * pieces} of them verifying {pieces} chunks), {workers} in the "
        f"workers; {workers / (workers + here[0]):.1%} in the workers; bound on 2 cores {bound:.2f}×"
    )


def library_rows(arguments) -> bool:
    """Each problem's jobs=1 and jobs=2 checks in this process; whether every pair of reports was equal."""
    equal_everywhere = True
    for function, label, goal in PROBLEMS:
        reference = f"benchmarks/_recurrent.py:{function}"
        problem = load_problem(reference)
        call = per_call(problem, 20)
        reports = {}

        def run(jobs, problem=problem, reports=reports):
            reports[jobs] = check_problem(problem, samples=arguments.samples, jobs=jobs)

        walls = interleaved({1: lambda: run(1), 2: lambda: run(2)}, arguments.repeats, arguments.warmup)
        walls = {jobs: durations["wall"] for jobs, durations in walls.items()}
        ratio, report = speed_up(walls), reports[1]
        equal = report.to_dict() == reports[2].to_dict()
        equal_everywhere &= equal
        print(
            f"{label}: {reference}, {seconds(call)} a call; {report.checked} coordinates, "
            f"{report.evaluations} evaluations, verdict {report.verdict}"
        )
        print(f"   jobs=1: {spread(walls[1])}")
        print(f"   jobs=2: {spread(walls[2])}")
        print(f"   speed-up jobs=1 ÷ jobs=2: {ratio:.2f}×{goal_line(ratio, goal)}")
        print(f"   reports equal (to_dict): {'yes' if equal else 'NO: MISMATCH'}")
        print(f"   {call_breakdown(problem, arguments.samples)}")
    return equal_everywhere


def gradcheck_command() -> list:
    """The installed ``gradcheck`` script beside this interpreter, as a user runs it; else ``python -m gradcheck_cli``."""
    script = Path(sys.executable).with_name("gradcheck")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "gradcheck_cli"]


def command_rows(arguments) -> bool:
    """``gradcheck check`` of COMMAND_PROBLEM with --jobs 1 and --jobs 2, each a fresh process."""
    reference = f"benchmarks/_recurrent.py:{COMMAND_PROBLEM}"
    samples = str(arguments.samples)
    outputs, program = {}, gradcheck_command()

    def run(jobs):
        command = [*program, "check", reference, "--samples", samples, "--json", "--jobs", str(jobs)]
        completed = subprocess.run(command, cwd=REPOSITORY, capture_output=True, check=False)
        outputs.setdefault(jobs, set()).add((completed.returncode, completed.stdout))

    walls = interleaved({1: lambda: run(1), 2: lambda: run(2)}, arguments.command_repeats, arguments.warmup)
    walls = {jobs: durations["wall"] for jobs, durations in walls.items()}
    ratio = speed_up(walls)
    equal = len(outputs[1] | outputs[2]) == 1
    shown = " ".join(Path(part).name if part == program[0] else part for part in program)
    print(f"command line: {shown} check {reference} --samples {samples} --json, a fresh process each")
    print(f"   --jobs 1: {spread(walls[1])}")
    print(f"   --jobs 2: {spread(walls[2])}")
    print(f"   speed-up --jobs 1 ÷ --jobs 2: {ratio:.2f}×{goal_line(ratio, 1.4)}")
    print(f"   stdout equal: {'yes' if equal else 'NO: MISMATCH'}")
    return equal


def dask_row(arguments) -> bool:
    """COMMAND_PROBLEM checked serially, with jobs=2 and on a dask LocalCluster of 2 worker processes
    (one thread each, started once, as a cluster is), interleaved; whether the reports were equal."""
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        print("dask: distributed is not installed (pip install -e '.[dask]'): the cluster row is not measured")
        return True
    reference = f"benchmarks/_recurrent.py:{COMMAND_PROBLEM}"
    problem, reports = load_problem(reference), {}
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    with cluster, Client(cluster) as client:
        executor = client.get_executor()

        def run(label, jobs):
            reports[label] = check_problem(problem, samples=arguments.samples, jobs=jobs)

        runs = {"serial": lambda: run("serial", 1), "--jobs 2": lambda: run("--jobs 2", 2)}
        runs["dask"] = lambda: run("dask", executor)
        walls = interleaved(runs, arguments.repeats, arguments.warmup)
    walls = {label: durations["wall"] for label, durations in walls.items()}
    equal = len({repr(report.to_dict()) for report in reports.values()}) == 1
    print(f"dask: {reference} on a LocalCluster of 2 worker processes (1 thread each), started once")
    for label in runs:
        print(f"   {label}: {spread(walls[label])}")
    serial = median(walls["serial"])
    print(
        f"   speed-up serial ÷ dask: {serial / median(walls['dask']):.2f}×, "
        f"serial ÷ --jobs 2: {serial / median(walls['--jobs 2']):.2f}×"
    )
    print(f"   reports equal (to_dict): {'yes' if equal else 'NO: MISMATCH'}")
    return equal


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=samples_argument, default="all", help="coordinates per parameter, or all")
    parser.add_argument("--repeats", type=int, default=3, help="interleaved rounds of each pair of checks")
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds first")
    parser.add_argument("--command-repeats", type=int, default=3, help="interleaved rounds of the two commands")
    parser.add_argument("--machine-calls", type=int, default=100, help="calls per process in the machine row")
    parser.add_argument(
        "--rows", type=rows_argument, default=ROWS, help="which rows, comma-separated: " + ",".join(ROWS)
    )
    arguments = parser.parse_args()
    header("--jobs: check_problem with jobs=1 and jobs=2 (wall clock)")
    print("threads: " + ", ".join(f"{name}={os.environ[name]}" for name in THREADS))
    print(f"before: {load()}")
    os.chdir(REPOSITORY)
    equal = True
    if "machine" in arguments.rows:
        machine_row("problem", arguments.machine_calls, arguments.repeats)
    if "library" in arguments.rows:
        equal &= library_rows(arguments)
    if "dask" in arguments.rows:
        equal &= dask_row(arguments)
    if "command" in arguments.rows:
        equal &= command_rows(arguments)
    print(f"after: {load()}")
    return 0 if equal else 1


if __name__ == "__main__":
    sys.exit(main())
