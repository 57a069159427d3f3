"""How the worker processes of ``jobs`` start: forks of the standard library's forkserver, which imports
:data:`PRELOAD` once (spawn where there is no forkserver), with the ending signals held while one
starts. Standard library only, so that a command can start the server (:func:`start_server`) before
it imports numpy itself: the server's start then overlaps the command's own."""

import contextlib
import os
import signal

__all__ = ["HELD_SIGNALS", "PRELOAD", "signals_held", "start_server", "usable_cores", "worker_context"]

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
