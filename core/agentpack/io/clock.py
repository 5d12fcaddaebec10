"""An injectable clock and id source, so reports can be golden in tests."""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime


class Clock:
    """Wall time (``now``) and a monotonic timer (``monotonic``)."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def monotonic(self) -> float:
        return time.monotonic()

    def iso(self) -> str:
        """``now()`` as RFC 3339 with a ``Z`` suffix and second precision."""
        return self.now().astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


class FixedClock(Clock):
    """A clock that stands still at ``at`` (and advances ``step`` seconds per ``monotonic`` call)."""

    def __init__(self, at: datetime | str = "2026-01-01T00:00:00Z", step: float = 0.0) -> None:
        if isinstance(at, str):
            at = datetime.fromisoformat(at.replace("Z", "+00:00"))
        self.at = at if at.tzinfo else at.replace(tzinfo=UTC)
        self.step = step
        self._ticks = itertools.count()

    def now(self) -> datetime:
        return self.at

    def monotonic(self) -> float:
        return next(self._ticks) * self.step


IdSource = Callable[[], str]


def random_ids() -> IdSource:
    """Random UUID4 hex ids."""
    return lambda: uuid.uuid4().hex


def sequential_ids(prefix: str = "id-") -> IdSource:
    """``prefix0001``, ``prefix0002``, ... for golden tests."""
    counter: Iterator[int] = itertools.count(1)
    return lambda: f"{prefix}{next(counter):04d}"


SYSTEM_CLOCK = Clock()
