"""Approvals for ``confirm``-tier operations: a desk of pending requests and the brokers that decide.

A broker is told about each new request (``notify``) and decides now or later
through ``desk.decide``. Built-in brokers: ``prompt`` (asks on the terminal),
``http`` (decisions arrive on ``POST /approvals/<id>``), ``approve`` and
``reject`` (decide everything, for CI and demos), and ``CallbackBroker`` for the
Python API.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class ApprovalRequest:
    id: str
    run_id: str
    process: str
    operation: str
    arguments: dict[str, Any]
    description: str
    created: str

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "process": self.process,
            "operation": self.operation,
            "arguments": self.arguments,
            "description": self.description,
            "created": self.created,
        }


@dataclass
class _Pending:
    request: ApprovalRequest
    event: threading.Event = field(default_factory=threading.Event)
    approved: bool | None = None
    by: str = ""
    note: str = ""


class ApprovalDesk:
    """Pending approval requests; thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}

    def open(self, request: ApprovalRequest) -> None:
        with self._lock:
            self._pending[request.id] = _Pending(request)

    def decide(self, request_id: str, approved: bool, *, by: str = "", note: str = "") -> bool:
        """Record a decision; False when no such request is waiting."""
        with self._lock:
            pending = self._pending.get(request_id)
            if pending is None or pending.event.is_set():
                return False
            pending.approved, pending.by, pending.note = approved, by, note
            pending.event.set()
            return True

    def wait(self, request_id: str, timeout: float | None) -> tuple[bool | None, str]:
        """Block until decided or ``timeout``: ``(approved, by)``, ``(None, "")`` on timeout."""
        pending = self._pending[request_id]
        if not pending.event.wait(timeout):
            return None, ""
        return pending.approved, pending.by

    def close(self, request_id: str) -> None:
        with self._lock:
            self._pending.pop(request_id, None)

    def pending(self) -> list[ApprovalRequest]:
        with self._lock:
            return [p.request for p in self._pending.values() if not p.event.is_set()]


class CallbackBroker:
    """Calls ``callback(request)``; a bool decides at once, ``None`` leaves it pending."""

    def __init__(self, callback: Callable[[ApprovalRequest], bool | None]) -> None:
        self.callback = callback

    def notify(self, request: ApprovalRequest, desk: ApprovalDesk) -> None:
        decision = self.callback(request)
        if decision is not None:
            desk.decide(request.id, bool(decision), by="callback")


class StaticBroker:
    """Approves (or rejects) every request: for CI, demos and dry runs."""

    def __init__(self, approve: bool) -> None:
        self.approve = approve

    def notify(self, request: ApprovalRequest, desk: ApprovalDesk) -> None:
        desk.decide(request.id, self.approve, by="approve-all" if self.approve else "reject-all")


class HttpBroker:
    """Leaves requests pending; ``POST /approvals/<id>`` on the runtime's HTTP server (with its token) decides."""

    def __init__(self, announce: Callable[[str], None] | None = None) -> None:
        self.announce = announce or (lambda text: print(text, file=sys.stderr, flush=True))
        self.base_url: str | None = None

    def notify(self, request: ApprovalRequest, desk: ApprovalDesk) -> None:
        where = f"{self.base_url}/approvals/{request.id}" if self.base_url else f"/approvals/{request.id}"
        self.announce(
            f'approval needed: {request.description} -> POST {where} {{"approve": true|false}}'
            " with Authorization: Bearer <the server's token>"
        )


class PromptBroker:
    """Asks on the terminal (stderr prompt, answer on stdin); one question at a time."""

    _lock = threading.Lock()

    def __init__(self, stdin=None, stderr=None) -> None:
        self.stdin = stdin or sys.stdin
        self.stderr = stderr or sys.stderr

    def notify(self, request: ApprovalRequest, desk: ApprovalDesk) -> None:
        with self._lock:
            self.stderr.write(f"approve {request.description}? [y/N] ")
            self.stderr.flush()
            answer = self.stdin.readline()
        desk.decide(request.id, answer.strip().lower() in ("y", "yes"), by="prompt")
