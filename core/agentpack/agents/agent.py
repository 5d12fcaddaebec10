"""An agent: ``initialize``/``step``/``reset`` handlers, JSON-RPC dispatch, and serving over stdio or HTTP."""

from __future__ import annotations

import sys

from .wire import (
    AGENT_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    JSONRPC,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROTOCOL_VERSION,
    VERSION_UNSUPPORTED,
    dump_response,
    error_response,
    loads,
)

TYPE_CHECKING = False  # no ``typing`` import: annotations stay strings, keeping ``import sdk`` cheap
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class Result:
    """What a step returns. ``private_thought`` is the deprecated alias of ``evaluation_context``."""

    __slots__ = (
        "public_output",
        "evaluation_context",
        "status",
        "tool_calls",
        "logs",
        "usage",
        "private_thought",
        "extra",
    )

    def __init__(
        self,
        public_output: str | None = None,
        evaluation_context: str | None = None,
        status: str = "done",
        tool_calls: list[dict[str, Any]] | None = None,
        logs: str | None = None,
        usage: dict[str, int] | None = None,
        private_thought: str | None = None,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.public_output = public_output
        self.evaluation_context = evaluation_context
        self.status = status
        self.tool_calls = tool_calls
        self.logs = logs
        self.usage = usage
        self.private_thought = private_thought
        self.extra = extra or {}

    def __repr__(self) -> str:
        return f"Result(status={self.status!r}, public_output={self.public_output!r})"

    def to_json(self) -> dict[str, Any]:
        if self.status not in ("done", "paused"):
            raise ValueError(f"status must be 'done' or 'paused', not {self.status!r}")
        context = self.evaluation_context if self.evaluation_context is not None else self.private_thought
        out: dict[str, Any] = {
            "status": self.status,
            "public_output": self.public_output,
            "evaluation_context": context,
            "private_thought": context,
            "tool_calls": self.tool_calls,
        }
        if self.logs is not None:
            out["logs"] = self.logs
        if self.usage is not None:
            out["usage"] = self.usage
        out.update(self.extra)
        return out


class RpcError(Exception):
    """Raise from a handler to answer with a specific JSON-RPC error code."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(message)
        self.code = code


class Agent:
    """An agent: a name, declared capabilities, and ``initialize``/``step``/``reset`` handlers."""

    def __init__(self, name: str = "agent", *, capabilities: dict[str, Any] | None = None) -> None:
        self.name = name
        self.capabilities = dict(capabilities or {})
        self._initialize: Callable[[dict[str, Any]], Any] | None = None
        self._step: Callable[[str], Any] | None = None
        self._reset: Callable[[], Any] | None = None

    # -- decorators ------------------------------------------------------------
    def initialize(self, func: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
        """``func(config)``; may return a dict merged into the initialize result."""
        self._initialize = func
        return func

    def step(self, func: Callable[[str], Any]) -> Callable[[str], Any]:
        """``func(input)`` returns a ``Result``, a dict (the raw step result) or a string (the public output)."""
        self._step = func
        return func

    def reset(self, func: Callable[[], Any]) -> Callable[[], Any]:
        """``func()`` clears conversation state between scenarios."""
        self._reset = func
        return func

    # -- dispatch ----------------------------------------------------------------
    def handle(self, message: Any) -> dict[str, Any] | None:
        """Answer one decoded JSON-RPC message; ``None`` for a notification."""
        if not isinstance(message, dict) or message.get("jsonrpc") != JSONRPC:
            return error_response(
                message.get("id") if isinstance(message, dict) else None,
                INVALID_REQUEST,
                "Invalid Request: expected a JSON-RPC 2.0 object",
            )
        has_id = "id" in message
        req_id = message.get("id")
        method = message.get("method")
        params = message.get("params")
        if params is None:
            params = {}
        if not isinstance(method, str):
            return error_response(req_id, INVALID_REQUEST, "Invalid Request: 'method' must be a string")
        if not isinstance(params, dict):
            return error_response(req_id, INVALID_PARAMS, "Invalid params: expected an object") if has_id else None
        try:
            if method == "agent/initialize":
                result: Any = self._do_initialize(params)
            elif method == "agent/step":
                result = self._do_step(params)
            elif method == "agent/reset":
                if self._reset is not None:
                    self._reset()
                result = True
            else:
                if not has_id:
                    return None
                return error_response(req_id, METHOD_NOT_FOUND, f"Method not found: {method}")
        except RpcError as exc:
            return error_response(req_id, exc.code, str(exc)) if has_id else None
        except Exception as exc:  # the agent's own bug: report it, keep serving
            return error_response(req_id, AGENT_ERROR, f"{type(exc).__name__}: {exc}") if has_id else None
        return {"jsonrpc": JSONRPC, "id": req_id, "result": result} if has_id else None

    def _do_initialize(self, params: dict[str, Any]) -> dict[str, Any]:
        version = PROTOCOL_VERSION
        requested = params.get("protocol_version")
        if requested is not None:
            major, minor = _parse_version(requested)
            if major != int(PROTOCOL_VERSION.split(".")[0]):
                raise RpcError(
                    VERSION_UNSUPPORTED,
                    f"VERSION_UNSUPPORTED: agent speaks {PROTOCOL_VERSION}, runtime asked {requested}",
                )
            version = f"{major}.{min(minor, int(PROTOCOL_VERSION.split('.')[1]))}"
        capabilities = dict(self.capabilities)
        if self._reset is not None:
            capabilities.setdefault("reset", {})
        result: dict[str, Any] = {"name": self.name, "protocol_version": version, "capabilities": capabilities}
        if self._initialize is not None:
            config = params.get("config") or {}
            if not isinstance(config, dict):
                raise RpcError(INVALID_PARAMS, "Invalid params: 'config' must be an object")
            extra = self._initialize(config)
            if isinstance(extra, dict):
                result.update(extra)
        return result

    def _do_step(self, params: dict[str, Any]) -> dict[str, Any]:
        if self._step is None:
            raise RpcError(METHOD_NOT_FOUND, "this agent has no step handler")
        text = params.get("input")
        if not isinstance(text, str):
            raise RpcError(INVALID_PARAMS, "Invalid params: 'input' must be a string")
        value = self._step(text)
        if isinstance(value, Result):
            return value.to_json()
        if isinstance(value, dict):
            return value
        return Result(public_output=None if value is None else str(value)).to_json()

    # -- serving -----------------------------------------------------------------
    def serve_stdio(self, stdin: Any = None, stdout: Any = None) -> None:
        """Serve one JSON-RPC object per line until stdin closes.

        While serving, ``print()`` inside handlers goes to stderr so it cannot
        corrupt the protocol stream.
        """
        reader = stdin if stdin is not None else sys.stdin.buffer
        writer = stdout if stdout is not None else sys.stdout.buffer
        saved, sys.stdout = sys.stdout, sys.stderr
        try:
            for line in reader:
                if not line.strip():
                    continue
                try:
                    message = loads(line)
                except ValueError:
                    response: dict[str, Any] | None = error_response(None, PARSE_ERROR, "Parse error: invalid JSON")
                else:
                    response = self.handle(message)
                if response is not None:
                    writer.write(dump_response(response) + b"\n")
                    writer.flush()
        finally:
            sys.stdout = saved

    def serve_http(
        self,
        host: str = "127.0.0.1",
        port: int = 8765,
        path: str = "/ecp",
        *,
        allowed_origins: list[str] | None = None,
        sse: bool = False,
        ready: Callable[[int], None] | None = None,
    ) -> None:
        """Serve Streamable HTTP on ``http://host:port/path`` until interrupted (port 0 picks a free one).

        ``AgentpackError`` when it cannot listen; once listening, stderr says where.
        """
        from .http import make_server  # http.server loads only for HTTP agents

        path = "/" + path.lstrip("/")
        server = make_server(self.handle, host, port, path, allowed_origins=allowed_origins, sse=sse)
        bound = server.server_port
        print(f"agent {self.name}: listening on http://{host}:{bound}{path}", file=sys.stderr, flush=True)
        if ready is not None:
            ready(bound)
        try:
            server.serve_forever(poll_interval=0.2)
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()

    def main(self, argv: list[str] | None = None) -> None:
        """Command line: no arguments serves stdio; ``--http [--host H] [--port N] [--sse]`` serves HTTP."""
        args = list(sys.argv[1:] if argv is None else argv)
        if "--http" not in args:
            self.serve_stdio()
            return
        host, port = "127.0.0.1", 8765
        if "--host" in args:
            host = args[args.index("--host") + 1]
        if "--port" in args:
            port = int(args[args.index("--port") + 1])
        from agentpack.io.errors import AgentpackError

        try:
            self.serve_http(host, port, sse="--sse" in args)
        except AgentpackError as exc:
            print(f"agent {self.name}: {exc}", file=sys.stderr)
            raise SystemExit(2) from None


def _parse_version(value: Any) -> tuple[int, int]:
    parts = value.split(".") if isinstance(value, str) else []
    if len(parts) != 2 or not all(p.isdigit() for p in parts):
        raise RpcError(INVALID_PARAMS, "protocol_version must be a MAJOR.MINOR string")
    return int(parts[0]), int(parts[1])
