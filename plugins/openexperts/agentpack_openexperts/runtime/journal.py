"""The tool-call journal: every tool call is written down *before* it runs, so a crash never leaves a side
effect the next run cannot account for.

A call that runs goes ``started`` -> ``executed`` (or ``failed``: the tool raised). A process killed
between the two leaves ``started``: its outcome is unknown. When the run resumes and the agent makes
the same call again (same operation, same arguments, same occurrence), ``resolve_unknown`` decides, in
this order:

1. the binding can tell (``reconcile(operation, arguments, idempotency_key)`` returns
   ``{"happened": True, "result": ...}`` or ``{"happened": False}``): the recorded outcome is used
   (``reconciled``), or the call runs again with the same key (the old entry becomes ``superseded``);
2. the binding honours idempotency keys for the operation (a Python operation with an
   ``idempotency_key`` parameter promises that a repeat with the same key has no second effect): the
   call runs again with the same key;
3. the operation is ``auto``: the spec defines those as free of external side effects, so it runs again;
4. otherwise the call is ``unknown`` and the run is **held** (``CallHeld``) until a human settles it
   with ``agentpack experts settle`` (``settled``: it happened, with this result; or ``superseded``: it
   did not, run it again).

Each logical call has an idempotency key derived from the run, the operation, the hash of its arguments
and its occurrence, so the resumed run passes the tool the same key as the killed one did.

The journal is backed by any store with the four ``*_call``/``calls_like`` methods of ``RunStore``
(``begin_call``, ``finish_call``, ``set_call``, ``calls_like``); another store (a Postgres one, say)
implements those and keeps these semantics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agentpack.hashing import sha256_json

from .errors import ProcessFailure

STARTED, EXECUTED, FAILED = "started", "executed", "failed"
"""A call that runs: written ``started`` before, ``executed`` or ``failed`` after."""
UNKNOWN = "unknown"
"""A call whose outcome no one could tell on resume: its run is held until a human settles it."""
RECONCILED, SETTLED = "reconciled", "settled"
"""It happened: the binding said so on resume, or a human did (``experts settle``)."""
SUPERSEDED = "superseded"
"""It did not happen (or may run again safely): a later entry with the same key replaces it."""
DONE = frozenset({EXECUTED, RECONCILED, SETTLED, "draft_delivered"})
"""Entries whose recorded result a resumed run replays instead of calling the tool again."""
OPEN = frozenset({STARTED, UNKNOWN})
"""Entries whose outcome is not known."""
LOGICAL = DONE | OPEN
"""Entries that stand for a call the agent made (replays, descriptions and superseded ones do not)."""


class CallHeld(ProcessFailure):
    """A call's outcome is unknown and cannot be reconciled: the run waits for a human (status ``held``)."""

    reason = "held"


class CallStore(Protocol):
    """What the journal needs from a run store (``RunStore`` implements it on SQLite)."""

    def begin_call(
        self,
        run_id: str,
        segment: int,
        operation: str,
        args_hash: str,
        arguments: Any,
        tier: str,
        key: str,
        now: float,
    ) -> int: ...

    def finish_call(self, run_id: str, seq: int, status: str, result: Any, now: float) -> None: ...

    def set_call(self, run_id: str, seq: int, status: str, result: Any = None) -> None: ...

    def calls_like(
        self, run_id: str, operation: str, args_hash: str, statuses: frozenset[str], before_segment: int
    ) -> list[dict[str, Any]]: ...


@dataclass(frozen=True)
class Entry:
    seq: int
    operation: str
    status: str
    result: Any
    key: str | None


def idempotency_key(run_id: str, operation: str, args_hash: str, occurrence: int) -> str:
    """The key of the ``occurrence``-th (0-based) call of ``operation`` with these arguments in a run."""
    return "oex-" + sha256_json([run_id, operation, args_hash, occurrence])[:32]


class Journal:
    """The journal of one run."""

    def __init__(self, store: CallStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id

    def begin(
        self, segment: int, operation: str, args_hash: str, arguments: Any, tier: str, key: str, now: float
    ) -> int:
        """Write the call down before it runs (``started``); returns its sequence number."""
        return self.store.begin_call(self.run_id, segment, operation, args_hash, arguments, tier, key, now)

    def finish(self, seq: int, status: str, result: Any, now: float) -> None:
        """Record how a started call ended (``executed`` or ``failed``) and its result."""
        self.store.finish_call(self.run_id, seq, status, result, now)

    def earlier(self, operation: str, args_hash: str, occurrence: int, segment: int) -> Entry | None:
        """The ``occurrence``-th logical call like this one in earlier segments, if there was one."""
        rows = self.store.calls_like(self.run_id, operation, args_hash, LOGICAL, segment)
        if occurrence >= len(rows):
            return None
        row = rows[occurrence]
        return Entry(row["seq"], row["operation"], row["status"], row["result"], row.get("key"))

    def resolve_unknown(
        self, entry: Entry, binding: Any, operation: str, arguments: dict[str, Any], tier: str
    ) -> tuple[bool, Any]:
        """For an entry left ``started`` (or ``unknown``): ``(True, result)`` when it happened (replay it),
        ``(False, None)`` when the call may run again; ``CallHeld`` when no one can tell."""
        op = operation.split(".", 1)[1]
        reconcile = getattr(binding, "reconcile", None)
        verdict = reconcile(op, arguments, entry.key) if callable(reconcile) else None
        if isinstance(verdict, dict) and verdict.get("happened") is True:
            result = verdict.get("result")
            self.store.set_call(self.run_id, entry.seq, RECONCILED, result)
            return True, result
        if (isinstance(verdict, dict) and verdict.get("happened") is False) or _honours_keys(binding, op):
            self.store.set_call(self.run_id, entry.seq, SUPERSEDED)
            return False, None
        if tier == "auto":
            self.store.set_call(self.run_id, entry.seq, SUPERSEDED)
            return False, None
        self.store.set_call(self.run_id, entry.seq, UNKNOWN)
        raise CallHeld(
            f"{operation} may or may not have happened (the run stopped while it ran, call {entry.seq}, "
            f"idempotency key {entry.key}); check it, then settle it: "
            f"agentpack experts settle PACK {self.run_id} --happened|--not-happened"
        )


def settle(store: Any, run_id: str, happened: bool, result: Any = None) -> list[int]:
    """A human's word on the ``unknown`` calls of a held run; returns their sequence numbers.

    ``happened``: each is ``settled`` with ``result`` (replayed on resume); otherwise each is
    ``superseded`` and runs again.
    """
    seqs = [c["seq"] for c in store.calls(run_id) if c["status"] == UNKNOWN]
    for seq in seqs:
        store.set_call(run_id, seq, SETTLED if happened else SUPERSEDED, result if happened else None)
    return seqs


def _honours_keys(binding: Any, operation: str) -> bool:
    honours = getattr(binding, "honours_idempotency_keys", None)
    return bool(callable(honours) and honours(operation))


__all__ = [
    "DONE",
    "LOGICAL",
    "OPEN",
    "CallHeld",
    "CallStore",
    "Entry",
    "Journal",
    "idempotency_key",
    "settle",
]
