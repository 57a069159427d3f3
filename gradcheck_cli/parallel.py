"""The coordinates' first-pass probes in worker processes: ``check_gradients(..., jobs=N)``.

Only the bulk of a check goes to the workers: each selected coordinate's two probes at its
first step h. Every f(θ) (the start, the checkpoints, the end), the directional probes, the
confirmations at other steps and the judging stay in this process, in the serial order, so
for an objective that is a function of its parameters the report is the serial one, bit for
bit (docs/parallel.md).

The pool is the standard library's ``concurrent.futures.ProcessPoolExecutor`` with the
``spawn`` start method (safe with threads and torch; a script that calls ``check_gradients``
with ``jobs`` needs the ``if __name__ == "__main__":`` guard that spawn asks for). Each worker
gets the problem once: loaded again by its reference (:class:`~gradcheck_cli.problem.ProblemReference`,
as the command line loads it) or unpickled, and checked against this process's: every parameter
array bit-identical, and f(θ) evaluated once there within the jitter the purity measurement
allows. A task is one contiguous chunk of one parameter's coordinates, probed with
:func:`~gradcheck_cli.sweep.probe_values` on the worker's own arrays; the chunks are split
deterministically (about :data:`CHUNKS_PER_WORKER` per worker, cut at the checkpoints too)
and merged in order, so what fails first serially is what is raised.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import operator
import os
import pickle
import signal
import sys
import threading
import time
from dataclasses import dataclass

import numpy as np

from .blame import RAISED_IN_WORKER, exception_line, user_location, user_traceback
from .errors import (
    AtParameter,
    GradCheckError,
    InvalidArgument,
    ObjectiveInMain,
    UnpicklableProblem,
    WorkerDied,
    WorkerProbeDiffers,
    WorkerProblemDiffers,
)
from .estimator import evaluated_value
from .formatting import rust_debug, short_repr
from .records import same_bits
from .sweep import ProbeColumns, probe_values

__all__ = [
    "CHUNKS_PER_WORKER",
    "ByReference",
    "Workers",
    "worker_count",
    "workers_for",
    "array_digest",
    "chunks",
    "probing",
]

#: Chunks per worker: enough that a slow chunk does not leave the other workers idle for long.
CHUNKS_PER_WORKER = 4


class ByReference:
    """``objective`` (called as itself here) of a problem that the workers load again by its
    ``reference``, a :class:`~gradcheck_cli.problem.ProblemReference`, rather than unpickle."""

    __slots__ = ("objective", "reference")

    def __init__(self, objective, reference):
        self.objective, self.reference = objective, reference

    def __call__(self, parameters):
        return self.objective(parameters)


@dataclass(frozen=True)
class Workers:
    """A parallel first pass, validated: how many workers, the problem they get, and its digests.

    ``problem`` is a pickle of the problem's :class:`~gradcheck_cli.problem.ProblemReference`
    or of ``(objective, parameters)``; ``digests`` maps each parameter array (checked or not) to
    its :func:`array_digest`.
    """

    count: int
    problem: bytes
    digests: dict


def worker_count(jobs) -> int:
    """The number of worker processes ``jobs`` asks for: None or 1 → 1 (no workers), 0 → one per
    usable core, N ≥ 2 → N. InvalidArgument for anything else."""
    expected = "a whole number: 0 for one worker per core, 1 (or None) for none, N ≥ 2 for N"
    if jobs is None:
        return 1
    try:
        if isinstance(jobs, bool):
            raise TypeError
        count = operator.index(jobs)
    except TypeError:
        raise InvalidArgument(argument="jobs", value=short_repr(jobs), expected=expected) from None
    if count < 0:
        raise InvalidArgument(argument="jobs", value=str(count), expected=expected)
    if count == 0:
        usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
        return len(usable)
    return count


def workers_for(jobs, objective, parameters) -> Workers | None:
    """What the workers of ``jobs`` need, validated before the first objective call; None for a serial
    check. The problem goes by its reference for a :class:`ByReference` objective, else as
    ``(objective, parameters)`` pickled (UnpicklableProblem if that fails: a lambda, a closure)."""
    count = worker_count(jobs)
    if count == 1:
        return None
    if not isinstance(objective, ByReference):
        _reject_unimportable_main(objective, count)
    try:
        problem = pickle.dumps(objective.reference if isinstance(objective, ByReference) else (objective, parameters))
    except Exception as error:  # PicklingError, AttributeError and TypeError ("cannot pickle ...")
        raise UnpicklableProblem(jobs=count, error=exception_line(error)) from error
    digests = {name: array_digest(value) for name, value in parameters.items() if isinstance(value, np.ndarray)}
    return Workers(count, problem, digests)


def _reject_unimportable_main(objective, count: int) -> None:
    """ObjectiveInMain for an objective of ``__main__`` when that has no file a worker could import
    (``python -c``, standard input, a notebook): pickle would succeed, and every worker fail."""
    import sys

    module = getattr(objective, "__module__", None) or type(objective).__module__
    if module == "__main__" and not os.path.isfile(getattr(sys.modules.get("__main__"), "__file__", None) or ""):
        name = getattr(objective, "__qualname__", None) or type(objective).__qualname__
        raise ObjectiveInMain(jobs=count, name=name)


def array_digest(array) -> str | None:
    """A digest of an array's dtype, shape and every byte of its values (row-major); None for a non-array."""
    if not isinstance(array, np.ndarray):
        return None
    values = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
    digest = hashlib.blake2b(repr((array.dtype.name, array.shape)).encode())
    digest.update(values)
    return digest.hexdigest()


