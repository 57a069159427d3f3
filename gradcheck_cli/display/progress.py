"""The progress bar of a long check, on stderr: rich, imported when the bar first appears."""

import sys

from .tables import table_width

__all__ = ["PROGRESS_DELAY", "ANNOUNCE_SECONDS", "ANNOUNCE_VARIABLE", "REPORT_INTERVAL", "ProgressBar"]

#: A check shows its progress bar only once it has run this long (seconds).
PROGRESS_DELAY = 1.0
#: On a stderr that is not a terminal, a check whose probing is estimated (from the rate of its first
#: coordinates) to take longer than this many seconds announces itself; ANNOUNCE_VARIABLE overrides it.
ANNOUNCE_SECONDS = 10.0
ANNOUNCE_VARIABLE = "GRADCHECK_ANNOUNCE_SECONDS"
#: Then a progress line at most this often (seconds).
REPORT_INTERVAL = 10.0
#: What the bar says, pulsing, once every coordinate is probed and the check goes on.
AFTER = "confirming the coordinates and the directions"


class ProgressBar:
    """``progress(done, total)`` for :func:`~gradcheck_cli.check.check_gradients`: a bar on stderr.

    Drawn only when ``stream`` is a terminal, and only once ``delay``
    seconds have passed since the bar was created, so a quick check prints
    nothing. On a stream that is not a terminal, a long check writes lines
    instead (:meth:`_announce`); a quick one, nothing. rich is imported when the bar first
    appears. Use as a context manager, so the bar is removed whatever
    happens (Ctrl-C included).
    """

    def __init__(self, description: str, stream=None, delay: float = PROGRESS_DELAY, clock=None):
        import time

        self.stream = sys.stderr if stream is None else stream
        self.description, self.delay = description, delay
        self.clock = time.monotonic if clock is None else clock
        self.started = self.clock()
        self.interactive = getattr(self.stream, "isatty", lambda: False)()
        self.bar, self.task = None, None
        self.announced = None  # when the last announcement line was written

    def __call__(self, done: int, total: int) -> None:
        if not self.interactive:
            self._announce(done, total)
            return
        if self.bar is None:
            if self.clock() - self.started < self.delay:
                return
            self._start(done, total)
        if done < total:
            self.bar.update(self.task, completed=done, total=total)
        elif self.bar.tasks[-1].total is not None:  # the confirmations and the directions follow, uncounted
            self.bar.remove_task(self.task)
            self.task = self.bar.add_task(f"{self.description}: {AFTER}", total=None)

    def _announce(self, done: int, total: int) -> None:
        """On a stderr that is not a terminal, a long check's lines: once its probing is estimated to take
        longer than the announcement threshold, what it plans; then at most every REPORT_INTERVAL, how far
        it is and the time left, at the rate so far."""
        now = self.clock()
        elapsed = now - self.started
        if done <= 0 or done >= total or elapsed <= 0:
            return
        left = (total - done) * elapsed / done
        if self.announced is None:
            if elapsed + left <= _announce_seconds():
                return
            self.announced = now
            evaluations = 2 * total  # each coordinate's two probes at its step, before the confirmations
            self._line(
                f"{total} coordinates to probe, {evaluations} evaluations of f at least: about {left:.0f} s left"
            )
        elif now - self.announced >= REPORT_INTERVAL:
            self.announced = now
            self._line(f"{done} of {total} coordinates probed: about {left:.0f} s left")

    def _line(self, text: str) -> None:
        from .output import write_line

        write_line(f"{self.description}: {text}", self.stream)

    def _start(self, done: int, total: int) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        width = table_width(self.stream, True)
        console = Console(file=self.stream, width=width, highlight=False, emoji=False, markup=False)
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=console,
            transient=True,
            redirect_stdout=False,
            redirect_stderr=False,
        )
        self.task = self.bar.add_task(self.description, total=total, completed=done)
        self.bar.start()

    def close(self) -> None:
        """Remove the bar, if it was ever drawn."""
        if self.bar is not None:
            self.bar.stop()
            self.bar = None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()
        return False


def _announce_seconds() -> float:
    """ANNOUNCE_SECONDS, or the number of seconds in ``$GRADCHECK_ANNOUNCE_SECONDS``."""
    import os

    try:
        return float(os.environ[ANNOUNCE_VARIABLE])
    except (KeyError, ValueError):
        return ANNOUNCE_SECONDS
