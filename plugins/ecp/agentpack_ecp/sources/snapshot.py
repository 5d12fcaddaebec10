"""Reading one declared source into a ``SourceSnapshot`` (files, texts, manifest, new revision).

``snapshot_source(pack, source, ...)`` handles every source type:
``filesystem``/``artifact`` (a directory), ``git`` (files at a concrete commit),
``web`` (a local snapshot directory declared in ``context.artifacts.snapshots``)
and ``database`` (an SQLite file and a declared query). ``open_source_text``
reads one cited file the same way, for citation checks.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentpack.io.clock import Clock
from agentpack.io.paths import is_within, resolve_under

from ..pack.layout import PACK_INTERNAL_DIRS
from ..pack.manifest import ExpertPack, Source
from .database import database_path, query_hash, render_rows, run_query
from .git import git_blobs, git_show_text, read_blobs, resolve_commit, run_git
from .recipes import (
    DEFAULT_MAX_FILE_BYTES,
    SourceError,
    decode_text,
    file_record,
    iso_utc,
    manifest_hash,
    resolve_location,
    text_sha256,
)
from .scope import Scope
from .statcache import LazyTexts, StatCache, loader, stat_key


@dataclass
class SourceSnapshot:
    """What a source held when it was read: its files, their texts and the resulting revision."""

    source_id: str
    type: str
    uri: str
    root: Path | None
    revision: dict[str, Any]
    manifest: dict[str, dict[str, Any]] = field(default_factory=dict)
    texts: Mapping[str, str] = field(default_factory=dict)
    classification: str | None = None
    license: str | None = None

    def meta(self) -> dict[str, Any]:
        """The ``sources[]`` record of an index payload."""
        out: dict[str, Any] = {
            "source_id": self.source_id,
            "source_type": self.type,
            "uri": self.uri,
            "revision": self.revision,
        }
        if self.classification:
            out["classification"] = self.classification
        if self.license:
            out["license"] = self.license
        return out


def _internal_dirs(pack: ExpertPack) -> set[str]:
    dirs = {os.path.realpath(pack.root / d) for d in PACK_INTERNAL_DIRS}
    for entry in pack.indexes:
        if entry.path:
            dirs.add(os.path.realpath(pack.root / entry.path))
    return dirs


def _identity(path: str | os.DirEntry) -> tuple[int, int] | None:
    """A directory's (device, inode), which names it whatever path leads to it (``None``: unreadable)."""
    try:
        st = path.stat() if isinstance(path, os.DirEntry) else os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def scan_directory(
    root: Path, scope: Scope, max_bytes: int, skip_dirs: Set[str] = frozenset(), stat_cache: StatCache | None = None
) -> tuple[dict[str, dict[str, Any]], Mapping[str, str]]:
    """The manifest and texts of the in-scope files under ``root`` (symlinks out of ``root`` skipped).

    With ``stat_cache`` a file whose stat did not change since it was hashed is not read, and no text is
    kept: each is read when asked for (``statcache.LazyTexts``), so a build holds one batch of texts, never
    the whole source.
    """
    manifest: dict[str, dict[str, Any]] = {}
    texts: dict[str, str] = {}
    text_paths: list[str] = []
    scan = stat_cache.scanner(os.path.realpath(root)) if stat_cache is not None else None
    root_real = os.path.realpath(root)
    skip = {_identity(d) for d in skip_dirs} - {None}
    # os.walk's order (a directory's files, then its subdirectories, each sorted by name; symlinked
    # directories not entered) from os.scandir's entries: a symlink test costs no system call, a stat one
    stack = [(str(root), "")]
    while stack:
        dirpath, base = stack.pop()
        try:
            with os.scandir(dirpath) as listing:
                entries = list(listing)
        except OSError:
            continue
        dirs: list[os.DirEntry[str]] = []
        files: list[os.DirEntry[str]] = []
        for entry in entries:
            try:
                is_dir = entry.is_dir()
            except OSError:
                is_dir = False
            (dirs if is_dir else files).append(entry)
        for entry in sorted(files, key=lambda e: e.name):
            rel = base + entry.name
            if not scope.matches(rel):
                continue
            full = entry.path
            if entry.is_symlink() and not is_within(root_real, full):
                continue
            try:
                st = entry.stat()
            except OSError:
                continue
            size = st.st_size
            if scan is not None and size <= max_bytes:
                record = scan.lookup(rel, key := stat_key(st))
                if record is not None:
                    manifest[rel] = record
                    if record["skipped"] is None:
                        text_paths.append(rel)
                    continue
            data = None
            if size <= max_bytes:
                try:
                    with open(full, "rb") as handle:
                        data = handle.read()
                except OSError:
                    data = None
            record, text = file_record(data, size, max_bytes)
            manifest[rel] = record
            if text is not None:
                text_paths.append(rel)
                if scan is None:
                    texts[rel] = text
            if scan is not None and size <= max_bytes:
                scan.record(rel, key, record)
        entered = [
            entry
            for entry in sorted(dirs, key=lambda e: e.name)
            if not entry.is_symlink()
            and not entry.name.startswith(".staging")
            and entry.name != ".backup"
            and not scope.excludes_dir(base + entry.name)
            and _identity(entry) not in skip
        ]
        stack.extend((entry.path, f"{base}{entry.name}/") for entry in reversed(entered))
    if scan is None:
        return manifest, texts
    scan.finish()
    return manifest, LazyTexts(text_paths, loader(str(root), manifest))


