"""Which files a run created, changed or deleted: snapshots by content hash, compared before and after.

A file's entry is its type and mode and the sha256 of its content (a symbolic
link: its target), so a skill that rewrites a file and restores its size and
mtime is still seen. Hashes are kept in-process for files whose ``ctime`` (which
no skill can set) lay well before the hash was taken, so a file unchanged since
the last snapshot is not read again. Nothing is skipped: ``.git``, virtual
environments and ``node_modules`` are walked like any folder, since a write
there (a hook, a ``.pth`` file) runs code outside the sandbox later. Each area
is walked up to ``MAX_ENTRIES`` entries; the runner makes an area too large to
walk read-only for the run, and counts one cut short after the run as a violation.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from collections.abc import Iterable
from pathlib import Path

from .globs import matches

MAX_ENTRIES = 20_000
RACY_NS = 1_000_000_000
"""A file changed less than this before its hash was taken may change again with the same ctime: not memoised."""
_DIGESTS: dict[tuple[str, int, int, int, int, int], str] = {}

Snapshot = dict[str, tuple[int, str]]


def _digest(path: str, st: os.stat_result) -> str:
    key = (path, st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    known = _DIGESTS.get(key)
    if known is not None:
        return known
    taken = time.time_ns()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
    except OSError:
        return f"unreadable:{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}"
    with open(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return "replaced"
        digest = hashlib.file_digest(handle, "sha256").hexdigest()
    if st.st_ctime_ns < taken - RACY_NS:
        if len(_DIGESTS) > 200_000:
            _DIGESTS.clear()
        _DIGESTS[key] = digest
    return digest


def snapshot(root: Path, parts: Iterable[str] = ("",), *, limit: int | None = None) -> tuple[Snapshot, list[str]]:
    """``root``-relative path -> ``(mode, content)`` under each of ``parts`` (folders end with '/'), and
    the parts whose walk the entry limit (``limit`` per part) cut short. A part that is a folder is an entry."""
    entries: Snapshot = {}
    cut: list[str] = []
    for part in parts:
        if not _walk(root, part, entries, MAX_ENTRIES if limit is None else limit):
            cut.append(part)
    return entries, cut


def _walk(root: Path, part: str, entries: Snapshot, limit: int) -> bool:
    """Add the entries of ``part`` to ``entries``; False when more than ``limit`` of them were there."""
    path = os.path.join(root, part) if part else str(root)
    if part:
        try:
            st = os.lstat(path)
        except OSError:
            return True
        if not stat.S_ISDIR(st.st_mode):
            return True
        entries[part + "/"] = (st.st_mode, "")
    stack = [(part + "/" if part else "", path)]
    count = 0
    while stack:
        prefix, folder = stack.pop()
        try:
            scan = os.scandir(folder)
        except OSError:
            continue
        with scan:
            for entry in scan:
                rel = prefix + entry.name
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISDIR(st.st_mode):
                    entries[rel + "/"] = (st.st_mode, "")
                    stack.append((rel + "/", entry.path))
                elif stat.S_ISREG(st.st_mode):
                    entries[rel] = (st.st_mode, _digest(entry.path, st))
                elif stat.S_ISLNK(st.st_mode):
                    try:
                        entries[rel] = (st.st_mode, os.readlink(entry.path))
                    except OSError:
                        entries[rel] = (st.st_mode, "?")
                else:
                    entries[rel] = (st.st_mode, "")
                count += 1
                if count > limit:
                    return False
    return True


def changed(before: Snapshot, after: Snapshot) -> list[str]:
    """Paths created, modified or deleted between two snapshots (folders end with '/')."""
    out = [p for p, v in after.items() if before.get(p) != v]
    out += [p for p in before if p not in after]
    return sorted(set(out))


def split_writes(paths: list[str], globs: list[str]) -> tuple[list[str], list[str]]:
    """``(declared, undeclared)`` writes. A folder counts as declared when a glob reaches into it."""
    files = [p for p in paths if not p.endswith("/")]
    declared = [p for p in files if matches(p, globs)]
    undeclared = [p for p in files if p not in declared]
    for folder in (p for p in paths if p.endswith("/")):
        inside = (
            any(d.startswith(folder) for d in declared)
            or any(g.startswith(folder) for g in globs)
            or matches(folder + "x", globs)
            or matches(folder.rstrip("/"), globs)
        )
        (declared if inside else undeclared).append(folder)
    return sorted(declared), sorted(undeclared)


__all__ = ["MAX_ENTRIES", "Snapshot", "changed", "snapshot", "split_writes"]
