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

MAX_DEPTH = 256
"""Deepest nesting of arrays and objects a request may have (``agentpack.io.jsonio.MAX_DEPTH``)."""

_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode  # one for every call


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


_DECODE = json.JSONDecoder(parse_constant=_no_constant).decode


def loads(data: bytes | str) -> Any:
    """A request's JSON, strictly: ``ValueError`` when it is not JSON, holds NaN or infinity, or nests too deep.

    Nesting is checked before parsing (the parser would hit the recursion
    limit); the check costs two ``str.count`` calls unless the text has more
    brackets than ``MAX_DEPTH``, and only then loads ``agentpack.io.jsonio``.
    """
    text = data.decode("utf-8-sig") if isinstance(data, (bytes, bytearray)) else data
    if text.count("[") + text.count("{") > MAX_DEPTH:
        from agentpack.io.jsonio import check_depth

        check_depth(text, max_depth=MAX_DEPTH)  # JsonError is a ValueError
    return _DECODE(text)


def dumps(value: Any) -> bytes:
    """Compact UTF-8 JSON, as sent on the wire (``ValueError`` for NaN or infinity, ``TypeError`` for non-JSON)."""
    return _ENCODE(value).encode("utf-8")


def dump_response(response: dict[str, Any]) -> bytes:
    """A response as sent: a result that JSON cannot carry (a set, NaN) becomes an error naming the problem."""
    try:
        return dumps(response)
    except (TypeError, ValueError) as exc:
        return dumps(error_response(response.get("id"), AGENT_ERROR, f"the agent's result is not JSON: {exc}"))


def error_response(req_id: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response."""
    return {"jsonrpc": JSONRPC, "id": req_id, "error": {"code": code, "message": message}}
