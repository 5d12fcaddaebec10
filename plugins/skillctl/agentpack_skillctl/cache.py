"""Opt-in output cache for deterministic skills, keyed by the skill's content hash and the input hash.

A skill is eligible only when its output can depend on nothing but the skill
and the input: network, time and randomness all ``forbidden``, no network
granted, and no declared filesystem read or write (a read of the workspace
could change between runs; a write would be skipped on a hit).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agentpack.io.hashing import sha256_file, sha256_json

from . import diskcache
from .diskcache import default_dir
from .prepare import Prepared

CACHE_FORMAT = 1
SKIP_DIRS = frozenset({"__pycache__", ".git", "node_modules"})
_HASHES: dict[str, tuple[list, str]] = {}


def eligibility(prepared: Prepared) -> tuple[bool, str]:
    skill, g = prepared.skill, prepared.grants
    for key in ("network", "time", "randomness"):
        if skill.get("determinism", key) != "forbidden":
            return False, f"determinism.{key} is not 'forbidden'"
    if g.network:
        return False, "network is granted"
    if skill.access("filesystem", "read", default=[]) or skill.access("filesystem", "write", default=[]):
        return False, "the skill declares filesystem reads or writes: its output may depend on the workspace"
    return True, "deterministic, reads nothing but its input"


def _files(root: str) -> list[tuple[str, str, os.stat_result]]:
    """``(relative POSIX path, path, lstat)`` of every file under ``root``, sorted by relative path."""
    found = []
    stack = [("", root)]
    while stack:
        prefix, folder = stack.pop()
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS:
                        stack.append((prefix + entry.name + "/", entry.path))
                else:
                    found.append((prefix + entry.name, entry.path, entry.stat(follow_symlinks=False)))
    return sorted(found, key=lambda f: f[0])


def _digest(files: list[tuple[str, str, os.stat_result]]) -> str:
    return sha256_json([[rel, sha256_file(path)] for rel, path, st in files if stat.S_ISREG(st.st_mode)])


def content_hash(root: str | Path) -> str:
    """SHA-256 over every regular file of the skill folder (relative path and content; symlinks, FIFOs and
    other special files are left out: opening a FIFO would wait for a writer forever)."""
    return _digest(_files(str(root)))


def content_hash_cached(root: str | Path) -> str | None:
    """``content_hash`` memoised on the files' sizes and modification times, in-process and on disk."""
    real = os.path.realpath(root)
    try:
        files = _files(real)
    except OSError:
        return None
    key = [[rel, st.st_size, st.st_mtime_ns] for rel, _, st in files]
    cached = _HASHES.get(real)
    if cached is not None and cached[0] == key:
        return cached[1]
    entry = diskcache.read("content", real)
    if isinstance(entry, dict) and entry.get("files") == key and isinstance(entry.get("sha256"), str):
        digest = entry["sha256"]
    else:
        try:
            digest = _digest(files)
        except OSError:
            return None
        stamps = [[path, st.st_size, st.st_mtime_ns, 0] for _, path, st in files]
        if diskcache.settled(stamps):
            diskcache.write("content", real, [], {"files": key, "sha256": digest})
    _HASHES[real] = (key, digest)
    return digest


def key(prepared: Prepared, input_sha256: str) -> str:
    return sha256_json(
        {"format": CACHE_FORMAT, "skill": content_hash_cached(prepared.skill.directory), "input": input_sha256}
    )


def _path(directory: Path | None, key: str) -> Path:
    return (directory or default_dir()) / key[:2] / f"{key}.json"


def load(directory: Path | None, key: str) -> bytes | None:
    path = _path(directory, key)
    try:
        data = path.read_bytes()
    except OSError:
        return None
    name = path.name[: -len(".json")]
    return data if name == key else None


def store(directory: Path | None, key: str, output: bytes) -> None:
    from agentpack.io.fsutil import atomic_write_bytes

    try:
        atomic_write_bytes(_path(directory, key), output)
    except OSError:
        pass  # a cache that cannot be written is no reason to fail a run


__all__ = ["content_hash", "content_hash_cached", "default_dir", "eligibility", "key", "load", "store"]
