"""Each skill as an MCP tool (spec 3.5): name = skill.id without dots, schemas = the skill's own.

``context.packs`` may name skill folders or ``skills/`` trees (default:
./skills when present). Options (``--option k=v``): ``skillctl.tool_names`` =
``underscore`` (default: ``fs.hash_tree`` is listed as ``fs_hash_tree``) or ``mangled``
(``fs-hash_tree``): hosts refuse tool names with dots; the dotted id still answers in
``tools/call`` for one release (``dotted`` and ``both``, the former choices, now mean
``underscore``, with a warning); ``skillctl.workspace`` = the folder skills work in (default: a fresh
empty folder per call, never the server's current folder; a skill that declares
filesystem writes is refused without this option); ``skillctl.require_sandbox`` =
``true`` refuses runs whose sandbox lacks a protection. A failed run is an
``isError`` result carrying the run report.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError
from agentpack.kernel.registry import McpTool, ToolHints

from .invoke import flag, invoke
from .manifest import is_skill_dir, tree_skill_dirs
from .prepare import prepare

if TYPE_CHECKING:
    from agentpack.kernel.registry import McpContext

log = logging.getLogger("agentpack_skillctl")


def mangle(skill_id: str) -> str:
    """A tool name without dots: ids never contain '-', so this is reversible."""
    return skill_id.replace(".", "-")


def underscore(skill_id: str) -> str:
    """The tool name of a skill id: its dots made ``_`` (``fs.hash_tree`` -> ``fs_hash_tree``)."""
    return skill_id.replace(".", "_")


def _skill_dirs(context: McpContext) -> list[Path]:
    packs = list(context.packs) or ([Path("skills")] if Path("skills").is_dir() else [])
    dirs: list[Path] = []
    for pack in packs:
        pack = Path(pack)
        if is_skill_dir(pack):
            dirs.append(pack)
        elif pack.is_dir():
            dirs += tree_skill_dirs(pack)
    return dirs


def register_tools(register: Callable[[McpTool], None], context: McpContext) -> None:
    names = str(context.options.get("skillctl.tool_names", "underscore"))
    if names in ("dotted", "both"):
        log.warning("skillctl.tool_names=%s is deprecated: hosts refuse dotted names; using underscore", names)
        names = "underscore"
    if names not in ("underscore", "mangled"):
        raise AgentpackError(f"skillctl.tool_names must be underscore or mangled, not '{names}'")
    rename = underscore if names == "underscore" else mangle
    option = context.options.get("skillctl.workspace")
    workspace = Path(option) if option else None
    require = flag(context.options.get("skillctl.require_sandbox", False))
    seen: set[str] = set()
    for directory in _skill_dirs(context):
        try:
            prepared = prepare(directory)
        except AgentpackError as exc:
            log.warning("skill %s is not served: %s", directory, exc)
            continue
        skill = prepared.skill
        if skill.id in seen:
            log.warning("skill id %s is served once; %s is skipped", skill.id, directory)
            continue
        name = rename(skill.id)
        if name in seen:
            log.warning("tool name %s is served once; skill %s (%s) is skipped", name, skill.id, directory)
            continue
        seen.update((skill.id, name))
        schema = prepared.output_schema
        # an MCP output schema describes an object: any other output is wrapped as {"result": ...}
        output_schema = schema if isinstance(schema, dict) and schema.get("type") == "object" else None
        handler = _handler(directory, workspace, output_schema is not None, require)
        writes = bool(prepared.grants.write_globs)
        hints = ToolHints(read_only=not writes, destructive=writes, idempotent=True, open_world=prepared.grants.network)
        register(
            McpTool(
                name=name,
                title=skill.name,
                description=skill.description,
                input_schema=prepared.input_schema,
                output_schema=output_schema,
                handler=handler,
                hints=hints,
                aliases=(skill.id,),
            )
        )


def _handler(
    directory: Path, workspace: Path | None, object_output: bool, require: bool
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def handle(arguments: dict[str, Any]) -> dict[str, Any]:
        result = invoke(directory, arguments or {}, workspace=workspace, require_sandbox=require)
        if not result.ok:
            first = result.errors[0] if result.errors else None
            report = f"\nrun report: {json.dumps(result.report, sort_keys=True)}" if result.report else ""
            no_workspace = result.status == "no_workspace"
            raise AgentpackError(
                f"{result.status}: {first.message if first else result.status}{report}",
                file=first.file if first else None,
                line=first.line if first else None,
                hint="start the server with --option skillctl.workspace=DIR" if no_workspace else None,
            )
        return result.output if object_output else {"result": result.output}

    return handle
