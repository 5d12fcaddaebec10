"""Hook implementations of the ECP plugin (kept light: heavy imports happen inside hooks)."""

from __future__ import annotations

from pathlib import Path

from agentpack import hookimpl
from agentpack.registry import CommandSpec, FormatInfo

FORMAT = "ecp"


@hookimpl
def agentpack_register_formats(register):
    register(
        FormatInfo(
            name=FORMAT,
            title="Expert Context Pack",
            description="an Agent Skill with an expert/ directory (ECP v1.0)",
            extra="ecp",
        )
    )


@hookimpl
def agentpack_register_commands(register):
    register(
        CommandSpec(
            name="ecp",
            target="agentpack_ecp.cli:ecp",
            help="Build, query, evaluate, refresh and ship Expert Context Packs.",
        )
    )


@hookimpl
def agentpack_register_mcp_tools(register, context):
    from .mcp import register_tools

    register_tools(register, context)


def _root_of(path: Path) -> Path | None:
    if path.is_file():
        if path.name in ("SKILL.md", "skill.md"):
            return path.parent
        if path.name == "EXPERT.yaml" and path.parent.name == "expert":
            return path.parent.parent
        return None
    return path if path.is_dir() else None


@hookimpl
def agentpack_detect(path):
    root = _root_of(Path(path))
    if root is None or not (root / "expert" / "EXPERT.yaml").is_file():
        return None
    from agentpack.models import Detection

    if (root / "SKILL.md").is_file() or (root / "skill.md").is_file():
        return Detection(format=FORMAT, confidence=0.9, reason="SKILL.md with expert/EXPERT.yaml")
    return Detection(format=FORMAT, confidence=0.5, reason="expert/EXPERT.yaml without SKILL.md")


@hookimpl
def agentpack_load(path, format):
    if format != FORMAT:
        return None
    from agentpack.models import Pack

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
def agentpack_validate(pack, strict):
    if pack.format != FORMAT:
        return None
    from .validate.checks import validate_pack

    return validate_pack(pack.data, strict)


@hookimpl
def agentpack_query(pack, request):
    if pack.format != FORMAT:
        return None
    from .query.adapter import query

    return query(pack, request)


@hookimpl
def agentpack_evaluate(pack, options):
    if pack.format != FORMAT:
        return None
    from .evals import run_suites

    return run_suites(pack.data, options.suite, case_filter=options.filter)
