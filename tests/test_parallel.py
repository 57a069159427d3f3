"""parallel.py: ``check_gradients(..., jobs=N)`` and ``gradcheck check --jobs N``.

The report with workers is the serial one, bit for bit: ``--json`` output compared byte for
byte on passing, failing, kinked and impure problems, and library reports compared with ``==``.
The failures are the serial ones, and a worker's own failures (a crash, a problem that loads
differently) are one typed line. Real processes throughout: a spawn pool, a worker that really
dies, a real SIGINT to the whole process group, as a terminal's Ctrl-C sends it.
"""

import json
import multiprocessing
import operator
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from extras import require
from gradcheck_cli import errors
from gradcheck_cli.check import check_gradients, check_problem
from gradcheck_cli.check.parallel import CHUNKS_PER_WORKER, chunks, worker_count
from gradcheck_cli.cli.app import EXIT_BAD_INPUT, EXIT_INTERRUPTED
from gradcheck_cli.problem import load_problem

ROOT = Path(__file__).resolve().parent.parent
PORTABLE = "fixtures/golden/inputs/portable.py"

# Problems run by reference in worker processes: each of these runs in the parent and in every worker.
PROBLEMS = """
import atexit
import collections
import math
import multiprocessing
import os
import signal
import threading
import time

import numpy as np

from gradcheck_cli import GradientProblem

IN_WORKER = multiprocessing.parent_process() is not None  # loaded in a worker (not in a fork of the command)


def in_worker():
    # At a call: a worker of either kind, a fork of the command (which loaded the problem) included.
    return multiprocessing.parent_process() is not None


def _thread_started():
    # A thread of the problem's own, running on: the command's workers cannot be forks of it.
    if not IN_WORKER:
        threading.Thread(target=threading.Event().wait, daemon=True).start()
W = np.linspace(-1.0, 1.0, 24)


def _squares(parameters):
    w = parameters["w"]
    return 0.5 * math.fsum((w * w).tolist())


def _problem(objective, w=W):
    w = w.copy()
    return GradientProblem(objective, {"w": w}, {"w": w.copy()})


def impure():
    # f at a point drifts by 4 ulps each time that very point is evaluated again: only f(θ) is.
    seen = collections.Counter()

    def objective(parameters):
        key = parameters["w"].tobytes()
        repeats, seen[key] = seen[key], seen[key] + 1
        return (1.0 + _squares(parameters)) * (1.0 + repeats * 2.0**-50)

    return _problem(objective)


def chatty():
    print("loading in", "a worker" if IN_WORKER else "the command")

    def objective(parameters):
        if in_worker():
            os.write(1, b"descriptor one in a worker\\n")
            print("print", "in", "a", "worker")  # four pieces: one write each when unbuffered
        return _squares(parameters)

    return _problem(objective)


def chatty_threaded():
    _thread_started()
    return chatty()


def dies():
    def objective(parameters):
        if in_worker():
            os._exit(3)
        return _squares(parameters)

    return _problem(objective)


def raises():
    def objective(parameters):
        if parameters["w"][17] != W[17]:
            raise ValueError("w[17] is probed")
        return _squares(parameters)

    return _problem(objective)


def raises_at_once():
    # Coordinate 0's probe raises while the later chunks are still running or waiting.
    def objective(parameters):
        if parameters["w"][0] != -1.0:
            raise ValueError("w[0] is probed")
        time.sleep(0.001)
        return _squares(parameters)

    return _problem(objective, np.linspace(-1.0, 1.0, 400))


def nan():
    def objective(parameters):
        return math.nan if parameters["w"][17] != W[17] else _squares(parameters)

    return _problem(objective)


def unseeded():
    return _problem(_squares, np.random.default_rng().standard_normal(24))


def unseeded_data():
    targets = np.random.default_rng().standard_normal(24)

    def objective(parameters):
        residual = parameters["w"] - targets
        return 0.5 * math.fsum((residual * residual).tolist())

    return GradientProblem(objective, {"w": W.copy()}, {"w": W - targets})


def scaled():
    # Reads the environment at every call: a worker must see this process's, as it is now.
    def objective(parameters):
        return float(os.environ.get("GRADCHECK_TEST_SCALE", "1")) * _squares(parameters)

    return _problem(objective)


def forked():
    # Each worker's parent (its pid and command line), marked at its first call; and each load.
    with open(os.environ["GRADCHECK_TEST_PARENTS"] + "/loaded-" + str(os.getpid()), "w"):
        pass

    def objective(parameters):
        mark = os.environ["GRADCHECK_TEST_PARENTS"] + "/" + str(os.getpid())
        if in_worker() and not os.path.exists(mark):
            with open(mark, "w") as written:
                with open(f"/proc/{os.getppid()}/cmdline", "rb") as command:
                    written.write(str(os.getppid()) + " " + command.read().replace(b"\\0", b" ").decode())
        return _squares(parameters)

    return _problem(objective)


def forked_threaded():
    _thread_started()
    return forked()


_KEPT = []


def forked_open_file():
    # A file kept open: forks of the command would share its position.
    _KEPT.append(open(__file__, "rb"))
    return forked()


def early():
    # The command's own child processes at its first f(θ), before the first pass starts any worker:
    # written to a file, by their command lines.
    def objective(parameters):
        if not in_worker() and not os.path.exists(os.environ["GRADCHECK_TEST_PARENTS"] + "/children"):
            commands = []
            for entry in filter(str.isdigit, os.listdir("/proc")):
                try:
                    with open(f"/proc/{entry}/stat") as stat:
                        parent = int(stat.read().rsplit(")", 1)[1].split()[1])
                    if parent == os.getpid():
                        with open(f"/proc/{entry}/cmdline", "rb") as command:
                            commands.append(command.read().replace(b"\\0", b" ").decode())
                except OSError:  # it ended meanwhile
                    continue
            with open(os.environ["GRADCHECK_TEST_PARENTS"] + "/children", "w") as mark:
                mark.write("\\n".join(commands))
        return _squares(parameters)

    return _problem(objective)


def early_threaded():
    _thread_started()
    return early()


def killed():
    # A worker of a cluster (a nanny's child process) that kills itself at its first probe, as the OOM
    # killer would; the parent process goes on.
    def objective(parameters):
        if IN_WORKER:
            os.kill(os.getpid(), signal.SIGKILL)
        return _squares(parameters)

    return _problem(objective)


def _started_directory():
    # Where a worker marks that it probes: the command's environment says, or (a cluster's worker, which
    # has its own environment) the file started-directory beside this one.
    if "GRADCHECK_TEST_STARTED" in os.environ:
        return os.environ["GRADCHECK_TEST_STARTED"]
    with open(os.path.join(os.path.dirname(__file__), "started-directory")) as file:
        return file.read()


def slow():
    w = np.linspace(-1.0, 1.0, 4000)
    if not IN_WORKER:  # the parent's w, as it is when the command exits
        atexit.register(lambda: np.save(os.environ["GRADCHECK_TEST_SAVED"], w))

    def objective(parameters):
        if in_worker():
            open(os.path.join(_started_directory(), str(os.getpid())), "w").close()
        time.sleep(0.002)
        return _squares(parameters)

    return GradientProblem(objective, {"w": w}, {"w": w.copy()})
"""


