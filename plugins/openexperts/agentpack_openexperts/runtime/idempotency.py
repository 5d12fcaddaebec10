"""The tool-call journal, written ahead, and idempotency keys: a crash never leaves a side effect the
next run cannot account for.

Every tool call is journalled ``started`` before its binding runs and finished after
(``executed``, ``failed``, or ``refused`` for a ``ToolError``). A call found ``started`` when its
run resumes (the process died mid-call) may or may not have happened; ``resolve_in_doubt``
decides, in this order:

1. the binding can tell: ``reconcile(operation, arguments, key)`` on the binding (or the object a
   Python binding wraps) answers ``{"happened": True, "result": ...}`` (the entry becomes
   ``reconciled`` and its result is replayed) or ``{"happened": False}`` (it runs again);
2. the binding honours idempotency keys (``idempotency_keys = True`` on it or on the object it
   wraps): the call is issued again with the key it had the first time, so the service performs
   it once;
3. the operation is ``auto``: the spec defines those as free of external side effects, so it runs again;
4. otherwise the entry becomes ``unknown`` and the run is **held** (``CallHeld``) until a person
   settles it with ``agentpack experts settle`` (``settled``: it happened, with this result;
   ``superseded``: it did not, run it again).

An entry that runs again becomes ``superseded`` and the new entry carries the same key: a call's
key comes from its run, operation, arguments and occurrence, so the same logical call has the same
key in every segment. During a call ``current_key()`` is that key (to pass on, for example, as an
HTTP ``Idempotency-Key`` header).

The journal lives in the runtime store, through four methods of ``storeapi.RuntimeStore`` (``SqliteStore``,
``PostgresStore``): ``begin_call``, ``finish_call``, ``set_call`` and ``calls_like``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from agentpack.io.hashing import sha256_json

from .errors import CallHeld

STARTED, EXECUTED, FAILED, REFUSED = "started", "executed", "failed", "refused"
"""A call that runs: written ``started`` before; ``executed``, ``failed`` or ``refused`` after."""
UNKNOWN = "unknown"
"""A call whose outcome no one could tell on resume: its run is held until a person settles it."""
RECONCILED, SETTLED = "reconciled", "settled"
"""It happened: the binding said so on resume, or a person did (``experts settle``)."""
SUPERSEDED = "superseded"
"""It did not happen, or may run again safely: a later entry with the same key replaces it."""
DONE = frozenset({EXECUTED, RECONCILED, SETTLED, "draft_delivered"})
"""Entries whose recorded result a resumed run replays instead of calling the tool again."""
LOGICAL = DONE | {STARTED, UNKNOWN}
"""Entries that stand for a call the agent made (replays, descriptions and superseded ones do not)."""

_KEY: ContextVar[str | None] = ContextVar("openexperts_idempotency_key", default=None)


def current_key() -> str | None:
    """The idempotency key of the tool call in progress on this thread (None outside a call)."""
    return _KEY.get()


def idempotency_key(run_id: str, operation: str, args_hash: str, occurrence: int) -> str:
    """The key of the ``occurrence``-th (0-based) call of ``operation`` with these arguments in a run: the same
    when a resumed run makes the call again."""
    return "oex-" + sha256_json([run_id, operation, args_hash, occurrence])[:32]


@contextmanager
def calling(key: str) -> Iterator[None]:
    """Make ``key`` the idempotency key of the call in the block."""
    token = _KEY.set(key)
    try:
        yield
    finally:
        _KEY.reset(token)


def honours_keys(binding: Any) -> bool:
    """Whether ``binding`` performs a call once per idempotency key."""
    return bool(
        getattr(binding, "idempotency_keys", False)
        or getattr(getattr(binding, "target", None), "idempotency_keys", False)
    )


def _reconcile(binding: Any, operation: str, arguments: dict[str, Any], key: str | None) -> Any:
    """What the binding (or the object it wraps) says about a call in doubt, or None when it cannot tell."""
    for owner in (binding, getattr(binding, "target", None)):
        fn = getattr(owner, "reconcile", None)
        if callable(fn):
            return fn(operation, arguments, key)
    return None


def resolve_in_doubt(
    store: Any, run_id: str, entry: dict[str, Any], binding: Any, operation: str, arguments: dict[str, Any], tier: str
) -> tuple[bool, Any]:
    """For a journal ``entry`` left ``started`` (or ``unknown``): ``(True, result)`` when the call happened
    (replay the result), ``(False, None)`` when it may run again with its key; ``CallHeld`` when no one can
    tell. ``operation`` is ``tool.op``; the binding is asked about ``op``."""
    seq, key = entry["seq"], entry.get("key")
    verdict = _reconcile(binding, operation.split(".", 1)[1], arguments, key)
    if isinstance(verdict, dict) and verdict.get("happened") is True:
        result = verdict.get("result")
        store.set_call(run_id, seq, RECONCILED, result)
        return True, result
    if (isinstance(verdict, dict) and verdict.get("happened") is False) or honours_keys(binding) or tier == "auto":
        store.set_call(run_id, seq, SUPERSEDED)
        return False, None
    store.set_call(run_id, seq, UNKNOWN)
    raise CallHeld(
        f"{operation} may or may not have happened (the run stopped while it ran, call {seq}, "
        f"idempotency key {key}); check it, then settle it: "
        f"agentpack experts settle PACK {run_id} --happened|--not-happened"
    )


def settle(store: Any, run_id: str, happened: bool, result: Any, now: float) -> list[int]:
    """A person's word on the ``unknown`` calls of a held run; returns their sequence numbers.

    ``happened``: each is ``settled`` with ``result`` (replayed on resume); otherwise each is
    ``superseded`` and runs again. The run becomes resumable again (``running``: no attempt is used).
    ``AgentpackError`` when there is no such run or it is not held.
    """
    from agentpack.io.errors import AgentpackError

    row = store.run(run_id)
    if row is None:
        raise AgentpackError(f"no run '{run_id}'")
    if row["status"] != "held":
        raise AgentpackError(f"run '{run_id}' is {row['status']}, not held: nothing to settle")
    seqs = [c["seq"] for c in store.calls(run_id) if c["status"] == UNKNOWN]
    for seq in seqs:
        store.set_call(run_id, seq, SETTLED if happened else SUPERSEDED, result if happened else None)
    store.event(run_id, "settled", {"calls": seqs, "happened": happened}, now)
    store.update_run(run_id, now, status="running", error=None)
    return seqs


__all__ = [
    "DONE",
    "LOGICAL",
    "CallHeld",
    "calling",
    "current_key",
    "honours_keys",
    "idempotency_key",
    "resolve_in_doubt",
    "settle",
]
