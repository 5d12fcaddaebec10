"""The Skills extension's ``Skill`` entry: its shape, the rules an entry alone can be checked against, and the
comparison of a fetched ``SKILL.md`` with the entry's ``frontmatter``.

Both sides use it: the host (``mcp.skillsource``) loads no entry that breaks a rule here, and the conformance
check (``mcp.check``) reports each break as a located finding.
"""

from __future__ import annotations

import datetime
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentpack.kernel.models import Severity

DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")
URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^\x00-\x20<>\"{}|\\^`\x7f]+$")
"""A URI as RFC 3986 allows it: none of the characters it excludes (so none can break out of a prompt's markup)."""
MAX_RESOURCES = 512
MAX_TOTAL_BYTES = 16 * 1024 * 1024
SKILL_MD = "SKILL.md"


@dataclass(frozen=True)
class FileEntry:
    """One ``SkillResource``: a file of the skill with the digest and size of its raw bytes."""

    uri: str
    digest: str
    size: int


@dataclass(frozen=True)
class SkillEntry:
    """One ``Skill`` entry: the URI of its SKILL.md, the frontmatter, and its files (None: ``"dynamic"``)."""

    uri: str
    frontmatter: dict[str, Any]
    files: tuple[FileEntry, ...] | None

    @property
    def name(self) -> str:
        return str(self.frontmatter.get("name", ""))

    @property
    def description(self) -> str:
        return str(self.frontmatter.get("description", ""))

    @property
    def root(self) -> str:
        """The skill's root directory URI: the SKILL.md URI without ``/SKILL.md``."""
        return self.uri[: -len(SKILL_MD) - 1]

    @property
    def path_segments(self) -> list[str]:
        """The ``<skill-path>`` segments (authority included) of the URI."""
        rest = self.root.split("://", 1)[-1]
        return [segment for segment in rest.split("/")]

    def file(self, uri: str) -> FileEntry | None:
        return next((f for f in self.files or () if f.uri == uri), None)


@dataclass(frozen=True)
class Problem:
    """A rule an entry breaks: a stable code, the JSON pointer inside the entry, and what is wrong."""

    code: str
    pointer: str
    message: str
    severity: Severity = "error"


def parse_entry(raw: Any) -> tuple[SkillEntry | None, list[Problem]]:
    """The entry ``raw`` describes, or None when its shape is invalid (a host must not load it); and every rule it
    breaks. A name that breaks the naming rules leaves the entry: validation reports it as it would on disk."""
    if not isinstance(raw, dict):
        return None, [Problem("MCS020", "", "the entry is not an object")]
    problems: list[Problem] = []
    uri = raw.get("uri")
    front = raw.get("frontmatter")
    if not isinstance(uri, str) or not uri:
        problems.append(Problem("MCS020", "/uri", "the entry has no 'uri' string"))
    elif not URI.match(uri) or not uri.endswith("/" + SKILL_MD):
        problems.append(Problem("MCS021", "/uri", f"'uri' {uri!r} is not the URI of a skill's SKILL.md"))
    if not isinstance(front, dict):
        problems.append(Problem("MCS020", "/frontmatter", "the entry has no 'frontmatter' object"))
    else:
        for field in ("name", "description"):
            if not isinstance(front.get(field), str) or not front[field]:
                problems.append(Problem("MCS020", f"/frontmatter/{field}", f"'frontmatter.{field}' must be a string"))
    files, file_problems = _parse_resources(raw.get("resources"), uri if isinstance(uri, str) else "")
    problems += file_problems
    if problems and any(p.severity == "error" for p in problems):
        return None, problems
    entry = SkillEntry(uri=str(uri), frontmatter=dict(front or {}), files=files)
    return entry, problems + _name_problems(entry)


