"""MCP tools (``agentpack mcp serve --pack PACK``): ``experts_explain`` and ``experts_dry_run`` return
what ``experts explain --json`` and ``experts dry-run --json`` print (the dry run: plan driver,
throwaway workdir, no bindings, so auto operations are described). Both only read the package:
their hints say read-only. A dry run is recorded in agentpack's run store as its CLI twin's is (tag
``mcp``; ``mcp serve --store/--no-record/--tag``); a store that cannot be written is logged, and the
call still answers. The former names ``experts.explain`` and ``experts.dry_run`` still answer in
``tools/call`` for one release.

``content`` is what the server publishes besides: each function as an Agent Skill (the skills
``experts export --to skills`` writes, made in memory), the non-private knowledge files as
resources, each process as a prompt."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError
from agentpack.kernel.registry import READ_ONLY, McpContext, McpTool

from .names import MANIFEST

if TYPE_CHECKING:
    from agentpack.kernel.host import Host
    from agentpack.kernel.registry import McpContent

    from .model import ExpertPackage
    from .runtime import RunOutcome

log = logging.getLogger(__name__)
Progress = Callable[[float, "float | None", "str | None"], None]
ENVELOPE = {
    "type": "object",
    "required": ["schema_version", "command", "ok"],
    "properties": {"schema_version": {"const": 1}, "command": {"type": "string"}, "ok": {"type": "boolean"}},
}
PACK = {"type": "string", "description": "Path of the package (one served with --pack); default: the only one."}


def _package(host: Host, context: McpContext, arguments: dict[str, Any]) -> ExpertPackage:
    from .commands import load

    served = [Path(p) for p in context.packs if (Path(p) / MANIFEST).is_file() or Path(p).name == MANIFEST]
    wanted = arguments.get("pack")
    if wanted is None:
        if len(served) != 1:
            raise AgentpackError(
                f"name the package with 'pack' (packs served: {', '.join(map(str, served)) or 'none'})"
            )
        return load(host, served[0])
    match = [p for p in served if p.resolve() == Path(wanted).resolve()]
    if not match:
        raise AgentpackError(f"'{wanted}' is not an expert package served with --pack")
    return load(host, match[0])


def explain(host: Host, context: McpContext, arguments: dict[str, Any]) -> dict[str, Any]:
    from .commands import explain_envelope

    package = _package(host, context, arguments)
    return explain_envelope(package, process=arguments.get("process"), operation=arguments.get("op"))


def dry_run(host: Host, context: McpContext, arguments: dict[str, Any], report: Progress) -> dict[str, Any]:
    import time

    from agentpack.io.clock import SYSTEM_CLOCK

    from .commands import dry_run, run_envelope

    report(0, 3, "loading the package")
    package = _package(host, context, arguments)
    inputs = dict(arguments.get("inputs") or {})
    started, clock = SYSTEM_CLOCK.now(), time.monotonic()
    report(1, 3, f"planning {arguments['process']}")
    outcome = dry_run(package, host, arguments["process"], inputs)
    report(2, 3, "recording the run")
    _record(package, outcome, inputs, context, started, time.monotonic() - clock)
    report(3, 3, "planned")
    return run_envelope("dry-run", outcome)


def _record(
    package: ExpertPackage, outcome: RunOutcome, inputs: dict[str, Any], context: McpContext, started: Any, took: float
) -> None:
    """Record the dry run as ``experts dry-run`` does, tagged ``mcp``; a store error is logged, not raised."""
    recording = context.recording
    if recording is not None and not recording.enabled:
        return
    from agentpack.results.runs import StoreError, save_run

    from .effective import tier
    from .runlog import build

    tiers = {c["operation"]: tier(package, c["operation"]).source for c in outcome.plan}
    settings = {"via": "mcp experts_dry_run", "inputs": inputs}
    run = build(outcome.to_json(), package, settings, tiers, started_at=started, duration_s=took)
    run.tags = sorted({*run.tags, "mcp"})
    try:
        save_run(run, recording=recording)
    except StoreError as exc:
        log.warning("experts_dry_run: the run was not recorded: %s", exc.message)


def tools(host: Host, context: McpContext) -> list[McpTool]:
    return [
        McpTool(
            "experts_explain",
            "Effective configuration of an expert package and where each value came from "
            "(same JSON as 'agentpack experts explain --json').",
            {
                "type": "object",
                "properties": {
                    "pack": PACK,
                    "process": {"type": "string", "description": "Only the settings that apply to this process."},
                    "op": {"type": "string", "description": "Only this operation, as tool.operation."},
                },
                "additionalProperties": False,
            },
            lambda arguments: explain(host, context, arguments),
            output_schema=_envelope("effective"),
            title="Explain an expert package",
            hints=READ_ONLY,
            aliases=("experts.explain",),
        ),
        McpTool(
            "experts_dry_run",
            "Planned execution of a process: steps and each operation's approval tier "
            "(same JSON as 'agentpack experts dry-run --json').",
            {
                "type": "object",
                "required": ["process"],
                "properties": {
                    "pack": PACK,
                    "process": {"type": "string", "description": "The process to plan."},
                    "inputs": {
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                        "description": "The process's inputs by name.",
                    },
                },
                "additionalProperties": False,
            },
            lambda arguments, report=_silent: dry_run(host, context, arguments, report),
            output_schema=_envelope("run"),
            title="Plan a process (dry run)",
            hints=READ_ONLY,
            aliases=("experts.dry_run",),
            progress=True,
        ),
    ]


def _silent(done: float, total: float | None = None, message: str | None = None) -> None:
    """No progress reporting (a direct call, or a client that did not ask)."""


def _envelope(key: str) -> dict[str, Any]:
    """The output schema of a tool answering with the CLI envelope (``run``: one run; else explain's)."""
    required = ["run"] if key == "run" else ["package", "processes"]
    return {**ENVELOPE, "required": [*ENVELOPE["required"], *required]}


def content(host: Host, context: McpContext) -> list[McpContent]:
    """For each served package: its functions as skills, its non-private knowledge, its processes as prompts."""
    from agentpack.kernel.registry import McpContent, McpPrompt, McpResource, SkillTree

    from .commands import load
    from .export import skill_files

    found = []
    for path in _served(context):
        try:
            package = load(host, path)
        except AgentpackError as exc:
            log.warning("expert package %s publishes nothing over MCP: %s", path, exc)
            continue
        prefix = package.root.resolve().name
        files, _, _ = skill_files(package)
        resources = tuple(
            McpResource(
                uri=f"openexperts://{prefix}/{component.path}",
                name=component.path,
                read=Path(component.file).read_bytes,
                description=str(component.meta.get("description") or f"knowledge of {package.name}"),
                mime_type="text/markdown",
            )
            for component in package.knowledge_paths().values()
            if package.knowledge_type(component) != "private"
        )
        prompts = tuple(
            McpPrompt(
                name=f"{prefix}_{name}",
                title=name,
                description=str(process.meta.get("description") or f"the process {name} of {package.name}"),
                render=_process_prompt(name, process.body),
                arguments=tuple(
                    (str(i["name"]), str(i.get("description") or i.get("type") or ""), False)
                    for i in process.list_of("inputs")
                    if isinstance(i, dict) and i.get("name")
                ),
            )
            for name, process in sorted(package.processes().items())
        )
        found.append(
            McpContent(
                name=f"openexperts {path}",
                covers=(Path(path),),
                skills=(SkillTree(prefix=prefix, files=files),),
                resources=resources,
                prompts=prompts,
            )
        )
    return found


def _served(context: McpContext) -> list[Path]:
    return [Path(p) for p in context.packs if (Path(p) / MANIFEST).is_file()]


def _process_prompt(name: str, body: str) -> Callable[[dict[str, str]], str]:
    def render(arguments: dict[str, str]) -> str:
        given = "".join(f"\n- {key}: {value}" for key, value in sorted(arguments.items()))
        inputs = f"\n\nInputs:{given}" if given else ""
        return f"Follow the process {name}.{inputs}\n\n{body.strip()}\n"

    return render
