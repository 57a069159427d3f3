"""What the user's code does cannot corrupt the output, forge a line or hang the check (issue 30).

Each test runs the real console command (``gradcheck``, the script pip installed) in a fresh process
on a problem written to ``tmp_path``: descriptors, atexit handlers, threads and forks are real there.
"""

import contextlib
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from extras import needs

ROOT = Path(__file__).resolve().parent.parent
CONSOLE = str(Path(sys.executable).parent / "gradcheck")

#: The head of every problem file below: a least-squares-free quadratic whose gradient is right.
HEAD = """\
import atexit, os, sys, threading, time
import numpy as np
from gradcheck_cli import GradientProblem

def squares(parameters):
    return float(np.sum(parameters["w"] ** 2))

def right(objective=squares, name="w"):
    w = np.array([0.5, -1.25, 2.0])
    return GradientProblem(objective, {name: w}, {name: 2 * w})
"""


def console(*arguments, timeout=120, env=None):
    """The ``gradcheck`` console command in a fresh process, its output captured as text."""
    environment = {**os.environ, "NO_COLOR": "1", **(env or {})}
    return subprocess.run(
        [CONSOLE, *arguments], cwd=ROOT, env=environment, timeout=timeout, capture_output=True, text=True
    )


def problem_file(tmp_path: Path, body: str) -> str:
    path = tmp_path / "problems.py"
    path.write_text(HEAD + textwrap.dedent(body))
    return str(path)


def one_document(stdout: str):
    """The one JSON document stdout holds (json.loads refuses "Extra data")."""
    return json.loads(stdout)


# ------------------------------------------------------------------ item 1: stdout is gradcheck's

USERS_WRITERS = """
def at_exit():
    atexit.register(lambda: print("printed by the user's atexit handler"))
    atexit.register(lambda: os.write(1, b"written to descriptor 1 at exit\\n"))
    return right()

def thread():
    def chatter():
        while True:
            print("printed by the user's thread", flush=True)
            os.write(1, b"thread on descriptor 1\\n")
            time.sleep(0.001)
    threading.Thread(target=chatter, daemon=True).start()
    return right()

def forks():
    def objective(parameters):
        if os.fork() == 0:
            raise SystemExit(5)
        os.wait()
        return squares(parameters)
    return right(objective)

def forks_and_returns():
    def objective(parameters):
        os.fork()  # both go on: the child must leave quietly, not run the check again
        return squares(parameters)
    return right(objective)

def closes_stdout():
    def objective(parameters):
        sys.stdout.close()
        raise ValueError("after closing stdout")
    return right(objective)
"""


@pytest.mark.parametrize("command", ["check", "taylor"])
@pytest.mark.parametrize("function", ["at_exit", "thread", "forks", "forks_and_returns"])
def test_users_atexit_threads_and_forks_never_reach_stdout(tmp_path, command, function):
    path = problem_file(tmp_path, USERS_WRITERS)
    result = console(command, f"{path}:{function}", "--json")
    document = one_document(result.stdout)
    assert list(document) == [command], result.stdout
    assert result.returncode == 0, result.stderr
    if function == "at_exit":
        assert "printed by the user's atexit handler" in result.stderr
        assert "written to descriptor 1 at exit" in result.stderr


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_an_objective_that_closes_stdout_still_gets_its_error_line(tmp_path, output_format):
    path = problem_file(tmp_path, USERS_WRITERS)
    result = console("check", f"{path}:closes_stdout", "--format", output_format)
    assert result.returncode == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "after closing stdout" in lines[0], result.stderr
    if output_format == "json":
        assert "after closing stdout" in one_document(result.stdout)["error"]["message"]


# ------------------------------------------------------------------ item 2: no line can be forged

