"""Delivery to channels (``main`` and registered ones), escalation messages, and redaction of
``private`` knowledge from everything that leaves the agent session."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from ..model import ExpertPackage

REDACTED = "[private knowledge redacted]"
MIN_FRAGMENT = 12


class Redactor:
    """Replaces any line of a ``private`` knowledge file (12+ characters) in logs, reports and messages."""

    def __init__(self, package: ExpertPackage) -> None:
        fragments = set()
        for component in package.of("knowledge"):
            if package.knowledge_type(component) == "private":
                for line in component.body.splitlines():
                    line = line.strip().lstrip("#-*> ").strip()
                    if len(line) >= MIN_FRAGMENT:
                        fragments.add(line)
        self.fragments = sorted(fragments, key=len, reverse=True)

    def __call__(self, value: Any) -> Any:
        if not self.fragments:
            return value
        if isinstance(value, str):
            for fragment in self.fragments:
                if fragment in value:
                    value = value.replace(fragment, REDACTED)
            return value
        if isinstance(value, dict):
            return {k: self(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self(v) for v in value]
        return value


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
