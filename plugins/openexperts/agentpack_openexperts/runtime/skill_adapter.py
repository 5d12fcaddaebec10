"""Bind tool operations to deterministic skills of the skillctl format (a folder with ``skill.yaml``).

Skills run through the host: ``Host.invoke`` reaches the plugin that owns the ``skillctl`` format
(its ``agentpack_invoke``), which runs the skill under its declared sandbox in a fresh folder.
This plugin never imports another one nor spawns the ``agentpack`` command line.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError
from agentpack.io.paths import resolve_under
from agentpack.kernel.invocation import InvokeRequest

from .bindings import ToolError

if TYPE_CHECKING:
    from agentpack.kernel.host import Host
    from agentpack.kernel.packtypes import Pack

SKILL_FORMAT = "skillctl"


def runner(host: Host) -> Callable[[Path, Any], Any]:
    """Run a skill folder on a JSON value through ``host``; a failed run is a ``ToolError`` naming its status.

    ``AgentpackError`` when no installed plugin runs skill.yaml skills.
    """
    if SKILL_FORMAT not in host.formats():
        from agentpack.io.installhint import CORE, command

        raise AgentpackError(
            "a 'skill' binding needs the skillctl format, and no installed plugin offers it",
            hint=command(CORE, "skillctl"),
        )
    packs: dict[Path, Pack] = {}

    def run(path: Path, value: Any) -> Any:
        pack = packs.get(path)
        if pack is None:
            try:
                pack = packs[path] = host.load(path, format=SKILL_FORMAT)
            except AgentpackError as exc:  # skill.yaml unreadable: a tool error naming file and line
                raise ToolError(f"skill {path.name} cannot be loaded: {exc}") from None
        result = host.invoke(pack, InvokeRequest(value))
        if not result.ok:
            raise ToolError(f"skill {path.name} ended with status {result.summary()}")
        return result.output

    return run


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
