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
from typing import TYPE_CHECKING, Any

from . import __version__
from .errors import AgentpackError, require

if TYPE_CHECKING:
    import mcp_types

    from .plugins import Host
    from .registry import McpContext, McpTool

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

    return Server("agentpack", version=__version__, on_list_tools=list_tools, on_call_tool=call)


def _error(types: Any, message: str) -> mcp_types.CallToolResult:
    """An ``isError`` tool result carrying ``message`` (``types`` is the SDK's ``mcp_types`` module)."""
    result: mcp_types.CallToolResult = types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )
    return result


def serve(
    host: Host, context: McpContext, *, transport: str = "stdio", host_name: str = "127.0.0.1", port: int = 8765
) -> None:
    """Run the server until the client disconnects (stdio) or the process is stopped (HTTP)."""
    server = build_server(host, context)
    if not host.mcp_tools(context):
        log.warning("no MCP tools registered; install a plugin or pass --pack")
    if transport == "stdio":
        import anyio
        from mcp.server.stdio import stdio_server

        async def run_stdio() -> None:
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run_stdio)
        return
    import uvicorn

    app = server.streamable_http_app(streamable_http_path="/mcp", host=host_name)
    uvicorn.run(app, host=host_name, port=port, log_level="warning")
