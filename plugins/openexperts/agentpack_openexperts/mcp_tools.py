"""MCP tools (``agentpack mcp serve --pack PACK``): the same JSON as ``experts explain --json`` and
``experts dry-run --json`` (plan driver, throwaway workdir, no bindings: auto operations are described)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from agentpack.errors import AgentpackError
from agentpack.registry import McpContext, McpTool

PACK = {"type": "string", "description": "Path of the package (one served with --pack); default: the only one."}


def _package(context: McpContext, arguments: dict[str, Any]):
    from .loader import load_package

    served = [Path(p) for p in context.packs if (Path(p) / "expert.yaml").is_file() or Path(p).name == "expert.yaml"]
    wanted = arguments.get("pack")
    if wanted is None:
        if len(served) != 1:
            raise AgentpackError(
                f"name the package with 'pack' (packs served: {', '.join(map(str, served)) or 'none'})"
            )
        return load_package(served[0])
    match = [p for p in served if p.resolve() == Path(wanted).resolve()]
    if not match:
        raise AgentpackError(f"'{wanted}' is not an expert package served with --pack")
    return load_package(match[0])


def tools(context: McpContext) -> list[McpTool]:
    def explain(arguments: dict[str, Any]) -> dict[str, Any]:
        from .explain import explain as build

        data = build(_package(context, arguments), process=arguments.get("process"), operation=arguments.get("op"))
        return {"schema_version": 1, "command": "experts explain", "ok": True, **data}

    def dry_run(arguments: dict[str, Any]) -> dict[str, Any]:
        from .runtime import ExpertRuntime

        package = _package(context, arguments)
        with tempfile.TemporaryDirectory(prefix="openexperts-dry-run-") as tmp:
            rt = ExpertRuntime(package, driver="plan", broker="reject", workdir=tmp)
            try:
                outcome = rt.run_process(arguments["process"], dict(arguments.get("inputs") or {}), dry_run=True)
            finally:
                rt.stop()
        return {"schema_version": 1, "command": "experts dry-run", "ok": outcome.ok, "run": outcome.to_json()}

    return [
        McpTool(
            "openexperts_explain",
            "Effective configuration of an expert package and where each value came from.",
            {
                "type": "object",
                "properties": {
                    "pack": PACK,
                    "process": {"type": "string"},
                    "op": {"type": "string", "description": "tool.operation"},
                },
                "additionalProperties": False,
            },
            explain,
        ),
        McpTool(
            "openexperts_dry_run",
            "Planned execution of a process: steps and each operation's approval tier.",
            {
                "type": "object",
                "required": ["process"],
                "properties": {
                    "pack": PACK,
                    "process": {"type": "string"},
                    "inputs": {"type": "object", "additionalProperties": {"type": "string"}},
                },
                "additionalProperties": False,
            },
            dry_run,
        ),
    ]
