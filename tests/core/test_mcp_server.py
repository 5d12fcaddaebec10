"""``agentpack mcp serve``: tools from plugins over the official SDK, in-process and over HTTP."""

from pathlib import Path

import anyio
import pytest

from agentpack import hookimpl
from agentpack.io.errors import AgentpackError
from agentpack.kernel.registry import READ_ONLY, McpContext, McpTool, ToolHints
from agentpack.mcp.server import build_server
from agentpack.testing import ClaimingPlugin


class Tools(ClaimingPlugin):
    """Owns every pack it is shown (format claims-all) and serves one tool for it."""

    @hookimpl
    def agentpack_register_mcp_tools(self, register, context):
        def echo(arguments):
            if arguments["text"] == "fail":
                raise AgentpackError("told to fail", file="x.yaml", line=3)
            return {"text": arguments["text"], "packs": [str(p) for p in context.packs]}

        register(
            McpTool(
                name="test_echo",
                aliases=("test.echo",),
                description="Echo text.",
                handler=echo,
                input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                output_schema={"type": "object"},
                hints=READ_ONLY,
            )
        )


class Other:
    """Owns no format: its tools are served only when no pack is named."""

    @hookimpl
    def agentpack_register_mcp_tools(self, register, context):
        schema = {"type": "object", "properties": {}}
        hints = ToolHints(read_only=False, destructive=True, idempotent=False, open_world=True)
        register(McpTool(name="other.wipe", description="Wipe.", input_schema=schema, handler=dict, hints=hints))


def call(server, name, arguments):
    from mcp import Client  # imported here: the SDK costs about 0.4 s, which collection should not pay

    async def main():
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            return tools, await client.call_tool(name, arguments)

    return anyio.run(main)


def test_structured_result_and_schemas(agentpack_host, register_plugin):
    register_plugin(Tools(), name="tools")
    tools, result = call(build_server(agentpack_host, McpContext(packs=[Path("p")])), "test_echo", {"text": "hi"})
    tool = next(t for t in tools if t.name == "test_echo")
    assert tool.input_schema["required"] == ["text"] and tool.output_schema == {"type": "object"}
    assert not result.is_error
    assert result.structured_content == {"text": "hi", "packs": ["p"]}
    assert '"text": "hi"' in result.content[0].text


def test_tool_error_is_an_is_error_result(agentpack_host, register_plugin):
    register_plugin(Tools(), name="tools")
    _, result = call(build_server(agentpack_host, McpContext()), "test_echo", {"text": "fail"})
    assert result.is_error and result.content[0].text == "x.yaml:3: told to fail"


def test_invalid_arguments_a_former_name_and_an_unknown_tool(agentpack_host, register_plugin):
    from mcp.shared.exceptions import MCPError

    register_plugin(Tools(), name="tools")
    server = build_server(agentpack_host, McpContext())
    tools, result = call(server, "test_echo", {"text": 5})
    assert result.is_error and "invalid arguments" in result.content[0].text
    _, result = call(server, "test.echo", {"text": "old"})  # the former name answers, unlisted
    assert not result.is_error and result.structured_content["text"] == "old"
    assert "test.echo" not in {t.name for t in tools}
    from mcp import Client

    async def unknown():
        async with Client(server) as client:
            with pytest.raises(MCPError) as info:  # a protocol error, not a tool result
                await client.call_tool("nope", {})
            return info.value.error

    error = anyio.run(unknown)
    assert error.code == -32602 and "Unknown tool: nope" in error.message


def test_tools_carry_annotations_and_the_server_says_what_it_serves(agentpack_host, register_plugin):
    register_plugin(Tools(), name="tools")
    register_plugin(Other(), name="other")
    server = build_server(agentpack_host, McpContext())
    tools, _ = call(server, "test_echo", {"text": "hi"})
    by_name = {t.name: t for t in tools}
    # a plugin's name hosts refuse is listed as they accept it; the registered one still answers
    echo, wipe = by_name["test_echo"].annotations, by_name["other_wipe"].annotations
    assert (echo.read_only_hint, echo.destructive_hint, echo.open_world_hint) == (True, False, False)
    assert (wipe.read_only_hint, wipe.destructive_hint, wipe.idempotent_hint, wipe.open_world_hint) == (
        False,
        True,
        False,
        True,
    )
    assert "other_wipe (may change files)" in server.instructions and "test_echo (read-only)" in server.instructions
    _, result = call(server, "other.wipe", {})
    assert not result.is_error