@pytest.fixture(scope="module")
def problems(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("parallel") / "problems.py"
    path.write_text(textwrap.dedent(PROBLEMS))
    return path


def gradcheck(*arguments, env=None, **keywords):
    """``python -m gradcheck_cli ARGUMENTS`` in a fresh interpreter, output captured."""
    environment = {**os.environ, "NO_COLOR": "1", **(env or {})}
    command = [sys.executable, "-m", "gradcheck_cli", *arguments]
    return subprocess.run(command, cwd=ROOT, env=environment, timeout=120, capture_output=True, **keywords)


def one_error_line(stderr: bytes) -> str:
    text = stderr.decode()
    assert "Traceback" not in text and text.startswith("Error: ") and text.count("\n") == 1, text
    return text[len("Error: ") : -1]


# ------------------------------------------------------------ the same report


@pytest.mark.parametrize(
    "problem, options, verdict",
    [
        (f"{PORTABLE}:problem", ["--samples", "all"], "passed"),
        (f"{PORTABLE}:wrong_problem", ["--samples", "all", "--step", "auto"], "failed"),
        (f"{PORTABLE}:kink_problem", ["--samples", "all"], "inconclusive"),
        ("{problems}:impure", ["--samples", "all"], "passed"),
        (f"{PORTABLE}:conjugated_problem", ["--samples", "all"], "failed"),
    ],
    ids=["passing", "failing", "kinked", "impure", "complex"],
)
def test_jobs_2_prints_the_json_of_jobs_1_byte_for_byte(problems, problem, options, verdict):
    reference = problem.format(problems=problems)
    serial = gradcheck("check", reference, "--json", *options, "--jobs", "1")
    parallel = gradcheck("check", reference, "--json", *options, "--jobs", "2")
    assert parallel.stdout == serial.stdout
    assert (parallel.returncode, parallel.stderr) == (serial.returncode, serial.stderr)
    report = json.loads(serial.stdout)["check"]
    assert report["verdict"] == verdict
    if "kink" in reference:
        verdicts = {coordinate["verdict"] for parameter in report["parameters"] for coordinate in parameter["checks"]}
        assert "suspected kink" in verdicts
    if "impure" in reference:  # the purity measurement saw it, and so did every error bar
        assert (report["purity"]["pure"], report["purity"]["distinct"]) == (False, 4)


@pytest.mark.parametrize(
    "problem, loads",
    [
        ("chatty", ["loading in the command"]),
        ("chatty_threaded", ["loading in the command"] + ["loading in a worker"] * 2),
    ],
    ids=["forks of the command", "forks of the server"],
)
def test_what_the_users_code_prints_in_a_worker_goes_to_stderr(problems, problem, loads):
    serial = gradcheck("check", f"{problems}:{problem}", "--json", "--jobs", "1")
    # Unbuffered (python -u, as some CI runners set it) each piece of a print is a write of its own:
    # the workers' lines must still arrive whole, never spliced mid-line.
    parallel = gradcheck("check", f"{problems}:{problem}", "--json", "--jobs", "2", env={"PYTHONUNBUFFERED": "1"})
    assert parallel.stdout == serial.stdout and json.loads(parallel.stdout)["check"]["pass"]
    stderr = parallel.stderr.decode().splitlines()
    loaded = sorted(line for line in stderr if line.startswith("loading"))
    assert loaded == sorted(loads)  # a fork of the command loads nothing
    probes = stderr.count("descriptor one in a worker")  # one line of each per probe in a worker
    assert probes > 0 and stderr.count("print in a worker") == probes
    assert len(stderr) == len(loads) + 2 * probes, stderr


class Quadratic:
    """A picklable objective: ½ Σ c·w² over every parameter (workers unpickle it from this module)."""

    def __init__(self, scale: float):
        self.scale = scale

    def __call__(self, parameters):
        return sum(self.scale * 0.5 * float(np.sum(values * values)) for values in parameters.values())


def test_library_reports_with_workers_equal_the_serial_ones():
    parameters = {"w": np.linspace(-1.0, 2.0, 30).reshape(5, 6), "b": np.linspace(0.5, -0.5, 7)}
    gradients = {"w": 3.0 * parameters["w"], "b": 3.1 * parameters["b"]}  # b's is wrong
    serial = check_gradients(Quadratic(3.0), parameters, gradients, samples="all")
    assert check_gradients(Quadratic(3.0), parameters, gradients, samples="all", jobs=2) == serial
    assert serial.failing_parameters == ("b",)
    loaded = load_problem(f"{PORTABLE}:wrong_problem")  # by reference, one worker per core
    assert check_problem(loaded, samples=5, jobs=0) == check_problem(loaded, samples=5)


def test_an_objective_that_changes_its_parameters_in_a_worker_is_the_serial_error():
    parameters = {"w": np.linspace(-1.0, 1.0, 12)}
    snapshot = parameters["w"].copy()
    gradients = {"w": parameters["w"].copy()}
    failures = []
    for jobs in (1, 2):
        with pytest.raises(errors.ParameterChanged) as raised:
            check_gradients(Meddling(snapshot), parameters, gradients, samples="all", jobs=jobs)
        failures.append(raised.value)
        assert np.array_equal(parameters["w"], snapshot)
    assert type(failures[0]) is type(failures[1]) and failures[0].to_dict() == failures[1].to_dict()


class Meddling:
    """½‖w‖², which adds 1 to w[0] while w[5] is probed (picklable)."""

    def __init__(self, original):
        self.original = original

    def __call__(self, parameters):
        w = parameters["w"]
        if w[5] != self.original[5]:
            w[0] += 1.0
        return 0.5 * float(np.sum(w * w))


# ------------------------------------------------------------ the serial failures


def test_an_exception_of_the_objective_in_a_worker_is_the_serial_one(problems):
    serial = gradcheck("check", f"{problems}:raises", "--samples", "all", "--jobs", "1")
    parallel = gradcheck("check", f"{problems}:raises", "--samples", "all", "--jobs", "2")
    assert (parallel.returncode, parallel.stdout, parallel.stderr) == (EXIT_BAD_INPUT, b"", serial.stderr)
    line = textwrap.dedent(PROBLEMS).splitlines().index('            raise ValueError("w[17] is probed")') + 1
    assert one_error_line(parallel.stderr).endswith(
        f"raised ValueError: w[17] is probed (at {problems}:{line} in objective)"
    )
    with pytest.raises(ValueError, match=r"^w\[17\] is probed$"):  # the library: the exception itself
        check_problem(load_problem(f"{problems}:raises"), samples="all", jobs=2)


def test_a_probe_error_in_a_worker_is_the_serial_typed_error(problems):
    failures = []
    for jobs in (1, 2):
        with pytest.raises(errors.AtParameter) as raised:
            check_problem(load_problem(f"{problems}:nan"), samples="all", jobs=jobs)
        failures.append(raised.value)
    assert type(failures[0]) is type(failures[1]) and failures[0].to_dict() == failures[1].to_dict()
    assert (
        str(failures[1])
        == "parameter 'w': gradient check at coordinate [17] failed: minus function evaluation returned NaN"
    )
    assert isinstance(failures[1].source, errors.AtCoordinate)


# ------------------------------------------------------------ a worker's own failures


def test_a_lambda_objective_is_a_typed_error_before_any_call():
    calls = []

    def objective(parameters):
        calls.append(1)
        return 0.0

    parameters = {"w": np.ones(3)}
    with pytest.raises(errors.UnpicklableProblem) as raised:
        check_gradients(objective, parameters, {"w": np.zeros(3)}, jobs=2)
    assert calls == []
    assert "make the objective a module-level function" in str(raised.value)
    assert "load_problem('FILE.py:FUNCTION')" in str(raised.value)


@pytest.mark.parametrize("jobs", [-1, 1.5, "2", True])
def test_jobs_must_be_a_whole_number_of_at_least_zero(jobs):
    with pytest.raises(errors.InvalidArgument, match="^jobs must be a whole number: 0 for one worker per core"):
        check_gradients(Quadratic(1.0), {"w": np.ones(3)}, {"w": np.ones(3)}, jobs=jobs)


def test_jobs_0_is_one_worker_per_usable_core():
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert [worker_count(jobs) for jobs in (None, 1, 0, 2, 7)] == [1, 1, usable, 2, 7]


def test_the_command_line_refuses_a_negative_jobs_before_loading_the_problem(problems):
    result = gradcheck("check", f"{problems}:dies", "--jobs", "-2")
    assert result.returncode == EXIT_BAD_INPUT and result.stdout == b""
    assert one_error_line(result.stderr).startswith("jobs must be a whole number")


def test_a_worker_that_dies_is_one_line_and_exit_2(problems):
    result = gradcheck("check", f"{problems}:dies", "--jobs", "2", "--json")  # the timeout: not a hang
    message = (
        "a worker process of the check with jobs=2 exited with status 3; every array is restored: check with "
        "jobs=1 (--jobs 1) to see the failure in this process"
    )
    assert (result.returncode, one_error_line(result.stderr)) == (EXIT_BAD_INPUT, message)
    error = json.loads(result.stdout)["error"]
    assert (error["kind"], error["message"]) == ("WorkerDied", message)


@pytest.mark.parametrize(
    "function, difference",
    [("unseeded", r"parameter 'w' is not bit-identical"), ("unseeded_data", r"f\(θ\) is \S+ there, \S+ here")],
)
def test_a_problem_that_loads_differently_in_a_worker_is_a_typed_error(problems, function, difference):
    with pytest.raises(errors.WorkerProblemDiffers, match=f"differs from this process's: {difference} .* unseeded"):
        check_problem(load_problem(f"{problems}:{function}"), jobs=2)


def interrupted_slow_check(problems, tmp_path, *options) -> tuple:
    """``gradcheck check PROBLEMS:slow --samples all OPTIONS``, sent a Ctrl-C once two workers probe:
    (exit status, stdout, stderr, the array as the command left it, the workers' pids)."""
    started, saved = tmp_path / "started", tmp_path / "saved.npy"
    started.mkdir()
    (problems.parent / "started-directory").write_text(str(started))  # for a cluster's workers
    environment = {
        **os.environ,
        "NO_COLOR": "1",
        "GRADCHECK_TEST_STARTED": str(started),
        "GRADCHECK_TEST_SAVED": str(saved),
    }
    command = [sys.executable, "-m", "gradcheck_cli", "check", f"{problems}:slow", "--samples", "all", *options]
    # Its own session: the SIGINT goes to the command and its workers, as a terminal's Ctrl-C does.
    process = subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        deadline = time.monotonic() + 60.0  # a safety net against a hung test, not a timing assertion
        while len(os.listdir(started)) < 2:
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the workers never got going"
            time.sleep(0.01)
        os.killpg(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
    workers = [int(name) for name in os.listdir(started)]
    return process.returncode, stdout, stderr, np.load(saved), workers


@pytest.mark.skipif(os.name != "posix", reason="process groups and SIGINT are POSIX notions")
def test_ctrl_c_with_workers_running_exits_130_with_every_array_restored(problems, tmp_path):
    status, stdout, stderr, saved, workers = interrupted_slow_check(problems, tmp_path, "--jobs", "2")
    assert (status, stdout, stderr) == (EXIT_INTERRUPTED, b"", b"Error: interrupted\n")
    assert saved.tobytes() == np.linspace(-1.0, 1.0, 4000).tobytes()
    for worker in workers:  # stopped with the command, not left running
        with pytest.raises(ProcessLookupError):
            os.kill(worker, 0)


def test_a_stopped_pool_leaves_no_thread_of_its_own_running(problems, monkeypatch):
    # The executor's manager thread, made slow to finish as on a busy machine: one left running would
    # still be closing its wake-up pipe when the interpreter's exit hook (concurrent.futures.process.
    # _python_exit) writes to it, which printed "Exception ignored in: <module 'threading'>".
    import concurrent.futures.process

    manager = concurrent.futures.process._ExecutorManagerThread
    finish = manager.join_executor_internals

    def slowly(self):
        time.sleep(0.5)
        finish(self)

    monkeypatch.setattr(manager, "join_executor_internals", slowly)
    before = set(threading.enumerate())
    with pytest.raises(ValueError, match=r"^w\[0\] is probed$"):  # the pool is stopped with chunks pending
        check_problem(load_problem(f"{problems}:raises_at_once"), samples="all", jobs=2)
    assert [thread.name for thread in threading.enumerate() if thread not in before] == []


# ------------------------------------------------------------ the split


def test_the_split_is_contiguous_in_order_and_cut_at_the_checkpoints():
    lengths, checkpoints = [30, 5, 1, 64], [34, 67]
    split = chunks(lengths, checkpoints, workers=2)
    for length, parameter in zip(lengths, split):
        assert parameter[0][0] == 0 and parameter[-1][1] == length
        assert all(stop == start for (_, stop), (start, _) in zip(parameter, parameter[1:]))
        assert all(stop - start <= 13 for start, stop in parameter)  # ⌈100 / (4 · 2)⌉
    offsets = [0, 30, 35, 36]
    boundaries = {offset + stop for offset, parameter in zip(offsets, split) for _, stop in parameter}
    assert set(checkpoints) <= boundaries
    assert CHUNKS_PER_WORKER * 2 <= sum(map(len, split)) <= CHUNKS_PER_WORKER * 2 + len(lengths) + len(checkpoints)
    assert chunks(lengths, checkpoints, workers=2) == split


# ------------------------------------------------------------ the workers' start-up, and the imports


IMPORTS = """
import sys
from gradcheck_cli import check_problem, load_problem

check_problem(load_problem("{reference}"), jobs={jobs})
print(" ".join(sorted(name for name in sys.modules if name == "concurrent.futures" or name.endswith(".parallel"))))
"""


@pytest.mark.parametrize(
    "jobs, imported", [(1, ""), (None, ""), (2, "concurrent.futures gradcheck_cli.check.parallel")]
)
def test_parallel_and_concurrent_futures_are_imported_only_when_jobs_is_used(jobs, imported):
    script = IMPORTS.format(reference=f"{PORTABLE}:problem", jobs=jobs)
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, timeout=120, check=True)
    assert result.stdout.decode().strip() == imported


def test_the_command_line_imports_neither_without_jobs():
    command = [sys.executable, "-X", "importtime", "-m", "gradcheck_cli", "check", f"{PORTABLE}:problem"]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, timeout=120)
    modules = {line.split("|")[-1].strip() for line in result.stderr.decode().splitlines() if "|" in line}
    assert result.returncode == 0 and "gradcheck_cli.check" in modules  # the check ran, and importtime saw it
    assert not {"concurrent.futures", "gradcheck_cli.check.parallel"} & modules


