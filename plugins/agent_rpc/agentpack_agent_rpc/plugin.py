"""Hook implementations of the agent-rpc plugin (kept light: heavy imports happen inside hooks)."""

from __future__ import annotations

from pathlib import Path

from agentpack import hookimpl
from agentpack.registry import CommandSpec, FormatInfo

FORMAT = "agent-rpc"
_MAX_DETECT_BYTES = 4 * 1024 * 1024


@hookimpl
def agentpack_add_hookspecs(pluginmanager):
    from . import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


@hookimpl
def agentpack_register_formats(register):
    register(
        FormatInfo(
            name=FORMAT,
            title="agent-rpc",
            description="an agent evaluation manifest (scenarios run against an agent over JSON-RPC)",
            extra="agent-rpc",
        )
    )


@hookimpl
def agentpack_register_commands(register):
    register(
        CommandSpec(
            name="rpc",
            target="agentpack_agent_rpc.cli:rpc",
            help="Run agent evaluation manifests over JSON-RPC; check agents for conformance.",
        )
    )


@hookimpl
def agentpack_agent_rpc_register_graders(register):
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
def agentpack_agent_rpc_register_executors(register):
    from .executors import ExecutorInfo, LocalExecutor
    from .ray_executor.executor import RayExecutor

    register(ExecutorInfo("local", LocalExecutor, "worker threads on this machine (--jobs N)"))
    register(ExecutorInfo("ray", RayExecutor, "scenario slots on a Ray cluster (--ray-address, --ray-local)"))


def _manifest_file(path: Path) -> Path | None:
    from .manifest import manifest_file

    return manifest_file(path)


@hookimpl
def agentpack_detect(path):
    path = Path(path)
    if path.is_dir():
        if not any((path / n).is_file() for n in ("manifest.yaml", "manifest.yml")):
            return None
    elif path.suffix.lower() not in (".yaml", ".yml"):
        return None
    target = _manifest_file(path)
    if target is None:
        return None
    try:
        if target.stat().st_size > _MAX_DETECT_BYTES or b"scenarios" not in target.read_bytes():
            return None
    except OSError:
        return None
    from agentpack.errors import YamlError
    from agentpack.models import Detection

    from .manifest import looks_like_manifest, read_document

    try:
        doc, _ = read_document(target)
    except YamlError:
        return None
    if looks_like_manifest(doc.data):
        return Detection(format=FORMAT, confidence=0.9, reason="YAML with scenarios and a target")
    return None


@hookimpl
def agentpack_load(path, format):
    if format != FORMAT:
        return None
    from agentpack.errors import PackError
    from agentpack.models import Pack

    from .manifest import read_document

    target = _manifest_file(Path(path))
    if target is None:
        raise PackError(
            "not an agent-rpc manifest: expected a .yaml file or a folder with manifest.yaml", file=str(path)
        )
    doc, _ = read_document(target)  # YamlError (a PackError) carries file:line:col
    name = doc.data.get("name") if isinstance(doc.data, dict) else None
    return Pack(path=target, root=target.parent, format=FORMAT, name=name if isinstance(name, str) else None, data=doc)


@hookimpl
def agentpack_validate(pack, strict):
    if pack.format != FORMAT:
        return None
    from .api import validate_manifest

    _, findings = validate_manifest(pack.path, strict=strict)
    return findings


@hookimpl
def agentpack_evaluate(pack, options):
    if pack.format != FORMAT:
        return None
    from .api import require_manifest, run_manifest
    from .report import to_eval_report
    from .runner import RunOptions

    filters = [f.strip() for f in (options.filter or "").split(",") if f.strip()]
    opts = options.options or {}
    ray = {"address": opts.get("ray_address"), "local": str(opts.get("ray_local", "")).lower() in ("1", "true", "yes")}
    report = run_manifest(
        pack.path,
        RunOptions(
            jobs=options.jobs,
            filters=filters,
            executor=opts.get("executor", "local"),
            executor_options={k: v for k, v in ray.items() if v},
        ),
        suite=options.suite,
        manifest=None if opts.get("executor", "local") == "local" else require_manifest(pack.path),
    )
    return to_eval_report(report)