def chunks(lengths: list, checkpoints: list, workers: int) -> list:
    """Each parameter's coordinates 0..length as contiguous ``(start, stop)`` chunks, in order.

    About CHUNKS_PER_WORKER·workers chunks in all (none spans two parameters), also cut at the
    ``checkpoints`` (coordinate counts over every parameter), where f(θ) is evaluated again
    between two chunks as it is between two coordinates serially.
    """
    size = max(1, math.ceil(sum(lengths) / (CHUNKS_PER_WORKER * workers)))
    split, base = [], 0
    for length in lengths:
        cuts = {*range(0, length, size), length}
        cuts |= {point - base for point in checkpoints if base < point < base + length}
        points = sorted(cuts)
        split.append(list(zip(points, points[1:])))
        base += length
    return split


@contextlib.contextmanager
def probing(workers: Workers | None, plan: list):
    """The pool that probes ``plan``'s coordinates in worker processes, started by its first
    :meth:`~_Pool.collect`; or None for the serial loop (no ``workers``, or one coordinate in all).

    Leaving the block stops the workers: at once when something was raised (Ctrl-C included),
    else once they are idle. Only the workers' own copies of the arrays were ever probed.
    """
    if workers is None or sum(len(planned.columns) for planned in plan) < 2:
        yield None
        return
    pool = _Pool(workers, plan)
    try:
        yield pool
    finally:
        pool.stop()


