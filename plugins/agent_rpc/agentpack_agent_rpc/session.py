"""One conversation channel with one agent: ``initialize`` once, then ``step`` and ``reset`` calls.

Request ids are integers counting up from 1 per session; every result is
validated before it is returned (``protocol``).
"""

from __future__ import annotations

import itertools
import json
import time
from typing import Any

from .protocol import (
    PROTOCOL_VERSION,
    AgentTimeout,
    AgentUnreachable,
    CallError,
    ProtocolError,
    StepResult,
    TransportError,
    check_initialize_result,
    negotiate,
    parse_step_result,
    unwrap,
)

_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # one encoder, not one per call


def _encode(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    return _ENCODE({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode("utf-8")


class Session:
    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self._ids = itertools.count(1)
        self.info: dict[str, Any] = {}
        self.used = False
        """True once a step ran since the last reset (the next scenario must reset first)."""

    @classmethod
    def open(cls, target: Any, config: dict[str, Any] | None, timeout: float, transport: Any = None) -> Session:
        """Connect (spawn, unless ``transport`` is one already started for ``target``) and initialize.

        Closes the transport again if initialization fails.
        """
        session = cls(transport if transport is not None else target.open())
        try:
            session.initialize(config or {}, time.monotonic() + timeout)
        except BaseException as exc:
            session.close()
            stderr = session.transport.stderr.take()
            if isinstance(exc, (TransportError, AgentTimeout)) and not isinstance(exc, AgentUnreachable):
                unreachable = AgentUnreachable(f"no answer to agent/initialize: {exc}")
                unreachable.stderr = stderr
                raise unreachable from None
            if isinstance(exc, CallError):
                exc.stderr = stderr
            raise
        return session

    @property
    def broken(self) -> bool:
        return self.transport.broken

    def call(self, method: str, params: dict[str, Any], deadline: float) -> Any:
        request_id = next(self._ids)
        response = self.transport.call(_encode(request_id, method, params), request_id, deadline)
        return unwrap(response, method, request_id)

    def initialize(self, config: dict[str, Any], deadline: float) -> dict[str, Any]:
        result = check_initialize_result(
            self.call("agent/initialize", {"protocol_version": PROTOCOL_VERSION, "config": config}, deadline)
        )
        version, legacy = negotiate(result.get("protocol_version"))
        self.info = {
            "name": result["name"],
            "protocol_version": version,
            "legacy": legacy,
            "capabilities": result.get("capabilities") or {},
        }
        return self.info

    def step(self, text: str, deadline: float) -> StepResult:
        self.used = True
        return parse_step_result(self.call("agent/step", {"input": text}, deadline))

    def reset(self, deadline: float) -> None:
        result = self.call("agent/reset", {}, deadline)
        if result is not True:
            raise ProtocolError(f"agent/reset result must be true, got {json.dumps(result)[:100]}")
        self.used = False

    def kill(self) -> None:
        self.transport.kill()

    def close(self) -> None:
        self.transport.close()
