"""Approval requests in PostgreSQL: opened by the worker running the call, decided on any node.

The same interface as ``ApprovalDesk``. A run that resumes on another worker (its
first worker died while waiting) adopts the request it had opened, so the approver is
asked once, and a decision given meanwhile is not lost.
"""

from __future__ import annotations

import time
from typing import Any

from agentpack.io.hashing import sha256_json

from ..approvals import ApprovalRequest
from .store import PostgresStore

POLL = 0.1


class PostgresDesk:
    def __init__(self, store: PostgresStore, clock: Any) -> None:
        self.store = store
        self.clock = clock

    def open(self, request: ApprovalRequest) -> None:
        """Record ``request``; its ``id`` becomes the id of the open request for the same call, if any."""
        request.id = self.store.open_approval(
            request.to_json(), sha256_json(request.arguments), self.clock.now().timestamp()
        )

    def decide(self, request_id: str, approved: bool, *, by: str = "", note: str = "") -> bool:
        return self.store.decide_approval(request_id, approved, by, note, self.clock.now().timestamp())

    def wait(self, request_id: str, timeout: float | None) -> tuple[bool | None, str]:
        """Poll for the decision until ``timeout``: ``(approved, by)``, ``(None, "")`` when still pending."""
        end = None if timeout is None else time.monotonic() + timeout
        while True:
            row = self.store.approval(request_id)
            if row is not None and row["status"] != "pending":
                return row["status"] == "approved", row["decided_by"] or ""
            left = None if end is None else end - time.monotonic()
            if left is not None and left <= 0:
                return None, ""
            time.sleep(POLL if left is None else min(POLL, left))

    def close(self, request_id: str) -> None:
        self.store.close_approval(request_id)

    def pending(self) -> list[ApprovalRequest]:
        return [request(row) for row in self.store.approvals()]


def request(row: dict[str, Any]) -> ApprovalRequest:
    """The ``ApprovalRequest`` of an ``openexperts_approvals`` row."""
    return ApprovalRequest(
        id=row["id"],
        run_id=row["run_id"],
        process=row["process"],
        operation=row["operation"],
        arguments=row["arguments"],
        description=row["description"],
        created=row["created"],
    )