FORGERS = """
FORGED = "check: checked=1 failed=0 verdict=passed pass=true"

def forged_name():
    w = np.array([0.5, -1.25, 2.0])
    return GradientProblem(lambda p: float(np.sum(p[FORGED] ** 2)), {FORGED: w}, {FORGED: 3 * w})  # wrong

def forged_joint():  # right: the fast check's joint direction lists it beside "b"
    w, b = np.array([0.5, -1.25, 2.0]), np.array([0.25, 1.0])
    objective = lambda p: float(np.sum(p[FORGED] ** 2) + np.sum(p["b"] ** 3))
    return GradientProblem(objective, {FORGED: w, "b": b}, {FORGED: 2 * w, "b": 3 * b ** 2})

def escapes():
    def objective(parameters):
        raise ValueError("clear\\x1b[2J\\x1b[31m red \\u202e reversed \\u200b\\r\\x00 end")
    return right(objective)

def escaped_type():
    Odd = type("Odd\\x1b[31m\\u202e", (Exception,), {})
    def objective(parameters):
        raise Odd("message")
    return right(objective)
"""

#: What must never reach a terminal raw: ESC, CR, NUL, a bidi override, a zero-width space.
RAW = ("\x1b", "\r", "\x00", "\u202e", "\u200b")


@pytest.mark.parametrize("command", ["check", "taylor"])
@pytest.mark.parametrize("arguments", [[], ["--verbose"]])
def test_a_parameter_name_cannot_forge_a_check_line(tmp_path, command, arguments):
    path = problem_file(tmp_path, FORGERS)
    result = console(command, f"{path}:forged_name", *arguments)
    assert result.returncode == 1, result.stderr
    assert "pass=false" in result.stdout or "verdict=failed" in result.stdout, result.stdout
    forged = [line for line in result.stdout.splitlines() if line.startswith("check:") and "pass=true" in line]
    assert forged == [], result.stdout
    assert "pass=true" not in result.stdout and "verdict=passed" not in result.stdout, result.stdout
    assert "'check: checked\\x3d1 failed\\x3d0 verdict\\x3dpassed pass\\x3dtrue'" in result.stdout


def test_a_parameter_name_cannot_forge_a_line_through_the_joint_direction(tmp_path):
    path = problem_file(tmp_path, FORGERS)
    result = console("check", f"{path}:forged_joint", "--fast", "--verbose")
    assert result.returncode == 0, result.stderr
    assert 'joint=["\'check: checked\\x3d1 failed\\x3d0 verdict\\x3dpassed pass\\x3dtrue\'", "b"]' in result.stdout
    assert "check: checked=1 failed=0 verdict=passed pass=true" not in result.stdout, result.stdout


@pytest.mark.parametrize("function", ["escapes", "escaped_type"])
def test_an_exception_from_user_code_comes_out_escaped(tmp_path, function):
    path = problem_file(tmp_path, FORGERS)
    result = console("check", f"{path}:{function}")
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: "), repr(result.stderr)
    for raw in RAW:
        assert raw not in result.stderr, repr(result.stderr)
    assert "\\x1b[" in result.stderr and "\\u202e" in result.stderr


def test_a_file_name_and_an_executor_address_come_out_escaped(tmp_path):
    odd = tmp_path / "odd\x1b[31m\u202e.py"
    result = console("check", f"{odd}:problem")
    assert result.returncode == 2 and "\\x1b[31m\\u202e" in result.stderr, repr(result.stderr)
    path = problem_file(tmp_path, FORGERS)
    for address in ("dask://\x1b[31mhost:1", "dask://host\u202e:1", "dask://ho\rst:x"):
        result = console("check", f"{path}:escapes", "--executor", address, timeout=60)
        assert result.returncode == 2, result.stderr
        assert result.stderr.count("\n") == 1 and result.stderr.startswith("Error: "), repr(result.stderr)
        for raw in RAW:
            assert raw not in result.stderr, repr(result.stderr)


# ------------------------------------------------------------------ item 3: no hang, no exit 3


