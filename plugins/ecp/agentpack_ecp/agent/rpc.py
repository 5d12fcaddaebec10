"""The agent side of the evaluation protocol's JSON-RPC 2.0: dispatch, and one object per line on stdio.

Same semantics as the agent_rpc SDK (docs/agent-rpc.md), which a plugin may not import:
``agent/initialize`` negotiates ``protocol_version`` (same major; the lower minor), ``agent/step``
takes ``{"input": str}``, ``agent/reset`` answers ``true``; notifications get no answer, an unknown
method ``-32601``, a handler's failure ``-32000`` and the agent keeps serving. Standard library only.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, Protocol

PROTOCOL_VERSION = "1.0"
JSONRPC = "2.0"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, AGENT_ERROR = -32700, -32600, -32601, -32602, -32000
VERSION_UNSUPPORTED = -32001

_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


class Handlers(Protocol):
    """What an agent implements; ``rpc`` turns messages into these calls."""

    name: str

    def initialize(self, config: dict[str, Any]) -> dict[str, Any]: ...

    def step(self, text: str) -> dict[str, Any]: ...

    def reset(self) -> None: ...


class RpcError(Exception):
    """A JSON-RPC error with its code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, as sent on the wire."""
    return _ENCODE(value).encode("utf-8")


def error_response(req_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": JSONRPC, "id": req_id, "error": {"code": code, "message": message}}


def dispatcher(agent: Handlers) -> Callable[[Any], dict[str, Any] | None]:
    """A function answering one decoded message for ``agent`` (``None`` for a notification)."""

    def handle(message: Any) -> dict[str, Any] | None:
        if not isinstance(message, dict) or message.get("jsonrpc") != JSONRPC:
            req_id = message.get("id") if isinstance(message, dict) else None
            return error_response(req_id, INVALID_REQUEST, "Invalid Request: expected a JSON-RPC 2.0 object")
        has_id = "id" in message
        req_id = message.get("id")
        method = message.get("method")
        params = message.get("params") if message.get("params") is not None else {}
        if not isinstance(method, str):
            return error_response(req_id, INVALID_REQUEST, "Invalid Request: 'method' must be a string")
        try:
            if not isinstance(params, dict):
                raise RpcError(INVALID_PARAMS, "Invalid params: expected an object")
            if method == "agent/initialize":
                result: Any = _initialize(agent, params)
            elif method == "agent/step":
                text = params.get("input")
                if not isinstance(text, str):
                    raise RpcError(INVALID_PARAMS, "Invalid params: 'input' must be a string")
                result = agent.step(text)
            elif method == "agent/reset":
                agent.reset()
                result = True
            else:
                raise RpcError(METHOD_NOT_FOUND, f"Method not found: {method}")
        except RpcError as exc:
            return error_response(req_id, exc.code, str(exc)) if has_id else None
        except Exception as exc:  # the agent's failure on one message: answer it, keep serving
            return error_response(req_id, AGENT_ERROR, f"{type(exc).__name__}: {exc}") if has_id else None
        return {"jsonrpc": JSONRPC, "id": req_id, "result": result} if has_id else None

    return handle


def _initialize(agent: Handlers, params: dict[str, Any]) -> dict[str, Any]:
    version = PROTOCOL_VERSION
    requested = params.get("protocol_version")
    if requested is not None:
        parts = requested.split(".") if isinstance(requested, str) else []
        if len(parts) != 2 or not all(p.isdigit() for p in parts):
            raise RpcError(INVALID_PARAMS, "protocol_version must be a MAJOR.MINOR string")
        major, minor = int(parts[0]), int(parts[1])
        ours_major, ours_minor = (int(p) for p in PROTOCOL_VERSION.split("."))
        if major != ours_major:
            raise RpcError(
                VERSION_UNSUPPORTED, f"VERSION_UNSUPPORTED: agent speaks {PROTOCOL_VERSION}, runtime asked {requested}"
            )
        version = f"{major}.{min(minor, ours_minor)}"
    config = params.get("config") or {}
    if not isinstance(config, dict):
        raise RpcError(INVALID_PARAMS, "Invalid params: 'config' must be an object")
    return {"name": agent.name, "protocol_version": version, **agent.initialize(config)}


def serve_stdio(handle: Callable[[Any], dict[str, Any] | None], reader: BinaryIO, writer: BinaryIO) -> None:
    """Answer one JSON-RPC object per line until ``reader`` closes; ``print`` goes to stderr meanwhile."""
    saved, sys.stdout = sys.stdout, sys.stderr
    try:
        for line in reader:
            if not line.strip():
                continue
            try:
                message = json.loads(line)
            except ValueError:
                response: dict[str, Any] | None = error_response(None, PARSE_ERROR, "Parse error: invalid JSON")
            else:
                response = handle(message)
            if response is not None:
                writer.write(dumps(response) + b"\n")
                writer.flush()
    finally:
        sys.stdout = saved