def test_only_the_owners_of_the_served_packs_offer_tools(agentpack_host, register_plugin, tmp_path):
    register_plugin(Tools(), name="tools")
    register_plugin(Other(), name="other")
    assert set(agentpack_host.mcp_tools(McpContext(packs=[tmp_path]))) == {"test_echo"}
    assert {"test_echo", "other.wipe"} <= set(agentpack_host.mcp_tools(McpContext()))


def test_streamable_http_requires_the_bearer_token_and_refuses_a_port_in_use(tmp_path):
    """A real server process: it prints where it listens, 401 without the token, MCP works with it."""
    import os
    import socket
    import subprocess
    import sys

    import httpx

    token_file = tmp_path / "token"
    token_file.write_text("s3cret\n")
    argv = [sys.executable, "-m", "agentpack", "mcp", "serve", "--transport", "streamable-http", "--port", "0"]
    proc = subprocess.Popen(
        [*argv, "--token-file", str(token_file)], stderr=subprocess.PIPE, text=True, env={**os.environ}
    )
    try:
        line = proc.stderr.readline()
        assert line.startswith("agentpack mcp: serving on http://127.0.0.1:"), line
        url = line.split("serving on ", 1)[1].strip()
        port = int(url.rsplit(":", 1)[1].split("/")[0])
        body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        assert httpx.post(url, json=body, headers=headers, timeout=10).status_code == 401
        wrong = httpx.post(url, json=body, headers={**headers, "authorization": "Bearer nope"}, timeout=10)
        assert wrong.status_code == 401

        async def session():
            from mcp import Client
            from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client

            http = create_mcp_http_client(headers={"authorization": "Bearer s3cret"})
            async with http, Client(streamable_http_client(url, http_client=http)) as client:
                return [t.name for t in (await client.list_tools()).tools]

        assert isinstance(anyio.run(session), list)
        deep = b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": ' + b"[" * 5000 + b"]" * 5000 + b"}"
        bearer = {**headers, "authorization": "Bearer s3cret"}
        refused = httpx.post(url, content=deep, headers=bearer, timeout=10)  # a parse error, not a crash
        assert refused.status_code == 400 and refused.json()["error"]["code"] == -32700
        assert isinstance(anyio.run(session), list)  # still serving
        busy = subprocess.run([*argv[:-1], str(port)], capture_output=True, text=True, timeout=60, env={**os.environ})
        assert busy.returncode == 2 and f"port {port} on 127.0.0.1 is already in use" in busy.stderr
        assert "Traceback" not in busy.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        proc.stderr.close()
    with socket.socket() as probe:  # nothing was left listening
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_over_stdio_an_unreadable_request_gets_a_json_rpc_error_and_the_server_goes_on():
    import json
    import subprocess
    import sys

    def line(message: dict) -> str:
        return json.dumps(message) + "\n"

    init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    deep = '{"jsonrpc": "2.0", "id": 2, "method": "ping", "params": ' + "[" * 5000 + "]" * 5000 + "}\n"
    requests = (
        line({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        + line({"jsonrpc": "2.0", "method": "notifications/initialized"})
        + deep
        + "not json\n"
        + line({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        + line({"hello": 1})
    )
    done = subprocess.run(
        [sys.executable, "-m", "agentpack", "mcp", "serve"], input=requests, capture_output=True, text=True, timeout=60
    )
    replies = [json.loads(reply) for reply in done.stdout.splitlines()]
    assert [reply["id"] for reply in replies] == [1, None, None, 3, None], done.stdout
    codes = [reply["error"]["code"] for reply in replies if reply["id"] is None]
    assert codes == [-32700, -32700, -32600]  # parse errors (too deep, not JSON), then an invalid request
    assert "recursion limit" in replies[1]["error"]["message"]
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
