"""Opt-in output cache for deterministic skills, keyed by the skill's content hash and the input hash.

A skill is eligible only when its output can depend on nothing but the skill
and the input: network, time and randomness all ``forbidden``, no network
granted, and no declared filesystem read or write (a read of the workspace
could change between runs; a write would be skipped on a hit).
"""

from __future__ import annotations

import os
from pathlib import Path

from agentpack.hashing import sha256_file, sha256_json

from .prepare import Prepared

CACHE_FORMAT = 1
SKIP_DIRS = frozenset({"__pycache__", ".git", "node_modules"})
_HASHES: dict[str, tuple[tuple, str]] = {}


def default_dir() -> Path:
    base = os.environ.get("SKILLCTL_CACHE_DIR")
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "agentpack" / "skillctl"


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


def _files(root: Path) -> list[tuple[str, Path]]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in files:
            path = Path(folder) / name
            found.append((path.relative_to(root).as_posix(), path))
    return sorted(found)


def content_hash(root: str | Path) -> str:
    """SHA-256 over every file of the skill folder (relative path and content)."""
    root = Path(root)
    return sha256_json([[rel, sha256_file(path)] for rel, path in _files(root) if not path.is_symlink()])


def content_hash_cached(root: str | Path) -> str | None:
    """``content_hash`` memoised on the files' sizes and modification times."""
    root = Path(root)
    try:
        files = _files(root)
        stamp = tuple((rel, st.st_size, st.st_mtime_ns) for rel, st in ((r, p.lstat()) for r, p in files))
    except OSError:
        return None
    key = os.path.realpath(root)
    cached = _HASHES.get(key)
    if cached is not None and cached[0] == stamp:
        return cached[1]
    digest = sha256_json([[rel, sha256_file(path)] for rel, path in files if not path.is_symlink()])
    _HASHES[key] = (stamp, digest)
    return digest


def key(prepared: Prepared, input_sha256: str) -> str:
    return sha256_json({"format": CACHE_FORMAT, "skill": content_hash_cached(prepared.skill.directory),
                        "input": input_sha256})


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
    from agentpack.fsutil import atomic_write_bytes

    try:
        atomic_write_bytes(_path(directory, key), output)
    except OSError:
        pass  # a cache that cannot be written is no reason to fail a run


__all__ = ["content_hash", "content_hash_cached", "default_dir", "eligibility", "key", "load", "store"]
