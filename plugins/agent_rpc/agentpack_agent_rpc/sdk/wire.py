"""The SDK's wire constants and encoders: JSON-RPC envelopes and the error codes the protocol uses."""

from __future__ import annotations

import json

TYPE_CHECKING = False  # no ``typing`` import: annotations stay strings, keeping ``import sdk`` cheap
if TYPE_CHECKING:
    from typing import Any

PROTOCOL_VERSION = "1.0"
JSONRPC = "2.0"
PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, AGENT_ERROR = -32700, -32600, -32601, -32602, -32000
VERSION_UNSUPPORTED = -32001

_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode  # one encoder, not one per call


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, as sent on the wire."""
    return _ENCODE(value).encode("utf-8")


def error_response(req_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return {"jsonrpc": JSONRPC, "id": req_id, "error": {"code": code, "message": message}}