def _workers_parents(directory: Path) -> tuple:
    """(the pids that loaded the problem, each worker's parent: pid and command line) as ``forked`` marked them."""
    loads = {int(mark.name.split("-")[1]) for mark in directory.glob("loaded-*")}
    parents = [mark.read_text() for mark in directory.iterdir() if mark.name.isdigit()]
    return loads, parents


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forks and /proc are Linux's here")
def test_the_commands_workers_are_forks_of_the_command_that_loaded_the_problem_once(problems, tmp_path):
    result = gradcheck("check", f"{problems}:forked", "--jobs", "2", env={"GRADCHECK_TEST_PARENTS": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    loads, parents = _workers_parents(tmp_path)
    assert len(parents) == 2 and len(set(parents)) == 1, parents  # two workers, one parent
    (parent,) = set(parents)
    assert loads == {int(parent.split()[0])}  # the command: it loaded the problem, and no worker again
    assert "gradcheck_cli check" in parent and "forkserver" not in parent, parent


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forkserver and /proc are Linux's here")
@pytest.mark.parametrize("problem", ["forked_threaded", "forked_open_file"])
def test_a_problem_that_started_a_thread_or_keeps_a_file_open_gets_workers_forked_from_a_forkserver(
    problems, tmp_path, problem
):
    # A fork copies only the forking thread (a lock the problem's thread held would stay held in a fork),
    # and shares every open descriptor (a file's position, a pipe's data) with the other forks.
    environment = {"GRADCHECK_TEST_PARENTS": str(tmp_path)}
    result = gradcheck("check", f"{problems}:{problem}", "--jobs", "2", env=environment)
    assert result.returncode == 0, result.stderr
    loads, parents = _workers_parents(tmp_path)
    assert len(parents) == 2 and len(set(parents)) == 1 and len(loads) == 3, (loads, parents)
    (parent,) = set(parents)
    assert int(parent.split()[0]) not in loads  # the server, which loaded nothing of the user's
    assert "multiprocessing.forkserver" in parent and "gradcheck_cli.check.parallel" in parent, parent
    assert "'gradcheck_cli.cli'" in parent, parent  # the command's server: a worker runs its script again


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forkserver and /proc are Linux's here")
@pytest.mark.parametrize(
    ("problem", "options", "started"),
    [
        ("early_threaded", ["--jobs", "2"], True),
        ("early_threaded", ["--jobs", "0"], os.cpu_count() > 1),
        ("early_threaded", ["--jobs", "1"], False),
        ("early_threaded", ["--jobs", "2", "--fast"], False),
        ("early", ["--jobs", "2"], False),
    ],
)
def test_the_command_starts_the_workers_server_before_its_first_f_only_where_they_cannot_be_its_forks(
    problems, tmp_path, problem, options, started
):
    # So that the server's start (an interpreter importing numpy and gradcheck) overlaps the check's f(θ).
    result = gradcheck("check", f"{problems}:{problem}", *options, env={"GRADCHECK_TEST_PARENTS": str(tmp_path)})
    assert result.returncode == 0, result.stderr
    children = (tmp_path / "children").read_text()
    assert ("multiprocessing.forkserver" in children) == started, children


def test_a_library_check_never_forks_the_callers_process(problems):
    from gradcheck_cli.core import processes

    assert processes.fork_context() is None  # no allow_forks() in a library call: the caller's threads, its state


def test_the_command_run_in_a_callers_process_never_forks_it(problems, monkeypatch):
    # click's CliRunner (or a caller's main(args)): the process and its threads are the caller's.
    from click.testing import CliRunner

    from gradcheck_cli.cli.app import main
    from gradcheck_cli.core import processes

    monkeypatch.setattr(processes, "_FORKABLE", {"threads": None, "descriptors": None})
    result = CliRunner().invoke(main, ["check", f"{problems}:scaled", "--samples", "4", "--jobs", "2"])
    assert result.exit_code == 0, result.output
    assert processes._FORKABLE["threads"] is None and processes.fork_context() is None


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the forks and /proc are Linux's here")
def test_forks_are_allowed_only_while_no_thread_has_started_nor_descriptor_opened_since():
    # In a process of its own: pytest's, after other tests, runs threads that may start or end at any time.
    script = textwrap.dedent(
        """
        import os, threading, time
        from gradcheck_cli.core import processes

        def fork_allowed():
            context = processes.fork_context()
            return context is not None and context.get_start_method() == "fork"

        processes.allow_forks()
        assert fork_allowed()
        stop = threading.Event()
        thread = threading.Thread(target=stop.wait)
        thread.start()
        assert not fork_allowed()
        stop.set()
        thread.join()
        deadline = time.monotonic() + 30  # join returns before the kernel has let the thread go
        while str(thread.native_id) in os.listdir("/proc/self/task") and time.monotonic() < deadline:
            time.sleep(0.001)
        with open(processes.__file__, "rb"):  # a descriptor opened since: the forks would share it
            assert not fork_allowed()
        assert fork_allowed()
        """
    )
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr


def test_the_workers_server_is_started_only_for_workers_the_command_starts(monkeypatch):
    from gradcheck_cli.cli.commands import executor

    started = []
    monkeypatch.setattr(executor, "start_server", lambda also: started.append(also))
    monkeypatch.setattr(executor, "usable_cores", lambda: 1)
    monkeypatch.setattr(executor, "fork_context", lambda: multiprocessing.get_context("fork"))
    monkeypatch.delitem(sys.modules, "torch", raising=False)
    executor.start_workers(2, None, False)  # the workers will be forks of the command: no server
    assert started == []
    monkeypatch.setitem(sys.modules, "torch", object())  # its first f(θ) may start threads: the server too
    executor.start_workers(2, None, False)
    assert started == [("gradcheck_cli.cli",)]
    started.clear()
    monkeypatch.delitem(sys.modules, "torch")
    monkeypatch.setattr(executor, "fork_context", lambda: None)
    for jobs, address, fast in [
        (1, None, False),
        (0, None, False),
        (-1, None, False),
        (2, "dask://h:1", False),
        (2, None, True),
    ]:
        executor.start_workers(jobs, address, fast)
    assert started == []
    executor.start_workers(3, None, False)
    monkeypatch.setattr(executor, "usable_cores", lambda: 2)
    executor.start_workers(0, None, False)
    assert started == [("gradcheck_cli.cli",)] * 2


def test_a_worker_sees_the_environment_of_the_check_not_of_the_forkserver_start(problems, monkeypatch):
    loaded = load_problem(f"{problems}:scaled")
    check_problem(loaded, samples=4, jobs=2)  # the forkserver runs from here on, with the environment of now
    monkeypatch.setenv("GRADCHECK_TEST_SCALE", "3")
    serial = check_problem(load_problem(f"{problems}:scaled"), samples="all")
    assert check_problem(load_problem(f"{problems}:scaled"), samples="all", jobs=2) == serial


# ------------------------------------------------------------ any executor


def bounded(call, seconds=120.0):
    """``call()``'s result, run in a thread that must finish within ``seconds`` (a hung cluster fails the
    test rather than the suite)."""
    import threading

    outcome = {}

    def run():
        try:
            outcome["result"] = call()
        except BaseException as error:  # noqa: BLE001 - raised again here
            outcome["error"] = error

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"no result within {seconds} s"
    if "error" in outcome:
        raise outcome["error"]
    return outcome["result"]


@pytest.fixture(scope="module")
def cluster():
    """A real dask.distributed LocalCluster: two worker processes of one thread each, on the loopback
    interface; a worker that dies fails its task at once (no retry on another worker)."""
    require("distributed")
    import dask
    import distributed

    # The scheduler's HTTP server listens at 8787 unless told otherwise (None is that default), and
    # warns when another suite's cluster holds it: a free port of the loopback interface instead.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        local = distributed.LocalCluster(
            processes=True, n_workers=2, threads_per_worker=1, host="127.0.0.1", dashboard_address=f"127.0.0.1:{port}"
        )
    client = distributed.Client(local, set_as_default=False)
    try:
        yield client
    finally:
        client.close()
        local.close()


@pytest.fixture
def client(cluster):
    cluster.wait_for_workers(2, timeout=60)  # a killed worker's nanny starts another
    return cluster


@pytest.mark.parametrize(
    "reference, samples",
    [(f"{PORTABLE}:problem", "all"), (f"{PORTABLE}:wrong_problem", "all"), ("{problems}:impure", "all")],
    ids=["passing", "failing", "impure"],
)
def test_a_dask_executor_and_jobs_2_give_the_serial_report(client, problems, reference, samples):
    reference = reference.format(problems=problems)
    serial = check_problem(load_problem(reference), samples=samples).to_dict()
    assert check_problem(load_problem(reference), samples=samples, jobs=2).to_dict() == serial
    executor = client.get_executor()
    assert bounded(lambda: check_problem(load_problem(reference), samples=samples, jobs=executor).to_dict()) == serial
    assert executor.submit(operator.add, 2, 3).result(timeout=60) == 5  # not shut down: still the caller's


def test_a_pickled_objective_on_a_dask_executor_gives_the_serial_report(client):
    parameters = {"w": np.linspace(-1.0, 2.0, 30).reshape(5, 6), "b": np.linspace(0.5, -0.5, 7)}
    gradients = {"w": 3.0 * parameters["w"], "b": 3.1 * parameters["b"]}  # b's is wrong
    serial = check_gradients(Quadratic(3.0), parameters, gradients, samples="all")
    executor = client.get_executor()
    assert bounded(lambda: check_gradients(Quadratic(3.0), parameters, gradients, samples="all", jobs=executor)) == (
        serial
    )


def test_a_dask_worker_killed_mid_check_is_a_typed_error_with_every_array_restored(client, problems):
    loaded = load_problem(f"{problems}:killed")
    original = loaded.parameters["w"].copy()
    with pytest.raises(errors.WorkerDied, match=r"was lost by the executor ClientExecutor \(KilledWorker: "):
        bounded(lambda: check_problem(loaded, samples="all", jobs=client.get_executor()))
    assert loaded.parameters["w"].tobytes() == original.tobytes()


@pytest.mark.parametrize("kind", ["process", "thread"])
def test_a_standard_library_executor_gives_the_serial_report_and_is_not_shut_down(kind):
    import concurrent.futures

    parameters = {"w": np.linspace(-1.0, 2.0, 30).reshape(5, 6), "b": np.linspace(0.5, -0.5, 7)}
    gradients = {"w": 3.0 * parameters["w"], "b": 3.1 * parameters["b"]}
    serial = check_gradients(Quadratic(3.0), parameters, gradients, samples="all")
    if kind == "process":
        executor = concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("spawn"))
    else:  # four threads of one process share its arrays: one chunk at a time probes them
        executor = concurrent.futures.ThreadPoolExecutor(4)
    with executor:
        assert check_gradients(Quadratic(3.0), parameters, gradients, samples="all", jobs=executor) == serial
        assert executor.submit(operator.add, 2, 3).result(timeout=60) == 5


