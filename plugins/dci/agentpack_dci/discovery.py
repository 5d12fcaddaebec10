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
from collections.abc import Callable, Iterable
from hashlib import sha256
from pathlib import Path
from stat import S_ISREG
from typing import Any, ClassVar, NamedTuple

from agentpack.io.errors import AgentpackError
from agentpack.io.hashing import canonical_json_bytes
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


class SkillRecord:
    """One included candidate: what scoring, the report and a probe read, nothing more.

    A scan holds one per skill (100,000 in a large workspace), so a record keeps no parsed frontmatter, no
    description and no name apart from the id; it keeps the description's tokens in order (``terms``, the
    name's first: their count is ``name_terms``), from which the index takes term counts and the provisional
    capabilities are derived when needed, and the SHA-256 of what was read (``metadata_hash``, the
    match-cache key). Slots, and strings shared with the stem memo, keep it to a few hundred bytes.
    """

    __slots__ = (
        "id",
        "source",
        "_directory",
        "compatibility",
        "contract",
        "contract_error",
        "terms",
        "name_terms",
        "path_terms",
        "runtime_tokens",
        "metadata_hash",
    )

    def __init__(
        self,
        id: str,
        source: str,
        directory: str | Path,
        compatibility: str | None,
        contract: Contract | None,
        contract_error: ContractParseError | None,
        terms: tuple[str, ...],
        name_terms: int,
        path_terms: tuple[str, ...],
        runtime_tokens: tuple[str, ...],
        metadata_hash: bytes,
    ) -> None:
        self.id = id
        """``skill-name::skill-path``: a skill's name holds only letters, digits and hyphens (the core rejects
        any other), so the first ``::`` ends it."""
        self.source = source
        self._directory = str(directory)
        self.compatibility = compatibility
        self.contract = contract
        self.contract_error = contract_error
        self.terms = terms
        """The tokens of "name description", in order, duplicates kept (BM25's term counts and length)."""
        self.name_terms = name_terms
        """How many of ``terms`` are the name's."""
        self.path_terms = path_terms
        """The tokens of the skill's folder path relative to its root beyond the name's (usually none)."""
        self.runtime_tokens = runtime_tokens
        self.metadata_hash = metadata_hash

    def __repr__(self) -> str:
        return f"SkillRecord({self.id!r})"

    @property
    def name(self) -> str:
        return self.id[: self.id.index("::")]

    @property
    def path(self) -> str:
        """The ``skill-path`` half of the id."""
        return self.id[self.id.index("::") + 2 :]

    @property
    def directory(self) -> Path:
        return Path(self._directory)

    @property
    def namepath_tokens(self) -> tuple[str, ...]:
        """The distinct tokens of the name and the folder path, in order."""
        return tuple(dict.fromkeys((*self.terms[: self.name_terms], *self.path_terms)))

    @property
    def provisional(self) -> frozenset[str]:
        """Provisional capabilities (only a skill without a parsed contract has them): the description's
        tokens and the name's tokens joined with '-' (the name as ``joined_stem`` gives it)."""
        if self.contract is not None:
            return frozenset()
        return frozenset(self.terms) | {"-".join(self.terms[: self.name_terms])} - {""}


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


class SkillCache(Record):
    """Parsed skills keyed by (real path of SKILL.md, mtime_ns, size) and display path: the record, or
    the reason it was rejected. Each scan keeps only the entries it met, so a long-lived resolver holds one
    per skill however often files change."""

    __slots__ = ("entries",)
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"entries": dict}
    entries: dict[tuple, SkillRecord | str]


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
    # the metadata hash is taken of the text that holds the frontmatter: it changes whenever the frontmatter does
    digest = sha256(text.encode("utf-8")).digest() if text is not None else _json_digest(skill.meta)
    return _record(skill.meta, directory, rel, source, path, digest)


def _json_digest(value: Any) -> bytes:
    return sha256(canonical_json_bytes(value)).digest()


def _rejected(errors: list[Any]) -> _Parsed:
    first = errors[0]
    where = first.location()
    return _Parsed(None, f"invalid frontmatter: {first.code} {first.message}" + (f" ({where})" if where else ""))


def remote_candidate(location: str, folder: str, frontmatter: dict[str, Any]) -> _Parsed:
    """A candidate served over MCP, from its ``skills/list`` entry alone (nothing is fetched to resolve).

    ``location`` is the origin-tagged ``mcp:LABEL:URI``, ``folder`` the last segment of the skill's path; the
    frontmatter's scalars are read as strings, as
    SKILL.md frontmatter is on disk, and checked by the same core rules (the name against the URI's last
    segment, as a folder's name on disk). Its metadata hash is that of the canonical JSON of those strings.
    """
    from agentpack.skills.skillmd import validate_frontmatter

    meta = _strings(frontmatter)
    errors = [f for f in validate_frontmatter(meta, Path(folder)) if f.severity == "error"]
    if errors:
        return _rejected(errors)
    return _record(meta, Path(location), folder, EXTERNAL, location, _json_digest(meta))


def _strings(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _strings(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_strings(v) for v in value]
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    return value if isinstance(value, str) else str(value)


def _record(meta: dict[str, Any], directory: Path, rel: str, source: str, path: str, digest: bytes) -> _Parsed:
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
    # tokens of "name description" and of "name rel": the name's are the same in both (a space splits)
    name_tokens = tokenize(name)
    compat = meta.get("compatibility") if isinstance(meta.get("compatibility"), str) else None
    runtime_tokens = tuple(t.strip().lower() for t in compat.split(",")) if compat else ()
    record = SkillRecord(
        id=f"{name}::{path}",
        source=source,
        directory=directory,
        compatibility=compat,
        contract=contract,
        contract_error=error,
        terms=(*name_tokens, *tokenize(meta["description"].strip())),
        name_terms=len(name_tokens),
        path_terms=() if rel in (".", name) else tuple(tokenize(rel)),
        runtime_tokens=tuple(t for t in runtime_tokens if t),
        metadata_hash=digest,
    )
    return _Parsed(record, None)


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
    kept: dict[tuple, SkillRecord | str] = {}  # the entries of this scan: an edited or removed skill's old one goes
    # a record is re-parsed exactly when its cache key changes, so the keys of the included ones say
    # whether the candidate set or any candidate's metadata may have changed: hashed as they come
    included = sha256()
    disabled = config.disabled

    def admit(parsed: SkillRecord | str, path: str, source: str) -> bool:
        if isinstance(parsed, str):
            rejections.append(Rejection(path, parsed, source))
            return False
        record = parsed
        if disabled and (record.name in disabled or record.id in disabled):
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
                made = _parse(Path(directory), rel, root.source, path, text)
                parsed = made.record or made.reason or "rejected"
            kept[key] = parsed
            if admit(parsed, path, root.source):
                included.update(f"{key!r}\n".encode())
    cache.entries = kept
    remote = list(remote)
    if remote:
        root_log.append({"source": EXTERNAL, "root": "mcp", "exists": True, "skills": len(remote)})
        if EXTERNAL not in scanned:
            scanned.append(EXTERNAL)
    for location, folder, frontmatter in remote:
        discovered += 1
        record, reason = remote_candidate(location, folder, frontmatter)
        if admit(record or reason or "rejected", location, EXTERNAL) and record is not None:
            included.update(f"{location!r} {record.metadata_hash.hex()}\n".encode())
    return Discovery(records, rejections, root_log, scanned, discovered, included.hexdigest())


def _under(workspace: Path, path: str | Path) -> Path:
    path = Path(path).expanduser()
    return path if path.is_absolute() else workspace / path
