"""Skills from MCP servers, read as the Skills extension asks a host to (SEP-2640, "a host done right").

- ``skills/*`` is called only after the server declared the extension; every page of ``skills/list`` is read.
- Nothing is fetched ahead of need: a listing or a prompt needs the entries only; ``SKILL.md`` is fetched when
  a skill is loaded, another file when it is read.
- Every read is verified against the entry: size, then SHA-256 digest, then (for ``SKILL.md``) the frontmatter
  field by field. A file the entry does not list is a verification failure, never read.
- Skills are keyed by (host-assigned server label, URI), never by name; ``location`` tags the origin.
- Entries of invalid shape and ``"dynamic"`` skills (no integrity to verify) are declined, with the reason.

Commands are synchronous; the connections live on an anyio blocking portal (an event loop on one thread).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError
from agentpack.mcp.client import Connection, ServerSpec, connect
from agentpack.mcp.entries import SKILL_MD, FileEntry, Problem, SkillEntry, frontmatter_differences, frontmatter_of
from agentpack.mcp.skillcache import SkillCache


class VerificationError(AgentpackError):
    """What a server sent is not what its entry describes: the content is not used."""


@dataclass(frozen=True)
class RemoteSkill:
    """A skill served by one server: its identity is (``label``, ``entry.uri``)."""

    spec: ServerSpec
    entry: SkillEntry

    @property
    def key(self) -> tuple[str, str]:
        return (self.spec.label, self.entry.uri)

    @property
    def location(self) -> str:
        """The origin-tagged address every output shows: ``mcp:LABEL:URI``."""
        return locate(self.spec, self.entry.uri)

    @property
    def name(self) -> str:
        return self.entry.name


def locate(spec: ServerSpec, uri: str) -> str:
    return f"{spec.origin}:{uri}"


@dataclass
class Declined:
    """An entry the host does not load, and why."""

    location: str
    reason: str
    problems: list[Problem] = field(default_factory=list)


class SkillSource:
    """The skills of one server, read through an open connection on ``portal``."""

    def __init__(self, spec: ServerSpec, connection: Connection, portal: Any, cache: SkillCache) -> None:
        self.spec = spec
        self.connection = connection
        self.portal = portal
        self.cache = cache
        self.declined: list[Declined] = []
        self._skills: list[RemoteSkill] | None = None

    def skills(self) -> list[RemoteSkill]:
        """Every skill the listing offers (all pages), in listing order; declined entries go to ``declined``."""
        if self._skills is None:
            self.connection.require_extension()
            raws = self.portal.call(self._list)
            self._skills = [skill for raw in raws if (skill := self._accept(raw)) is not None]
        return self._skills

    async def _list(self) -> list[Any]:
        raws: list[Any] = []
        async for page in self.connection.pages("skills/list", "skills"):
            raws += page["skills"]
        return raws

    def get(self, uri: str) -> RemoteSkill:
        """The skill at ``uri`` by ``skills/get`` (a skill the listing may not show); an error when not served."""
        self.connection.require_extension()
        result = self.portal.call(self.connection.request, "skills/get", {"uri": uri})
        skill = self._accept(result.get("skill"))
        if skill is None:
            raise AgentpackError(f"{locate(self.spec, uri)}: {self.declined[-1].reason}")
        return skill

    def _accept(self, raw: Any) -> RemoteSkill | None:
        from agentpack.mcp.entries import parse_entry

        entry, problems = parse_entry(raw)
        uri = raw.get("uri") if isinstance(raw, dict) else None
        where = locate(self.spec, uri if isinstance(uri, str) else "(no uri)")
        if entry is None:
            first = next(p for p in problems if p.severity == "error")
            self.declined.append(Declined(where, f"invalid entry: {first.message}", problems))
            return None
        if entry.files is None:
            self.declined.append(Declined(where, 'its resources are "dynamic": no digest to verify it against'))
            return None
        from agentpack.mcp.entries import over_limits

        reason = over_limits(entry)
        if reason is not None:
            self.declined.append(Declined(where, f"declined: {reason}"))
            return None
        return RemoteSkill(self.spec, entry)

    def read(self, skill: RemoteSkill, uri: str) -> bytes:
        """The verified bytes of one file of ``skill`` (from the cache when its digest still matches)."""
        listed = skill.entry.file(uri)
        if listed is None:
            raise VerificationError(
                f"{locate(self.spec, uri)}: not a file of {skill.location}: an unlisted file is never read",
                hint="the skill changed since its entry was read; list the skills again",
            )
        cached = self.cache.get(self.spec.label, uri, listed.digest)
        if cached is not None:
            data = cached
        else:
            data, _ = self.portal.call(self.connection.read, uri)
            self._verify(listed, data)
        if uri == skill.entry.uri:
            self._verify_frontmatter(skill, data)
        if cached is None:
            self.cache.put(self.spec.label, uri, data)
        return data

    def _verify(self, listed: FileEntry, data: bytes) -> None:
        from agentpack.io.hashing import sha256_bytes

        where = locate(self.spec, listed.uri)
        if len(data) != listed.size:
            raise VerificationError(f"{where}: read {len(data)} bytes, the entry says {listed.size}; not used")
        digest = f"sha256:{sha256_bytes(data)}"
        if digest != listed.digest:
            raise VerificationError(f"{where}: the bytes hash to {digest}, the entry says {listed.digest}; not used")

    def _verify_frontmatter(self, skill: RemoteSkill, data: bytes) -> None:
        from agentpack.io.errors import PackError

        try:
            fetched = frontmatter_of(data, file=skill.location)
        except PackError as exc:
            raise VerificationError(f"{skill.location}: {exc.message}; the entry's frontmatter cannot match") from None
        differ = frontmatter_differences(skill.entry.frontmatter, fetched)
        if differ:
            raise VerificationError(
                f"{skill.location}: the frontmatter of SKILL.md differs from the entry's in {', '.join(differ)}; "
                "not loaded"
            )

    def materialize(self, skill: RemoteSkill) -> Path:
        """Every file of ``skill`` verified into the cache, ``SKILL.md`` first (nothing else is read when it fails
        verification); returns the skill's folder there."""
        self.read(skill, skill.entry.uri)
        for listed in skill.entry.files or ():
            if listed.uri != skill.entry.uri:
                self.read(skill, listed.uri)
        return self.skill_dir(skill)

    def skill_dir(self, skill: RemoteSkill) -> Path:
        return self.cache.path(self.spec.label, skill.entry.uri).parent

    def origin_of(self, skill: RemoteSkill, path: str) -> str | None:
        """The origin-tagged address of a cache ``path`` inside ``skill``'s folder, or None when outside it."""
        import os

        folder = str(self.skill_dir(skill))
        if path != folder and not path.startswith(folder + os.sep):
            return None
        rest = path[len(folder) :].lstrip(os.sep).replace(os.sep, "/")
        return locate(self.spec, f"{skill.entry.root}/{rest}" if rest else skill.entry.root)


@contextmanager
def open_sources(
    specs: list[ServerSpec], *, cache: SkillCache | None = None, targets: dict[str, Any] | None = None
) -> Iterator[list[SkillSource]]:
    """An open ``SkillSource`` per server, closed (and stdio servers stopped) on exit.

    ``targets`` maps a label to what to connect to instead of its command or URL (tests: an in-process server).
    """
    from anyio.from_thread import start_blocking_portal

    cache = cache or SkillCache()
    with ExitStack() as stack:
        portal = stack.enter_context(start_blocking_portal())
        sources = []
        for spec in specs:
            target = (targets or {}).get(spec.label)
            connection = stack.enter_context(portal.wrap_async_context_manager(connect(spec, target)))
            sources.append(SkillSource(spec, connection, portal, cache))
        yield sources


__all__ = ["SKILL_MD", "Declined", "RemoteSkill", "SkillSource", "VerificationError", "locate", "open_sources"]
