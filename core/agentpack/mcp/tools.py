"""The tools ``agentpack mcp serve`` offers: names every host accepts, former names, calls.

Tool handlers are plain synchronous functions; they run on anyio's worker-thread pool so a slow
tool does not stall the protocol loop. Arguments are validated against the tool's input schema; an
``AgentpackError`` from a handler becomes an ``isError`` result carrying the message, exactly as
the CLI would print it.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError

if TYPE_CHECKING:
    from agentpack.kernel.host import Host
    from agentpack.kernel.registry import McpContext, McpTool

log = logging.getLogger("agentpack.mcp")
INSTRUCTED_SKILLS = 50
"""At most this many skill URIs in the server instructions (they go into a model's context)."""
TOOL_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
"""The tool names every host accepts (Claude, Cursor, Copilot and Codex refuse others)."""


def call_tool(
    tool: McpTool, arguments: dict[str, Any], report: Callable[[float, float | None, str | None], None] | None = None
) -> tuple[dict[str, Any] | None, str | None]:
    """Validate ``arguments`` and run ``tool``: ``(result, None)`` or ``(None, error message)``."""
    from jsonschema import Draft202012Validator

    errors = sorted(Draft202012Validator(tool.input_schema).iter_errors(arguments), key=lambda e: e.path)
    if errors:
        first = errors[0]
        where = "/" + "/".join(map(str, first.absolute_path))
        return None, f"invalid arguments for {tool.name} at {where}: {first.message}"
    try:
        if tool.progress:
            return tool.handler(arguments, report or _no_progress), None
        return tool.handler(arguments), None
    except AgentpackError as exc:
        return None, str(exc)


def _no_progress(done: float, total: float | None = None, message: str | None = None) -> None:
    """The progress reporter of a call whose client did not ask for progress."""


def host_tool_name(name: str) -> str:
    """``name`` as every host accepts it: each other character made ``_``, at most 64 characters."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", name)[:64] or "_"


def served_tools(host: Host, context: McpContext) -> tuple[dict[str, McpTool], dict[str, str]]:
    """The tools by their listed name, and every name ``tools/call`` answers (aliases included) to it."""
    tools: dict[str, McpTool] = {}
    names: dict[str, str] = {}
    for tool in host.mcp_tools(context).values():
        name = tool.name
        if not TOOL_NAME.match(name):
            name = host_tool_name(name)
            log.warning("tool %s is listed as %s: hosts refuse names outside %s", tool.name, name, TOOL_NAME.pattern)
            tool = tool._replace(name=name, aliases=(*tool.aliases, tool.name))
        if name in names:
            log.warning("tool %s is served once (two plugins register it)", name)
            continue
        tools[name] = tool
        for alias in (name, *tool.aliases):
            names.setdefault(alias, name)
    return tools, names


def instructions(host: Host, context: McpContext, tools: dict[str, McpTool], skills: list[str] | None = None) -> str:
    """What this server serves, for the host's model: the packs, their formats, the tools and the skill URIs."""
    lines = ["agentpack serves tools over packaged-agent formats."]
    for path in context.packs:
        detection = host.detect(path)
        lines.append(f"Pack {path}: {detection.format if detection else 'unknown format'}.")
    if not context.packs:
        lines.append("No pack was named at start: tools take the pack to act on as an argument.")
    for tool in sorted(tools.values(), key=lambda t: t.name):
        kind = "read-only" if tool.hints and tool.hints.read_only else "may change files"
        lines.append(f"- {tool.name} ({kind}): {tool.description}")
    if skills:
        lines.append(
            "Agent Skills (MCP Skills extension: skills/list, skills/get; each file readable with resources/read):"
        )
        lines += [f"- {uri}" for uri in skills[:INSTRUCTED_SKILLS]]
        if len(skills) > INSTRUCTED_SKILLS:
            lines.append(f"- and {len(skills) - INSTRUCTED_SKILLS} more: skills/list (or resources/list) has them all")
    return "\n".join(lines)
