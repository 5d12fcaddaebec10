"""The Agent Skills ``agentpack mcp serve`` publishes (the MCP Skills extension, SEP-2640), as a snapshot.

A ``Snapshot`` holds every published file's bytes, read once: ``skills/list``, ``skills/get``,
``resources/read`` and ``resources/directory/read`` all answer from it, so a read never disagrees
with the digests a listing gave. The server builds a new one when the files change.

What is published (decisions, in docs/mcp.md): every folder holding a ``SKILL.md`` that passes the
Agent Skills rules, with every file under it (nested skills' files included, as the extension says);
files and folders whose name starts with ``.`` are not part of a skill; a symbolic link is followed
only to a regular file inside the same skill; a skill over 512 files or 16 MiB is not published.
Each skill left out is named on stderr with the reason.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote

from agentpack.io.errors import AgentpackError
from agentpack.kernel.registry import SkillTree

log = logging.getLogger("agentpack.mcp")

EXTENSION = "io.modelcontextprotocol/skills"
SCHEME = "skill://"
MAX_FILES = 512
MAX_BYTES = 16 * 1024 * 1024
DIRECTORY = "inode/directory"
_MIME = {".md": "text/markdown", ".yaml": "application/yaml", ".yml": "application/yaml", ".json": "application/json"}


def digest(data: bytes) -> str:
    """``sha256:{hex}`` of raw bytes, as skill entries carry it."""
    from hashlib import sha256

    return "sha256:" + sha256(data).hexdigest()


def mime_type(name: str, data: bytes) -> str:
    """The MIME type of a published file: by suffix, else text or bytes by content."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in _MIME:
        return _MIME[suffix]
    import mimetypes

    guessed = mimetypes.guess_type(name)[0]
    if guessed:
        return guessed
    return "text/plain" if as_text(data) is not None else "application/octet-stream"


def as_text(data: bytes) -> str | None:
    """``data`` as text when it is UTF-8 (sent as ``text``, its bytes unchanged), else None (a ``blob``)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def uri_of(path: str) -> str:
    """The ``skill://`` URI of a namespace path (each segment percent-encoded where URIs need it)."""
    return SCHEME + "/".join(quote(part, safe="-._~!$&'()*+,;=:@") for part in path.split("/"))


@dataclass(frozen=True)
class PublishedFile:
    uri: str
    data: bytes
    digest: str
    mime_type: str


@dataclass(frozen=True)
class PublishedSkill:
    path: str
    """Where the skill sits in the namespace; the last segment is its name."""
    frontmatter: dict[str, Any]
    body: str
    files: tuple[PublishedFile, ...]

    @property
    def uri(self) -> str:
        return uri_of(self.path + "/SKILL.md")

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    def entry(self) -> dict[str, Any]:
        """The ``Skill`` entry of ``skills/list`` and ``skills/get``."""
        return {
            "uri": self.uri,
            "frontmatter": self.frontmatter,
            "resources": [{"uri": f.uri, "digest": f.digest, "size": len(f.data)} for f in self.files],
        }


@dataclass
class Snapshot:
    """Every published skill and file at one moment."""

    skills: dict[str, PublishedSkill] = field(default_factory=dict)
    """By the URI of the SKILL.md."""
    files: dict[str, PublishedFile] = field(default_factory=dict)
    """By URI; a file of a nested skill is one file of both skills."""
    directories: dict[str, dict[str, bool]] = field(default_factory=dict)
    """Directory URI -> its children's URIs (True: a directory)."""

    def add(self, skill: PublishedSkill) -> bool:
        if skill.uri in self.skills:
            log.warning("skill %s is published once: another served pack has the same path", skill.uri)
            return False
        self.skills[skill.uri] = skill
        for item in skill.files:
            self.files[item.uri] = item
            child, is_dir = item.uri, False
            while "/" in child[len(SCHEME) :]:
                parent = child.rsplit("/", 1)[0]
                self.directories.setdefault(parent, {})[child] = is_dir
                child, is_dir = parent, True
        return True

    def fingerprint(self) -> tuple[tuple[str, str], ...]:
        """What a client sees of the snapshot: a change means list_changed."""
        return tuple(sorted((uri, item.digest) for uri, item in self.files.items())) + tuple(
            (uri, "skill") for uri in sorted(self.skills)
        )


def build(trees: Iterable[SkillTree]) -> Snapshot:
    """A snapshot of the skills in ``trees`` (each left out skill is logged with the reason)."""
    snapshot = Snapshot()
    for tree in trees:
        for skill in _tree_skills(tree):
            snapshot.add(skill)
    return snapshot


@dataclass
class _Tree:
    """A tree's files, by path relative to its root, read on demand."""

    sizes: dict[str, int]
    read: Callable[[str], bytes]
    root_name: str | None
    shown: str