class _Pool:
    """The executor, its workers, and one future per chunk (``futures[p]``: parameter p's, in order)."""

    def __init__(self, workers: Workers, plan: list):
        self.workers, self.plan = workers, plan
        self.executor, self.processes, self.split, self.futures = None, [], [], []

    def start(self, checkpoints: list, center: float) -> None:
        """Split the coordinates into chunks, start min(count, chunks) workers (which check their f(θ)
        against ``center``), and submit every chunk in order."""
        import concurrent.futures
        import multiprocessing

        self.split = chunks([len(planned.columns) for planned in self.plan], checkpoints, self.workers.count)
        count = min(self.workers.count, sum(len(parameter) for parameter in self.split))
        self.executor = concurrent.futures.ProcessPoolExecutor(
            count,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(
                self.workers.problem,
                self.workers.digests,
                [planned.name for planned in self.plan],
                center,
                min(planned.dtype.epsilon for planned in self.plan),
            ),
        )
        with _interrupts_held(), self._reporting_death():  # workers start with Ctrl-C held, then ignore it
            for planned, parameter in zip(self.plan, self.split):
                self.futures.append(
                    [
                        self.executor.submit(_probe_chunk, planned.name, _chunk(planned.columns, a, b))
                        for a, b in parameter
                    ]
                )
        self.processes = self._started()

    def collect(self, index: int, counted, minus: list, plus: list, done: int, checkpoints, progress, total) -> int:
        """Parameter ``index``'s values, chunk by chunk in order, appended to ``minus`` and ``plus``;
        f(θ) at the checkpoints and ``progress`` after each chunk, as the serial loop has them. Returns
        the coordinates done. A probe's typed error is raised in AtParameter, as serially."""
        if self.executor is None:
            self.start(checkpoints, counted.centers[0])
        planned = self.plan[index]
        for (start, stop), future in zip(self.split[index], self.futures[index]):
            with self._reporting_death():
                chunk_minus, chunk_plus, error = future.result()
            if error is not None:
                raise AtParameter(parameter=planned.name, source=error) from error
            _verify(planned, start, chunk_minus[0], chunk_plus[0], counted)
            minus += chunk_minus
            plus += chunk_plus
            counted.calls += 2 * (stop - start)
            done += stop - start
            if progress is not None:
                progress(done, total)
            if done in checkpoints:
                counted.center()
        return done

    @contextlib.contextmanager
    def _reporting_death(self):
        """A broken pool (a worker died) as WorkerDied, one line, rather than a hang or a traceback."""
        from concurrent.futures.process import BrokenProcessPool

        try:
            yield
        except BrokenProcessPool as broken:
            raise WorkerDied(jobs=self.workers.count, problem=self._death()) from broken

    def _started(self) -> list:
        """The worker processes started so far: those kept when the chunks were submitted, and any the
        executor still knows (it forgets a dead one once the pool is broken, and all once shut down)."""
        started = (getattr(self.executor, "_processes", None) or {}).values()
        return [*self.processes, *(process for process in started if process not in self.processes)]

    def _death(self) -> str:
        """How the worker that broke the pool ended (the others were terminated by the pool)."""
        codes, deadline = [], time.monotonic() + 5.0
        for process in self._started():
            process.join(timeout=5.0)
            # The executor's own thread may be reaping it at the same moment: its waitpid wins, and
            # ours reads no status (is_alive() even says True) until that thread has stored it.
            while process.exitcode is None and time.monotonic() < deadline:
                time.sleep(0.01)
            codes.append(process.exitcode)
        ended = [code for code in codes if code not in (None, 0, -signal.SIGTERM)] or [
            code for code in codes if code not in (None, 0)
        ]
        if not ended:
            return "stopped, or sent back a result this process cannot read"
        if ended[0] > 0:
            return f"exited with status {ended[0]}"
        try:
            name = signal.Signals(-ended[0]).name
        except ValueError:
            name = str(-ended[0])
        return f"was killed by signal {name}"

    def stop(self) -> None:
        """Stop the workers: terminated unless every chunk is done (or a signal cuts the wait for idle
        ones short), and joined either way."""
        if self.executor is None:
            return
        processes = self._started()
        if all(future.done() for parameter in self.futures for future in parameter):
            try:
                self.executor.shutdown(wait=True)
                return
            except BaseException:
                self._terminate(processes)
                raise
        self._terminate(processes)

    def _terminate(self, processes: list) -> None:
        self.executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=5.0)
            if process.exitcode is None:  # the objective's code handles SIGTERM: no more time
                process.kill()
                process.join()
        self.executor.shutdown(wait=True)


def _verify(planned, start: int, minus: float, plus: float, counted) -> None:
    """Coordinate ``start`` (a chunk's first) probed again here, uncounted: a worker's two values must
    be this process's bit for bit, or the workers run another objective (WorkerProbeDiffers)."""
    here_minus, here_plus = [], []
    try:
        probe_values(
            planned.array,
            planned.columns,
            start,
            start + 1,
            counted.objective,
            counted.parameters,
            here_minus,
            here_plus,
        )
    except GradCheckError as error:
        raise AtParameter(parameter=planned.name, source=error) from error
    for side, worker, here in (("minus", minus, here_minus[0]), ("plus", plus, here_plus[0])):
        if not same_bits(worker, here):
            coordinate = [int(position) for position in planned.columns.coordinate(start)]
            raise WorkerProbeDiffers(parameter=planned.name, coordinate=coordinate, side=side, worker=worker, here=here)


