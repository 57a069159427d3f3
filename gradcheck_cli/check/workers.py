"""The worker side of ``jobs``: what a worker process (or an executor's worker) runs.

A worker loads the problem once per :class:`Setup` (by reference, or unpickled), checks it
against the parent's (each array's :func:`array_digest`, and f(θ)), and probes the chunks of
coordinates it is sent with :func:`~gradcheck_cli.engine.sweep.probe_values`, its arrays watched as the
serial check watches them. The parent side (the pool, the executors) is :mod:`~gradcheck_cli.check.parallel`.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import pickle
import signal
import sys
import threading
from dataclasses import dataclass

import numpy as np

from ..core.blame import RAISED_IN_WORKER, user_location, user_traceback
from ..core.formatting import rust_debug
from ..core.processes import HELD_SIGNALS
from ..engine.complex_parts import real_view
from ..engine.estimator import evaluated_value
from ..engine.sweep import ProbeColumns, probe_values
from ..errors import GradCheckError, WorkerProblemDiffers

__all__ = ["Setup", "array_digest", "probe_chunk", "start_worker"]


@dataclass(frozen=True)
class Setup:
    """What a worker loads the problem from: ``problem``, a pickle of its
    :class:`~gradcheck_cli.engine.problem.ProblemReference` or of ``(objective, parameters)``; ``digests``, each
    parameter array's :func:`array_digest`; the ``checked`` names; this process's f(θ), ``center``, once
    known, with the ``epsilon`` of its check; ``environment``, this process's, for the pool's workers
    (forks of a server started earlier); ``guard``, the class of the check's guarded objective, which
    watches the ``checked`` arrays here as the check does (its ``jitter_limit`` bounds how far this f(θ)
    may be from ``center``). ``key`` names it in a worker's cache."""

    key: str
    problem: bytes
    digests: dict
    checked: list
    center: float = math.nan
    epsilon: float = math.nan
    environment: dict | None = None
    guard: type | None = None


def array_digest(array) -> str | None:
    """A digest of an array's dtype, shape and every byte of its values (row-major); None for a non-array."""
    if not isinstance(array, np.ndarray):
        return None
    values = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    digest = hashlib.blake2b(repr((array.dtype.name, array.shape)).encode())
    digest.update(values)
    return digest.hexdigest()


#: The problem this process loaded last, by its setup's key: ``key``, then ``objective``, ``parameters``
#: and ``guard``, or the ``failure`` that every task of that setup raises.
_WORKER = {}
#: One chunk at a time in a process: the threads of one worker (a dask worker's, a thread pool's) share
#: its arrays, which a chunk perturbs in place.
_PROBING = threading.Lock()


def start_worker(setup: Setup, inherited: tuple | None = None) -> None:
    """A pool's initializer: Ctrl-C ignored (this process's parent stops it), SIGTERM ending it, this
    process's parent's environment, and the problem loaded once (:func:`_load`); or, in a fork of the
    command itself, ``inherited``, its ``(objective, parameters)`` as the command holds them."""
    for number in HELD_SIGNALS - {signal.SIGTERM}:
        signal.signal(number, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a fork of the command has the command's handler
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, HELD_SIGNALS)
    _whole_lines()
    _end_with_parent()
    if setup.environment is not None and setup.environment != os.environ:
        os.environ.clear()
        os.environ.update(setup.environment)
    with _PROBING:
        _load(setup, inherited)


def _load(setup: Setup, inherited: tuple | None = None) -> None:
    """The problem of ``setup`` loaded (or ``inherited``, a fork's copy of the parent's ``(objective,
    parameters)``) and checked against the parent's: the ``digests`` of its arrays,
    and its f(θ), ``center``, within the purity measurement's jitter_limit·ε·|f| (this one call is not a
    probe, and is not counted). The ``checked`` arrays are watched as the serial check watches them. A
    failure is kept, and raised by every task of that setup."""
    _WORKER.clear()
    _WORKER["key"] = setup.key
    try:
        loaded = inherited if inherited is not None else pickle.loads(setup.problem)
        if isinstance(loaded, tuple):
            objective, parameters = loaded
        else:
            os.chdir(loaded.directory)
            from ..engine.problem import load_problem

            found = load_problem(loaded.text, loaded.adapt)
            objective, parameters = found.objective, found.parameters
        for value in parameters.values():
            _made_private(value)
        for name, digest in setup.digests.items():
            if array_digest(parameters.get(name)) != digest:
                raise WorkerProblemDiffers(difference=f"parameter {name!r} is not bit-identical")
        objective = _watched(objective)
        guard = setup.guard(objective, parameters, {name: real_view(parameters[name]) for name in setup.checked})
        value, center = evaluated_value("center", objective(parameters)), setup.center
        if abs(value - center) > setup.guard.jitter_limit * setup.epsilon * max(abs(value), abs(center)):
            raise WorkerProblemDiffers(difference=f"f(θ) is {rust_debug(value)} there, {rust_debug(center)} here")
        _WORKER.update(objective=objective, parameters=parameters, guard=guard)
    except BaseException as error:  # noqa: BLE001 - raised again by every task, in the parent
        _WORKER["failure"] = error


