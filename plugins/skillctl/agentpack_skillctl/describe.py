"""JSON descriptions of skills for ``list`` and ``describe`` (and MCP)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError

from .manifest import load_skill, tree_skill_dirs


def summary(directory: Path) -> dict[str, Any]:
    skill = load_skill(directory)
    return {
        "id": skill.id,
        "name": skill.name,
        "version": skill.version,
        "description": skill.description,
        "path": str(directory),
        "runtime": skill.get("runtime", "type"),
        "determinism": skill.get("determinism"),
    }


def listing(tree: Path) -> list[dict[str, Any]]:
    out = []
    for directory in tree_skill_dirs(tree):
        try:
            out.append(summary(directory))
        except AgentpackError as exc:
            out.append({"id": None, "path": str(directory), "error": str(exc)})
    return sorted(out, key=lambda s: (s["id"] is None, s["id"] or "", s["path"]))


def describe(directory: Path) -> dict[str, Any]:
    skill = load_skill(directory)
    info = summary(directory)
    info["manifest"] = skill.data
    for which in ("input", "output"):
        try:
            info[f"{which}Schema"] = skill.io_schema(which)
        except AgentpackError as exc:
            info[f"{which}Schema"] = None
            info.setdefault("errors", []).append(str(exc))
    return info
