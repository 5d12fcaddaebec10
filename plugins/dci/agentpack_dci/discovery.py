"""``discover_installed_accessible_skills``: workspace skills, runtime roots, then mounted roots.

Order is deterministic: sources in the spec's order, roots in the order given,
skills inside a root sorted by their POSIX path. Frontmatter is validated by the
core (``validate_skill_dir``); any error rejects the skill with the core's
finding as the reason. Duplicates by ``skill-name::skill-path`` keep the first.
Parsed skills are cached by (real path, mtime, size), so a refresh re-reads only
changed files.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from stat import S_ISREG
from typing import Any, ClassVar, NamedTuple

from agentpack.io.errors import AgentpackError
from agentpack.io.hashing import sha256_json, sha256_text
from agentpack.io.userfiles import read_text
from agentpack.kernel.records import Record, constant
from agentpack.skills.skillmd import validate_skill_dir

from .config import WorkspaceConfig
from .grammar import Contract, ContractParseError, parse_contract
from .text import tokenize

WORKSPACE, RUNTIME, EXTERNAL = "workspace-local", "runtime-installed", "external-mounts"
SOURCES = (WORKSPACE, RUNTIME, EXTERNAL)


class Root(NamedTuple):
    source: str
    path: Path
    label: str


@dataclass
class SkillRecord:
    """One included candidate with the token statistics every query reuses."""

    id: str
    name: str
    path: str
    source: str
    directory: Path
    description: str
    compatibility: str | None
    contract_text: str | None
    contract: Contract | None
    contract_error: ContractParseError | None
    desc_tf: Counter
    desc_length: int
    namepath_tokens: frozenset[str]
    provisional: frozenset[str]
    runtime_tokens: tuple[str, ...]
    meta: dict = field(default_factory=dict, repr=False)
    """The frontmatter as read (strings only)."""
    _metadata_hash: str | None = field(default=None, repr=False, compare=False)

    @property
    def metadata_hash(self) -> str:
        """SHA-256 of the canonical JSON of the frontmatter (a match-cache key), computed when first needed."""
        if self._metadata_hash is None:
            self._metadata_hash = sha256_json(self.meta)
        return self._metadata_hash


class Rejection(NamedTuple):
    id: str
    reason: str
    source: str


class Discovery(Record):
    __slots__ = ("records", "rejections", "roots", "sources_scanned", "discovered", "fingerprint")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"fingerprint": constant("")}
    records: list[SkillRecord]
    rejections: list[Rejection]
    roots: list[dict]
    sources_scanned: list[str]
    discovered: int
    fingerprint: str

    @property
    def counts(self) -> dict[str, int]:
        return {
            "discovered": self.discovered,
            "included": len(self.records),
            "excluded": self.discovered - len(self.records),
        }


class _Parsed(NamedTuple):
    record: SkillRecord | None
    reason: str | None
    name: str | None = None


class SkillCache(Record):
    """Parsed skills keyed by (real path of SKILL.md, mtime_ns, size) and display path."""

    __slots__ = ("entries",)
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"entries": dict}
    entries: dict[tuple, _Parsed]


def skill_files(root: Path) -> list[Path]:
    """Every ``SKILL.md`` under ``root`` (hidden folders skipped, symlinked folders not followed), sorted
    by the POSIX path of the skill folder relative to ``root``."""
    return [Path(directory, "SKILL.md") for _, directory, _ in _skill_dirs(root)]


def _skill_dirs(root: Path) -> list[tuple[str, str, bool]]:
    """``(relative POSIX folder, folder, SKILL.md is a symlink)`` for every skill under ``root``, sorted
    by the relative folder (``.`` for ``root`` itself). One ``scandir`` per folder, as ``os.walk`` does,
    without building paths for files that are not ``SKILL.md``."""
    base = str(root)
    if os.path.isfile(os.path.join(base, "SKILL.md")):
        return [(".", base, os.path.islink(os.path.join(base, "SKILL.md")))]
    found: list[tuple[str, str, bool]] = []
    stack = [(base, ".")]
    while stack:
        directory, rel = stack.pop()
        subdirs: list[tuple[str, str]] = []
        link: bool | None = None
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    name = entry.name
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if name == "SKILL.md":  # a folder of that name too: validation says it is no file
                        link = entry.is_symlink()
                    elif is_dir and name[0] != "." and not entry.is_symlink():
                        subdirs.append((entry.path, name if rel == "." else f"{rel}/{name}"))
        except OSError:  # unreadable folder: skipped, as os.walk skips it
            continue
        if link is not None:
            found.append((rel, directory, link))
        stack.extend(subdirs)
    found.sort()
    return found


def _id_path(real: str, ws_real: str) -> str:
    """The ``skill-path`` of a candidate id (both real paths): workspace-relative when inside it, else absolute."""
    if real == ws_real:
        return "."
    prefix = ws_real.rstrip(os.sep) + os.sep
    if real.startswith(prefix):  # both are real paths: the relative path is the rest
        return real[len(prefix) :].replace(os.sep, "/")
    return Path(real).as_posix()


def _read(skill_md: str) -> str | None:
    """The text of a regular SKILL.md, read once and decoded as the core reads it (UTF-8, universal
    newlines); None when it cannot be read that way (not UTF-8, a FIFO, a folder...), so the core reads it
    again and reports why. ``agentpack.io.userfiles`` reads with ``os.read`` on a descriptor: a third of the
    cost of ``open().read()`` for small files."""
    try:
        return read_text(skill_md)
    except AgentpackError:
        return None


def _parse(directory: Path, rel: str, source: str, path: str, text: str | None) -> _Parsed:
    """Validate one skill with the core and compute the token statistics every query reuses."""
    skill, findings = validate_skill_dir(directory, display=f"{path}/SKILL.md", text=text)
    errors = [f for f in findings if f.severity == "error"] if findings else findings
    if skill is None or errors:
        return _rejected(errors)
    return _record(skill.meta, directory, rel, source, path)


def _rejected(errors: list[Any]) -> _Parsed:
    first = errors[0]
    where = first.location()
    return _Parsed(None, f"invalid frontmatter: {first.code} {first.message}" + (f" ({where})" if where else ""))


def remote_candidate(location: str, folder: str, frontmatter: dict[str, Any]) -> _Parsed:
    """A candidate served over MCP, from its ``skills/list`` entry alone (nothing is fetched to resolve).

    ``location`` is the origin-tagged ``mcp:LABEL:URI``, ``folder`` the last segment of the skill's path; the
    frontmatter's scalars are read as strings, as
    SKILL.md frontmatter is on disk, and checked by the same core rules (the name against the URI's last
    segment, as a folder's name on disk).
    """
    from agentpack.skills.skillmd import validate_frontmatter

    meta = _strings(frontmatter)
    errors = [f for f in validate_frontmatter(meta, Path(folder)) if f.severity == "error"]
    if errors:
        return _rejected(errors)
    return _record(meta, Path(location), folder, EXTERNAL, location)


def _strings(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strings(v) for v in value]
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    return value if isinstance(value, str) else str(value)


def _record(meta: dict[str, Any], directory: Path, rel: str, source: str, path: str) -> _Parsed:
    name = meta["name"].strip()
    contract = error = None
    metadata = meta.get("metadata")
    contract_text = metadata.get("contract") if isinstance(metadata, dict) else None
    if contract_text is not None:
        if isinstance(contract_text, str):
            try:
                contract = parse_contract(contract_text)
            except ContractParseError as exc:
                error = exc
        else:
            error = ContractParseError("metadata.contract must be a string", 1)
            contract_text = None
    description = meta["description"].strip()
    # tokens of "name description" and of "name rel": the name's are the same in both (a space splits)
    name_tokens = tokenize(name)
    desc_tokens = name_tokens + tokenize(description)
    compat = meta.get("compatibility") if isinstance(meta.get("compatibility"), str) else None
    runtime_tokens = tuple(t.strip().lower() for t in compat.split(",")) if compat else ()
    # provisional capabilities only matter for a skill without a parsed contract; the name as joined_stem gives it
    provisional = frozenset(desc_tokens) | {"-".join(name_tokens)} - {""} if contract is None else frozenset()
    record = SkillRecord(
        id=f"{name}::{path}",
        name=name,
        path=path,
        source=source,
        directory=directory,
        description=description,
        compatibility=compat,
        meta=meta,
        contract_text=contract_text,
        contract=contract,
        contract_error=error,
        desc_tf=Counter(desc_tokens),
        desc_length=len(desc_tokens),
        namepath_tokens=frozenset(name_tokens if rel in (".", name) else name_tokens + tokenize(rel)),
        provisional=provisional,
        runtime_tokens=tuple(t for t in runtime_tokens if t),
    )
    return _Parsed(record, None, name)


def discover(
    workspace: Path,
    config: WorkspaceConfig,
    *,
    runtime_roots: Iterable[str | Path] = (),
    external_roots: Iterable[str | Path] = (),
    cache: SkillCache | None = None,
    remote: Iterable[tuple[str, str, dict[str, Any]]] = (),
) -> Discovery:
    """Enumerate candidates in the spec's order and record every rejection with its reason.

    ``remote``: skills served over MCP, ``(location, folder, frontmatter)`` from their entries; they count as
    external mounts, after every local root (a tie between equal scores goes to the local skill).
    """
    cache = cache or SkillCache()
    roots = [Root(WORKSPACE, workspace / "skills", "skills")]
    roots += [Root(RUNTIME, _under(workspace, p), str(p)) for p in (*config.runtime_roots, *runtime_roots)]
    roots += [Root(EXTERNAL, _under(workspace, p), str(p)) for p in (*config.external_roots, *external_roots)]
    records: list[SkillRecord] = []
    rejections: list[Rejection] = []
    seen: dict[str, str] = {}
    root_log: list[dict] = []
    scanned: list[str] = []
    discovered = 0
    ws_real = os.path.realpath(workspace)
    entries = cache.entries
    included: list[tuple] = []
    disabled = config.disabled

    def admit(parsed: _Parsed, path: str, source: str) -> bool:
        record = parsed.record
        if record is None:
            rejections.append(Rejection(path, parsed.reason or "rejected", source))
            return False
        if record.name in disabled or record.id in disabled:
            rejections.append(Rejection(record.id, "disabled by .dci/config.v1.json", source))
            return False
        if record.id in seen:
            rejections.append(Rejection(record.id, f"duplicate of the candidate found in {seen[record.id]}", source))
            return False
        seen[record.id] = source
        records.append(record)
        return True

    for root in roots:
        exists = root.path.is_dir()
        found = _skill_dirs(root.path) if exists else []
        root_log.append({"source": root.source, "root": root.label, "exists": exists, "skills": len(found)})
        if exists and root.source not in scanned:
            scanned.append(root.source)
        root_real = os.path.realpath(root.path).rstrip(os.sep)
        root_prefix = root_real + os.sep
        for rel, directory, link in found:
            discovered += 1
            # the walk does not follow folder symlinks, so only SKILL.md itself can be a link
            if link:
                md_real = os.path.realpath(os.path.join(directory, "SKILL.md"))
                dir_real = os.path.realpath(directory)
            else:
                dir_real = root_real if rel == "." else root_prefix + rel.replace("/", os.sep)
                md_real = dir_real + os.sep + "SKILL.md"
            path = _id_path(dir_real, ws_real)
            if not md_real.startswith(root_prefix):
                rejections.append(Rejection(path, f"SKILL.md resolves outside its root {root.label}", root.source))
                continue
            try:
                stat = os.stat(md_real)
            except OSError as exc:
                rejections.append(Rejection(path, f"unreadable: {exc.strerror or exc}", root.source))
                continue
            key = (md_real, stat.st_mtime_ns, stat.st_size, root.source, path)
            parsed = entries.get(key)
            if parsed is None:
                # only a regular file is read here (a FIFO named SKILL.md would block); the core handles the rest
                text = _read(os.path.join(directory, "SKILL.md")) if S_ISREG(stat.st_mode) else None
                parsed = entries[key] = _parse(Path(directory), rel, root.source, path, text)
            if admit(parsed, path, root.source):
                included.append(key)
    remote = list(remote)
    if remote:
        root_log.append({"source": EXTERNAL, "root": "mcp", "exists": True, "skills": len(remote)})
        if EXTERNAL not in scanned:
            scanned.append(EXTERNAL)
    for location, folder, frontmatter in remote:
        discovered += 1
        if admit(remote_candidate(location, folder, frontmatter), location, EXTERNAL):
            included.append((location, sha256_json(frontmatter)))
    # a record is re-parsed exactly when its cache key changes, so the keys of the included ones say
    # whether the candidate set or any candidate's metadata may have changed
    fingerprint = sha256_text("\n".join(repr(key) for key in included))
    return Discovery(records, rejections, root_log, scanned, discovered, fingerprint)


def _under(workspace: Path, path: str | Path) -> Path:
    path = Path(path).expanduser()
    return path if path.is_absolute() else workspace / path
