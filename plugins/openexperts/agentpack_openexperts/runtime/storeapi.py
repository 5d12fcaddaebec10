"""What a runtime store is: the ``RuntimeStore`` protocol both stores satisfy (``SqliteStore``, the default,
and ``PostgresStore``; mypy checks it where ``open_backend`` returns one), and the bodies they share.

Named apart from the core's ``agentpack.results.runs.RunStore``, which records evaluation runs: this one
holds a deployment's process runs, execution log, tool-call journal, dedupe window, dead letters and outbox.
"""

from __future__ import annotations

from abc import abstractmethod
from contextlib import AbstractContextManager
from typing import Any, Protocol

UPDATABLE = frozenset({"status", "attempt", "error", "result"})
"""The columns of a run that ``update_run`` may change."""


class RuntimeStore(Protocol):
    """The durable state of a runtime; every method is one short transaction (``transaction()`` groups some)."""

    path: Any
    """Where the store is, for messages: the SQLite file, or the PostgreSQL URL without its password."""

    def close(self) -> None: ...

    def transaction(self) -> AbstractContextManager[None]: ...

    # -- runs
    def create_run(
        self,
        run_id: str,
        process: str,
        trigger: str | None,
        session: str,
        lane: str | None,
        inputs: dict[str, Any],
        payload: Any,
        now: float,
        dry_run: bool = False,
    ) -> None: ...

    def update_run(self, run_id: str, now: float, **fields: Any) -> None: ...

    def run(self, run_id: str) -> dict[str, Any] | None: ...

    def runs(self, status: tuple[str, ...] | None = None) -> list[dict[str, Any]]: ...

    # -- execution log and tool-call journal (``idempotency``)
    def start_segment(self, run_id: str, attempt: int, reason: str, now: float) -> int: ...

    def segments(self, run_id: str) -> list[dict[str, Any]]: ...

    def complete_step(self, run_id: str, step: int, summary: str, segment: int, now: float) -> None: ...

    def steps(self, run_id: str) -> list[dict[str, Any]]: ...

    def record_call(
        self,
        run_id: str,
        segment: int,
        operation: str,
        args_hash: str,
        arguments: Any,
        result: Any,
        tier: str,
        status: str,
        now: float,
    ) -> int: ...

    def begin_call(
        self, run_id: str, segment: int, operation: str, args_hash: str, arguments: Any, tier: str, key: str, now: float
    ) -> int: ...

    def finish_call(self, run_id: str, seq: int, status: str, result: Any, now: float) -> None: ...

    def set_call(self, run_id: str, seq: int, status: str, result: Any = None) -> None: ...

    def calls_like(
        self, run_id: str, operation: str, args_hash: str, statuses: frozenset[str], before_segment: int
    ) -> list[dict[str, Any]]: ...

    def calls(self, run_id: str) -> list[dict[str, Any]]: ...

    def event(self, run_id: str, kind: str, data: Any, now: float) -> None: ...

    def events(self, run_id: str) -> list[dict[str, Any]]: ...

    # -- dedupe and cron ticks
    def first_sighting(self, trigger: str, key: str, now: float, window: float) -> bool: ...

    def purge_dedupe(self, now: float, window: float) -> None: ...

    def claim_tick(self, trigger: str, tick: float) -> bool: ...

    # -- dead letters
    def add_dead_letter(self, letter_id: str, run: dict[str, Any], error: str, attempts: int, now: float) -> None: ...

    def dead_letters(self, include_replayed: bool = False) -> list[dict[str, Any]]: ...

    def mark_replayed(self, letter_id: str, run_id: str) -> None: ...

    # -- outbox
    def add_message(
        self, channel: str, kind: str, run_id: str | None, process: str | None, data: Any, now: float
    ) -> int: ...

    def messages(self, run_id: str | None = None, kind: str | None = None) -> list[dict[str, Any]]: ...


class CallJournal:
    """The journal entry points both stores share: each is one ``_insert_call`` of the store."""

    def record_call(
        self,
        run_id: str,
        segment: int,
        operation: str,
        args_hash: str,
        arguments: Any,
        result: Any,
        tier: str,
        status: str,
        now: float,
    ) -> int:
        """A call that did not run the tool (replayed, described, rejected...), journalled once."""
        return self._insert_call(run_id, segment, operation, args_hash, arguments, result, tier, status, now, None)

    def begin_call(
        self, run_id: str, segment: int, operation: str, args_hash: str, arguments: Any, tier: str, key: str, now: float
    ) -> int:
        """A call about to run: journalled ``started`` with its idempotency key (flushed, on PostgreSQL) before
        the tool is called."""
        return self._insert_call(run_id, segment, operation, args_hash, arguments, None, tier, "started", now, key)

    @abstractmethod
    def _insert_call(
        self,
        run_id: str,
        segment: int,
        operation: str,
        args_hash: str,
        arguments: Any,
        result: Any,
        tier: str,
        status: str,
        now: float,
        key: str | None,
    ) -> int:
        """Journal one call with the next ``seq`` of its run and return that ``seq``."""


def check_updatable(fields: dict[str, Any]) -> None:
    """``ValueError`` naming the fields ``update_run`` may not change (column names are never user input)."""
    unknown = set(fields) - UPDATABLE
    if unknown:
        raise ValueError(f"cannot update {', '.join(sorted(unknown))}")


__all__ = ["UPDATABLE", "CallJournal", "RuntimeStore", "check_updatable"]
