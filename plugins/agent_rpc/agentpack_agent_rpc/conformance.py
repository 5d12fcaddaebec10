"""``agentpack rpc conformance``: check an agent against the protocol, including negative cases.

Required checks decide conformance; recommended ones are reported but do not
fail it. Over HTTP the endpoint's status rules are checked too.
"""

from __future__ import annotations

import json
import time
from typing import Any

from .containment import Containment
from .manifest.model import Target
from .protocol import AgentRpcError, AgentUnreachable, CallError
from .session import Session, with_stderr


class _Checks:
    def __init__(self) -> None:
        self.items: list[dict[str, Any]] = []

    def add(self, name: str, passed: bool, message: str, *, method: str | None = None, required: bool = True) -> bool:
        self.items.append({"name": name, "method": method, "passed": passed, "required": required, "message": message})
        return passed


def _raw(session: Session, payload: dict[str, Any], deadline: float) -> Any:
    request_id = next(session._ids)
    payload = {**payload, "id": request_id}
    return session.transport.call(json.dumps(payload).encode(), request_id, deadline)


def run_conformance(target: Target, *, step_input: str = "hello", timeout: float = 10.0) -> dict[str, Any]:
    """The checks' results: ``target``, ``transport``, ``conformant``, ``reachable``, counts and ``checks``.

    ``agentpack rpc conformance --json`` prints them in the versioned envelope.
    """
    checks = _Checks()
    dl = lambda: time.monotonic() + timeout  # noqa: E731
    scope = Containment()
    try:
        session = Session.open(target, {}, timeout, scope=scope)  # unreachable exactly as for a run
    except AgentUnreachable as exc:
        scope.close()
        checks.add("agent starts and answers agent/initialize", False, str(exc), method="agent/initialize")
        return _report(target, checks, reachable=False)
    except CallError as exc:
        scope.close()
        checks.add("initialize result", False, with_stderr(str(exc), exc.stderr), method="agent/initialize")
        return _report(target, checks, reachable=True)
    transport = session.transport
    info = session.info
    try:
        checks.add(
            "initialize result",
            True,
            f"name {info['name']!r}, protocol {info['protocol_version']}"
            + (" (legacy: no protocol_version)" if info["legacy"] else ""),
            method="agent/initialize",
        )
        checks.add(
            "protocol_version sent",
            not info["legacy"],
            "agent names its protocol version"
            if not info["legacy"]
            else "agent sent no protocol_version (accepted as legacy)",
            method="agent/initialize",
            required=False,
        )
        _call_check(
            checks,
            "step result",
            "agent/step",
            lambda: session.step(step_input, dl()),
            lambda r: f"status {r.status!r}, {len(r.tool_calls)} tool call(s)",
        )
        if _call_check(checks, "reset result", "agent/reset", lambda: session.reset(dl()), lambda r: "returned true"):
            declared = "reset" in info["capabilities"]
            checks.add(
                "reset capability declared",
                declared,
                "declared" if declared else "agent/reset returns true but 'reset' is not declared; it may be a no-op",
                method="agent/reset",
                required=False,
            )
        _negative(checks, session, dl)
        _call_check(
            checks,
            "still answers after bad requests",
            "agent/step",
            lambda: session.step(step_input, dl()),
            lambda r: "step succeeded",
        )
        if transport.kind == "http":
            _http_rules(checks, transport, dl)
    finally:
        session.close()
        scope.close()
    return _report(target, checks, reachable=True)


def _call_check(checks: _Checks, name: str, method: str, call, describe) -> bool:
    try:
        result = call()
    except CallError as exc:
        return checks.add(name, False, str(exc), method=method)
    return checks.add(name, True, describe(result), method=method)


def _negative(checks: _Checks, session: Session, dl) -> None:
    try:
        session.call("agent/no_such_method", {}, dl())
        checks.add(
            "unknown method is an error",
            False,
            "agent answered an unknown method with a result",
            method="agent/no_such_method",
        )
    except AgentRpcError as exc:
        checks.add("unknown method is an error", True, f"error {exc.code}", method="agent/no_such_method")
        checks.add(
            "unknown method code -32601",
            exc.code == -32601,
            f"error code {exc.code}",
            method="agent/no_such_method",
            required=False,
        )
    except CallError as exc:
        checks.add("unknown method is an error", False, str(exc), method="agent/no_such_method")
    try:
        answer = _raw(session, {"jsonrpc": "2.0", "params": {}}, dl())
        ok = isinstance(answer, dict) and isinstance(answer.get("error"), dict)
        checks.add("request without method is an error", ok, f"answered {json.dumps(answer)[:160]}")
    except CallError as exc:
        checks.add("request without method is an error", False, str(exc))
    transport = session.transport
    if transport.kind == "stdio":
        try:
            transport.send(b"{this is not json\n", dl())
            answer = transport.receive(dl())
            ok = isinstance(answer, dict) and isinstance(answer.get("error"), dict) and answer.get("id") is None
            checks.add("malformed JSON gets a parse error", ok, f"answered {json.dumps(answer)[:160]}")
        except CallError as exc:
            checks.add("malformed JSON gets a parse error", False, str(exc))
    else:
        try:
            response = transport.post(b"{this is not json", dl())
            response.close()
            checks.add("malformed JSON gets HTTP 400", response.status_code == 400, f"HTTP {response.status_code}")
        except CallError as exc:
            checks.add("malformed JSON gets HTTP 400", False, str(exc))


def _http_rules(checks: _Checks, transport: Any, dl) -> None:
    try:
        status, ctype = transport.get_status(dl())
        ok = status == 405 or (status == 200 and "text/event-stream" in ctype)
        checks.add("GET is 405 or an SSE stream", ok, f"HTTP {status} {ctype}".strip(), method="GET")
        code = transport.notify(json.dumps({"jsonrpc": "2.0", "method": "agent/reset"}).encode(), dl())
        checks.add("notification gets 202 Accepted", code == 202, f"HTTP {code}", method="agent/reset")
        code = transport.notify(json.dumps({"jsonrpc": "2.0", "method": "notifications/unknown"}).encode(), dl())
        checks.add(
            "unknown notification gets 202 (never an answer)",
            code == 202,
            f"HTTP {code}",
            method="notifications/unknown",
            required=False,
        )
        body = json.dumps({"jsonrpc": "2.0", "id": 999_999, "method": "agent/reset", "params": {}}).encode()
        response = transport.post(body, dl(), extra_headers={"Accept": "text/plain"})
        response.close()
        checks.add(
            "unacceptable Accept gets 406", response.status_code == 406, f"HTTP {response.status_code}", required=False
        )
        response = transport.post(body, dl(), extra_headers={"Origin": "http://evil.example"})
        response.close()
        checks.add(
            "foreign Origin gets 403", response.status_code == 403, f"HTTP {response.status_code}", required=False
        )
    except CallError as exc:
        checks.add("HTTP status rules", False, str(exc))


def _report(target: Target, checks: _Checks, *, reachable: bool) -> dict[str, Any]:
    items = checks.items
    required = [c for c in items if c["required"]]
    conformant = reachable and bool(required) and all(c["passed"] for c in required)
    return {
        "target": target.describe(),
        "transport": target.kind,
        "conformant": conformant,
        "reachable": reachable,
        "passed": sum(1 for c in items if c["passed"]),
        "failed": sum(1 for c in items if not c["passed"]),
        "total": len(items),
        "checks": items,
    }
