"""Reading sources and the revision recipes every part of the plugin shares.

Recipes (the reference implementation's, so packs interoperate):

* text detection: no NUL byte in the first 8 KiB, and the first 8 KiB decode as UTF-8;
* file hash: SHA-256 of the file's text (UTF-8, undecodable bytes replaced) with
  CRLF and lone CR normalised to LF, encoded as UTF-8 (``text_sha256``);
* file manifest: ``{path: {"sha256", "size", "skipped"}}`` where ``skipped`` is
  ``None``, ``"too_large"``, ``"binary_or_non_utf8"`` or ``"read_error"``;
* filesystem ``revision.hash``: SHA-256 (hex) of ``json.dumps(manifest,
  sort_keys=True)`` with the default separators (``manifest_hash``).

``snapshot_source(pack, source, ...)`` reads one declared source into a
``SourceSnapshot`` (files, texts, manifest, new revision) for every source type:
``filesystem``/``artifact`` (a directory), ``git`` (files at a concrete commit,
read with the git CLI, never the work tree), ``web`` (a local snapshot
directory declared in ``context.artifacts.snapshots``) and ``database`` (an
SQLite file and a declared query). ``open_source_text`` reads one cited file the
same way, for citation checks.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlparse

from agentpack.errors import AgentpackError
from agentpack.hashing import normalize_newlines, sha256_text
from agentpack.paths import is_within, resolve_under

from .statcache import LazyTexts, StatCache, loader, stat_key

if TYPE_CHECKING:
    from agentpack.clock import Clock

    from ..pack.manifest import ExpertPack, Source

PROBE_BYTES = 8192
DEFAULT_MAX_FILE_BYTES = 512_000
GIT_TIMEOUT = 120
PACK_INTERNAL_DIRS = ("expert/context/.staging", "expert/context/.lifecycle", "expert/logs")
"""Folders of a pack that are never indexed, even when a source's root contains the pack."""


class SourceError(AgentpackError):
    """A source that cannot be read (unsupported kind, missing path, failing git or query)."""


# -- recipes ---------------------------------------------------------------------------------
def looks_like_text(head: bytes) -> bool:
    if b"\x00" in head[:PROBE_BYTES]:
        return False
    try:
        head[:PROBE_BYTES].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def decode_text(data: bytes) -> str:
    """UTF-8 text (errors replaced) with newlines normalised to LF."""
    return normalize_newlines(data.decode("utf-8", errors="replace"))


def text_sha256(text: str) -> str:
    return sha256_text(text)


def file_record(data: bytes | None, size: int, max_bytes: int) -> tuple[dict[str, Any], str | None]:
    """The manifest record and the text of one file (``data`` None means unreadable)."""
    if size > max_bytes:
        return {"sha256": None, "size": size, "skipped": "too_large"}, None
    if data is None:
        return {"sha256": None, "size": size, "skipped": "read_error"}, None
    if not looks_like_text(data):
        return {"sha256": None, "size": size, "skipped": "binary_or_non_utf8"}, None
    text = decode_text(data)
    return {"sha256": text_sha256(text), "size": size, "skipped": None}, text


def manifest_hash(manifest: dict[str, dict[str, Any]]) -> str:
    """``revision.hash`` of a file manifest (the reference recipe, byte for byte)."""
    return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode("utf-8")).hexdigest()


def iso_utc(value: datetime) -> str:
    return value.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


# -- scope -----------------------------------------------------------------------------------
class Scope:
    """``scope.include``/``scope.exclude`` with gitignore semantics (``pathspec``).

    No ``include`` means everything; ``exclude`` wins over ``include``.
    """

    def __init__(self, include: list[str] | None, exclude: list[str] | None) -> None:
        import pathspec

        self.include = list(include or [])
        self.exclude = list(exclude or [])
        self._inc = pathspec.GitIgnoreSpec.from_lines(self.include) if self.include else None
        self._exc = pathspec.GitIgnoreSpec.from_lines(self.exclude) if self.exclude else None

    def excludes_dir(self, path: str) -> bool:
        """True when every file under directory ``path`` is excluded (gitignore: no re-include below it)."""
        return self._exc is not None and self._exc.match_file(path.rstrip("/") + "/")

    def matches(self, path: str) -> bool:
        if self._inc is not None and not self._inc.match_file(path):
            return False
        return not (self._exc is not None and self._exc.match_file(path))