def _tree_skills(tree: SkillTree) -> list[PublishedSkill]:
    if tree.files is not None:
        files = tree.files
        loaded = _Tree({p: len(b) for p, b in files.items()}, files.__getitem__, None, tree.prefix or "(in memory)")
    elif tree.root is not None:
        loaded = _walk(tree.root)
    else:
        return []
    sizes = {p: s for p, s in loaded.sizes.items() if not (tree.exclude and tree.exclude(p)) and not _hidden(p)}
    found: list[PublishedSkill] = []
    for folder in sorted({str(PurePosixPath(p).parent) for p in sizes if PurePosixPath(p).name == "SKILL.md"}):
        folder = "" if folder == "." else folder
        if not folder and loaded.root_name is None:
            log.warning("%s/SKILL.md is not published: a skill tree in memory holds skills in folders", loaded.shown)
            continue
        path = "/".join(p for p in (tree.prefix, loaded.root_name, folder) if p)
        members = sorted(p for p in sizes if not folder or p.startswith(folder + "/"))
        skill = _publish(path, folder, members, sizes, loaded)
        if skill is not None:
            found.append(skill)
    return found


def _hidden(path: str) -> bool:
    return any(part.startswith(".") for part in path.split("/"))


def _publish(path: str, folder: str, members: list[str], sizes: dict[str, int], tree: _Tree) -> PublishedSkill | None:
    """The skill in ``folder`` of ``tree`` at namespace ``path``, or None (logged) when it is not published."""
    from agentpack.io.frontmatter import frontmatter_json, split_frontmatter
    from agentpack.skills.skillmd import validate_skill_dir

    shown = f"{tree.shown}/{folder}" if folder else tree.shown
    total = sum(sizes[p] for p in members)
    if len(members) > MAX_FILES or total > MAX_BYTES:
        log.warning(
            "skill %s is not published: %d files, %d bytes (the MCP limits: %d files, %d bytes)",
            shown,
            len(members),
            total,
            MAX_FILES,
            MAX_BYTES,
        )
        return None
    offset = len(folder) + 1 if folder else 0
    try:
        data = {p: tree.read(p) for p in members}
        text = data[f"{folder}/SKILL.md" if folder else "SKILL.md"].decode("utf-8")
        skill, findings = validate_skill_dir(Path(shown), display=f"{shown}/SKILL.md", text=text)
        errors = [f for f in findings if f.severity == "error"]
        if skill is None or errors:
            first = errors[0] if errors else findings[0]
            where = f"{first.file}:{first.line}" if first.line else str(first.file)
            log.warning("skill %s is not published: %s: %s", shown, where, first.message)
            return None
        front, _, _ = split_frontmatter(text, file=f"{shown}/SKILL.md")
        frontmatter = frontmatter_json(front, file=f"{shown}/SKILL.md")
    except (AgentpackError, UnicodeDecodeError, OSError) as exc:
        log.warning("skill %s is not published: %s", shown, exc)
        return None
    name = path.rsplit("/", 1)[-1]
    if frontmatter.get("name") != name or not isinstance(frontmatter.get("description"), str):
        log.warning(
            "skill %s is not published: a YAML parser reads its name as %r and its description as %r; "
            "the name must be the string '%s' and the description a string",
            shown,
            frontmatter.get("name"),
            frontmatter.get("description"),
            name,
        )
        return None
    files = tuple(
        PublishedFile(uri_of(f"{path}/{p[offset:]}"), raw, digest(raw), mime_type(p, raw)) for p, raw in data.items()
    )
    return PublishedSkill(path=path, frontmatter=frontmatter, body=skill.body, files=files)


def _walk(root: Path) -> _Tree:
    """The regular files under ``root`` (links to regular files inside the folder they are in)."""
    sizes: dict[str, int] = {}
    targets: dict[str, str] = {}
    base = os.path.realpath(root)
    for current, dirs, names in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and not os.path.islink(os.path.join(current, d)))
        for name in names:
            if name.startswith("."):
                continue
            full = os.path.join(current, name)
            relative = os.path.relpath(full, base).replace(os.sep, "/")
            try:
                info = os.lstat(full)
                if stat.S_ISLNK(info.st_mode):
                    target = os.path.realpath(full)
                    if os.path.dirname(target) != current and not target.startswith(current + os.sep):
                        log.warning("%s is not published: a link out of its folder", full)
                        continue
                    info = os.stat(target)
                    targets[relative] = target
                if stat.S_ISREG(info.st_mode):
                    sizes[relative] = info.st_size
            except OSError as exc:
                log.warning("%s is not published: %s", full, exc.strerror or exc)

    def read(relative: str) -> bytes:
        with open(targets.get(relative) or os.path.join(base, relative), "rb") as handle:
            return handle.read()

    from agentpack.skills.skillmd import folder_name

    root_name = folder_name(Path(base)) if os.path.isfile(os.path.join(base, "SKILL.md")) else None
    return _Tree(sizes, read, root_name, str(root))
