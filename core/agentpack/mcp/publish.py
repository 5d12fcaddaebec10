"""Everything ``agentpack mcp serve`` publishes besides tools, at one moment: skills, resources, prompts.

``collect`` asks the plugins (``agentpack_register_mcp_content``) and publishes every ``SKILL.md``
under a served pack no plugin covers; ``Watch`` tells when the served files changed, so the server
builds a new ``Publication`` and says ``list_changed``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agentpack.kernel.registry import McpPrompt, McpResource, SkillTree
from agentpack.mcp.skills import Snapshot, build

if TYPE_CHECKING:
    from agentpack.kernel.host import Host
    from agentpack.kernel.registry import McpContext

log = logging.getLogger("agentpack.mcp")


@dataclass
class Publication:
    snapshot: Snapshot = field(default_factory=Snapshot)
    resources: dict[str, McpResource] = field(default_factory=dict)
    """Plugin resources (knowledge), by URI."""
    prompts: dict[str, McpPrompt] = field(default_factory=dict)
    """By name: each skill's SKILL.md body, and the plugins' prompts."""

    def fingerprint(self) -> tuple[object, ...]:
        return (self.snapshot.fingerprint(), tuple(sorted(self.resources)), tuple(sorted(self.prompts)))


def collect(host: Host, context: McpContext) -> Publication:
    """What the packs of ``context`` publish now."""
    contents = host.mcp_content(context)
    covered = {Path(p).resolve() for c in contents.values() for p in c.covers}
    trees = [SkillTree(root=Path(p)) for p in context.packs if Path(p).resolve() not in covered and Path(p).is_dir()]
    for content in contents.values():
        trees += content.skills
    publication = Publication(snapshot=build(trees))
    for content in contents.values():
        for resource in content.resources:
            if resource.uri in publication.snapshot.files or resource.uri in publication.resources:
                log.warning("resource %s is published once (plugin %s offers it again)", resource.uri, content.plugin)
                continue
            publication.resources[resource.uri] = resource
    for skill in publication.snapshot.skills.values():
        name = skill.name if skill.name not in publication.prompts else skill.path.replace("/", "_")
        publication.prompts[name] = McpPrompt(
            name=name,
            title=skill.name,
            description=f"The instructions of the skill {skill.name} ({skill.uri}): {skill.frontmatter['description']}",
            render=_body(skill.body),
        )
    for content in contents.values():
        for prompt in content.prompts:
            if prompt.name in publication.prompts:
                log.warning("prompt %s is published once (plugin %s offers it again)", prompt.name, content.plugin)
                continue
            publication.prompts[prompt.name] = prompt
    return publication


def _body(text: str) -> Callable[[dict[str, str]], str]:
    def render(arguments: dict[str, str]) -> str:
        return text

    return render


class Watch:
    """Tells whether the files under the served packs changed since the last look (by their stat)."""

    def __init__(self, packs: list[Path]) -> None:
        self.packs = packs
        self.seen = self.look()

    def look(self) -> frozenset[tuple[str, int, int]]:
        found: set[tuple[str, int, int]] = set()
        for pack in self.packs:
            for current, dirs, names in os.walk(pack):
                dirs[:] = [d for d in dirs if not d.startswith(".")]
                for name in names:
                    full = os.path.join(current, name)
                    try:
                        info = os.stat(full)
                    except OSError:
                        continue
                    found.add((full, info.st_size, info.st_mtime_ns))
            if os.path.isfile(pack):
                info = os.stat(pack)
                found.add((str(pack), info.st_size, info.st_mtime_ns))
        return frozenset(found)

    def changed(self) -> bool:
        now = self.look()
        if now == self.seen:
            return False
        self.seen = now
        return True
