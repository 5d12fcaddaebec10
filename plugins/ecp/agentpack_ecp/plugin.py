"""Hook implementations of the ECP plugin, the entry point: kept light, as ``agentpack --help`` imports it.

Only ``pack/layout.py`` (paths, no third-party import) is imported here; the modules behind
each hook are imported when the hook runs, so start-up pays for none of them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentpack import hookimpl
from agentpack.kernel.registry import CommandSpec, FormatInfo, RunView, ScaffoldInfo, SchemaInfo, register_schema_folder

if TYPE_CHECKING:  # annotations only: the entry point stays light
    import pluggy

    from agentpack.kernel.host import Host
    from agentpack.kernel.models import EvalOptions, EvalReport, Finding
    from agentpack.kernel.packtypes import Detection, Pack, QueryRequest, QueryResponse
    from agentpack.kernel.registry import McpContent, McpContext, McpTool
    from agentpack.kernel.runtypes import Run

from .pack.layout import find_pack_root, has_manifest, has_pack_parts, has_skill_md, skill_root

FORMAT = "ecp"


@hookimpl
def agentpack_add_hookspecs(pluginmanager: pluggy.PluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def agentpack_register_formats(register: Callable[[FormatInfo], None]) -> None:
    register(
        FormatInfo(
            name=FORMAT,
            title="Expert Context Pack",
            description="an Agent Skill with an expert/ directory (ECP v1.0)",
            extra="ecp",
        )
    )


@hookimpl
def agentpack_register_commands(register: Callable[[CommandSpec], None]) -> None:
    register(
        CommandSpec(
            name="ecp",
            target="agentpack_ecp.cli:ecp",
            help="Build, query, evaluate, refresh and ship Expert Context Packs.",
        )
    )


@hookimpl
def agentpack_register_run_views(register: Callable[[RunView], None]) -> None:
    def render(run: Run) -> str:
        from .runlog import view

        return view(run)

    title = "Questions, expectations and citations"
    register(RunView(name="ecp-questions", title=title, formats=(FORMAT,), render=render))


@hookimpl
def agentpack_register_mcp_content(register: Callable[[McpContent], None], context: McpContext) -> None:
    """The pack's own skill, its summaries and sources, when ``mcp serve --pack`` names an Expert Context Pack."""
    if not any(find_pack_root(path) for path in context.packs):
        return
    from .mcp import content

    for item in content(context):
        register(item)


@hookimpl
def agentpack_register_mcp_tools(register: Callable[[McpTool], None], context: McpContext) -> None:
    """The expert_* tools, when ``mcp serve --pack`` names an Expert Context Pack."""
    if not any(find_pack_root(path) for path in context.packs):
        return
    from .mcp import register_tools

    register_tools(register, context)


@hookimpl
def agentpack_detect(path: Path) -> Detection | None:
    root = skill_root(Path(path))
    if root is None:
        return None
    from agentpack.kernel.packtypes import Detection

    if not has_manifest(root):
        if not has_pack_parts(root):
            return None
        return Detection(format=FORMAT, confidence=0.5, reason="expert/ with ECP parts but no EXPERT.yaml")
    if has_skill_md(root):
        return Detection(format=FORMAT, confidence=0.9, reason="SKILL.md with expert/EXPERT.yaml")
    return Detection(format=FORMAT, confidence=0.5, reason="expert/EXPERT.yaml without SKILL.md")


@hookimpl
def agentpack_load(path: Path) -> Pack:
    """The pack, parsed once: ``Pack.data`` is the ``ExpertPack`` the other hooks receive."""
    from agentpack.kernel.packtypes import Pack

    from .pack.manifest import load_pack

    expert = load_pack(path)
    version = expert.manifest.get("ecp_version")
    return Pack(
        path=Path(path),
        root=expert.root,
        format=FORMAT,
        name=expert.name,
        version=version if isinstance(version, str) else None,
        data=expert,
    )


@hookimpl
def agentpack_validate(pack: Pack, strict: bool) -> list[Finding]:
    from .validate.checks import validate_pack

    return validate_pack(pack.data, strict)


@hookimpl
def agentpack_query(pack: Pack, request: QueryRequest, host: Host) -> QueryResponse:
    from .query.adapter import query

    return query(pack.data, request, host)


@hookimpl
def agentpack_evaluate(pack: Pack, options: EvalOptions) -> EvalReport:
    from .evals import run_suites

    return run_suites(pack.data, options.suite, case_filter=options.filter)


@hookimpl
def agentpack_register_schemas(register: Callable[[SchemaInfo], None]) -> None:
    register_schema_folder(register, Path(__file__).parent / "schemas", "ecp")


@hookimpl
def agentpack_register_scaffolds(register: Callable[[ScaffoldInfo], None]) -> None:
    register(ScaffoldInfo("ecp", ("ecp", "init"), "an Expert Context Pack: sources, built indexes, an eval suite"))