def _chunk(columns: ProbeColumns, start: int, stop: int) -> ProbeColumns:
    """Coordinates start:stop of ``columns``: what probe_values reads, and nothing else."""
    part = slice(start, stop)
    return ProbeColumns(
        columns.shape,
        columns.offsets[part],
        columns.theta[part],
        columns.analytic[part],
        minus_point=columns.minus_point[part],
        plus_point=columns.plus_point[part],
    )


#: What a terminal or a supervisor sends to stop a run: the parent handles them (the command line
#: ends as on Ctrl-C) and stops its workers, which ignore all but SIGTERM, the parent's own stop.
_HELD_SIGNALS = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT") if hasattr(signal, name)}


@contextlib.contextmanager
def _interrupts_held():
    """The ending signals blocked in this thread meanwhile (a worker started now inherits the mask), where
    POSIX can: one arriving while the pool is being built is handled once it is built."""
    if not hasattr(signal, "pthread_sigmask"):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD_SIGNALS)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


# ---------------------------------------------------------------- in a worker

_WORKER = {}


def _start_worker(problem: bytes, digests: dict, checked: list, center: float, epsilon: float) -> None:
    """The initializer: Ctrl-C ignored (this process's parent stops it), the problem loaded once and
    checked against the parent's: the ``digests`` of its arrays, and its f(θ), ``center``, within
    the purity measurement's JITTER_LIMIT·ε·|f| (this one call is not a probe, and is not counted).
    The ``checked`` arrays are watched as the serial check watches them. A failure is kept, and
    raised by every task."""
    if threading.current_thread() is threading.main_thread():  # a pool's worker (a cluster's may be a thread)
        for number in _HELD_SIGNALS - {signal.SIGTERM}:
            signal.signal(number, signal.SIG_IGN)
        if hasattr(signal, "pthread_sigmask"):
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _HELD_SIGNALS)
        _whole_lines()
        _end_with_parent()
    try:
        loaded = pickle.loads(problem)
        if isinstance(loaded, tuple):
            objective, parameters = loaded
        else:
            os.chdir(loaded.directory)
            from .problem import load_problem

            found = load_problem(loaded.text, loaded.adapt)
            objective, parameters = found.objective, found.parameters
        for value in parameters.values():
            _made_private(value)
        for name, digest in digests.items():
            if array_digest(parameters.get(name)) != digest:
                raise WorkerProblemDiffers(difference=f"parameter {name!r} is not bit-identical")
        from .check import JITTER_LIMIT, _Objective

        objective = _watched(objective)
        guard = _Objective(objective, parameters, {name: parameters[name] for name in checked})
        value = evaluated_value("center", objective(parameters))
        if abs(value - center) > JITTER_LIMIT * epsilon * max(abs(value), abs(center)):
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

    from .tensors import byte_bounds

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


def _probe_chunk(name: str, columns: ProbeColumns) -> tuple:
    """``(minus, plus, None)``: the chunk's values at θ−h and θ+h; or ``(None, None, error)``, the
    probe's typed error, which the parent wraps as the serial check does. The objective's exceptions
    propagate; so does the error of an objective that changed its parameters (ParameterChanged),
    raised unwrapped as at the serial check's next f(θ)."""
    if "failure" in _WORKER:
        raise _WORKER["failure"]
    parameters = _WORKER["parameters"]
    minus, plus = [], []
    try:
        probe_values(parameters[name], columns, 0, len(columns), _WORKER["objective"], parameters, minus, plus)
    except GradCheckError as error:
        return None, None, error
    _WORKER["guard"].unchanged()
    return minus, plus, None


def _watched(objective):
    """``objective``, marking what it raises with where the user's code raised it (errors.raised_in_worker)."""

    def call(parameters):
        try:
            return objective(parameters)
        except BaseException as error:
            with contextlib.suppress(Exception):
                setattr(error, RAISED_IN_WORKER, (user_location(error), user_traceback(error)))
            raise

    return call
