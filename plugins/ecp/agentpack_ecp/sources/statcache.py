"""A per-pack cache of file hashes by ``stat`` (size, mtime, ctime, inode), so a refresh does not
read and hash every unchanged source file again.

Kept in ``expert/context/.lifecycle/file-hashes.json`` (private, never packaged): for every
directory source root, ``{path: [size, mtime_ns, ctime_ns, inode, sha256, skipped]}``. A file
whose four stat fields are unchanged is taken to have its recorded hash; anything else is read.
Like git's index it guards against "racy" entries: a file modified less than ``RACY_NS`` before it
was scanned is not recorded, since a second write within the timestamp granularity could keep its
size and times. Texts are read only when something asks for them (``LazyTexts``), and checked
against the recorded hash then.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError
from agentpack.io.fsutil import atomic_write_text

from ..pack.layout import lifecycle_dir
from .recipes import decode_text, text_sha256

CACHE_NAME = "file-hashes.json"
VERSION = 1
RACY_NS = 2_000_000_000


def stat_key(st: os.stat_result) -> list[int]:
    return [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]


class StatCache:
    """Recorded hashes of one pack's directory sources (see the module docstring)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.roots: dict[str, dict[str, list]] = {}
        self.dirty = False
        if path is not None:
            try:
                data = jsonio.loads(path.read_bytes())
                if data.get("version") == VERSION and isinstance(data.get("roots"), dict):
                    self.roots = data["roots"]
            except (OSError, ValueError, AttributeError):
                self.roots = {}

    @classmethod
    def for_pack(cls, root: Path) -> StatCache:
        return cls(lifecycle_dir(root) / CACHE_NAME)

    def scanner(self, source_root: str) -> Scan:
        return Scan(self, source_root, self.roots.get(source_root) or {})

    def save(self) -> None:
        if self.path is None or not self.dirty:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(self.path, json.dumps({"version": VERSION, "roots": self.roots}, separators=(",", ":")))
        self.dirty = False


class Scan:
    """One scan of one source root: lookups in the old entries, the new entries recorded."""

    def __init__(self, cache: StatCache, root: str, old: dict[str, list]) -> None:
        self.cache, self.root, self.old = cache, root, old
        self.new: dict[str, list] = {}
        self.started_ns = time.time_ns()

    def lookup(self, rel: str, key: list[int]) -> dict[str, Any] | None:
        """The recorded manifest record of ``rel`` when its stat is unchanged."""
        entry = self.old.get(rel)
        if entry is None or entry[:4] != key:
            return None
        self.new[rel] = entry
        return {"sha256": entry[4], "size": key[0], "skipped": entry[5]}

    def record(self, rel: str, key: list[int], record: dict[str, Any]) -> None:
        if (
            record["skipped"] not in (None, "binary_or_non_utf8")
            or key[1] >= self.started_ns - RACY_NS
            or key[2] >= self.started_ns - RACY_NS
        ):
            return
        self.new[rel] = [*key, record["sha256"], record["skipped"]]

    def finish(self) -> None:
        if self.new != self.old:
            self.cache.roots[self.root] = self.new
            self.cache.dirty = True


class LazyTexts(Mapping):
    """The texts of a directory snapshot, each read (and checked against its hash) when asked for, never kept."""

    def __init__(self, paths: list[str], load: Callable[[str], str]) -> None:
        self._paths = paths
        self._known = frozenset(paths)
        self._load = load

    def __len__(self) -> int:
        return len(self._paths)

    def __iter__(self) -> Iterator[str]:
        return iter(self._paths)

    def __contains__(self, path: object) -> bool:
        return path in self._known

    def __getitem__(self, path: str) -> str:
        if path not in self._known:
            raise KeyError(path)
        return self._load(path)


class ChangedWhileReading(AgentpackError):
    pass


def loader(root: str, manifest: dict[str, dict[str, Any]]) -> Callable[[str], str]:
    """Read one cached file's text, checking it still has its recorded hash."""

    def load(rel: str) -> str:
        with open(os.path.join(root, rel), "rb") as handle:
            text = decode_text(handle.read())
        if text_sha256(text) != manifest[rel]["sha256"]:
            raise ChangedWhileReading(
                f"'{rel}' changed while the source was being indexed", hint="run the command again"
            )
        return text

    return load