def _whole_lines() -> None:
    """This worker's ``print`` written a whole line at a time, so that the workers' lines on one shared
    stderr never splice mid-line (under ``python -u`` or PYTHONUNBUFFERED each piece of a print is a
    write of its own; a line up to PIPE_BUF bytes written at once is atomic)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(AttributeError, ValueError, OSError):
            stream.reconfigure(line_buffering=True, write_through=False)


#: mmap's MAP_FIXED (Linux and the BSDs, macOS included), which Python's mmap module does not export.
_MAP_FIXED = 0x10


def _mapped(array) -> bool:
    """Whether ``array``'s memory is an mmap (np.memmap, a SharedMemory buffer): shared with a file or
    other processes, the other workers among them."""
    import mmap

    base = array
    while base is not None:
        if isinstance(base, mmap.mmap):
            return True
        base = base.obj if isinstance(base, memoryview) else getattr(base, "base", None)
    return False


def _made_private(array) -> None:
    """A memory-mapped ``array`` given this worker's own copy of its pages, at the same addresses (the
    problem's objects keep pointing at it): the probes of every worker stay out of the file and out of
    each other's way, as the serial check's probes are alone in it. POSIX only."""
    if not isinstance(array, np.ndarray) or array.size == 0 or os.name != "posix" or not _mapped(array):
        return
    import ctypes
    import mmap

    from ..engine.tensors import byte_bounds

    low, high = byte_bounds(array)
    start = low - low % mmap.PAGESIZE
    length = -(-(high - start) // mmap.PAGESIZE) * mmap.PAGESIZE
    pages = ctypes.string_at(start, length)
    remap = ctypes.CDLL(None, use_errno=True).mmap
    remap.restype = ctypes.c_void_p
    remap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
    flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | _MAP_FIXED
    if remap(start, length, mmap.PROT_READ | mmap.PROT_WRITE, flags, -1, 0) != start:
        raise OSError(ctypes.get_errno(), "cannot give a memory-mapped parameter a private copy in a worker")
    ctypes.memmove(start, pages, length)


def _end_with_parent() -> None:
    """End this worker the moment its parent process ends, however it ended (SIGKILL included): a
    thread waits on the pipe from the parent, which reads end-of-file once the parent is gone."""
    import multiprocessing
    import multiprocessing.connection

    parent = multiprocessing.parent_process()
    if parent is None or parent.sentinel is None:
        return

    def watch():
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)

    threading.Thread(target=watch, name="gradcheck-parent", daemon=True).start()


def probe_chunk(setup, name: str, columns: ProbeColumns) -> tuple:
    """``(minus, plus, None)``: the chunk's values at θ−h and θ+h; or ``(None, None, error)``, the
    probe's typed error, which the parent wraps as the serial check does. ``setup`` is the
    :class:`Setup` (loaded here at its first chunk), or the key of the one this pool's initializer
    loaded. The objective's exceptions propagate; so does the error of an objective that changed its
    parameters (ParameterChanged), raised unwrapped as at the serial check's next f(θ)."""
    with _PROBING:
        if not isinstance(setup, str) and _WORKER.get("key") != setup.key:
            _load(setup)
        if "failure" in _WORKER:
            raise _WORKER["failure"]
        parameters = _WORKER["parameters"]
        try:
            minus, plus = probe_values(real_view(parameters[name]), columns, _WORKER["objective"], parameters)
        except GradCheckError as error:
            return None, None, error
        _WORKER["guard"].unchanged()
        return minus, plus, None


def _watched(objective):
    """``objective``, marking what it raises with where the user's code raised it (blame.raised_in_worker)."""

    def call(parameters):
        try:
            return objective(parameters)
        except BaseException as error:
            with contextlib.suppress(Exception):
                setattr(error, RAISED_IN_WORKER, (user_location(error), user_traceback(error)))
            raise

    return call
