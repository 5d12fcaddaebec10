"""Output helpers: results to stdout, progress and messages to stderr.

rich progress bars appear when stderr is a terminal (not ``TERM=dumb``) and the
command is not in ``--json``/``--quiet`` mode; ``NO_COLOR`` removes their colour,
not the bars. Off a terminal (a CI log), a long task prints a heartbeat line
every ``AGENTPACK_HEARTBEAT_S`` seconds (default 5; 0 turns it off) instead.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

QUIET = False
"""Set by ``--quiet``/``--json`` in the CLI: no progress and no notes."""


HEARTBEAT_S = 5.0


def progress_enabled() -> bool:
    return not QUIET and sys.stderr.isatty() and os.environ.get("TERM") != "dumb"


def heartbeat_interval() -> float:
    """Seconds between heartbeat lines when progress bars are off (0: none, e.g. ``--quiet``)."""
    if QUIET:
        return 0.0
    try:
        return max(float(os.environ.get("AGENTPACK_HEARTBEAT_S", HEARTBEAT_S)), 0.0)
    except ValueError:
        return HEARTBEAT_S


class _NullProgress:
    def advance(self, amount: float = 1) -> None:
        pass

    def update(self, *, total: float | None = None, description: str | None = None) -> None:
        pass


class _Heartbeat(_NullProgress):
    """Progress for a log: ``description: done/total (N s)`` on stderr every ``interval`` seconds."""

    def __init__(self, description: str, total: float | None, interval: float) -> None:
        import threading
        import time

        self._clock = time.monotonic
        self._start = self._clock()
        self.description, self.total, self.done = description, total, 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, args=(interval,), name="agentpack-heartbeat", daemon=True)
        self._thread.start()

    def _beat(self, interval: float) -> None:
        while not self._stop.wait(interval):
            count = f"{self.done:g}/{self.total:g}" if self.total else f"{self.done:g}"
            print(f"{self.description}: {count} ({self._clock() - self._start:.0f} s)", file=sys.stderr, flush=True)

    def advance(self, amount: float = 1) -> None:
        self.done += amount

    def update(self, *, total: float | None = None, description: str | None = None) -> None:
        self.total = total if total is not None else self.total
        self.description = description or self.description

    def close(self) -> None:
        self._stop.set()
        self._thread.join()


class _RichProgress:
    def __init__(self, progress: Any, task: Any) -> None:  # rich.progress.Progress and its TaskID
        self._progress = progress
        self._task = task

    def advance(self, amount: float = 1) -> None:
        self._progress.advance(self._task, amount)

    def update(self, *, total: float | None = None, description: str | None = None) -> None:
        kwargs = {k: v for k, v in (("total", total), ("description", description)) if v is not None}
        self._progress.update(self._task, **kwargs)


@contextmanager
def progress(description: str, total: float | None = None) -> Iterator[_NullProgress | _RichProgress]:
    """A progress bar on stderr; off a terminal, heartbeat lines; with ``--quiet``, nothing."""
    if not progress_enabled():
        interval = heartbeat_interval()
        if not interval:
            yield _NullProgress()
            return
        beat = _Heartbeat(description, total, interval)
        try:
            yield beat
        finally:
            beat.close()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        yield _RichProgress(bar, bar.add_task(description, total=total))


def note(message: str) -> None:
    """A message for the person at the terminal (stderr), suppressed by ``--quiet``."""
    if not QUIET:
        print(message, file=sys.stderr, flush=True)