# -- locations -------------------------------------------------------------------------------
REMOTE_SCHEMES = ("http", "https", "ssh", "git", "s3", "gs", "ftp")


def resolve_location(uri: str, pack_root: Path) -> Path:
    """A local path for ``uri``: ``file://`` URIs, absolute paths, or paths relative to the skill root."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        host = parsed.netloc if parsed.netloc not in ("", "localhost") else ""
        path = unquote(host + parsed.path)
        return (pack_root / path).resolve() if not path.startswith("/") else Path(path).resolve()
    if uri.startswith("git@") or parsed.scheme in REMOTE_SCHEMES:
        raise SourceError(
            f"'{uri}' is a remote location; agentpack reads local copies only",
            hint="clone or download it, then point the source's uri at the local path",
        )
    if len(parsed.scheme) > 1:
        raise SourceError(f"unsupported URI scheme '{parsed.scheme}' in '{uri}'")
    path = Path(uri)
    return path.resolve() if path.is_absolute() else (pack_root / path).resolve()


# -- snapshots -------------------------------------------------------------------------------
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


def scan_directory(
    root: Path, scope: Scope, max_bytes: int, skip_dirs: set[str] = frozenset(), stat_cache: StatCache | None = None
) -> tuple[dict[str, dict[str, Any]], Mapping[str, str]]:
    """The manifest and texts of the in-scope files under ``root`` (symlinks out of ``root`` skipped).

    With ``stat_cache`` a file whose stat did not change since it was hashed is not read: its text
    is read when first asked for (``statcache.LazyTexts``).
    """
    manifest: dict[str, dict[str, Any]] = {}
    texts: dict[str, str] = {}
    text_paths: list[str] = []
    scan = stat_cache.scanner(os.path.realpath(root)) if stat_cache is not None else None
    root_real = os.path.realpath(root)
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        base = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
        dirnames[:] = sorted(
            d
            for d in dirnames
            if os.path.realpath(os.path.join(dirpath, d)) not in skip_dirs
            and not d.startswith(".staging")
            and d != ".backup"
            and not scope.excludes_dir(base + d)
        )
        for name in sorted(filenames):
            rel = name if rel_dir == "." else f"{rel_dir}/{name}".replace(os.sep, "/")
            if not scope.matches(rel):
                continue
            full = os.path.join(dirpath, name)
            if os.path.islink(full) and not is_within(root_real, full):
                continue
            try:
                st = os.stat(full)
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
                texts[rel] = text
                text_paths.append(rel)
            if scan is not None and size <= max_bytes:
                scan.record(rel, key, record)
    if scan is None:
        return manifest, texts
    scan.finish()
    return manifest, LazyTexts(text_paths, texts, loader(str(root), manifest))


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


# -- git -------------------------------------------------------------------------------------
def run_git(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}
    try:
        proc = subprocess.run(
            ["git", "-C", str(repo), *args], input=input, capture_output=True, env=env, timeout=GIT_TIMEOUT, check=False
        )
    except FileNotFoundError:
        raise SourceError("the git executable is not installed", hint="install git") from None
    except subprocess.TimeoutExpired:
        raise SourceError(f"git {' '.join(args)} timed out after {GIT_TIMEOUT} s") from None
    if proc.returncode != 0:
        message = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise SourceError(f"git {' '.join(args[:3])} failed in {repo}: {message[-1] if message else proc.returncode}")
    return proc.stdout


def resolve_commit(repo: Path, ref: str) -> str:
    return run_git(repo, "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}").decode().strip()


def git_blobs(repo: Path, commit: str) -> list[tuple[str, str, int]]:
    """``(path, blob id, size)`` of every regular file at ``commit`` (symlinks and submodules left out)."""
    out = run_git(repo, "ls-tree", "-r", "-z", "-l", "--full-tree", commit)
    entries = []
    for record in out.split(b"\0"):
        if not record:
            continue
        meta, _, path = record.partition(b"\t")
        mode, kind, blob, size = meta.split()
        if kind != b"blob" or mode in (b"120000", b"160000"):
            continue
        entries.append((path.decode("utf-8", "surrogateescape"), blob.decode(), int(size)))
    return entries


def read_blobs(repo: Path, blobs: list[str]) -> dict[str, bytes]:
    """Contents of ``blobs`` in one ``git cat-file --batch`` process."""
    if not blobs:
        return {}
    out = run_git(repo, "cat-file", "--batch", input=("\n".join(blobs) + "\n").encode())
    contents: dict[str, bytes] = {}
    pos = 0
    for blob in blobs:
        header_end = out.index(b"\n", pos)
        header = out[pos:header_end].split()
        if len(header) < 3 or header[1] == b"missing":
            raise SourceError(f"git object {blob} is missing from {repo}")
        size = int(header[2])
        contents[blob] = out[header_end + 1 : header_end + 1 + size]
        pos = header_end + 1 + size + 1
    return contents


def git_show_text(repo: Path, commit: str, path: str) -> str | None:
    """The text of ``path`` at ``commit`` (``None`` when it does not exist there)."""
    try:
        return decode_text(run_git(repo, "show", f"{commit}:{path}"))
    except SourceError:
        return None


def _git_snapshot(pack: ExpertPack, source: Source, max_bytes: int, revision: dict | None) -> SourceSnapshot:
    where = {"file": pack.manifest_file, "line": pack.manifest_doc.line_of(f"{source.pointer}/uri")}
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
            f"git source '{source.source_id}': cannot resolve '{ref}' to a commit ({exc.message})", **where
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


# -- database --------------------------------------------------------------------------------
def database_path(uri: str, pack_root: Path) -> Path:
    """The SQLite file of a database source: ``sqlite:///rel.db``, ``sqlite:////abs.db``, ``file:`` or a path."""
    if uri.startswith("sqlite:"):
        rest = uri[len("sqlite:") :]
        if rest.startswith("///"):
            rest = rest[3:]
        elif rest.startswith("//"):
            raise SourceError(f"'{uri}': use sqlite:///relative/path.db or sqlite:////absolute/path.db")
        return Path(rest).resolve() if rest.startswith("/") else (pack_root / rest).resolve()
    scheme = urlparse(uri).scheme
    if len(scheme) > 1 and scheme != "file":
        raise SourceError(
            f"database '{uri}': only SQLite database files are supported (got scheme '{scheme}')",
            hint="export the data to an SQLite file and use uri: sqlite:///path/to/file.db",
        )
    return resolve_location(uri, pack_root)


