"""Bind tool operations to deterministic skills of the skillctl format (a folder with ``skill.yaml``).

Skills run in-process through the MCP tools the skillctl plugin registers with the
core (this plugin never imports another one); without that plugin,
``agentpack skill run PATH --input -`` runs as a subprocess and its JSON output is parsed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError
from agentpack.io.paths import resolve_under
from agentpack.kernel.registry import McpContext

from .bindings import ToolError

if TYPE_CHECKING:
    from agentpack.kernel.host import Host


def _in_process_runner(host: Host) -> Callable[[Path, Any], Any] | None:
    """Run skills through the MCP tools the skillctl plugin registers with the core.

    Uses only the core's public API (``host`` and its registered tools), never the other
    plugin's modules; ``None`` when no installed plugin offers the skillctl format.
    """
    if "skillctl" not in host.formats():
        return None
    tools: dict[Path, Any] = {}

    def run(path: Path, value: Any) -> Any:
        tool = tools.get(path)
        if tool is None:
            offered = [t for t in host.mcp_tools(McpContext(packs=[path])).values() if t.plugin == "skillctl"]
            if not offered:
                raise ToolError(f"skill {path.name} cannot run: check it with 'agentpack validate {path}'")
            tool = tools[path] = offered[0]
        try:
            result = tool.handler(value)
        except AgentpackError as exc:
            raise ToolError(f"skill {path.name} ended with status {exc.message.splitlines()[0]}") from None
        if tool.output_schema is None and isinstance(result, dict) and set(result) == {"result"}:
            return result["result"]
        return result

    return run


def _unwrap(result: Any, path: Path) -> Any:
    status = getattr(result, "status", None) if not isinstance(result, dict) else result.get("status")
    output = getattr(result, "output", None) if not isinstance(result, dict) else result.get("output")
    if isinstance(result, dict) and result.get("ok") is False and status in (None, "ok"):
        status = "failed"
    if status not in (None, "ok"):
        report = getattr(result, "report", None) or (result.get("report") if isinstance(result, dict) else None)
        errors = (report or {}).get("errors") if isinstance(report, dict) else None
        detail = "; ".join(str(e.get("message", e)) if isinstance(e, dict) else str(e) for e in errors or [])
        raise ToolError(f"skill {path.name} ended with status '{status}'" + (f": {detail}" if detail else ""))
    return output


def _subprocess_runner(path: Path, value: Any) -> Any:
    exe = Path(sys.executable).with_name("agentpack")
    argv = [
        str(exe) if exe.exists() else (shutil.which("agentpack") or "agentpack"),
        "skill",
        "run",
        str(path),
        "--input",
        "-",
        "--json",
    ]
    proc = subprocess.run(argv, input=json.dumps(value), capture_output=True, text=True, timeout=300, check=False)
    try:
        data = jsonio.loads(proc.stdout)
    except ValueError:
        raise ToolError(
            f"skill {path.name}: 'agentpack skill run' printed no JSON (exit {proc.returncode}): "
            f"{proc.stderr.strip()[:300]}"
        ) from None
    if isinstance(data, dict) and ("status" in data or "output" in data):
        return _unwrap(data, path)
    if proc.returncode != 0:
        raise ToolError(f"skill {path.name} failed (exit {proc.returncode}): {proc.stderr.strip()[:300]}")
    return data


def runner(host: Host) -> Callable[[Path, Any], Any]:
    """In-process through ``host``'s MCP tools when the skillctl format is installed, else a subprocess."""
    return _in_process_runner(host) or _subprocess_runner


class SkillBinding:
    """``skill``: one folder for the whole tool (input ``{"operation", "arguments"}``);
    ``skills``: one folder per operation (input: the arguments)."""

    def __init__(
        self,
        base: Path,
        run: Callable[[Path, Any], Any],
        whole: str | None = None,
        per_operation: dict[str, str] | None = None,
    ) -> None:
        self.whole = self._folder(base, whole) if whole else None
        self.per_operation = {op: self._folder(base, p) for op, p in (per_operation or {}).items()}
        self._run = run

    @staticmethod
    def _folder(base: Path, rel: str) -> Path:
        path = Path(rel) if Path(rel).is_absolute() else resolve_under(base, rel)
        if not (path / "skill.yaml").is_file():
            raise AgentpackError(f"'{rel}' is not a skill folder (no skill.yaml)")
        return path

    def call(self, operation: str, arguments: dict[str, Any]) -> Any:
        if operation in self.per_operation:
            return self._run(self.per_operation[operation], arguments)
        if self.whole is not None:
            return self._run(self.whole, {"operation": operation, "arguments": arguments})
        raise ToolError(f"operation '{operation}' has no skill bound")

    def close(self) -> None:
        pass


def skill_binder(config: dict[str, Any], context: Any) -> SkillBinding:
    return SkillBinding(context.base, runner(context.runtime.host), config.get("skill"), config.get("skills"))