@pytest.mark.skipif(os.name != "posix", reason="process groups and SIGINT are POSIX notions")
def test_ctrl_c_with_an_executor_exits_130_restored_and_leaves_the_cluster_serving(client, problems, tmp_path):
    """The cluster is the user's: a Ctrl-C of the command restores its arrays, prints one line, and
    leaves every worker alive and idle once the chunks it had started are done (the rest cancelled)."""
    address = client.scheduler.address.replace("tcp://", "dask://")
    status, stdout, stderr, saved, workers = interrupted_slow_check(problems, tmp_path, "--executor", address)
    assert (status, stdout, stderr) == (EXIT_INTERRUPTED, b"", b"Error: interrupted\n")
    assert saved.tobytes() == np.linspace(-1.0, 1.0, 4000).tobytes()
    for worker in workers:  # the user's workers, still running
        os.kill(worker, 0)
    deadline = time.monotonic() + 120.0
    while any(client.processing().values()):  # the started chunks end; nothing else was left queued
        assert time.monotonic() < deadline, client.processing()
        time.sleep(0.05)
    assert client.submit(operator.add, 2, 3).result(timeout=60) == 5


def test_the_command_line_executor_prints_the_json_of_jobs_1(client):
    address = client.scheduler.address.replace("tcp://", "dask://")
    serial = gradcheck("check", f"{PORTABLE}:wrong_problem", "--samples", "all", "--json")
    remote = gradcheck("check", f"{PORTABLE}:wrong_problem", "--samples", "all", "--json", "--executor", address)
    assert (remote.returncode, remote.stdout, remote.stderr) == (serial.returncode, serial.stdout, serial.stderr)