def _render_value(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return normalize_newlines(str(value))


def run_query(db: Path, query: str) -> tuple[str, list[str], list[tuple]]:
    """Run ``query`` read-only; return (the name of the table it reads or "query", columns, rows)."""
    if not db.is_file():
        raise SourceError(f"database file not found: {db}")
    read: set[str] = set()

    def authorize(action, arg1, arg2, dbname, source):
        if action == sqlite3.SQLITE_READ:
            read.add(arg1)
            return sqlite3.SQLITE_OK
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_FUNCTION):
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        con.set_authorizer(authorize)
        cur = con.execute(query)
        columns = [d[0] for d in cur.description or []]
        rows = cur.fetchall()
    except sqlite3.DatabaseError as exc:
        raise SourceError(f"database query failed on {db.name}: {exc} (only a read-only SELECT is allowed)") from None
    finally:
        con.close()
    tables = sorted(t for t in read if t and not t.startswith("sqlite_"))
    return (tables[0] if len(tables) == 1 else "query"), columns, rows


def render_rows(name: str, columns: list[str], rows: list[tuple]) -> dict[str, str]:
    """One text per row, ``<name>/<n>`` (1-based), a ``column: value`` line per column."""
    return {
        f"{name}/{n}": "".join(f"{c}: {_render_value(v)}\n" for c, v in zip(columns, row))
        for n, row in enumerate(rows, 1)
    }


def query_hash(query: str) -> str:
    return "sha256:" + sha256_text(query.strip())


def _database_snapshot(pack: ExpertPack, source: Source, clock: Clock) -> SourceSnapshot:
    where = {"file": pack.manifest_file, "line": pack.manifest_doc.line_of(source.pointer)}
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
