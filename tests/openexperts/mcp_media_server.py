"""A low-level MCP server (official SDK) whose tools come on two pages of ``tools/list`` and whose results are an
image, audio and a resource link, for the MCP binding tests; it answers ``whoami`` with the client's clientInfo.

    python mcp_media_server.py            stdio
    python mcp_media_server.py --http 0   Streamable HTTP on 127.0.0.1 (prints the URL on stderr)
"""

import sys

import mcp_types as types
from mcp.server import Server

PAGES = [["whoami"], ["picture", "sound", "link"]]
SCHEMA = {"type": "object", "properties": {}}


async def list_tools(ctx, params):
    page = int(params.cursor) if params is not None and params.cursor else 0
    tools = [types.Tool(name=name, description=f"{name}.", input_schema=SCHEMA) for name in PAGES[page]]
    return types.ListToolsResult(tools=tools, next_cursor=str(page + 1) if page + 1 < len(PAGES) else None)


async def call_tool(ctx, params):
    if params.name == "whoami":
        info = ctx.session.client_params.client_info if ctx.session.client_params else None
        content = [types.TextContent(type="text", text=info.name if info else "(anonymous)")]
    elif params.name == "picture":
        content = [
            types.TextContent(type="text", text="a red dot"),
            types.ImageContent(type="image", data="iVBORw0KGgo=", mime_type="image/png"),
        ]
    elif params.name == "sound":
        content = [types.AudioContent(type="audio", data="UklGRg==", mime_type="audio/wav")]
    else:
        content = [types.ResourceLink(type="resource_link", uri="file:///tmp/report.pdf", name="report.pdf")]
    return types.CallToolResult(content=content)


server = Server("media", version="1.0", on_list_tools=list_tools, on_call_tool=call_tool)

if __name__ == "__main__":
    if "--http" in sys.argv:
        import socket

        import uvicorn

        sock = socket.socket()
        sock.bind(("127.0.0.1", int(sys.argv[sys.argv.index("--http") + 1])))
        sock.listen(128)  # connections made once the URL is printed wait in the backlog until uvicorn accepts
        print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
        app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
        uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).run(sockets=[sock])
    else:
        import anyio
        from mcp.server.stdio import stdio_server

        async def run():
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())

        anyio.run(run)
