"""Pack-relative paths: POSIX, relative, and never outside their root.

A symbolic link whose target leaves the pack root is never followed: ``check_inside`` refuses a file read
through one (a located ``PathEscapeError``), and ``links_out`` lists every such link under a folder,
without following any, for a format's validate to report.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from agentpack.io.errors import AgentpackError, PathEscapeError


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
    if any(c < " " or c == "\x7f" for c in path):
        raise PathEscapeError(f"{path!r} contains a control character")
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


def check_inside(
    root: str | Path,
    path: str | Path,
    *,
    display: str | None = None,
    what: str = "the pack",
    expected: str = "a file",
    error: type[AgentpackError] = PathEscapeError,
) -> None:
    """``error`` (located at ``display``) when ``path``, lexically under ``root``, leaves it through a symbolic
    link (its own or a parent folder's); nothing is read."""
    if not is_within(root, path):
        target = os.path.realpath(path)
        raise error(
            f"expected {expected} inside {what}, found a symbolic link to '{target}' outside it (never followed)",
            file=display or os.fspath(path),
            hint=f"copy it into {what} instead of linking to it",
        )


def links_out(root: str | Path, top: str | Path | None = None) -> Iterator[tuple[str, str]]:
    """Every symbolic link under ``top`` (default ``root``) whose target is outside ``root``, dangling ones
    included: (its path relative to ``root``, POSIX; the real path it points to), sorted by path. No link is
    followed; ``top`` itself is not checked (see ``check_inside``). One ``scandir`` per folder: the entry
    types come with the listing, so only links cost a ``realpath``."""
    root_real = os.path.realpath(root)
    base = os.fspath(root)
    stack = [os.fspath(top if top is not None else root)]
    found: list[tuple[str, str]] = []
    while stack:
        try:
            with os.scandir(stack.pop()) as entries:
                for entry in entries:
                    if entry.is_symlink():
                        if not is_within(root_real, entry.path):
                            found.append(
                                (os.path.relpath(entry.path, base).replace(os.sep, "/"), os.path.realpath(entry.path))
                            )
                    elif entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
        except OSError:  # a folder that cannot be listed is the readers' error, not a link
            continue
    yield from sorted(found)
