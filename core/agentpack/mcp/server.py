"""``agentpack mcp serve``: every tool plugins register, over stdio or Streamable HTTP.

Built on the official ``mcp`` SDK (extra ``mcp``). Tool handlers are plain
synchronous functions; they run on anyio's worker-thread pool so a slow tool
does not stall the protocol loop. Arguments are validated against the tool's
input schema; an ``AgentpackError`` from a handler becomes an ``isError``
result carrying the message, exactly as the CLI would print it.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError, require
from agentpack.kernel.version import __version__

if TYPE_CHECKING:
    import mcp_types

    from agentpack.kernel.host import Host
    from agentpack.kernel.registry import McpContext, McpTool

log = logging.getLogger("agentpack.mcp")


def call_tool(tool: McpTool, arguments: dict[str, Any]) -> tuple[dict[str, Any] | None, str | None]:
    """Validate ``arguments`` and run ``tool``: ``(result, None)`` or ``(None, error message)``."""
    from jsonschema import Draft202012Validator

    errors = sorted(Draft202012Validator(tool.input_schema).iter_errors(arguments), key=lambda e: e.path)
    if errors:
        first = errors[0]
        where = "/" + "/".join(map(str, first.absolute_path))
        return None, f"invalid arguments for {tool.name} at {where}: {first.message}"
    try:
        return tool.handler(arguments), None
    except AgentpackError as exc:
        return None, str(exc)


def build_server(host: Host, context: McpContext) -> Any:
    """An ``mcp.server.Server`` offering ``host``'s registered tools for ``context``."""
    require("mcp", distribution="agentpack-core", extra="mcp", feature="serving MCP")
    import anyio
    import mcp_types as types
    from mcp.server import Server

    tools = host.mcp_tools(context)

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=t.name,
                    title=t.title,
                    description=t.description,
                    input_schema=t.input_schema,
                    output_schema=t.output_schema,
                    annotations=_annotations(types, t),
                )
                for t in tools.values()
            ]
        )

    async def call(ctx: Any, params: Any) -> types.CallToolResult:
        tool = tools.get(params.name)
        if tool is None:
            return _error(types, f"unknown tool '{params.name}'; available: {', '.join(sorted(tools))}")
        result, error = await anyio.to_thread.run_sync(call_tool, tool, params.arguments or {})
        if error is not None:
            return _error(types, error)
        text = json.dumps(result, ensure_ascii=False, default=str)
        done: types.CallToolResult = types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=result
        )
        return done

    return Server(
        "agentpack",
        version=__version__,
        instructions=instructions(host, context, tools),
        on_list_tools=list_tools,
        on_call_tool=call,
    )


def instructions(host: Host, context: McpContext, tools: dict[str, McpTool]) -> str:
    """What this server serves, for the host's model: the packs, their formats and the tools."""
    lines = ["agentpack serves tools over packaged-agent formats."]
    for path in context.packs:
        detection = host.detect(path)
        lines.append(f"Pack {path}: {detection.format if detection else 'unknown format'}.")
    if not context.packs:
        lines.append("No pack was named at start: tools take the pack to act on as an argument.")
    for tool in sorted(tools.values(), key=lambda t: t.name):
        kind = "read-only" if tool.hints and tool.hints.read_only else "may change files"
        lines.append(f"- {tool.name} ({kind}): {tool.description}")
    return "\n".join(lines)


def _annotations(types: Any, tool: McpTool) -> Any:
    hints = tool.hints
    if hints is None:
        return None
    return types.ToolAnnotations(
        title=tool.title,
        read_only_hint=hints.read_only,
        destructive_hint=hints.destructive,
        idempotent_hint=hints.idempotent,
        open_world_hint=hints.open_world,
    )


def _error(types: Any, message: str) -> mcp_types.CallToolResult:
    """An ``isError`` tool result carrying ``message`` (``types`` is the SDK's ``mcp_types`` module)."""
    result: mcp_types.CallToolResult = types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )
    return result


