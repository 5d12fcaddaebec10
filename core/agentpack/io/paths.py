"""Pack-relative paths: POSIX, relative, and never outside their root."""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath

from agentpack.io.errors import PathEscapeError


def check_relative(path: str) -> PurePosixPath:
    """Check ``path`` is a relative POSIX path with no ``..`` segment; return it normalised.

    Raises ``PathEscapeError`` for an absolute path, a drive or backslash path,
    an empty path, or one that climbs out with ``..``.
    """
    if not isinstance(path, str):
        raise PathEscapeError(f"path must be a string, not {type(path).__name__}")
    if not path.strip():
        raise PathEscapeError("path is empty")
    if "\\" in path or (len(path) > 1 and path[1] == ":"):
        raise PathEscapeError(f"'{path}' is not a POSIX path (use '/' separators and no drive letter)")
    if "\x00" in path:
        raise PathEscapeError(f"'{path}' contains a NUL byte")
    pure = PurePosixPath(path)
    if pure.is_absolute():
        raise PathEscapeError(f"'{path}' is absolute; pack paths must be relative to the pack root")
    if ".." in pure.parts:
        raise PathEscapeError(f"'{path}' climbs out of the pack root with '..'")
    return pure


def resolve_under(root: str | Path, path: str, *, must_exist: bool = False) -> Path:
    """Resolve pack-relative ``path`` under ``root``, following symlinks, and refuse escapes.

    A symlink inside the pack that points outside it is an escape too.
    """
    pure = check_relative(path)
    root_real = Path(os.path.realpath(root))
    target = Path(os.path.realpath(root_real.joinpath(*pure.parts)))
    if target != root_real and root_real not in target.parents:
        raise PathEscapeError(f"'{path}' resolves outside the pack root (through a symlink)")
    if must_exist and not target.exists():
        raise PathEscapeError(f"'{path}' does not exist under the pack root")
    return target


def is_within(root: str | Path, path: str | Path) -> bool:
    """True when ``path`` (after resolving symlinks) is ``root`` or inside it."""
    root_real = Path(os.path.realpath(root))
    target = Path(os.path.realpath(path))
    return target == root_real or root_real in target.parents


def to_posix(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` as a POSIX string (for artifacts: no absolute paths)."""
    return path.relative_to(root).as_posix()
