"""What a host reads from SKILL.md files, with the output of skills-ref 0.1.1: its ``read-properties``
JSON and its ``to-prompt`` block (``<available_skills>``, which hosts put in their system prompt)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

from agentpack.io.errors import PackError
from agentpack.skills.skillmd import Skill, find_skill_md, read_skill

OPTIONAL_FIELDS = ("license", "compatibility", "allowed-tools")


def skill_directory(path: str | Path) -> Path:
    """The skill folder ``path`` names: itself, or the folder of a ``SKILL.md`` file (as skills-ref)."""
    path = Path(path)
    return path.parent if path.is_file() and path.name.lower() == "skill.md" else path


def properties(skill: Skill) -> dict[str, Any]:
    """The skill's properties as skills-ref's ``read-properties`` gives them: ``name`` and ``description``
    stripped, ``license``, ``compatibility``, ``allowed-tools`` as written, ``metadata`` values as strings
    (a nested value as Python prints it, as skills-ref does), empty ``metadata`` left out.

    Raises ``PackError`` when ``name`` or ``description`` is missing, empty or not a string.
    """
    meta = skill.meta
    result: dict[str, Any] = {}
    for field in ("name", "description"):
        if field not in meta:
            raise PackError(f"missing required field '{field}'", **_where(skill, ""))
        value = meta[field]
        if not isinstance(value, str) or not value.strip():
            raise PackError(f"field '{field}' must be a non-empty string", **_where(skill, f"/{field}"))
        result[field] = value.strip()
    for field in OPTIONAL_FIELDS:
        if meta.get(field) is not None:
            result[field] = meta[field]
    metadata = meta.get("metadata")
    if isinstance(metadata, dict):
        metadata = {str(key): str(value) for key, value in metadata.items()}
    if metadata:
        result["metadata"] = metadata
    return result


def _where(skill: Skill, pointer: str) -> dict[str, Any]:
    where = skill.where(pointer)
    return {"file": where.get("file"), "line": where.get("line")}


def properties_json(props: dict[str, Any]) -> str:
    """``read-properties`` output of ``properties(skill)``, byte for byte (ASCII JSON indented by two, no final
    newline)."""
    return json.dumps(props, indent=2)


def prompt_entries(paths: list[Path]) -> list[dict[str, str]]:
    """``name``, ``description`` and ``location`` (the real path of the SKILL.md) of each skill folder."""
    entries = []
    for path in paths:
        directory = skill_directory(path).resolve()
        skill = read_skill(directory, display=str(find_skill_md(directory) or directory))
        props = properties(skill)
        entries.append(
            {
                "name": props["name"],
                "description": props["description"],
                "location": str(find_skill_md(directory)),
            }
        )
    return entries


def to_prompt(entries: list[dict[str, str]]) -> str:
    """The ``<available_skills>`` block of skills-ref's ``to-prompt`` (no final newline)."""
    lines = ["<available_skills>"]
    for entry in entries:
        lines += ["<skill>", "<name>", html.escape(entry["name"]), "</name>"]
        lines += ["<description>", html.escape(entry["description"]), "</description>"]
        lines += ["<location>", entry["location"], "</location>", "</skill>"]
    lines.append("</available_skills>")
    return "\n".join(lines)


__all__ = ["prompt_entries", "properties", "properties_json", "skill_directory", "to_prompt"]