def _answer_unreadable_lines(read: Any, write: Any) -> tuple[Any, Any]:
    """The stdio input with each line the SDK could not read answered, as JSON-RPC says, by an error with a null id.

    The SDK hands such a line to the server as an exception, which it only
    logs: a client would wait for a reply that never comes. Returns the stream
    of readable messages and the task that fills it (run beside the server).
    """
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp.types import ErrorData, JSONRPCError

    send, receive = anyio.create_memory_object_stream[Any](0)

    def error(exc: Exception) -> SessionMessage:
        problems: list[dict[str, Any]] = getattr(exc, "errors", list)()  # pydantic's ValidationError
        unparsed = [p.get("msg", "") for p in problems if p.get("type") == "json_invalid"]
        if unparsed:
            code, message = -32700, f"Parse error: {unparsed[0]}"
        else:
            code, message = -32600, "Invalid Request: not a JSON-RPC 2.0 request, notification or response"
        return SessionMessage(JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=message)))

    async def forward() -> None:
        async with send:
            async for item in read:
                if isinstance(item, Exception):
                    log.warning("unreadable request line: %s", item)
                    await write.send(error(item))
                else:
                    await send.send(item)

    return receive, forward


def serve(
    host: Host,
    context: McpContext,
    *,
    transport: str = "stdio",
    host_name: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    workers: int = 1,
) -> int:
    """Run the server until the client disconnects (stdio) or the process is stopped (HTTP); the exit code.

    Over HTTP, ``workers`` above 1 serves from that many forked processes (``agentpack.mcp.workers``).
    """
    server = build_server(host, context)
    if not host.mcp_tools(context):
        log.warning("no MCP tools registered; install a plugin or pass --pack")
    if transport == "stdio":
        import anyio
        from mcp.server.stdio import stdio_server

        async def run_stdio() -> None:
            async with stdio_server() as (read, write):
                checked, forward = _answer_unreadable_lines(read, write)
                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(forward)
                    await server.run(checked, write, server.create_initialization_options())
                    tasks.cancel_scope.cancel()

        anyio.run(run_stdio)
        return 0
    import uvicorn
    from mcp.server.transport_security import TransportSecuritySettings

    from agentpack.io.hostcheck import HostCheck, HostGuard
    from agentpack.io.netutil import bind_socket, is_loopback_host

    if not token and not is_loopback_host(host_name):
        raise AgentpackError(
            f"refusing to serve MCP on {host_name}, a non-loopback address, without a token",
            hint="set AGENTPACK_MCP_TOKEN or pass --token-file, or serve on 127.0.0.1",
        )
    sock = bind_socket(host_name, port)
    bound_host, bound_port = sock.getsockname()[:2]
    unchecked = TransportSecuritySettings(enable_dns_rebinding_protection=False)  # HostCheck does it, for any bind
    app: Any = server.streamable_http_app(
        streamable_http_path="/mcp", transport_security=unchecked, stateless_http=workers > 1
    )
    if token:
        app = BearerAuth(app, token)
    app = HostCheck(app, HostGuard.of(host_name, bound_port))
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    print(f"agentpack mcp: serving on http://{shown}:{bound_port}/mcp", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    if workers > 1:
        from agentpack.mcp.workers import run_workers

        return run_workers(lambda: uvicorn.Server(config).run(sockets=[sock]), workers)
    uvicorn.Server(config).run(sockets=[sock])
    return 0


class BearerAuth:
    """ASGI middleware: every HTTP request must carry ``Authorization: Bearer TOKEN`` (compared in constant time)."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        import hmac

        if scope["type"] == "http":
            given = dict(scope.get("headers") or ()).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send(
                    {
                        "type": "http.response.start",
                        "status": 401,
                        "headers": [(b"content-type", b"text/plain"), (b"www-authenticate", b"Bearer")],
                    }
                )
                await send({"type": "http.response.body", "body": b"missing or wrong bearer token\n"})
                return
        await self.app(scope, receive, send)
