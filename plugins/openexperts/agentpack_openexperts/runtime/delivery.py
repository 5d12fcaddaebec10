"""Delivery to channels (``main`` and registered ones) and escalation messages, redacted on the way out."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from .redaction import Redactor


class MainChannel:
    """The primary session and chat: messages go to the outbox and to every listener."""

    def __init__(self, runtime: Any) -> None:
        self.listeners: list[Callable[[dict[str, Any]], None]] = list(runtime.listeners)

    def send(self, message: dict[str, Any]) -> None:
        for listener in self.listeners:
            listener(message)


class Outbox:
    """Sends messages to channels, persisting each one first (redacted)."""

    def __init__(self, store: Any, clock: Any, redact: Redactor, channels: dict[str, Any]) -> None:
        self.store = store
        self.clock = clock
        self.redact = redact
        self.channels = channels
        self._lock = threading.Lock()

    def send(self, channel: str, kind: str, run_id: str | None, process: str | None, data: dict[str, Any]) -> None:
        message = self.redact(
            {"channel": channel, "kind": kind, "run_id": run_id, "process": process, "at": self.clock.iso(), **data}
        )
        self.store.add_message(channel, kind, run_id, process, message, self.clock.now().timestamp())
        target = self.channels.get(channel)
        if target is not None:
            with self._lock:
                target.send(message)

    def escalate(
        self,
        channel: str,
        run_id: str | None,
        process: str,
        reason: str,
        context: dict[str, Any],
        recommended_action: str,
    ) -> None:
        """An escalation message: which process and why, the context, and the recommended action."""
        self.send(
            channel,
            "escalation",
            run_id,
            process,
            {"process": process, "reason": reason, "context": context, "recommended_action": recommended_action},
        )
