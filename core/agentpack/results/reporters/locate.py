"""A finding's file as CI sees it: relative to the repository root (``$GITHUB_WORKSPACE``, when the
working directory is inside it) or else to the working directory, whatever form the plugin gave it in.

Plugins name files in three ways: from the path the user gave (``skills/x/SKILL.md``), relative to the
pack (``skills/x/SKILL.md`` inside the DCI workspace ``ws``), or absolute. A relative file that does
not start with its pack's path is taken as pack-relative, unless only the working-directory reading
names an existing file.
"""

from __future__ import annotations

import os
from pathlib import PurePath


def base_dir() -> str:
    """The folder paths are shown from: ``$GITHUB_WORKSPACE`` when the working directory is in it."""
    cwd = os.getcwd()
    workspace = os.environ.get("GITHUB_WORKSPACE")
    if workspace:
        root = os.path.abspath(workspace)
        if _inside(cwd, root):
            return root
    return cwd


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _under(file: str, owner: str) -> bool:
    prefix = PurePath(owner).parts
    return PurePath(file).parts[: len(prefix)] == prefix


def locate(file: str | None, owner: str | None, base: str) -> str:
    """``file`` (or, without one, ``owner``: the pack or evaluation path) shown from ``base``."""
    target = file or owner or ""
    if not target:
        return ""
    if file and owner and not os.path.isabs(file) and not _under(file, owner):
        root = owner if os.path.isdir(owner) else os.path.dirname(owner)
        joined = os.path.join(root, file)
        if os.path.exists(joined) or not os.path.exists(file):
            target = joined
    absolute = os.path.abspath(target)
    if not _inside(absolute, base):
        return PurePath(absolute).as_posix()
    return PurePath(os.path.relpath(absolute, base)).as_posix()
