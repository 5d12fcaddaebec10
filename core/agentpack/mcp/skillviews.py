"""What the commands that read skills from folders make of MCP-served skills: validation items and prompt entries.

``validate`` loads a skill (every listed file, each verified, into the cache) and runs the same hooks as
for the folder on disk, so the verdicts are the same; findings name the origin (``mcp:LABEL:URI``), never
the cache. The prompt is built from the listing alone (nothing is fetched); an MCP skill never takes the
name of a local one or of another server's: a colliding name is qualified by the server's label (and the
skill's path when one server serves it twice), and the collision is reported. ``allowed-tools`` of an MCP
skill is ignored (never passed on), as the extension requires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentpack.mcp.client import McpCallError
from agentpack.mcp.skillsource import RemoteSkill, SkillSource, VerificationError

if TYPE_CHECKING:
    from agentpack.kernel.host import Host
    from agentpack.kernel.lazyreport import LazyItem
    from agentpack.kernel.models import Finding

IGNORED_FIELDS = ("allowed-tools",)
"""Frontmatter an MCP skill cannot grant itself: never honoured, never passed on."""


def validation_items(host: Host, sources: list[SkillSource], *, strict: bool = False) -> list[LazyItem]:
    """One item per skill the servers list (and per declined entry), with the verdicts of the same files on disk."""
    from agentpack.io.errors import PackError
    from agentpack.kernel.lazyreport import LazyItem
    from agentpack.kernel.models import Finding

    items: list[LazyItem] = []
    for source in sources:
        for skill in source.skills():
            try:
                folder = source.materialize(skill)
                pack = host.load(folder)
                findings = [_relocate(source, skill, f) for f in host.validate(pack, strict=strict)]
            except VerificationError as exc:
                findings = [Finding.error("MCP001", exc.message, file=skill.location, hint=exc.hint)]
            except McpCallError as exc:
                findings = [Finding.error("MCP003", f"cannot load: {exc.message}", file=skill.location)]
            except PackError as exc:
                findings = [Finding.error("PACK", exc.message, file=skill.location, line=exc.line)]
            findings += _ignored(skill)
            items.append(LazyItem(skill.location, "agent-skill", findings))
        for declined in source.declined:
            finding = Finding.error("MCP002", f"not loaded: {declined.reason}", file=declined.location)
            items.append(LazyItem(declined.location, None, [finding]))
    return items


def _relocate(source: SkillSource, skill: RemoteSkill, finding: Finding) -> Finding:
    if not finding.file:
        return finding
    origin = source.origin_of(skill, finding.file)
    return finding if origin is None else finding.model_copy(update={"file": origin})


def _ignored(skill: RemoteSkill) -> list[Finding]:
    from agentpack.kernel.models import Finding

    return [
        Finding.info(
            "MCP010",
            f"'{field}' is ignored: a skill served over MCP cannot widen the tools it may use",
            file=skill.location,
            pointer=f"/{field}",
        )
        for field in IGNORED_FIELDS
        if field in skill.entry.frontmatter
    ]


def prompt_entries(local: list[dict[str, str]], sources: list[SkillSource]) -> tuple[list[dict[str, str]], list[str]]:
    """The local entries unchanged, then each MCP skill's (name, description, location, origin); and a note for
    every collision and every entry not offered."""
    from collections import Counter

    local_names = {entry["name"] for entry in local}
    remote = [skill for source in sources for skill in source.skills()]
    everywhere = Counter(skill.name for skill in remote)
    per_server = Counter((skill.spec.label, skill.name) for skill in remote)
    entries = [{**entry, "origin": "local"} for entry in local]
    notes: list[str] = []
    for skill in remote:
        name = skill.name
        if name in local_names or everywhere[name] > 1:
            name = _qualified(skill, per_server[skill.spec.label, skill.name] > 1)
            notes.append(f"{skill.location}: another skill is named '{skill.name}'; offered as '{name}'")
        entries.append(
            {
                "name": name,
                "description": skill.entry.description,
                "location": skill.location,
                "origin": skill.spec.origin,
            }
        )
    for source in sources:
        notes += [f"{declined.location}: not offered: {declined.reason}" for declined in source.declined]
    return entries, notes


def _qualified(skill: RemoteSkill, same_server: bool) -> str:
    """``LABEL:name``, or ``LABEL:path/to/name`` when one server serves two skills of that name."""
    if same_server:
        return f"{skill.spec.label}:{'/'.join(skill.entry.path_segments)}"
    return f"{skill.spec.label}:{skill.name}"


def served_properties(sources: list[SkillSource], location: str) -> dict[str, Any]:
    """``read-properties`` of the skill at ``mcp:LABEL:URI``: its entry by ``skills/get`` (a skill the listing
    may leave out), its SKILL.md read and verified, the properties as for the file on disk, without the
    fields an MCP skill cannot grant itself."""
    from pathlib import Path

    from agentpack.io.errors import AgentpackError
    from agentpack.skills.skillmd import read_skill
    from agentpack.skills.skillprompt import properties

    _, label, uri = location.split(":", 2)
    source = next((s for s in sources if s.spec.label == label), None)
    if source is None:
        raise AgentpackError(
            f"{location}: no --mcp server is labelled '{label}'", hint=f"add --mcp {label}=COMMAND_OR_URL"
        )
    skill = source.get(uri)
    text = source.read(skill, uri).decode("utf-8")
    parsed = read_skill(Path(skill.entry.path_segments[-1]), display=skill.location, text=text)
    return {k: v for k, v in properties(parsed).items() if k not in IGNORED_FIELDS}
