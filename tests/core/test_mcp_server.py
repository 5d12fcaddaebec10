"""``agentpack mcp serve``: tools from plugins over the official SDK, in-process and over HTTP."""

from pathlib import Path

import anyio

from agentpack import hookimpl
from agentpack.errors import AgentpackError
from agentpack.mcp_server import build_server
from agentpack.registry import McpContext, McpTool


class Tools:
    @hookimpl
    def agentpack_register_mcp_tools(self, register, context):
        def echo(arguments):
            if arguments["text"] == "fail":
                raise AgentpackError("told to fail", file="x.yaml", line=3)
            return {"text": arguments["text"], "packs": [str(p) for p in context.packs]}

        register(
            McpTool(
                name="test.echo",
                description="Echo text.",
                handler=echo,
                input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
                output_schema={"type": "object"},
            )
        )


def call(server, name, arguments):
    from mcp import Client  # imported here: the SDK costs about 0.4 s, which collection should not pay

    async def main():
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
            return tools, await client.call_tool(name, arguments)

    return anyio.run(main)


def test_structured_result_and_schemas(agentpack_host, register_plugin):
    register_plugin(Tools(), name="tools")
    tools, result = call(build_server(agentpack_host, McpContext(packs=[Path("p")])), "test.echo", {"text": "hi"})
    tool = next(t for t in tools if t.name == "test.echo")
    assert tool.input_schema["required"] == ["text"] and tool.output_schema == {"type": "object"}
    assert not result.is_error
    assert result.structured_content == {"text": "hi", "packs": ["p"]}
    assert '"text": "hi"' in result.content[0].text


def test_tool_error_is_an_is_error_result(agentpack_host, register_plugin):
    register_plugin(Tools(), name="tools")
    _, result = call(build_server(agentpack_host, McpContext()), "test.echo", {"text": "fail"})
    assert result.is_error and result.content[0].text == "x.yaml:3: told to fail"


def test_invalid_arguments_and_unknown_tool(agentpack_host, register_plugin):
    register_plugin(Tools(), name="tools")
    server = build_server(agentpack_host, McpContext())
    _, result = call(server, "test.echo", {"text": 5})
    assert result.is_error and "invalid arguments" in result.content[0].text
    _, result = call(server, "nope", {})
    assert result.is_error and "unknown tool 'nope'" in result.content[0].text