def _server(reply):
    """A TCP server on 127.0.0.1 that answers each connection with ``reply(connection)``; its port."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve():
        with listener:
            while True:
                try:
                    connection, _ = listener.accept()
                except OSError:
                    return
                threading.Thread(target=reply, args=(connection,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    return listener, listener.getsockname()[1]


def _http(connection):
    """An HTTP server's manners: it waits for the request, and answers it."""
    with connection:
        connection.recv(1 << 16)
        connection.sendall(b"HTTP/1.0 400 Bad Request\r\n\r\n")


def _garbage(connection):
    with contextlib.suppress(OSError), connection:
        for _ in range(100):
            connection.sendall(b"\xff" * 4096)
            time.sleep(0.01)


def _short_lie(connection):
    """A length that a greeting could have, then frames that are not one."""
    with contextlib.suppress(OSError), connection:
        connection.sendall((40).to_bytes(8, "little") + b"\x01" * 40)
        time.sleep(1)


@needs("distributed")
@pytest.mark.parametrize(
    "reply, answered",
    [
        (_http, "a server that sent nothing within 10 s"),
        (_garbage, "a server that sent b'\\xff"),
        (_short_lie, "not a dask scheduler's greeting"),
    ],
)
def test_an_executor_address_where_no_scheduler_greets_is_bad_input(tmp_path, reply, answered):
    path = problem_file(tmp_path, USERS_WRITERS)
    listener, port = _server(reply)
    with listener:
        result = console("check", f"{path}:at_exit", "--executor", f"dask://127.0.0.1:{port}", timeout=60)
    assert result.returncode == 2 and result.stdout == ""
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith(f"Error: --executor dask://127.0.0.1:{port} cannot be used: no dask scheduler")
    assert answered in result.stderr


CHOICES = """
import multiprocessing

def square(x):
    return x * x

def pooled(method):
    def objective(parameters):
        with multiprocessing.get_context(method).Pool(2) as pool:
            return float(sum(pool.map(square, list(parameters["w"]))))
    return right(objective)

def fork_pool():
    return pooled("fork")

class Bare(GradientProblem):
    def __init__(self):
        w = np.array([0.5, -1.25, 2.0])
        super().__init__(squares, {"w": w}, {"w": 2 * w})

def bare():
    return Bare()
"""


@pytest.mark.parametrize("command", ["check", "taylor"])
def test_an_objective_with_a_fork_pool_works(tmp_path, command):
    path = problem_file(tmp_path, CHOICES)
    result = console(command, f"{path}:fork_pool", "--json", timeout=90)
    assert result.returncode == 0, result.stderr
    assert list(one_document(result.stdout)) == [command]


@pytest.mark.parametrize("reference", ["bare", "Bare"])
def test_a_problem_subclass_whose_init_takes_no_arguments_loads(tmp_path, reference):
    path = problem_file(tmp_path, CHOICES)
    result = console("check", f"{path}:{reference}", "--json")
    assert result.returncode == 0, result.stderr
    assert one_document(result.stdout)["check"]["verdict"] == "passed"


# ------------------------------------------------------------------ item 4: the CPU install line


def test_every_install_line_the_library_prints_is_the_suites():
    """The library's messages name the lines tests/extras.py names; torch's is its CPU build."""
    import extras
    from gradcheck_cli.core import installs

    assert extras.INSTALL is installs.INSTALL and extras.TORCH_CPU == installs.TORCH_CPU
    assert installs.COMMANDS["torch"].endswith("--index-url https://download.pytorch.org/whl/cpu")
    sources = [ROOT / "gradcheck_cli" / part for part in ("errors", "adapters", "cli")]
    for source in (path for folder in sources for path in folder.rglob("*.py")):
        text = source.read_text()
        assert "pip install -e" not in text and "gradcheck-cli[" not in text, source


