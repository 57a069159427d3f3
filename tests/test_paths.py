"""Every path, every signal (issue 20): one test per numbered item of the issue.

Real processes where the item is about them: signals sent to a running ``gradcheck`` from
outside, a real memory-mapped file compared byte for byte after each one, a real ``--jobs 2``
parent killed and its workers' pids polled until they are gone, a real read-only mmap tensor.
Every wait is a poll with a deadline, never a sleep followed by an assertion.
"""

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from gradcheck_cli.cli import EXIT_INTERRUPTED

ROOT = Path(__file__).resolve().parent.parent
posix_only = pytest.mark.skipif(os.name != "posix", reason="signals to a child process are POSIX notions")

# Problems a real child process loads by reference. The objective holds still once it sees a
# probe in its parameter (or, in a worker, once its pid is recorded), so the signal arrives
# while the probe is in the memory-mapped file.
PROBLEMS = """
import multiprocessing
import os
import time

import numpy as np

from gradcheck_cli import GradientProblem

FILE = os.environ.get("GRADCHECK_TEST_FILE", "")
MARK = os.environ.get("GRADCHECK_TEST_MARK", "")


def _hold():
    while True:
        time.sleep(0.01)


def mapped():
    w = np.memmap(FILE, dtype=np.float64, mode="r+")
    original = np.array(w)

    def objective(parameters):
        if not np.array_equal(parameters["w"], original):
            open(MARK, "w").close()
            _hold()
        return float(np.sum(parameters["w"] ** 2))

    return GradientProblem(objective, {"w": w}, {"w": 2.0 * original})


def _recording(parameters):
    if multiprocessing.parent_process() is not None:  # a worker: its pid recorded, it holds still
        open(os.path.join(MARK, str(os.getpid())), "w").close()
        _hold()
    return float(np.sum(parameters["w"] ** 2))


def workers():
    w = np.linspace(-1.0, 1.0, 64)
    return GradientProblem(_recording, {"w": w}, {"w": 2.0 * w})
"""


@pytest.fixture
def problems(tmp_path):
    path = tmp_path / "problems.py"
    path.write_text(textwrap.dedent(PROBLEMS))
    return path


def _start(arguments, environment, **keywords):
    command = [sys.executable, "-m", "gradcheck_cli", *arguments]
    environment = {**os.environ, "NO_COLOR": "1", **environment}
    return subprocess.Popen(
        command, cwd=ROOT, env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **keywords
    )


def _poll(condition, process=None, seconds=60.0, what="the command never got going"):
    """Wait until ``condition()``; the deadline is a safety net against a hung test (or, for the
    workers, the issue's 2 s), never a timing assertion on a run that goes as it should."""
    deadline = time.monotonic() + seconds
    while not condition():
        if process is not None:
            assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def _ended(process) -> tuple:
    try:
        stdout, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return process.returncode, stdout, stderr


ENDING = [name for name in ("SIGTERM", "SIGHUP", "SIGQUIT", "SIGINT") if hasattr(signal, name)]


# 1. SIGTERM, SIGHUP and SIGQUIT take Ctrl-C's path: a memory-mapped parameter is restored on disk.


@posix_only
@pytest.mark.parametrize("command", ["check", "taylor"])
@pytest.mark.parametrize("name", ENDING)
def test_1_a_signal_restores_a_memory_mapped_file_byte_for_byte(problems, tmp_path, command, name):
    mapped, mark = tmp_path / "w.bin", tmp_path / "probing"
    np.linspace(1.0, 8.0, 40).tofile(mapped)
    original = mapped.read_bytes()
    environment = {"GRADCHECK_TEST_FILE": str(mapped), "GRADCHECK_TEST_MARK": str(mark)}
    process = _start([command, f"{problems}:mapped"], environment)
    _poll(mark.exists, process)
    assert mapped.read_bytes() != original  # the probe is in the file now: the test can fail
    number = getattr(signal, name)
    process.send_signal(number)
    status, stdout, stderr = _ended(process)
    line = "Error: interrupted" if name == "SIGINT" else f"Error: interrupted by {name}"
    assert (status, stdout, stderr.decode()) == (128 + number, b"", line + "\n")
    assert mapped.read_bytes() == original
    if name == "SIGINT":
        assert status == EXIT_INTERRUPTED


# 2. No orphan worker: a --jobs 2 parent that is stopped, or killed outright, takes its workers along.


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (ended, not yet reaped by its parent) is gone too
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    except OSError:
        return True


@posix_only
@pytest.mark.parametrize("name", ["SIGTERM", "SIGHUP", "SIGKILL"])
def test_2_the_workers_end_with_their_parent_within_two_seconds(problems, tmp_path, name):
    mark = tmp_path / "running"
    mark.mkdir()
    arguments = ["check", f"{problems}:workers", "--samples", "all", "--jobs", "2"]
    process = _start(arguments, {"GRADCHECK_TEST_MARK": str(mark)})
    _poll(lambda: len(os.listdir(mark)) == 2, process)
    workers = [int(pid) for pid in os.listdir(mark)]
    assert len(workers) == 2 and all(map(_alive, workers))
    process.send_signal(getattr(signal, name))
    try:
        _poll(lambda: not any(map(_alive, workers)), seconds=2.0, what="a worker outlived its parent by 2 s")
    finally:
        for pid in filter(_alive, workers):  # not left running when this fails
            os.kill(pid, signal.SIGKILL)
    status, stdout, stderr = _ended(process)  # stderr reaches its end: nothing holds it open any more
    if name != "SIGKILL":
        assert (status, stdout, stderr.decode()) == (
            128 + getattr(signal, name),
            b"",
            f"Error: interrupted by {name}\n",
        )
