"""The progress bar of a long check, on stderr: rich, imported when the bar first appears."""

import sys

from .tables import table_width

__all__ = ["PROGRESS_DELAY", "ProgressBar"]

#: A check shows its progress bar only once it has run this long (seconds).
PROGRESS_DELAY = 1.0


class ProgressBar:
    """``progress(done, total)`` for :func:`~gradcheck_cli.check.check_gradients`: a bar on stderr.

    Drawn only when ``stream`` is a terminal, and only once ``delay``
    seconds have passed since the bar was created, so a quick check (and any
    redirected run) prints nothing. rich is imported when the bar first
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

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            if not self.interactive or self.clock() - self.started < self.delay:
                return
            self._start(done, total)
        self.bar.update(self.task, completed=done, total=total)

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
