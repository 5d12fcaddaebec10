"""Output helpers: results to stdout, progress and messages to stderr.

rich progress bars appear when stderr is a terminal (not ``TERM=dumb``) and the
command is not in ``--json``/``--quiet`` mode; ``NO_COLOR`` removes their colour,
not the bars. Off a terminal (a CI log), a long task prints a heartbeat line
every ``AGENTPACK_HEARTBEAT_S`` seconds (default 5; 0 turns it off) instead.

Long work moves through phases (``bar.phase("writing docs-keyword: 812 chunks")``):
each phase starts its own count, and a phase of unknown length shows a moving
bar, so a bar never sits at 100 % while work goes on. A progress opened inside
another (a refresh building a pack) is a second line of the same display.

``style`` colours a word (PASS, FAIL...) for stdout inside ``styling(stream)``,
only when that stream is a terminal and ``NO_COLOR`` is unset; files never get
colour. ``logger(name)`` is ``logging.getLogger`` imported on first use, for the
``-v``/``-vv`` log lines of commands (start-up paths import no logging).

Text from agents, packs and manifests is printed as text, never as terminal commands: ``printable``
escapes every control character but newline and tab (an OSC title or clipboard sequence shows as
``\\u001b]52;...``, the JSON escape, so JSON output stays valid and means the same), and
``guarded_output`` routes stdout and stderr through it for a whole command, so no call site has to
remember. Colour (SGR ``ESC [ ... m``, what ``style`` writes) passes; progress bars write to the
unguarded stream (rich strips control characters from their text itself).
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:
    import logging

QUIET = False
"""Set by ``--quiet``/``--json`` in the CLI: no progress and no notes."""


VERBOSE = 0
"""``-v`` counted (before and after the command's name): 1 logs INFO lines on stderr, 2 DEBUG lines too."""

HEARTBEAT_S = 5.0
_LIVE: list[Any] = []
"""The rich display (``[Progress]``) or the heartbeats open now, outermost first."""
_STYLED = False


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

    def phase(self, description: str, total: float | None = None) -> None:
        """Start the next phase of the work: its own description and count (``total=None``: unknown)."""


NO_PROGRESS = _NullProgress()
"""A progress that shows nothing: the default of a function that takes an optional ``bar``."""


class _Heartbeat(_NullProgress):
    """Progress for a log: ``description: done/total (N s)`` on stderr every ``interval`` seconds (without a
    total, the count alone; before any, just the description).

    Only the outermost heartbeat has a thread; it reports the innermost one open."""

    def __init__(self, description: str, total: float | None, interval: float) -> None:
        import threading
        import time

        self._clock = time.monotonic
        self._start = self._clock()
        self.description, self.total, self.done = description, total, 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if not _LIVE:
            self._thread = threading.Thread(
                target=self._beat, args=(interval,), name="agentpack-heartbeat", daemon=True
            )
            self._thread.start()

    def _beat(self, interval: float) -> None:
        while not self._stop.wait(interval):
            shown = _LIVE[-1] if _LIVE and isinstance(_LIVE[-1], _Heartbeat) else self
            count = f"{shown.done:g}/{shown.total:g}" if shown.total else (f"{shown.done:g}" if shown.done else "")
            elapsed = f"({self._clock() - self._start:.0f} s)"
            print(
                f"{shown.description}: {count} {elapsed}" if count else f"{shown.description} {elapsed}",
                file=sys.stderr,
                flush=True,
            )

    def advance(self, amount: float = 1) -> None:
        self.done += amount

    def update(self, *, total: float | None = None, description: str | None = None) -> None:
        self.total = total if total is not None else self.total
        self.description = description or self.description

    def phase(self, description: str, total: float | None = None) -> None:
        self.description, self.total, self.done = description, total, 0.0

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
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

    def phase(self, description: str, total: float | None = None) -> None:
        self._progress.remove_task(self._task)  # a fresh task: its own count, and a moving bar without a total
        self._task = self._progress.add_task(description, total=total)

    def close(self) -> None:
        self._progress.remove_task(self._task)


@contextmanager
def progress(description: str, total: float | None = None) -> Iterator[_NullProgress | _RichProgress]:
    """A progress bar on stderr; off a terminal, heartbeat lines; with ``--quiet``, nothing."""
    # inside another bar: a line of the same display (asked first: rich before 15 swaps sys.stderr for a
    # proxy that is no terminal while a bar is live)
    if _LIVE and not isinstance(_LIVE[0], _Heartbeat):
        outer = _LIVE[0]
        inner = _RichProgress(outer, outer.add_task(description, total=total))
        try:
            yield inner
        finally:
            inner.close()
        return
    if not progress_enabled():
        interval = heartbeat_interval()
        if not interval:
            yield _NullProgress()
            return
        beat = _Heartbeat(description, total, interval)
        _LIVE.append(beat)
        try:
            yield beat
        finally:
            _LIVE.remove(beat)
            beat.close()
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(file=unguarded(sys.stderr)),
        transient=True,
    ) as bar:
        _LIVE.append(bar)
        try:
            yield _RichProgress(bar, bar.add_task(description, total=total))
        finally:
            _LIVE.remove(bar)