@pytest.mark.parametrize(
    "arguments, message",
    [
        (
            ["--executor", "dask://127.0.0.1:8786", "--jobs", "2"],
            "--executor and --jobs cannot be combined: choose one",
        ),
        (["--executor", "tcp://127.0.0.1:8786"], "--executor must be dask://HOST:PORT, got 'tcp://127.0.0.1:8786'"),
        (["--executor", "dask://127.0.0.1"], "--executor must be dask://HOST:PORT, got 'dask://127.0.0.1'"),
        (["--executor", "dask://[::1"], "--executor must be dask://HOST:PORT, got 'dask://[::1'"),
        (["--executor", "dask://[::1]x:1"], "--executor must be dask://HOST:PORT, got 'dask://[::1]x:1'"),
        (["--executor", "dask://[nohost]:1"], "--executor must be dask://HOST:PORT, got 'dask://[nohost]:1'"),
        (["--executor", "dask://host:0"], "--executor must be dask://HOST:PORT, got 'dask://host:0'"),
        (["--executor", "dask://host:65536"], "--executor must be dask://HOST:PORT, got 'dask://host:65536'"),
        (["--executor", "dask://host:８"], "--executor must be dask://HOST:PORT, got 'dask://host:８'"),
        (["--executor", "dask://ho st:1"], "--executor must be dask://HOST:PORT, got 'dask://ho st:1'"),
    ],
)
def test_the_command_line_refuses_a_malformed_executor_before_loading_the_problem(problems, arguments, message):
    result = gradcheck("check", f"{problems}:dies", *arguments)
    assert (result.returncode, result.stdout, one_error_line(result.stderr)) == (EXIT_BAD_INPUT, b"", message)


def test_the_command_line_executor_without_dask_names_the_install(tmp_path):
    (tmp_path / "distributed.py").write_text("raise ImportError('no distributed here')\n")
    result = gradcheck(
        "check", f"{PORTABLE}:problem", "--executor", "dask://127.0.0.1:8786", env={"PYTHONPATH": str(tmp_path)}
    )
    assert (result.returncode, result.stdout) == (EXIT_BAD_INPUT, b"")
    assert one_error_line(result.stderr) == (
        "--executor dask://127.0.0.1:8786 cannot be used: dask.distributed is not installed: pip install "
        "distributed==2026.8.0 (docs/parallel.md)"
    )
