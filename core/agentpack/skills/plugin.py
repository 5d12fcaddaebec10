"""The base format every other builds on: an Agent Skill directory (``SKILL.md``).

Claims a directory with a SKILL.md at low confidence, so a format that extends
skills (expert packs, deterministic skills) wins when its plugin is installed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from agentpack.kernel.hookspecs import hookimpl
from agentpack.kernel.registry import FormatInfo, ScaffoldInfo

if TYPE_CHECKING:
    from agentpack.kernel.models import Finding
    from agentpack.kernel.packtypes import Detection, Pack

FORMAT = "agent-skill"
SKILL_FILENAMES = ("SKILL.md", "skill.md")


def find_skill_md(directory: Path) -> Path | None:
    """The SKILL.md of ``directory``, without importing the YAML machinery (start-up stays fast).

    Anything at that name counts, a folder or a dangling link too: validation then reports what it
    is, rather than skipping the SKILL.md rules as if the pack had none.
    """
    for name in SKILL_FILENAMES:
        if os.path.lexists(directory / name):
            return directory / name
    return None


def _skill_dir(path: Path) -> Path | None:
    if path.name in SKILL_FILENAMES and not path.is_dir() and os.path.lexists(path):
        return path.parent
    if path.is_dir() and find_skill_md(path):
        return path
    return None


@hookimpl
def agentpack_register_formats(register: Callable[[FormatInfo], None]) -> None:
    register(
        FormatInfo(
            name=FORMAT, title="Agent Skill", description="a directory with a SKILL.md (Agent Skills specification)"
        )
    )


@hookimpl
def agentpack_detect(path: Path) -> Detection | None:
    from agentpack.kernel.packtypes import Detection

    if _skill_dir(path) is not None:
        return Detection(format=FORMAT, confidence=0.1, reason="has SKILL.md")
    return None


@hookimpl
def agentpack_load(path: Path, format: str) -> Pack:
    from agentpack.io.errors import PackError
    from agentpack.kernel.packtypes import Pack
    from agentpack.skills.skillmd import folder_name

    directory = _skill_dir(path)
    if directory is None:
        raise PackError("not an Agent Skill directory: no SKILL.md", file=str(path))
    return Pack(path=path, root=directory, format=FORMAT, name=folder_name(directory))


@hookimpl
def agentpack_validate(pack: Pack, strict: bool) -> list[Finding]:
    """An Agent Skill: the SKILL.md rules (a skill folder without one is an error)."""
    return _skill_md_findings(pack) if find_skill_md(pack.root) is not None else _missing(pack)


@hookimpl
def agentpack_check(pack: Pack, strict: bool) -> list[Finding] | None:
    """The SKILL.md rules for a pack of any other format whose root holds a SKILL.md."""
    if pack.format == FORMAT or find_skill_md(pack.root) is None:
        return None
    return _skill_md_findings(pack)


def _skill_md_findings(pack: Pack) -> list[Finding]:
    from agentpack.skills.skillmd import validate_skill_dir

    _, findings = validate_skill_dir(pack.root, display=_display(pack))
    return findings


def _display(pack: Pack) -> str:
    md = find_skill_md(pack.root)
    return str(md) if md else str(pack.root)


def _missing(pack: Pack) -> list[Finding]:
    from agentpack.kernel.models import Finding

    return [Finding.error("SKL001", "missing required file SKILL.md", file=str(pack.root))]


@hookimpl
def agentpack_register_scaffolds(register: Callable[[ScaffoldInfo], None]) -> None:
    register(ScaffoldInfo("skill", ("skill-md", "new"), "a plain Agent Skill: one SKILL.md"))
