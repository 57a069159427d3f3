"""Where ``check`` probes the coordinates: ``--jobs N``'s workers, forks of the command, or of a server
that :func:`start_workers` starts as soon as PROBLEM is loaded where they cannot be; or ``--executor
dask://HOST:PORT``, the address checked at once, a scheduler's greeting awaited for at most
:data:`CONNECT_SECONDS`, and the dask client's executor.

Whatever answers at the address (nothing, an HTTP server that waits to be spoken to, a server that sends
something else) is one line naming the address and what answered, exit 2, within the bound: dask's own
handshake is only reached once a dask scheduler has greeted.
"""

import contextlib
import ipaddress
import re
import socket
import sys
import time
from typing import NamedTuple

from ...core.blame import exception_line
from ...core.installs import INSTALL
from ...core.processes import fork_context, start_server, usable_cores
from ...errors.command_line import CommandLineError, ExecutorUnavailable

__all__ = ["CONNECT_SECONDS", "Scheduler", "executor_address", "dask_executor", "start_workers"]

#: What each worker imports again when it runs the ``gradcheck`` script as its ``__mp_main__``, as a
#: spawned or forkserver process runs its parent's main script: imported once in the server instead.
_WORKERS_MAIN = ("gradcheck_cli.cli",)
#: How long --executor waits for the scheduler to greet and the client to connect.
CONNECT_SECONDS = 10
#: A dask comm's greeting: an 8-byte little-endian length, then that many bytes of frames. A length
#: outside these bounds is not a greeting.
_GREETING_BYTES = range(16, 1 << 16)
_HOST = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_.-]*[A-Za-z0-9_])?")


def start_workers(jobs: int, executor: str | None, fast: bool) -> None:
    """The workers' server started now, once PROBLEM is loaded, when ``--jobs`` will start workers (N ≥ 2,
    or 0 on more than one core; not beside ``--executor``, nor for ``--fast``, which may probe no
    coordinate) that cannot be forks of this process (:func:`~gradcheck_cli.core.processes.fork_context`:
    PROBLEM started a thread or holds a descriptor open; torch starts its threads at its first parallel
    operation, which the check's first f(θ) may be), so that its start, an interpreter importing numpy
    and gradcheck, overlaps that f(θ). It runs none of the user's code, and ends with this process."""
    forks = fork_context() is not None and "torch" not in sys.modules
    if executor is None and not fast and (jobs >= 2 or (jobs == 0 and usable_cores() >= 2)) and not forks:
        start_server(also=_WORKERS_MAIN)


class Scheduler(NamedTuple):
    """A ``--executor dask://HOST:PORT``: as given, and its host and port."""

    given: str
    host: str
    port: int

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"tcp://{host}:{self.port}"


def executor_address(executor: str | None, jobs: int) -> Scheduler | None:
    """The scheduler of ``--executor dask://HOST:PORT`` (None without it); a CommandLineError, before any
    connection, for another form (a host that is not a name, an IPv4 or a bracketed IPv6 address, a
    port outside 1–65535), or beside ``--jobs``."""
    if executor is None:
        return None
    if jobs != 1:
        raise CommandLineError(option="--executor", problem="--executor and --jobs cannot be combined: choose one")
    host, colon, port = executor.removeprefix("dask://").rpartition(":")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
        try:
            valid = isinstance(ipaddress.ip_address(host), ipaddress.IPv6Address)
        except ValueError:
            valid = False
    else:
        valid = _HOST.fullmatch(host) is not None
    if not executor.startswith("dask://") or not colon or not valid or not _port(port):
        problem = f"--executor must be dask://HOST:PORT, got {executor!r}"
        raise CommandLineError(option="--executor", problem=problem)
    return Scheduler(executor, host, int(port))


def _port(text: str) -> bool:
    return text.isascii() and text.isdigit() and len(text) <= 5 and 1 <= int(text) <= 65535


def what_answered(scheduler: Scheduler, seconds: float = CONNECT_SECONDS) -> str | None:
    """None when a dask scheduler greets at ``scheduler`` within ``seconds``, else what answered there."""
    deadline = time.monotonic() + seconds
    try:
        connection = socket.create_connection((scheduler.host, scheduler.port), timeout=seconds)
    except TimeoutError:
        return f"nothing answered within {seconds} s"
    except OSError as error:
        return f"nothing answered ({error.strerror or exception_line(error)})"
    received = b""
    with connection:
        while (remaining := deadline - time.monotonic()) > 0:
            heard = _greeting(received)
            if heard is not None:
                return heard or None
            connection.settimeout(remaining)
            try:
                chunk = connection.recv(1 << 16)
            except TimeoutError:
                break
            except OSError as error:
                return f"the connection failed before a dask scheduler's greeting ({error.strerror or error})"
            if not chunk:
                return f"a server that closed the connection after sending {_shown(received)}"
            received += chunk
    if not received:
        return f"a server that sent nothing within {seconds} s (one that waits to be spoken to, such as HTTP)"
    return f"a server that sent {_shown(received)}, no dask scheduler's greeting, within {seconds} s"


def _greeting(received: bytes) -> str | None:
    """The empty string when ``received`` is a whole dask greeting, what it is instead when it cannot
    become one, None while it may still become one."""
    if len(received) < 8:
        return None
    length = int.from_bytes(received[:8], "little")
    if length not in _GREETING_BYTES:
        return f"a server that sent {_shown(received)}, not a dask scheduler's greeting"
    if len(received) < 8 + length:
        return None
    frames = received[8 : 8 + length]
    if b"compression" in frames and b"python" in frames:
        return ""
    return f"a server that sent {_shown(received)}, not a dask scheduler's greeting"


def _shown(received: bytes) -> str:
    return repr(received[:24]) + ("..." if len(received) > 24 else "")


@contextlib.contextmanager
def dask_executor(scheduler: Scheduler | None):
    """A dask client's executor on ``scheduler`` (None without one), closed afterwards: the client, never
    the cluster. ExecutorUnavailable when dask.distributed is not installed or no scheduler greets."""
    if scheduler is None:
        yield None
        return
    try:
        from distributed import Client
    except ImportError:
        problem = f"dask.distributed is not installed: {INSTALL['distributed']}"
        raise ExecutorUnavailable(address=scheduler.given, problem=problem) from None
    answered = what_answered(scheduler)
    if answered is not None:
        raise ExecutorUnavailable(address=scheduler.given, problem=f"no dask scheduler there: {answered}")
    try:
        client = Client(scheduler.address, timeout=CONNECT_SECONDS, set_as_default=False)
    except Exception as error:  # the scheduler greeted, then failed dask's own handshake
        problem = f"the scheduler did not connect within {CONNECT_SECONDS} s ({exception_line(error)})"
        raise ExecutorUnavailable(address=scheduler.given, problem=problem) from None
    try:
        yield client.get_executor()
    finally:
        client.close()