def _directory_snapshot(
    pack: ExpertPack, source: Source, root: Path, max_bytes: int, stat_cache: StatCache | None = None
) -> SourceSnapshot:
    if not root.is_dir():
        raise SourceError(
            f"source '{source.source_id}': directory not found: {root}",
            file=pack.manifest_file,
            line=pack.manifest_doc.line_of(f"{source.pointer}/uri"),
        )
    manifest, texts = scan_directory(
        root, Scope(source.include, source.exclude), max_bytes, _internal_dirs(pack), stat_cache
    )
    return SourceSnapshot(source.source_id, source.type, source.uri, root, {}, manifest, texts)


def snapshot_source(
    pack: ExpertPack,
    source: Source,
    *,
    clock: Clock,
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES,
    revision: dict[str, Any] | None = None,
    stat_cache: StatCache | None = None,
) -> SourceSnapshot:
    """Read ``source`` as it is now (or, for git, at ``revision['commit']`` / the pinned commit);
    ``stat_cache`` spares reading unchanged files of directory sources."""
    kind = source.type
    if kind in ("filesystem", "artifact"):
        snap = _directory_snapshot(pack, source, resolve_location(source.uri, pack.root), max_file_bytes, stat_cache)
        snap.revision = {"hash": manifest_hash(snap.manifest), "timestamp": clock.iso()}
    elif kind == "web":
        snap = _directory_snapshot(pack, source, web_snapshot_dir(pack, source), max_file_bytes, stat_cache)
        old = source.revision
        retrieved = old.get("retrieved_at") if isinstance(old.get("retrieved_at"), str) else None
        snap.revision = {k: v for k, v in old.items() if k in ("etag", "last_modified")}
        snap.revision.update(
            retrieved_at=retrieved or _newest_mtime(snap.root, snap.manifest, clock), hash=manifest_hash(snap.manifest)
        )
    elif kind == "git":
        snap = _git_snapshot(pack, source, max_file_bytes, revision)
    elif kind == "database":
        snap = _database_snapshot(pack, source, clock)
    else:
        raise SourceError(
            f"source '{source.source_id}': unsupported source type '{kind}'",
            file=pack.manifest_file,
            line=pack.manifest_doc.line_of(f"{source.pointer}/type"),
        )
    snap.classification = source.classification or pack.security.get("classification")
    snap.license = source.license or pack.security.get("license")
    return snap


def _newest_mtime(root: Path | None, manifest: dict, clock: Clock) -> str:
    stamps = [os.stat(root / p).st_mtime for p in manifest] if root else []
    if not stamps:
        return clock.iso()
    return iso_utc(datetime.fromtimestamp(max(stamps), UTC))


# -- web -------------------------------------------------------------------------------------
def web_snapshot_dir(pack: ExpertPack, source: Source) -> Path:
    """The local snapshot directory of a web source (``context.artifacts.snapshots[]`` by ``as_of.source_id``)."""
    for snap in pack.snapshots:
        if snap.source_id == source.source_id and snap.format == "directory" and snap.path:
            return resolve_under(pack.root, snap.path)
    raise SourceError(
        f"web source '{source.source_id}' has no local snapshot directory",
        file=pack.manifest_file,
        line=pack.manifest_doc.line_of(source.pointer),
        hint=f"declare context.artifacts.snapshots[] with format: directory and as_of.source_id: {source.source_id}",
    )


