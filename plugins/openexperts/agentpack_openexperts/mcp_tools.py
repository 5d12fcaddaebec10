"""MCP tools (``agentpack mcp serve --pack PACK``): ``experts.explain`` and ``experts.dry_run`` return
what ``experts explain --json`` and ``experts dry-run --json`` print (the dry run: plan driver,
throwaway workdir, no bindings, so auto operations are described). Both only read the package:
their hints say read-only. A dry run is recorded in agentpack's run store as its CLI twin's is (tag
``mcp``; ``mcp serve --store/--no-record/--tag``); a store that cannot be written is logged, and the
call still answers."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError
from agentpack.kernel.registry import READ_ONLY, McpContext, McpTool

from .names import MANIFEST

if TYPE_CHECKING:
    from agentpack.kernel.host import Host

    from .model import ExpertPackage
    from .runtime import RunOutcome

log = logging.getLogger(__name__)
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


def dry_run(host: Host, context: McpContext, arguments: dict[str, Any]) -> dict[str, Any]:
    import time

    from agentpack.io.clock import SYSTEM_CLOCK

    from .commands import dry_run, run_envelope

    package = _package(host, context, arguments)
    inputs = dict(arguments.get("inputs") or {})
    started, clock = SYSTEM_CLOCK.now(), time.monotonic()
    outcome = dry_run(package, host, arguments["process"], inputs)
    _record(package, outcome, inputs, context, started, time.monotonic() - clock)
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
    settings = {"via": "mcp experts.dry_run", "inputs": inputs}
    run = build(outcome.to_json(), package, settings, tiers, started_at=started, duration_s=took)
    run.tags = sorted({*run.tags, "mcp"})
    try:
        save_run(run, recording=recording)
    except StoreError as exc:
        log.warning("experts.dry_run: the run was not recorded: %s", exc.message)


def tools(host: Host, context: McpContext) -> list[McpTool]:
    return [
        McpTool(
            "experts.explain",
            "Effective configuration of an expert package and where each value came from.",
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
            hints=READ_ONLY,
        ),
        McpTool(
            "experts.dry_run",
            "Planned execution of a process: steps and each operation's approval tier.",
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
            lambda arguments: dry_run(host, context, arguments),
            hints=READ_ONLY,
        ),
    ]
