"""Bind tool operations to deterministic skills of the skillctl format (a folder with ``skill.yaml``).

``agentpack_skillctl`` is imported lazily, never at module level. When it offers a
``run_skill(path, value)`` function it is used; otherwise its ``prepare`` +
``run_prepared`` pair; otherwise ``agentpack skill run PATH --input -`` runs as a
subprocess and its JSON output is parsed.
"""

from __future__ import annotations

import importlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Callable

from agentpack.errors import AgentpackError
from agentpack.paths import resolve_under

from .bindings import ToolError


def _python_runner() -> Callable[[Path, Any], Any] | None:
    try:
        skillctl = importlib.import_module("agentpack_skillctl")
    except ImportError:
        return None
    for module_name in ("agentpack_skillctl", "agentpack_skillctl.api", "agentpack_skillctl.runner"):
        try:
            module = importlib.import_module(module_name)
        except ImportError:
            continue
        run_skill = getattr(module, "run_skill", None)
        if callable(run_skill):
            return lambda path, value: _unwrap(run_skill(path, value), path)
    try:
        prepare = importlib.import_module("agentpack_skillctl.prepare").prepare
        runner = importlib.import_module("agentpack_skillctl.runner")
    except (ImportError, AttributeError):
        return None
    del skillctl

    def run(path: Path, value: Any) -> Any:
        with tempfile.TemporaryDirectory(prefix="openexperts-skill-") as workspace:
            result = runner.run_prepared(prepare(path), runner.RunOptions(workspace=Path(workspace)), value=value)
        return _unwrap(result, path)

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
    argv = [str(exe) if exe.exists() else (shutil.which("agentpack") or "agentpack"),
            "skill", "run", str(path), "--input", "-", "--json"]
    proc = subprocess.run(argv, input=json.dumps(value), capture_output=True, text=True, timeout=300)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise ToolError(f"skill {path.name}: 'agentpack skill run' printed no JSON (exit {proc.returncode}): "
                        f"{proc.stderr.strip()[:300]}") from None
    if isinstance(data, dict) and ("status" in data or "output" in data):
        return _unwrap(data, path)
    if proc.returncode != 0:
        raise ToolError(f"skill {path.name} failed (exit {proc.returncode}): {proc.stderr.strip()[:300]}")
    return data


def runner() -> Callable[[Path, Any], Any]:
    return _python_runner() or _subprocess_runner


class SkillBinding:
    """``skill``: one folder for the whole tool (input ``{"operation", "arguments"}``);
    ``skills``: one folder per operation (input: the arguments)."""

    def __init__(self, base: Path, whole: str | None = None, per_operation: dict[str, str] | None = None) -> None:
        self.whole = self._folder(base, whole) if whole else None
        self.per_operation = {op: self._folder(base, p) for op, p in (per_operation or {}).items()}
        self._run = runner()

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
    return SkillBinding(context.base, config.get("skill"), config.get("skills"))
