"""How the worker processes of ``jobs`` start: forks of the standard library's forkserver, which imports
:data:`PRELOAD` once (spawn where there is no forkserver), with the ending signals held while one
starts; or, for the command line, forks of the command itself while it runs no thread and holds no
descriptor but those it had once numpy was imported (:func:`allow_forks`, :func:`fork_context`).
Standard library only, so that a command can start the server (:func:`start_server`) before it
imports numpy itself: the server's start then overlaps the command's own."""

import contextlib
import os
import signal
import sys

__all__ = [
    "HELD_SIGNALS",
    "PRELOAD",
    "allow_forks",
    "fork_context",
    "signals_held",
    "start_server",
    "usable_cores",
    "worker_context",
]

#: What a terminal or a supervisor sends to stop a run: the parent handles them (the command line
#: ends as on Ctrl-C) and stops its workers, which ignore all but SIGTERM, the parent's own stop.
HELD_SIGNALS = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name)}

#: What the forkserver imports once, so that each worker (a fork of it) starts with them imported.
PRELOAD = (
    "numpy",
    "concurrent.futures.process",
    "gradcheck_cli.check",
    "gradcheck_cli.engine.problem",
    "gradcheck_cli.check.workers",
    "gradcheck_cli.check.parallel",
)


def usable_cores() -> int:
    """The cores this process may run on."""
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    return len(usable)


def worker_context(also: tuple = ()):
    """The forkserver start method where the platform has one, its server set to import :data:`PRELOAD`
    and ``also`` once when it starts (the first pool of this process, or :func:`start_server`, starts it);
    else spawn. Both start workers from a fresh interpreter, never a fork of this process: safe with
    threads and torch."""
    import multiprocessing

    if "forkserver" not in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([*PRELOAD, *also])
    return context


#: The command line's threads and open descriptors when it allowed its workers to be forks of itself
#: (:func:`allow_forks`); None: a library call, whose process's threads and state are the caller's, never forked.
_FORKABLE = {"threads": None, "descriptors": None}


def allow_forks() -> None:
    """Let this process's pools fork their workers from it (:func:`fork_context`) while it runs no thread
    and holds no open descriptor but those it runs and holds now. The command line calls it where the
    command is its process's own program (``gradcheck ...``, not a caller's ``main(args)`` nor click's
    CliRunner, in a process whose threads are the caller's), once numpy is imported (the BLAS's
    threads, which OpenBLAS stops and restarts across a fork, as a forkserver's numpy does) and before
    PROBLEM is loaded: a problem that starts threads (JAX does) or keeps a file, pipe, socket or
    shared memory open gets the forkserver instead."""
    _FORKABLE.update(threads=_threads(), descriptors=_open_descriptors())


def fork_context():
    """The fork start method when :func:`allow_forks` allowed it, on Linux, while the process runs no thread
    it did not run then (a fork copies only the forking thread: a lock another thread held would stay
    held in the child) and holds no descriptor it did not hold then (forks share an open file's
    position, a pipe's data, a shared mapping's pages: the workers would read each other's replies and
    probe each other's arrays); else None. Each worker then starts at once with the problem as this
    process holds it (no interpreter to start, nothing to import or load again)."""
    import multiprocessing

    allowed, held = _FORKABLE["threads"], _FORKABLE["descriptors"]
    linux = sys.platform.startswith("linux")  # /proc tells the threads and descriptors
    if allowed is None or held is None or not linux or "fork" not in multiprocessing.get_all_start_methods():
        return None
    threads, descriptors = _threads(), _open_descriptors()
    if threads is None or not threads <= allowed or descriptors is None or not descriptors <= held:
        return None
    return multiprocessing.get_context("fork")


def _threads() -> frozenset | None:
    """The kernel's ids of this process's threads (a library's native threads included): a thread that
    ended since and another started in its place are not the same, as a count would have them."""
    try:
        return frozenset(os.listdir("/proc/self/task"))
    except OSError:
        return None


def _open_descriptors() -> frozenset | None:
    """What this process's open file descriptors are open on (a path, ``pipe:[inode]``, ``socket:[inode]``):
    a duplicate of one held before is nothing new; the descriptor that listed them is closed by the time
    it would be read, and left out."""
    try:
        numbers = os.listdir("/proc/self/fd")
    except OSError:
        return None
    held = set()
    for number in numbers:
        with contextlib.suppress(OSError):
            held.add(os.readlink(f"/proc/self/fd/{number}"))
    return frozenset(held)


def start_server(also: tuple = ()) -> None:
    """The forkserver of :func:`worker_context` started now, importing ``also`` too, if the platform has
    one and it is not running yet, without waiting for its imports: the first pool of this process forks
    its workers from it as soon as they are done. It ends with this process."""
    if worker_context(also).get_start_method() != "forkserver":
        return
    from multiprocessing import forkserver

    with signals_held():  # the server, and each worker forked from it, starts with them blocked
        forkserver.ensure_running()


@contextlib.contextmanager
def signals_held():
    """The ending signals blocked in this thread meanwhile (a process started now inherits the mask), where
    POSIX can: one arriving while a process is being started is handled once it is started."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, HELD_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)
