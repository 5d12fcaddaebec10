"""Idempotency keys for tool calls: exactly-once side effects across crashes.

Every tool call is journaled before it runs (``started``) and completed after. A call
found ``started`` when its run resumes (the worker died mid-call) may or may not have
run. It is issued again only to a binding that honours idempotency keys, with the key
it had the first time, so the service performs the side effect once; otherwise the
attempt fails as ``in_doubt`` and the call is never repeated blindly.

A binding honours keys when it (or the object a Python binding wraps) has
``idempotency_keys = True``; during a call, ``current_key()`` is the key to pass on (for
example as an HTTP ``Idempotency-Key`` header). A call's key is derived from its run, operation,
arguments and occurrence, so the same logical call has the same key in every segment.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from agentpack.hashing import sha256_json

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