_CONTROL = re.compile(r"\x1b\[[0-9;]*m|[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    text = match.group()
    return text if len(text) > 1 else f"\\u{ord(text):04x}"  # an SGR colour sequence passes


def printable(text: str) -> str:
    """``text`` with every control character but newline and tab escaped as ``\\u001b``, ``\\u0007``, ``\\u009b``
    (the JSON escape, so JSON output stays valid and means the same); SGR colour sequences (``ESC [ 1;31 m``)
    pass."""
    return _CONTROL.sub(_escape, text) if _CONTROL.search(text) else text


class _Guarded:
    """A text stream that writes ``printable(text)`` to the stream it wraps; all else is the wrapped stream's."""

    def __init__(self, stream: IO[str]) -> None:
        self.raw_stream = stream

    def write(self, text: str) -> int:
        self.raw_stream.write(printable(text))
        return len(text)

    def writelines(self, lines: Iterator[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.raw_stream, name)


def unguarded(stream: IO[str]) -> IO[str]:
    """The stream under ``guarded_output``'s guard (for progress bars that draw with cursor controls)."""
    raw: IO[str] = getattr(stream, "raw_stream", stream)
    return raw


@contextmanager
def guarded_output() -> Iterator[None]:
    """Inside the block, text written to ``sys.stdout`` and ``sys.stderr`` goes through ``printable`` (bytes
    written to their ``buffer`` do not: binary output is the user's)."""
    before = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Guarded(before[0]), _Guarded(before[1])
    try:
        yield
    finally:
        sys.stdout, sys.stderr = before


def note(message: str) -> None:
    """A message for the person at the terminal (stderr), suppressed by ``--quiet``."""
    if not QUIET:
        print(message, file=sys.stderr, flush=True)


def colour_enabled(stream: IO[str]) -> bool:
    """Whether text for ``stream`` may be coloured: a terminal, ``NO_COLOR`` unset, not ``TERM=dumb``."""
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty()) and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"


@contextmanager
def styling(stream: IO[str]) -> Iterator[None]:
    """Inside the block, ``style`` colours text when ``stream`` takes colour (see ``colour_enabled``)."""
    global _STYLED
    before, _STYLED = _STYLED, colour_enabled(stream)
    try:
        yield
    finally:
        _STYLED = before


STATUS_COLOURS = {"passed": "green", "failed": "red", "error": "magenta", "skipped": "bright_black"}


def style(text: str, status: str) -> str:
    """``text`` coloured for ``status`` (passed, failed, error, skipped) inside ``styling``; as it is otherwise."""
    colour = STATUS_COLOURS.get(status)
    if not (_STYLED and colour):
        return text
    import click

    return click.style(text, fg=colour, bold=True if status in ("failed", "error") else None)


def verbosity(count: int, *, add: bool = False) -> None:
    """Set (or, with ``add``, raise) ``VERBOSE`` and show log lines on stderr from that level."""
    global VERBOSE
    VERBOSE = VERBOSE + count if add else count
    if not VERBOSE:
        return
    import logging

    logging.basicConfig(stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger().setLevel(logging.WARNING - 10 * min(VERBOSE, 2))


def info(name: str, message: str, *args: Any) -> None:
    """A ``-v`` line of logger ``name``; without ``-v`` it costs one comparison (no logging import)."""
    if VERBOSE:
        logger(name).info(message, *args)


def debug(name: str, message: str, *args: Any) -> None:
    """A ``-vv`` line of logger ``name``; without ``-vv`` it costs one comparison (no logging import)."""
    if VERBOSE > 1:
        logger(name).debug(message, *args)


def logger(name: str) -> logging.Logger:
    """``logging.getLogger(name)``; ``-v`` shows its INFO lines and ``-vv`` its DEBUG lines on stderr."""
    import logging

    return logging.getLogger(name)
