"""Output helpers: results to stdout, progress and messages to stderr.

rich progress bars appear only when stderr is a terminal, ``NO_COLOR`` is
unset, and the command is not in ``--json``/``--quiet`` mode.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

QUIET = False
"""Set by ``--quiet``/``--json`` in the CLI: no progress and no notes."""


def progress_enabled() -> bool:
    return not QUIET and sys.stderr.isatty() and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


class _NullProgress:
    def advance(self, amount: float = 1) -> None:
        pass

    def update(self, *, total: float | None = None, description: str | None = None) -> None:
        pass


class _RichProgress:
    def __init__(self, progress, task) -> None:
        self._progress = progress
        self._task = task

    def advance(self, amount: float = 1) -> None:
        self._progress.advance(self._task, amount)

    def update(self, *, total: float | None = None, description: str | None = None) -> None:
        kwargs = {k: v for k, v in (("total", total), ("description", description)) if v is not None}
        self._progress.update(self._task, **kwargs)


@contextmanager
def progress(description: str, total: float | None = None) -> Iterator[_NullProgress | _RichProgress]:
    """A progress bar on stderr (a no-op object when progress is disabled)."""
    if not progress_enabled():
        yield _NullProgress()
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
