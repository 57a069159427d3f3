"""The coordinates' first-pass probes in worker processes: ``check_gradients(..., jobs=N)``.

Only the bulk of a check goes to the workers: each selected coordinate's two probes at its
first step h. Every f(θ) (the start, the checkpoints, the end), the directional probes, the
confirmations at other steps and the judging stay in this process, in the serial order, so
for an objective that is a function of its parameters the report is the serial one, bit for
bit (docs/parallel.md).

``jobs=N`` starts a ``concurrent.futures.ProcessPoolExecutor`` whose workers are forks of the
standard library's forkserver, which has imported numpy and gradcheck once
(:mod:`~gradcheck_cli.core.processes`), ``spawn`` where there is no forkserver: a script that calls
``check_gradients`` with ``jobs`` needs the ``if __name__ == "__main__":`` guard either way. The
command line's workers are forks of the command itself, holding the problem as it loaded it, while
it runs no thread but numpy's and holds no descriptor open on anything new
(:func:`~gradcheck_cli.core.processes.fork_context`). ``jobs=`` may instead be any
``concurrent.futures.Executor`` of the caller's (dask.distributed's ``Client.get_executor()``,
mpi4py's ``MPIPoolExecutor``, loky): the same chunks, the same verification, the same report; it is
never shut down here. Each other worker loads the problem once, by its reference
(:class:`~gradcheck_cli.engine.problem.ProblemReference`, as the command line loads it) or
unpickled; every worker checks it against this process's: every parameter array bit-identical, and
f(θ) evaluated once there within the jitter the purity measurement allows. A task is one contiguous
chunk of one parameter's coordinates, probed with :func:`~gradcheck_cli.engine.sweep.probe_values`
on the worker's own arrays; the chunks are split deterministically (about :data:`CHUNKS_PER_WORKER`
per worker, cut at the checkpoints too) and merged in order, so what fails first serially is what is
raised.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import operator
import os
import pickle
import signal
import sys
import time
import warnings
from dataclasses import dataclass

import numpy as np

from ..core.blame import exception_line
from ..core.formatting import short_repr
from ..core.processes import fork_context, signals_held, usable_cores, worker_context
from ..core.record import same_bits
from ..engine.sweep import ProbeColumns, probe_values
from ..errors import (
    AtParameter,
    GradCheckError,
    InvalidArgument,
    ObjectiveInMain,
    UnpicklableProblem,
    WorkerDied,
    WorkerProbeDiffers,
)
from .workers import Setup, array_digest, probe_chunk, start_worker

__all__ = [
    "CHUNKS_PER_WORKER",
    "ByReference",
    "Workers",
    "executor_workers",
    "worker_count",
    "workers_for",
    "chunks",
    "probing",
]

#: Chunks per worker: enough that a slow chunk does not leave the other workers idle for long.
CHUNKS_PER_WORKER = 4


class ByReference:
    """``objective`` (called as itself here) of a problem that the workers load again by its
    ``reference``, a :class:`~gradcheck_cli.engine.problem.ProblemReference`, rather than unpickle."""

    __slots__ = ("objective", "reference")

    def __init__(self, objective, reference):
        self.objective, self.reference = objective, reference

    def __call__(self, parameters):
        return self.objective(parameters)


@dataclass(frozen=True)
class Workers:
    """A parallel first pass, validated: how many workers, what each needs to load the problem, and the
    caller's ``executor`` (None: a pool of ``count`` worker processes is started for the check)."""

    count: int
    setup: Setup
    executor: object = None


def worker_count(jobs) -> int:
    """The number of worker processes ``jobs`` asks for: None or 1 → 1 (no workers), 0 → one per
    usable core, N ≥ 2 → N, a ``concurrent.futures.Executor`` → its workers (:func:`executor_workers`).
    InvalidArgument for anything else."""
    expected = (
        "a whole number: 0 for one worker per core, 1 (or None) for none, N ≥ 2 for N; or a concurrent.futures.Executor"
    )
    if jobs is None:
        return 1
    if _is_executor(jobs):
        return executor_workers(jobs)
    try:
        if isinstance(jobs, bool):
            raise TypeError
        count = operator.index(jobs)
    except TypeError:
        raise InvalidArgument(argument="jobs", value=short_repr(jobs), expected=expected) from None
    if count < 0:
        raise InvalidArgument(argument="jobs", value=str(count), expected=expected)
    if count == 0:
        return usable_cores()
    return count


def _is_executor(jobs) -> bool:
    import concurrent.futures

    return isinstance(jobs, concurrent.futures.Executor)


