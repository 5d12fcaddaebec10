"""One conversation channel with one agent: ``initialize`` once, then ``step`` and ``reset`` calls.

Request ids are integers counting up from 1 per session; every result is
validated before it is returned (``protocol``).
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

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

if TYPE_CHECKING:
    from .containment import Containment

_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode  # one for every call
STDERR_LINES = 5
"""How many of the agent's last stderr lines an ``AgentUnreachable`` message quotes."""


def with_stderr(message: str, stderr: str) -> str:
    """``message`` with the agent's last stderr line, then its last lines (clipped) below, when it wrote any.

    The first line alone says why (``ModuleNotFoundError: ...``); the lines
    below give the context (the traceback's end).
    """
    lines = [_clip(line.rstrip()) for line in stderr.splitlines() if line.strip()][-STDERR_LINES:]
    if not lines:
        return message
    context = "".join(f"\n    {line}" for line in lines) if len(lines) > 1 else ""
    return f"{message}; its stderr ends with: {lines[-1].strip()}{context}"


def _clip(line: str, limit: int = 300) -> str:
    return line if len(line) <= limit else line[:limit] + " [...]"


def _encode(request_id: int, method: str, params: dict[str, Any]) -> bytes:
    return _ENCODE({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}).encode("utf-8")


class WireTrace:
    """The JSON-RPC traffic of every session of this process, one JSON line per message, written as it goes
    (a run that hangs leaves its last messages): ``{"t": seconds since the trace began, "session": n,
    "dir": "send" | "recv" | "error", "message" | "error": ...}``."""

    def __init__(self, write: Callable[[str], None]) -> None:
        self._write = write
        self._lock = threading.Lock()
        self._start = time.monotonic()
        self._sessions = itertools.count(1)

    def session(self) -> int:
        return next(self._sessions)

    def record(self, session: int, direction: str, key: str, value: Any) -> None:
        line = json.dumps(
            {"t": round(time.monotonic() - self._start, 6), "session": session, "dir": direction, key: value},
            ensure_ascii=False,
            default=repr,
        )
        with self._lock:
            self._write(line)


TRACE: WireTrace | None = None
"""Set by ``tracing``: every session's calls go to it."""


@contextmanager
def tracing(write: Callable[[str], None] | None) -> Iterator[None]:
    """Record the wire traffic of the sessions opened in the block through ``write`` (one line per call)."""
    global TRACE
    previous, TRACE = TRACE, (WireTrace(write) if write is not None else None)
    try:
        yield
    finally:
        TRACE = previous


class Session:
    def __init__(self, transport: Any) -> None:
        self.transport = transport
        self._trace = TRACE
        self._trace_id = self._trace.session() if self._trace is not None else 0
        self._ids = itertools.count(1)
        self.info: dict[str, Any] = {}
        self.used = False
        """True once a step ran since the last reset (the next scenario must reset first)."""

    @classmethod
    def open(
        cls,
        target: Any,
        config: dict[str, Any] | None,
        timeout: float,
        transport: Any = None,
        scope: Containment | None = None,
    ) -> Session:
        """Connect (spawn within ``scope``, unless ``transport`` is one already started for ``target``), initialize.

        No answer to ``agent/initialize`` (a crash, a hang, a closed stream) is
        ``AgentUnreachable``, whose message ends with the last lines the agent
        wrote on stderr (the ``ModuleNotFoundError``, the ``can't open file``).
        Closes the transport again if initialization fails.
        """
        session = cls(transport if transport is not None else target.open(scope))
        try:
            session.initialize(config or {}, time.monotonic() + timeout)
        except BaseException as exc:
            session.close()
            stderr = session.transport.stderr.take()
            if isinstance(exc, (TransportError, AgentTimeout)) and not isinstance(exc, AgentUnreachable):
                unreachable = AgentUnreachable(with_stderr(f"no answer to agent/initialize: {exc}", stderr))
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
        data = _encode(request_id, method, params)
        trace = self._trace
        if trace is None:
            return unwrap(self.transport.call(data, request_id, deadline), method, request_id)
        trace.record(self._trace_id, "send", "message", json.loads(data))
        try:
            response = self.transport.call(data, request_id, deadline)
        except Exception as exc:
            trace.record(self._trace_id, "error", "error", f"{type(exc).__name__}: {exc}")
            raise
        trace.record(self._trace_id, "recv", "message", response)
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