def _git_snapshot(pack: ExpertPack, source: Source, max_bytes: int, revision: dict | None) -> SourceSnapshot:
    where: dict[str, Any] = {"file": pack.manifest_file, "line": pack.manifest_doc.line_of(f"{source.pointer}/uri")}
    repo = resolve_location(source.uri, pack.root)
    if not repo.is_dir():
        raise SourceError(f"git source '{source.source_id}': repository not found: {repo}", **where)
    wanted = dict(revision or source.revision)
    ref = str(wanted.get("commit") or "").strip()
    if not ref or ref.upper() == "HEAD":
        ref = str(wanted.get("branch") or "HEAD")
    try:
        commit = resolve_commit(repo, ref)
    except SourceError as exc:
        raise SourceError(
            f"git source '{source.source_id}': cannot resolve '{ref}' to a commit ({exc.message})",
            hint="fetch that commit into the clone, or set revision.commit to HEAD to build the branch head",
            **where,
        ) from None
    branch = wanted.get("branch")
    if not isinstance(branch, str) or not branch:
        name = run_git(repo, "rev-parse", "--abbrev-ref", "HEAD").decode().strip()
        branch = name if name != "HEAD" and resolve_commit(repo, "HEAD") == commit else None
    stamp = run_git(repo, "show", "-s", "--format=%cI", commit).decode().strip()
    timestamp = iso_utc(datetime.fromisoformat(stamp))
    scope = Scope(source.include, source.exclude)
    entries = [(p, b, s) for p, b, s in git_blobs(repo, commit) if scope.matches(p)]
    contents = read_blobs(repo, sorted({b for _, b, s in entries if s <= max_bytes}))
    manifest: dict[str, dict[str, Any]] = {}
    texts: dict[str, str] = {}
    for path, blob, size in sorted(entries):
        record, text = file_record(contents.get(blob), size, max_bytes)
        manifest[path] = record
        if text is not None:
            texts[path] = text
    rev: dict[str, Any] = {"commit": commit}
    if branch:
        rev["branch"] = branch
    rev["timestamp"] = timestamp
    return SourceSnapshot(source.source_id, "git", source.uri, repo, rev, manifest, texts)


def _database_snapshot(pack: ExpertPack, source: Source, clock: Clock) -> SourceSnapshot:
    where: dict[str, Any] = {"file": pack.manifest_file, "line": pack.manifest_doc.line_of(source.pointer)}
    query = source.query
    if query is None:
        raise SourceError(
            f"database source '{source.source_id}' declares no query",
            **where,
            hint="add refresh.rebuild.query (or query) with the SELECT that extracts the data",
        )
    db = database_path(source.uri, pack.root)
    try:
        name, columns, rows = run_query(db, query)
    except SourceError as exc:
        raise SourceError(f"database source '{source.source_id}': {exc.message}", **where, hint=exc.hint) from None
    scope = Scope(source.include, source.exclude)
    if name != "query" and not (scope.matches(name) or scope.matches(f"main.{name}")):
        raise SourceError(
            f"database source '{source.source_id}': the query reads table '{name}', outside its scope", **where
        )
    texts = render_rows(name, columns, rows)
    manifest = {p: {"sha256": text_sha256(t), "size": len(t.encode()), "skipped": None} for p, t in texts.items()}
    revision = {
        "timestamp": clock.iso(),
        "query_hash": query_hash(query),
        "row_count": len(rows),
        "hash": manifest_hash(manifest),
    }
    return SourceSnapshot(source.source_id, "database", source.uri, db, revision, manifest, texts)


# -- reading one cited file ------------------------------------------------------------------
def source_root(pack: ExpertPack, source: Source) -> Path:
    """The directory (or database file) citations of ``source`` are relative to."""
    if source.type == "web":
        return web_snapshot_dir(pack, source)
    if source.type == "database":
        return database_path(source.uri, pack.root)
    return resolve_location(source.uri, pack.root)


def open_source_text(pack: ExpertPack, source: Source, path: str, revision: dict[str, Any]) -> str:
    """The text of ``path`` of ``source`` as cited (git at ``revision.commit``, never the work tree)."""
    root = source_root(pack, source)
    if source.type == "git":
        commit = str(revision.get("commit") or "")
        if not commit or commit.upper() == "HEAD":
            raise SourceError("a git citation needs a concrete revision.commit")
        text = git_show_text(root, commit, path)
        if text is None:
            raise SourceError(f"'{path}' does not exist at commit {commit[:12]}")
        return text
    if source.type == "database":
        query = source.query or ""
        if revision.get("query_hash") and revision.get("query_hash") != query_hash(query):
            raise SourceError("the source's query changed since the cited revision")
        name, columns, rows = run_query(root, query)
        texts = render_rows(name, columns, rows)
        if path not in texts:
            raise SourceError(f"row '{path}' is not in the query result")
        return texts[path]
    target = resolve_under(root, path)
    if not target.is_file():
        raise SourceError(f"'{path}' does not exist under the source root")
    return decode_text(target.read_bytes())