def executor_workers(executor) -> int:
    """How many tasks ``executor`` runs at once, which sets the chunks' size (never the report): a
    process pool's or loky's ``_max_workers``, mpi4py's ``num_workers``, the threads of a dask
    client's workers; else the usable cores. At least 2."""
    count = getattr(executor, "_max_workers", None) or getattr(executor, "num_workers", None)
    client = getattr(executor, "_client", None)
    if not count and client is not None and hasattr(client, "nthreads"):
        with contextlib.suppress(Exception):
            count = sum(client.nthreads().values())
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        count = usable_cores()
    return max(2, count)


def workers_for(jobs, objective, parameters) -> Workers | None:
    """What the workers of ``jobs`` need, validated before the first objective call; None for a serial
    check. The problem goes by its reference for a :class:`ByReference` objective, else as
    ``(objective, parameters)`` pickled (UnpicklableProblem if that fails: a lambda, a closure)."""
    count = worker_count(jobs)
    if count == 1:
        return None
    executor = jobs if _is_executor(jobs) else None
    if not isinstance(objective, ByReference):
        _reject_unimportable_main(objective, count, executor)
    try:
        problem = pickle.dumps(objective.reference if isinstance(objective, ByReference) else (objective, parameters))
    except Exception as error:  # PicklingError, AttributeError and TypeError ("cannot pickle ...")
        raise UnpicklableProblem(jobs=count, error=exception_line(error)) from error
    digests = {name: array_digest(value) for name, value in parameters.items() if isinstance(value, np.ndarray)}
    return Workers(count, Setup("", problem, digests, []), executor)


