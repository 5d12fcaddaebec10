"""Every MCP tool a built-in plugin serves is one a host can trust (issue: MCP tools a host can trust).

Served for each example pack, every tool says what it does (hints, sent as MCP tool annotations),
describes every input property, and only the plugins owning the pack's format offer tools.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentpack.kernel.host import Host
from agentpack.kernel.plugins import create_plugin_manager
from agentpack.kernel.registry import McpContext

ROOT = Path(__file__).parents[2]
EXAMPLES = {
    "ecp": ROOT / "examples" / "ecp" / "conformance-pack",
    "openexperts": ROOT / "examples" / "openexperts" / "acme-support",
    "skillctl": ROOT / "examples" / "skills",
}


def _properties(schema: dict) -> list[tuple[str, dict]]:
    found = []
    for name, prop in (schema.get("properties") or {}).items():
        found.append((name, prop))
        if isinstance(prop, dict) and prop.get("type") == "object":
            found += [(f"{name}.{inner}", value) for inner, value in _properties(prop)]
    return found


@pytest.mark.parametrize("plugin", sorted(EXAMPLES))
def test_tools_carry_hints_and_describe_every_input(plugin):
    host = Host(create_plugin_manager())
    tools = host.mcp_tools(McpContext(packs=[EXAMPLES[plugin]]))
    assert tools, f"no tools served for {EXAMPLES[plugin]}"
    assert {tool.plugin for tool in tools.values()} == {plugin}
    for tool in tools.values():
        assert tool.hints is not None, f"{tool.name} says nothing of what it does (hints)"
        assert tool.description, tool.name
        if plugin == "skillctl":
            continue  # a skill tool's input schema is the skill's own (skill library spec 3.5): its author's words
        bare = [
            name for name, prop in _properties(tool.input_schema) if "." not in name and not prop.get("description")
        ]
        assert bare == [], f"{tool.name}: undescribed inputs {bare}"
