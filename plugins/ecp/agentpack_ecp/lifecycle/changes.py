"""What changed in each source since the published build (the input of a refresh plan).

* ``git`` sources: ``git diff --numstat`` between the recorded ``revision.commit``
  and the head of ``revision.branch`` (or ``HEAD``), limited to the scope; the
  line count is the real number of added plus deleted lines.
* every other source: the file manifest of the published index
  (``file_manifest.json``) against a fresh snapshot (``{path: sha256, size}``).
  The line count is an upper bound: all lines of added and modified files plus
  the recorded lines of deleted ones, since the old text is gone.
* ``refresh.strategy: none`` sources are not looked at.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentpack.io import jsonio
from agentpack.io.clock import SYSTEM_CLOCK, Clock

from ..pack.files import open_regular, read_regular
from ..sources.git import resolve_commit, run_git
from ..sources.recipes import SourceError, resolve_location
from ..sources.scope import Scope
from ..sources.snapshot import snapshot_source
from ..sources.statcache import StatCache


@dataclass
class SourceChanges:
    source_id: str
    method: str
    added: list[str] = field(default_factory=list)
    modified: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    lines: int = 0
    old: dict[str, Any] = field(default_factory=dict)
    new: dict[str, Any] = field(default_factory=dict)
    rebuild_reason: str | None = None
    snapshot: Any = None
    """The fresh snapshot a file-manifest diff read (the build reuses it instead of reading again)."""

    @property
    def paths(self) -> list[str]:
        return sorted(self.added + self.modified + self.deleted)

    def as_dict(self) -> dict[str, Any]:
        return {
            "source_id": self.source_id,
            "method": self.method,
            "added": self.added,
            "modified": self.modified,
            "deleted": self.deleted,
            "changed_lines": self.lines,
            "from": self.old,
            "to": self.new,
            "rebuild_reason": self.rebuild_reason,
        }


class _LineCounts:
    """Per-file line counts of the published chunks, read from ``chunks.jsonl`` only when asked
    (only deleted files need them)."""

    def __init__(self, folders: list) -> None:
        self.folders = folders
        self._lines: dict[str, int] | None = None

    def get(self, key: str, default: int = 0) -> int:
        if self._lines is None:
            self._lines = {}
            for folder in self.folders:
                try:
                    with open_regular(folder / "chunks.jsonl", "r", encoding="utf-8") as handle:
                        for line in handle:
                            record = jsonio.loads(line)
                            k = f"{record.get('source_id')}::{record.get('artifact_path')}"
                            end = int((record.get("loc") or {}).get("end_line") or 0)
                            self._lines[k] = max(self._lines.get(k, 0), end)
                    break
                except (OSError, ValueError, AttributeError, TypeError):  # damaged: count nothing
                    self._lines = {}
        return self._lines.get(key, default)


def _recorded_manifests(pack) -> tuple[dict[str, dict[str, Any]], _LineCounts, list[str]]:
    """File manifests and per-file line counts of the published indexes; names of unbuilt indexes."""
    manifests: dict[str, dict[str, Any]] = {}
    folders = []
    missing: list[str] = []
    for entry in pack.indexes:
        folder = pack.root / entry.path
        try:
            data = jsonio.loads(read_regular(folder / "file_manifest.json"))
            recorded = dict(data.get("sources") or {})
        except (OSError, ValueError, AttributeError, TypeError):
            missing.append(entry.id)
            continue
        for sid, files in recorded.items():
            if isinstance(files, dict):
                manifests.setdefault(sid, files)
        folders.append(folder)
    return manifests, _LineCounts(folders), missing


def _git_changes(pack, source, clock: Clock) -> SourceChanges:
    old = dict(source.revision)
    changes = SourceChanges(source.source_id, "git-diff", old=old)
    repo = resolve_location(source.uri, pack.root)
    where = {"file": pack.manifest_file, "line": pack.manifest_doc.line_of(f"{source.pointer}/uri")}
    if not repo.is_dir():
        raise SourceError(f"git source '{source.source_id}': repository not found: {repo}", **where)
    recorded_branch = old.get("branch")
    branch = recorded_branch if isinstance(recorded_branch, str) and recorded_branch else "HEAD"
    try:
        new_commit = resolve_commit(repo, branch)
    except SourceError as exc:
        raise SourceError(
            f"git source '{source.source_id}': cannot resolve '{branch}' to a commit ({exc.message})", **where
        ) from None
    changes.new = {"commit": new_commit, **({"branch": branch} if branch != "HEAD" else {})}
    recorded = str(old.get("commit") or "")
    if not recorded or recorded.upper() == "HEAD":
        changes.rebuild_reason = f"source '{source.source_id}' records no concrete commit"
        return changes
    try:
        base = resolve_commit(repo, recorded)
    except SourceError:
        changes.rebuild_reason = (
            f"source '{source.source_id}': recorded commit {recorded[:12]} is not in the repository"
        )
        return changes
    if base == new_commit:
        return changes
    scope = Scope(source.include, source.exclude)
    status = run_git(repo, "diff", "--no-renames", "--name-status", "-z", base, new_commit).split(b"\0")
    kinds: dict[str, str] = {}
    for code, path in zip(status[::2], status[1::2], strict=False):
        name = path.decode("utf-8", "surrogateescape")
        if scope.matches(name):
            kinds[name] = code.decode()[:1]
    numstat = run_git(repo, "diff", "--no-renames", "--numstat", "-z", base, new_commit).split(b"\0")
    for record in numstat:
        parts = record.decode("utf-8", "surrogateescape").split("\t")
        if len(parts) == 3 and parts[2] in kinds and parts[0] != "-":
            changes.lines += int(parts[0]) + int(parts[1])
    for name, kind in sorted(kinds.items()):
        {"A": changes.added, "D": changes.deleted}.get(kind, changes.modified).append(name)
    return changes


def _manifest_changes(
    pack, source, recorded: dict[str, Any] | None, line_counts: _LineCounts, clock: Clock, stat_cache
) -> SourceChanges:
    changes = SourceChanges(source.source_id, "file-manifest", old=dict(source.revision))
    snap = snapshot_source(pack, source, clock=clock, stat_cache=stat_cache)
    changes.new = snap.revision
    changes.snapshot = snap
    if recorded is None:
        changes.rebuild_reason = f"source '{source.source_id}' has no recorded file manifest"
        recorded = {}
    for path, record in snap.manifest.items():
        before = recorded.get(path)
        if before is None:
            changes.added.append(path)
        elif (before.get("sha256"), before.get("size"), before.get("skipped")) != (
            record.get("sha256"),
            record.get("size"),
            record.get("skipped"),
        ):
            changes.modified.append(path)
        else:
            continue
        changes.lines += snap.texts.get(path, "").count("\n")
    for path in recorded:
        if path not in snap.manifest:
            changes.deleted.append(path)
            changes.lines += line_counts.get(f"{source.source_id}::{path}", 0)
    changes.added.sort()
    changes.modified.sort()
    changes.deleted.sort()
    return changes


def detect(pack, *, clock: Clock = SYSTEM_CLOCK, record_hashes: bool = True) -> tuple[list[SourceChanges], list[str]]:
    """Changes per source, and the reasons a full rebuild is unavoidable; with ``record_hashes`` the
    file hashes computed are kept in the pack's stat cache (``statcache.py``) for the next refresh."""
    stat_cache = StatCache.for_pack(pack.root)
    manifests, line_counts, unbuilt = _recorded_manifests(pack)
    needs = [f"index '{i}' has not been built yet" for i in unbuilt]
    out = []
    for source in pack.sources:
        if source.refresh.get("strategy") == "none":
            continue
        if source.type == "git":
            changes = _git_changes(pack, source, clock)
        else:
            changes = _manifest_changes(pack, source, manifests.get(source.source_id), line_counts, clock, stat_cache)
        if changes.rebuild_reason and not unbuilt:
            needs.append(changes.rebuild_reason)
        if source.refresh.get("strategy") == "rebuild" and changes.paths:
            needs.append(f"source '{source.source_id}' declares refresh.strategy: rebuild")
        out.append(changes)
    if record_hashes:
        stat_cache.save()
    return out, needs


def changed_paths(changes: list[SourceChanges]) -> dict[str, list[str]]:
    return {c.source_id: c.paths for c in changes if c.paths}


def snapshots(changes: list[SourceChanges]) -> dict[str, Any]:
    """The snapshots change detection already read, by source id."""
    return {c.source_id: c.snapshot for c in changes if c.snapshot is not None}


def git_targets(changes: list[SourceChanges]) -> dict[str, dict[str, Any]]:
    """The revisions git sources should be built at (the new head)."""
    return {c.source_id: c.new for c in changes if c.method == "git-diff" and c.new.get("commit")}