def _reject_unimportable_main(objective, count: int, executor) -> None:
    """ObjectiveInMain for an objective of ``__main__`` when that has no file a worker could import
    (``python -c``, standard input, a notebook), or whatever it is for a caller's ``executor``, whose
    workers have a ``__main__`` of their own: pickle would succeed, and every worker fail."""
    module = getattr(objective, "__module__", None) or type(objective).__module__
    main_file = getattr(sys.modules.get("__main__"), "__file__", None) or ""
    if module == "__main__" and (executor is not None or not os.path.isfile(main_file)):
        name = getattr(objective, "__qualname__", None) or type(objective).__qualname__
        raise ObjectiveInMain(jobs=count, name=name)


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

    def start(self, passing) -> None:
        """Split the coordinates into chunks at the checkpoints of ``passing`` (the first pass), and submit
        every chunk in order: to the caller's executor with the setup (each worker loads the problem at
        its first chunk), or to min(count, chunks) workers started here, which load it (and check their
        f(θ) against this one's) as they start."""
        self.split = chunks([len(planned.columns) for planned in self.plan], passing.checkpoints, self.workers.count)
        setup = self._setup(passing.counted)
        if self.workers.executor is not None:
            self.executor = self.workers.executor
            self._submit(setup)
            return
        import concurrent.futures

        count = min(self.workers.count, sum(len(parameter) for parameter in self.split))
        setup = dataclasses.replace(setup, environment=dict(os.environ))
        context = fork_context()  # the command's own forks, which hold the problem as it does, else the server's
        inherited = None if context is None else (passing.counted.objective, passing.counted.parameters)
        with signals_held(), self._reporting_death(), warnings.catch_warnings():  # Ctrl-C held, then ignored
            # Python 3.12+ warns of a fork beside any thread: fork_context allowed only numpy's (the BLAS's).
            warnings.filterwarnings("ignore", r".*use of fork\(\) may lead to deadlocks", DeprecationWarning)
            self.executor = concurrent.futures.ProcessPoolExecutor(
                count, mp_context=context or worker_context(), initializer=start_worker, initargs=(setup, inherited)
            )
            self._submit(setup.key)
        self.processes = self._started()

    def _setup(self, counted) -> Setup:
        """The workers' setup, complete now that f(θ) is known, with the key that names it: the workers
        watch their arrays with the guard of ``counted`` (the check's guarded objective), its class."""
        setup = dataclasses.replace(
            self.workers.setup,
            checked=[planned.name for planned in self.plan],
            center=counted.centers[0],
            epsilon=min(planned.dtype.epsilon for planned in self.plan),
            guard=type(counted),
        )
        key = hashlib.blake2b(pickle.dumps(dataclasses.astuple(setup)[1:])).hexdigest()
        return dataclasses.replace(setup, key=key)

    def _submit(self, setup) -> None:
        for planned, parameter in zip(self.plan, self.split):
            self.futures.append(
                [
                    self.executor.submit(probe_chunk, setup, planned.name, _chunk(planned.columns, a, b))
                    for a, b in parameter
                ]
            )

    def collect(self, index: int, passing) -> tuple:
        """Parameter ``index``'s values at θ − h and θ + h, chunk by chunk in order, each chunk counted by
        ``passing`` (:class:`~gradcheck_cli.check.probe.FirstPass`: f(θ) at its checkpoints, progress) as
        the serial loop counts its segments. A probe's typed error is raised in AtParameter, as serially."""
        counted = passing.counted
        if self.executor is None:
            self.start(passing)
        planned, minus, plus = self.plan[index], [], []
        for (start, stop), future in zip(self.split[index], self.futures[index]):
            with self._reporting_death():
                chunk_minus, chunk_plus, error = future.result()
            if error is not None:
                raise AtParameter(parameter=planned.name, source=error) from error
            _verify(planned, start, chunk_minus[0], chunk_plus[0], counted)
            minus += chunk_minus
            plus += chunk_plus
            passing.advance(stop - start)
        return minus, plus

    @contextlib.contextmanager
    def _reporting_death(self):
        """A broken pool (a worker died) as WorkerDied, one line, rather than a hang or a traceback; so
        is a caller's executor that lost a worker (a BrokenExecutor, dask's KilledWorker)."""
        import concurrent.futures

        try:
            yield
        except Exception as error:
            if not isinstance(error, concurrent.futures.BrokenExecutor) and not _lost_worker(error):
                raise
            if self.workers.executor is None:
                raise WorkerDied(jobs=self.workers.count, problem=self._death()) from error
            problem = f"was lost by the executor {type(self.executor).__name__} ({exception_line(error)})"
            raise WorkerDied(jobs=self.workers.count, problem=problem) from error

    def _started(self) -> list:
        """The worker processes started so far: those kept when the chunks were submitted, and any the
        executor still knows (it forgets a dead one once the pool is broken, and all once shut down)."""
        started = (getattr(self.executor, "_processes", None) or {}).values()
        return [*self.processes, *(process for process in started if process not in self.processes)]

    def _death(self) -> str:
        """How the worker that broke the pool ended (the others were terminated by the pool)."""
        codes, deadline = [], time.monotonic() + 5.0
        manager = getattr(self.executor, "_executor_manager_thread", None)
        if manager is not None:  # it reaps the workers of the broken pool: a forkserver worker's status is
            manager.join(timeout=5.0)  # one read of a pipe, which a second reader meanwhile finds empty (255)
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
        ones short), and joined either way. A caller's executor is left running, only the chunks it has
        not started cancelled (one it is running probes the worker's own arrays, never these)."""
        if self.executor is None:
            return
        if self.workers.executor is not None:
            for parameter in self.futures:
                for future in parameter:
                    future.cancel()
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
        """The workers terminated (killed if they outlast 5 s), and the executor's manager thread joined.

        ``shutdown(wait=False)`` forgets that thread, so the second ``shutdown`` cannot join it; left
        running, it would still be closing its wake-up pipe when the interpreter's exit hook
        (concurrent.futures.process._python_exit) writes to that pipe, without the lock that guards
        it: "Exception ignored in: <module 'threading'>" on stderr. Once the workers are gone, the
        thread sees their end and returns; one reading a result that a worker was cut short sending
        reads end-of-file once this process's own end of that pipe is closed too (else it waits for
        the rest forever, and the interpreter's exit hook with it)."""
        manager = getattr(self.executor, "_executor_manager_thread", None)
        results = getattr(self.executor, "_result_queue", None)
        self.executor.shutdown(wait=False, cancel_futures=True)
        for process in processes:
            process.terminate()
        for process in processes:
            process.join(timeout=5.0)
            if process.exitcode is None:  # the objective's code handles SIGTERM: no more time
                process.kill()
                process.join()
        if results is not None:
            results._writer.close()
        if manager is not None:
            manager.join()
        self.executor.shutdown(wait=True)


def _lost_worker(error: BaseException) -> bool:
    """Whether ``error`` is dask.distributed's KilledWorker (a task whose workers died), without importing it."""
    return any(
        kind.__name__ == "KilledWorker" and kind.__module__.startswith("distributed") for kind in type(error).__mro__
    )


def _verify(planned, start: int, minus: float, plus: float, counted) -> None:
    """Coordinate ``start`` (a chunk's first) probed again here, uncounted: a worker's two values must
    be this process's bit for bit, or the workers run another objective (WorkerProbeDiffers)."""
    try:
        here_minus, here_plus = probe_values(
            planned.array, planned.columns, counted.objective, counted.parameters, part=(start, start + 1)
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