def _parse_resources(value: Any, uri: str) -> tuple[tuple[FileEntry, ...] | None, list[Problem]]:
    if value == "dynamic":
        return None, []
    if not isinstance(value, list):
        what = "missing" if value is None else f'{type(value).__name__}, neither an array nor "dynamic"'
        return None, [Problem("MCS030", "/resources", f"'resources' is {what}: a host must not load the entry")]
    problems: list[Problem] = []
    files: list[FileEntry] = []
    root = uri[: -len(SKILL_MD)] if uri.endswith(SKILL_MD) else uri
    seen: set[str] = set()
    for i, item in enumerate(value):
        where = f"/resources/{i}"
        if not isinstance(item, dict):
            problems.append(Problem("MCS030", where, "the file entry is not an object"))
            continue
        file_uri, digest, size = item.get("uri"), item.get("digest"), item.get("size")
        if not isinstance(file_uri, str) or not file_uri.startswith(root) or file_uri == root:
            problems.append(Problem("MCS030", f"{where}/uri", f"{file_uri!r} is not a file of the skill {uri}"))
            continue
        if ".." in file_uri[len(root) :].split("/"):
            problems.append(Problem("MCS030", f"{where}/uri", f"{file_uri!r} leaves the skill's directory"))
            continue
        if file_uri in seen:
            problems.append(Problem("MCS030", f"{where}/uri", f"{file_uri} is listed twice"))
            continue
        seen.add(file_uri)
        if not isinstance(digest, str) or not DIGEST.match(digest):
            problems.append(Problem("MCS031", f"{where}/digest", f"digest {digest!r} is not 'sha256:' + 64 hex digits"))
            continue
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            problems.append(Problem("MCS031", f"{where}/size", f"size {size!r} is not a byte count"))
            continue
        files.append(FileEntry(file_uri, digest, size))
    if uri and uri not in seen:
        problems.append(Problem("MCS030", "/resources", f"the manifest does not list the skill's own {uri}"))
    if len(files) > MAX_RESOURCES:
        problems.append(
            Problem("MCS050", "/resources", f"{len(files)} files, more than the limit of {MAX_RESOURCES}", "warning")
        )
    total = sum(f.size for f in files)
    if total > MAX_TOTAL_BYTES:
        problems.append(
            Problem(
                "MCS050", "/resources", f"{total} bytes in all, more than the limit of {MAX_TOTAL_BYTES}", "warning"
            )
        )
    return tuple(files), problems


def _name_problems(entry: SkillEntry) -> list[Problem]:
    from agentpack.skills.skillmd import validate_frontmatter

    last = entry.path_segments[-1] if entry.path_segments else ""
    if last != entry.name:
        return [
            Problem(
                "MCS021",
                "/uri",
                f"the last path segment {last!r} of {entry.uri} is not the skill's name {entry.name!r}",
            )
        ]
    naming = validate_frontmatter({"name": entry.name, "description": "-"}, None)
    return [Problem("MCS022", "/frontmatter/name", f"{f.code}: {f.message}") for f in naming]


def over_limits(entry: SkillEntry) -> str | None:
    """Why a host declines ``entry`` for the extension's limits, or None."""
    if entry.files is None:
        return None
    if len(entry.files) > MAX_RESOURCES:
        return f"it has {len(entry.files)} files, more than the {MAX_RESOURCES} every host must accept"
    total = sum(f.size for f in entry.files)
    if total > MAX_TOTAL_BYTES:
        return f"its files total {total} bytes, more than the {MAX_TOTAL_BYTES} every host must accept"
    return None


def frontmatter_of(data: bytes, *, file: str) -> dict[str, Any]:
    """The YAML frontmatter of a fetched SKILL.md as a standard YAML parser reads it, rendered as JSON would
    carry it (dates and times as ISO 8601 strings). Raises ``PackError`` when there is none."""
    from agentpack.io.errors import PackError
    from agentpack.io.frontmatter import split_frontmatter
    from agentpack.io.yamlio import parse_yaml

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PackError(f"SKILL.md is not UTF-8 (byte {exc.start})", file=file) from None
    front, _, _ = split_frontmatter(text, file=file)
    parsed = parse_yaml(front, file=file).data
    if not isinstance(parsed, dict):
        raise PackError("SKILL.md frontmatter is not a YAML mapping", file=file, line=1)
    result: dict[str, Any] = _as_json(parsed)
    return result


def _as_json(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _as_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_json(v) for v in value]
    if isinstance(value, datetime.date):
        return value.isoformat()
    return value


def frontmatter_differences(entry: dict[str, Any], fetched: dict[str, Any]) -> list[str]:
    """The fields in which the entry's ``frontmatter`` and the fetched SKILL.md's differ (field by field)."""
    keys = sorted(set(entry) | set(fetched))
    return [key for key in keys if key not in entry or key not in fetched or not _same(entry[key], fetched[key])]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return not frontmatter_differences(a, b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b) and (isinstance(a, str) == isinstance(b, str))
