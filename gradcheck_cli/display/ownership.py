"""stdout is gradcheck's for the whole process of the ``gradcheck`` command: the results on a private
duplicate of descriptor 1, everything else (the user's code, its threads and atexit handlers, C code)
on stderr, and a fork of the user's objective never writing a result, with the signal handlers
gradcheck found (a ``multiprocessing`` pool in the objective works). :mod:`output` writes through it.
"""

import contextlib
import io
import os
import signal
import sys

__all__ = [
    "ENDING_SIGNALS",
    "USERS_CODE",
    "STDERR",
    "StderrView",
    "outlive",
    "take_stdout",
    "results_closed_after",
    "results_stream",
    "in_another_process",
    "leave_if_forked",
]


#: The signals that end a run as Ctrl-C does, where the platform has them (number → name): exit
#: status 128 + N (cli.exit_status).
ENDING_SIGNALS = {
    int(getattr(signal, name)): name for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name)
}


class _UsersCode:
    """Whether the user's code is running (``depth`` > 0: the command line's objective), and the signal
    handlers :func:`ending_signals` found (``found``): a process the user's code forks (a
    ``multiprocessing`` fork pool's worker) gets them back, so the pool can stop its workers with
    SIGTERM as it expects, instead of their raising :class:`Interrupted` and the pool waiting forever."""

    depth = 0
    found = {}
    mask = None  # the forking thread's signal mask, while the ending signals are blocked across a fork


USERS_CODE = _UsersCode()


def _before_users_fork() -> None:
    """The ending signals blocked across the fork: one sent to the child at once (a pool terminated
    right away) waits until the child has the handlers found, instead of reaching gradcheck's."""
    if USERS_CODE.depth and hasattr(signal, "pthread_sigmask"):
        USERS_CODE.mask = signal.pthread_sigmask(signal.SIG_BLOCK, ENDING_SIGNALS)


def _after_users_fork_in_parent() -> None:
    if USERS_CODE.mask is not None:
        mask, USERS_CODE.mask = USERS_CODE.mask, None
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _users_fork_gets_the_handlers_found() -> None:
    if USERS_CODE.depth:
        USERS_CODE.depth = 0
        for number, previous in USERS_CODE.found.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(number, previous)
        _after_users_fork_in_parent()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=_before_users_fork,
        after_in_parent=_after_users_fork_in_parent,
        after_in_child=_users_fork_gets_the_handlers_found,
    )


#: Every stream that was ``sys.stdout`` while the user's code ran, kept until the process ends:
#: CPython's ``print`` holds a borrowed reference to ``sys.stdout``, so a stream freed while a
#: user's thread prints to it would crash the interpreter.
_OUTLIVED = []


def outlive(stream):
    """Keep ``stream`` alive until the process ends (see :data:`_OUTLIVED`) and return it."""
    _OUTLIVED.append(stream)
    return stream


class StderrView(io.TextIOBase):
    """A text stream that writes to ``sys.stderr`` (as it is at each write; nowhere once it is None).

    ``sys.stdout`` for the user's code: closing it closes the view, never stderr,
    so an objective that closes ``sys.stdout`` still gets its ``Error:`` line.
    Each view is kept alive until the process ends (:func:`outlive`).
    """

    def __init__(self):
        super().__init__()
        outlive(self)

    def writable(self):
        return True

    def write(self, text):
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        stream = sys.stderr
        if stream is not None:
            stream.write(text)
            if "\n" in text:
                stream.flush()
        return len(text)

    def flush(self):
        if not self.closed and sys.stderr is not None:
            sys.stderr.flush()

    def fileno(self):
        return 2

    def isatty(self):
        return False

    @property
    def encoding(self):
        return getattr(sys.stderr, "encoding", None) or "utf-8"


#: Where a thread other than gradcheck's own writes when it prints to a :class:`HeldStdout`.
STDERR = StderrView()
#: The results' stream once :func:`take_stdout` took descriptor 1, else None.
_RESULTS = None
#: The process that took stdout: a fork of it (the user's objective forking) never writes a result.
_OWNER = os.getpid()


def take_stdout():
    """For the rest of the process, stdout is gradcheck's: the results go to a private duplicate of
    descriptor 1, which is returned as a text stream (None when descriptor 1 is closed), while
    descriptor 1 and ``sys.stdout`` point to stderr (to /dev/null when stderr is closed).

    Whatever else writes to stdout afterwards (the user's code, its threads, its atexit handlers, C
    code, a shell it starts) lands on stderr, so a ``--json`` document stays one document. Only for a
    process that runs its own command line and then exits (see :meth:`GradcheckGroup.main`).
    """
    global _RESULTS, _OWNER
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, OSError, ValueError):
            stream.flush()
    try:
        private = os.dup(1)  # not inherited by a program the user's code starts
    except OSError:  # descriptor 1 is closed: there is nowhere to write the results
        return None
    try:
        os.dup2(2, 1)
    except OSError:  # stderr is closed: what is not a result goes nowhere
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.close(null)
    stdout = sys.stdout
    encoding = getattr(stdout, "encoding", None) or "utf-8"
    errors = getattr(stdout, "errors", None) or "strict"
    _RESULTS = open(private, "w", encoding=encoding, errors=errors, closefd=True)  # noqa: SIM115 (the process's)
    _OWNER = os.getpid()
    sys.stdout = StderrView()
    return _RESULTS


@contextlib.contextmanager
def results_closed_after():
    """Around a command line: the results' stream, if :func:`take_stdout` opened one, closed once they
    are written and the process is about to exit. Left open, the interpreter's teardown would warn of an
    unclosed file (a ResourceWarning, which ``PYTHONWARNINGS=error`` prints on stderr). Descriptor 1
    stays pointed at stderr."""
    global _RESULTS
    try:
        yield
    finally:
        results, _RESULTS = _RESULTS, None
        if results is not None:
            with contextlib.suppress(OSError, ValueError):  # the results were written with os.write: no flush
                results.close()


def in_another_process() -> bool:
    """Whether this is a fork of the process that took stdout (or imported this module): the user's
    objective forked, and the child must leave without writing anything."""
    return os.getpid() != _OWNER


def results_stream():
    """The results' stream once :func:`take_stdout` took descriptor 1, else None."""
    return _RESULTS


def leave_if_forked(status: int) -> None:
    """In a fork of the user's objective that came back this far (:func:`in_another_process`), end at
    once with ``status``, writing nothing: the exit path is the process's that took stdout."""
    if in_another_process():
        os._exit(status)
