"""The wire contract: JSON-RPC envelopes, method results, protocol versions, and the errors a call can end in.

The checks here are hand-written (not jsonschema) because they run on every
step; ``tests/agent_rpc`` proves they agree with the bundled
``agent-result`` and ``tool-call`` schemas.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from agentpack.io.errors import AgentpackError
from agentpack.kernel.records import Record, constant

PROTOCOL_VERSION = "1.0"
LEGACY_VERSION = "0.1"
STATUSES = ("done", "paused")
TEXT_FIELDS = ("public_output", "evaluation_context", "private_thought", "logs")
USAGE_FIELDS = ("input_tokens", "output_tokens", "total_tokens")


class CallError(AgentpackError):
    """A call that did not produce a valid result. ``exit_reason`` is stable and goes in reports.

    ``stderr``: what the agent wrote on stderr meanwhile, when the caller collected it.
    """

    exit_reason = "error"
    stderr = ""


class AgentTimeout(CallError):
    """The agent did not answer before the deadline."""

    exit_reason = "timeout"


class TransportError(CallError):
    """The agent crashed, closed its output, or the HTTP request failed."""

    exit_reason = "transport_error"


class AgentUnreachable(TransportError):
    """The agent could not be started or connected to at all (exit status 2)."""

    exit_reason = "agent_unreachable"


class ProtocolError(CallError):
    """The agent answered, but the answer breaks the contract."""

    exit_reason = "protocol_error"


class AgentRpcError(CallError):
    """The agent answered with a well-formed JSON-RPC error."""

    exit_reason = "agent_error"

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class StepResult(Record):
    """A validated ``agent/step`` result, with the deprecated alias mirrored both ways."""

    __slots__ = (
        "status",
        "public_output",
        "evaluation_context",
        "private_thought",
        "tool_calls",
        "logs",
        "usage",
        "raw",
    )
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "public_output": constant(None),
        "evaluation_context": constant(None),
        "private_thought": constant(None),
        "tool_calls": list,
        "logs": constant(None),
        "usage": constant(None),
        "raw": dict,
    }
    status: str
    public_output: str | None
    evaluation_context: str | None
    private_thought: str | None
    tool_calls: list[dict[str, Any]]
    logs: str | None
    usage: dict[str, int] | None
    raw: dict[str, Any]


def _type_name(value: Any) -> str:
    return {
        dict: "object",
        list: "array",
        str: "string",
        bool: "boolean",
        int: "integer",
        float: "number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def check_tool_call(call: Any, where: str) -> None:
    if not isinstance(call, dict):
        raise ProtocolError(f"{where} must be an object, got {_type_name(call)}")
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise ProtocolError(f"{where}.name must be a non-empty string, got {name!r}")
    if "arguments" in call and call["arguments"] is not None and not isinstance(call["arguments"], dict):
        raise ProtocolError(f"{where}.arguments must be an object, got {_type_name(call['arguments'])}")


def parse_step_result(result: Any) -> StepResult:
    """Validate an ``agent/step`` result; a ``ProtocolError`` names the field, the rule and what was sent."""
    if not isinstance(result, dict):
        raise ProtocolError(f"agent/step result must be an object, got {_type_name(result)}")
    status = result.get("status")
    if status not in STATUSES:
        raise ProtocolError(f"agent/step result.status must be 'done' or 'paused', got {status!r}")
    for name in TEXT_FIELDS:
        value = result.get(name)
        if value is not None and not isinstance(value, str):
            raise ProtocolError(f"agent/step result.{name} must be a string or null, got {_type_name(value)}")
    calls = result.get("tool_calls")
    if calls is None:
        calls = []
    elif not isinstance(calls, list):
        raise ProtocolError(f"agent/step result.tool_calls must be an array or null, got {_type_name(calls)}")
    for index, call in enumerate(calls):
        check_tool_call(call, f"agent/step result.tool_calls[{index}]")
    usage = result.get("usage")
    if usage is not None:
        if not isinstance(usage, dict):
            raise ProtocolError(f"agent/step result.usage must be an object or null, got {_type_name(usage)}")
        usage = dict(usage)
        for name in USAGE_FIELDS:
            value = usage.get(name)
            if isinstance(value, float) and value.is_integer():  # JSON has one number type: 3.0 is the integer 3
                usage[name] = value = int(value)
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
                raise ProtocolError(f"agent/step result.usage.{name} must be a non-negative integer, got {value!r}")
    context = result.get("evaluation_context")
    thought = result.get("private_thought")
    return StepResult(
        status=status,
        public_output=result.get("public_output"),
        evaluation_context=context if context is not None else thought,
        private_thought=thought if thought is not None else context,
        tool_calls=calls,
        logs=result.get("logs"),
        usage=usage,
        raw=result,
    )


def check_initialize_result(result: Any) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise ProtocolError(f"agent/initialize result must be an object, got {_type_name(result)}")
    name = result.get("name")
    if not isinstance(name, str) or not name:
        raise ProtocolError(f"agent/initialize result.name must be a non-empty string, got {name!r}")
    caps = result.get("capabilities", {})
    if caps is None:
        caps = {}
    if not isinstance(caps, dict):
        raise ProtocolError(f"agent/initialize result.capabilities must be an object, got {_type_name(caps)}")
    for key, value in caps.items():
        if not isinstance(value, (dict, bool)):
            raise ProtocolError(
                f"agent/initialize result.capabilities.{key} must be an object, got {_type_name(value)}"
            )
    return result


def negotiate(agent_version: Any) -> tuple[str, bool]:
    """The session's protocol version and whether the agent is legacy (sent no version)."""
    if agent_version is None:
        return LEGACY_VERSION, True
    parts = agent_version.split(".") if isinstance(agent_version, str) else []
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise ProtocolError(f"agent/initialize result.protocol_version must be 'MAJOR.MINOR', got {agent_version!r}")
    major, minor = (int(p) for p in PROTOCOL_VERSION.split("."))
    if int(parts[0]) != major:
        raise ProtocolError(
            f"agent speaks protocol {agent_version}, this runtime speaks {PROTOCOL_VERSION} (major versions differ)"
        )
    return f"{major}.{min(minor, int(parts[1]))}", False


def unwrap(response: Any, method: str, expected_id: int) -> Any:
    """Check a JSON-RPC response envelope and return its result (or raise ``AgentRpcError``)."""
    if not isinstance(response, dict):
        raise ProtocolError(f"{method}: response must be a JSON object, got {_type_name(response)}")
    if response.get("jsonrpc") != "2.0":
        raise ProtocolError(f'{method}: response must have "jsonrpc": "2.0", got {response.get("jsonrpc")!r}')
    if "error" in response:
        if "result" in response:
            raise ProtocolError(f"{method}: response has both 'result' and 'error'")
        error = response["error"]
        if (
            not isinstance(error, dict)
            or not isinstance(error.get("code"), int)
            or not isinstance(error.get("message"), str)
        ):
            raise ProtocolError(
                f"{method}: 'error' must be an object with integer code and string message, got {error!r}"
            )
        raise AgentRpcError(f"{method}: agent returned error {error['code']}: {error['message']}", error["code"])
    if "result" not in response:
        raise ProtocolError(f"{method}: response has neither 'result' nor 'error'")
    if response.get("id") != expected_id or isinstance(response.get("id"), bool):
        raise ProtocolError(f"{method}: response id mismatch: expected {expected_id}, got {response.get('id')!r}")
    return response["result"]
