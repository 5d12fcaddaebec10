"""Hook implementations of the skillctl plugin (kept light: heavy imports happen inside hooks)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentpack import hookimpl
from agentpack.kernel.registry import CommandSpec, FormatInfo, McpContext, McpTool, SchemaInfo, register_schema_folder

if TYPE_CHECKING:
    from agentpack.kernel.invocation import InvokeRequest, InvokeResult
    from agentpack.kernel.models import EvalOptions, EvalReport, Finding
    from agentpack.kernel.packtypes import Detection, Pack

FORMAT = "skillctl"
MANIFEST = "skill.yaml"


def _skill_dir(path: Path) -> Path | None:
    from .manifest import is_skill_dir

    if path.is_file() and path.name == MANIFEST:
        return path.parent
    if is_skill_dir(path):  # anything at skill.yaml: a folder or a link there is this skill's error
        return path
    return None


def _is_tree(path: Path) -> bool:
    from .manifest import is_skill_dir

    if not path.is_dir() or is_skill_dir(path):
        return False
    try:
        return any(p.name[:1] not in "._" and is_skill_dir(p) for p in path.iterdir())
    except OSError:
        return False


@hookimpl
def agentpack_register_formats(register: Callable[[FormatInfo], None]) -> None:
    register(
        FormatInfo(
            name=FORMAT,
            title="skillctl",
            description="a deterministic skill folder (skill.yaml, apiVersion skill/v1) or a skills/ tree of them",
            extra="skillctl",
        )
    )


@hookimpl
def agentpack_detect(path: Path) -> Detection | None:
    from agentpack.kernel.packtypes import Detection

    if _skill_dir(path) is not None:
        return Detection(format=FORMAT, confidence=0.9, reason="has skill.yaml")
    if _is_tree(path):
        return Detection(format=FORMAT, confidence=0.6, reason="a skills/ tree of skill.yaml folders")
    return None


@hookimpl
def agentpack_load(path: Path) -> Pack:
    """A skill folder (``data``: its loaded ``skill.yaml``) or a ``skills/`` tree (``data``: None)."""
    from agentpack.io.errors import PackError
    from agentpack.kernel.packtypes import Pack

    directory = _skill_dir(path)
    if directory is not None:
        from .manifest import load_skill

        skill = load_skill(directory)
        return Pack(path=path, root=directory, format=FORMAT, name=skill.id, version=skill.version, data=skill)
    if _is_tree(path):
        return Pack(path=path, root=path, format=FORMAT, name=path.resolve().name, data=None)
    raise PackError(f"{path} is neither a skill folder (with {MANIFEST}) nor a skills/ tree", file=str(path))


@hookimpl
def agentpack_validate(pack: Pack, strict: bool) -> list[Finding] | None:
    from .validation import validate_skill, validate_tree

    if pack.data is None:
        return validate_tree(pack.root, strict=strict)
    return validate_skill(pack.data, strict=strict)


@hookimpl
def agentpack_evaluate(pack: Pack, options: EvalOptions) -> EvalReport:
    from .skilltest import evaluate

    return evaluate(pack.root, options, skill=pack.data)


@hookimpl
def agentpack_invoke(pack: Pack, request: InvokeRequest) -> InvokeResult:
    """Run one skill folder on ``request.input`` under its declared sandbox (options: ``require_sandbox``,
    ``timeout_ms``); a ``skills/`` tree is not one skill and cannot be run."""
    from agentpack.io.errors import AgentpackError, PackError

    from .invoke import flag, invoke

    if pack.data is None:
        raise PackError(f"{pack.path} is a skills/ tree: invoke one skill folder of it", file=str(pack.path))
    options = request.options
    timeout = options.get("timeout_ms")
    if timeout is not None and not str(timeout).isdigit():
        raise AgentpackError(f"the skillctl option timeout_ms must be a whole number of milliseconds, not {timeout!r}")
    return invoke(
        pack.root,
        request.input,
        workspace=request.workspace,
        require_sandbox=flag(options.get("require_sandbox", False)),
        timeout_ms=int(timeout) if timeout is not None else None,
    )


@hookimpl
def agentpack_register_commands(register: Callable[[CommandSpec], None]) -> None:
    register(
        CommandSpec(
            name="skill",
            target="agentpack_skillctl.cli:skill",
            help="Deterministic skills: list, describe, validate, run, test, new, audit-commits.",
        )
    )


@hookimpl
def agentpack_register_mcp_tools(register: Callable[[McpTool], None], context: McpContext) -> None:
    from .mcp_tools import register_tools

    register_tools(register, context)


@hookimpl
def agentpack_register_schemas(register: Callable[[SchemaInfo], None]) -> None:
    register_schema_folder(register, Path(__file__).parent / "schemas", "skillctl")
