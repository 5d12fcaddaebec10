"""Hook implementations of the agent-rpc plugin (kept light: heavy imports happen inside hooks)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack import hookimpl
from agentpack.kernel.registry import CommandSpec, FormatInfo, RunView, ScaffoldInfo, SchemaInfo, register_schema_folder

if TYPE_CHECKING:  # for annotations only: every command imports this module, so the rest loads inside hooks
    import pluggy

    from agentpack.kernel.host import Host
    from agentpack.kernel.models import EvalOptions, EvalReport, Finding
    from agentpack.kernel.packtypes import Detection, Pack

    from .executors import ExecutorInfo
    from .graders.base import GraderType

FORMAT = "agent-rpc"
_MAX_DETECT_BYTES = 4 * 1024 * 1024
MANIFEST_NAMES = ("manifest.yaml", "manifest.yml")
"""The names of a manifest in a directory (``manifest.MANIFEST_NAMES``, repeated so detection stays light)."""


@hookimpl
def agentpack_add_hookspecs(pluginmanager: pluggy.PluginManager) -> None:
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def agentpack_register_formats(register: Callable[[FormatInfo], None]) -> None:
    register(
        FormatInfo(
            name=FORMAT,
            title="agent-rpc",
            description="an agent evaluation manifest (scenarios run against an agent over JSON-RPC)",
            extra="agent-rpc",
        )
    )


@hookimpl
def agentpack_register_commands(register: Callable[[CommandSpec], None]) -> None:
    register(
        CommandSpec(
            name="rpc",
            target="agentpack_agent_rpc.cli:rpc",
            help="Run agent evaluation manifests over JSON-RPC; check agents for conformance.",
        )
    )


@hookimpl
def agentpack_register_run_views(register: Callable[[RunView], None]) -> None:
    def render(run: Any) -> str:
        from .html_report import view

        return view(run)

    register(RunView(name="agent-rpc", title="Agent, checks and step latency", formats=(FORMAT,), render=render))


@hookimpl
def agentpack_agent_rpc_register_graders(register: Callable[[GraderType], None]) -> None:
    from .graders.base import GraderType
    from .graders.llm_judge import LlmJudge
    from .graders.text_match import TextMatch
    from .graders.tool_usage import ToolUsage

    register(
        GraderType("text_match", TextMatch, "contains / equals / does_not_contain / not_equals / regex / not_regex")
    )
    register(GraderType("tool_usage", ToolUsage, "tool call by name and argument subset; not_called, counts, sequence"))
    register(GraderType("llm_judge", LlmJudge, "an OpenAI-compatible chat model judges the output"))


@hookimpl
def agentpack_agent_rpc_register_executors(register: Callable[[ExecutorInfo], None]) -> None:
    from .executors import ExecutorInfo, LocalExecutor
    from .ray_executor.executor import RayExecutor

    register(ExecutorInfo("local", LocalExecutor, "worker threads on this machine (--jobs N)"))
    register(ExecutorInfo("ray", RayExecutor, "scenario slots on a Ray cluster (--ray-address, --ray-local)"))


@hookimpl
def agentpack_detect(path: Path) -> Detection | None:
    path = Path(path)
    if not (path.suffix.lower() in (".yaml", ".yml") or any((path / name).is_file() for name in MANIFEST_NAMES)):
        return None  # decided without importing the manifest module: detection runs for every pack path
    from .manifest.reader import manifest_file, sniff

    target = manifest_file(path)
    try:
        if target is None or target.stat().st_size > _MAX_DETECT_BYTES:
            return None
    except OSError:
        return None
    sniffed = sniff(target)
    if sniffed is None:
        return None
    from agentpack.kernel.packtypes import Detection

    return Detection(format=FORMAT, confidence=0.9, reason="YAML with scenarios and a target", data=sniffed)


@hookimpl
def agentpack_load(path: Path, format: str, detection: Detection | None) -> Pack:
    from agentpack.io.errors import PackError
    from agentpack.kernel.packtypes import Pack

    from .manifest.reader import manifest_file, read_document

    target = manifest_file(Path(path))
    if target is None:
        raise PackError(
            "not an agent-rpc manifest: expected a .yaml file or a folder with manifest.yaml", file=str(path)
        )
    document = read_document(target, detection.data if detection else None)  # YamlError carries file:line:col
    data = document[0].data
    name = data.get("name") if isinstance(data, dict) else None
    return Pack(
        path=target, root=target.parent, format=format, name=name if isinstance(name, str) else None, data=document
    )


@hookimpl
def agentpack_validate(pack: Pack, strict: bool, host: Host) -> list[Finding] | None:
    from .api import validate_manifest

    _, findings = validate_manifest(pack.path, strict=strict, document=pack.data, host=host)
    return findings


@hookimpl
def agentpack_evaluate(pack: Pack, options: EvalOptions, host: Host) -> EvalReport:
    from .evaluation import evaluate

    return evaluate(pack, options, host)


@hookimpl
def agentpack_register_schemas(register: Callable[[SchemaInfo], None]) -> None:
    register_schema_folder(register, Path(__file__).parent / "schemas", "agent-rpc")


@hookimpl
def agentpack_register_scaffolds(register: Callable[[ScaffoldInfo], None]) -> None:
    register(ScaffoldInfo("rpc", ("rpc", "init"), "an agent evaluation: an SDK agent and a manifest that passes"))