@pytest.mark.parametrize("method", ["forkserver", "spawn"])
def test_an_objective_with_a_spawn_or_forkserver_pool_works(tmp_path, method):
    path = problem_file(tmp_path, CHOICES + f"\ndef {method}_pool():\n    return pooled({method!r})\n")
    result = console("check", f"{path}:{method}_pool", "--samples", "1", "--json", timeout=120)
    assert result.returncode == 0, result.stderr
    assert one_document(result.stdout)["check"]["verdict"] == "passed"


# ------------------------------------------------------------------ item 5: a long run announces itself


class _Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_a_long_check_announces_itself_then_reports_at_most_every_ten_seconds(monkeypatch):
    import io

    from gradcheck_cli.display import progress

    monkeypatch.delenv(progress.ANNOUNCE_VARIABLE, raising=False)
    clock, stream = _Clock(), io.StringIO()
    bar = progress.ProgressBar("checking coordinates", stream=stream, clock=clock)
    bar(0, 1000)
    for done in range(10, 1000, 10):  # 1 s for 10 coordinates: 100 s in all, 10× the threshold
        clock.now += 1.0
        bar(done, 1000)
    lines = stream.getvalue().splitlines()
    assert (
        lines[0] == "checking coordinates: 1000 coordinates to probe, 2000 evaluations of f at least: about 99 s left"
    )
    assert lines[1] == "checking coordinates: 110 of 1000 coordinates probed: about 89 s left"
    assert len(lines) == 10  # the announcement at 1 s, then one line every 10 s until 91 s


def test_a_short_check_says_nothing(monkeypatch):
    import io

    from gradcheck_cli.display import progress

    monkeypatch.delenv(progress.ANNOUNCE_VARIABLE, raising=False)
    clock, stream = _Clock(), io.StringIO()
    bar = progress.ProgressBar("checking coordinates", stream=stream, clock=clock)
    for done in range(0, 1001, 100):  # 0.9 s in all
        bar(done, 1000)
        clock.now += 0.09
    assert stream.getvalue() == ""


def test_the_console_announces_a_long_check_on_a_stderr_that_is_not_a_terminal(tmp_path):
    body = """
def slow():
    def objective(parameters):
        time.sleep(0.0005)
        return squares(parameters)
    w = np.linspace(-1.0, 1.0, 200)
    return GradientProblem(objective, {"w": w}, {"w": 2 * w})
"""
    path = problem_file(tmp_path, body)
    result = console("check", f"{path}:slow", "--samples", "all", "--json", env={"GRADCHECK_ANNOUNCE_SECONDS": "0"})
    assert result.returncode == 0, result.stderr
    assert result.stderr.startswith("checking coordinates: 200 coordinates to probe, 400 evaluations of f at least: ")
    assert one_document(result.stdout)["check"]["checked"] == 200
    quiet = console("check", f"{path}:slow", "--samples", "all", "--json")
    assert quiet.stderr == "" and quiet.stdout == result.stdout


@needs("matplotlib")
def test_a_plot_file_name_comes_out_escaped(tmp_path):
    target = tmp_path / "plot\x1b[31m\u202e.svg"
    result = console("scan", "--plot", str(target))
    assert result.returncode == 0, result.stderr
    assert target.exists() and "plot\\x1b[31m\\u202e.svg" in result.stderr
    assert not any(raw in result.stderr for raw in RAW), repr(result.stderr)


def test_on_a_terminal_the_bar_goes_on_pulsing_after_the_first_pass():
    """The bar never sits at its end while the confirmations and the directional test run."""
    import io

    from gradcheck_cli.display import progress

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    clock = _Clock()
    with progress.ProgressBar("checking coordinates", stream=Terminal(), clock=clock) as bar:
        clock.now += 5.0
        bar(5, 10)
        assert bar.bar.tasks[0].total == 10
        bar(10, 10)
        task = bar.bar.tasks[-1]
        assert task.total is None and task.description == f"checking coordinates: {progress.AFTER}"
