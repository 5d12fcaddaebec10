"""The packs a command's paths name: a folder that no format claims stands for the packs under it,
as a linter given a folder checks the files under it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentpack.kernel.host import Host
    from agentpack.kernel.packtypes import Detection

SKIPPED = frozenset({"node_modules", "__pycache__", "__pypackages__", "site-packages", "venv"})
"""Folders never searched (besides hidden ones): installed dependencies and caches, never packs."""


def expand(host: Host, paths: tuple[Path, ...] | list[Path]) -> list[tuple[Path, Detection | None]]:
    """``(path, detection)`` for each pack (pass both to ``host.load``): a claimed path as given, an unclaimed
    folder replaced by the packs under it, in name order. A path that is neither stays, with no detection, so
    that loading it explains what it holds."""
    packs: list[tuple[Path, Detection | None]] = []
    for path in paths:
        detection = host.detect(path)
        if detection is not None:
            packs.append((path, detection))
            continue
        under = packs_under(host, path) if path.is_dir() else []
        packs.extend(under or [(path, None)])
    return packs


def packs_under(host: Host, folder: Path) -> list[tuple[Path, Detection | None]]:
    """The claimed folders below ``folder``, outermost only (a pack's own folders are not searched).
    Hidden folders and those in ``SKIPPED`` are not searched, and symbolic links not followed."""
    found: list[tuple[Path, Detection | None]] = []
    stack = _subfolders(folder)[::-1]
    while stack:
        child = stack.pop()
        detection = host.detect(child)
        if detection is not None:
            found.append((child, detection))
        else:
            stack.extend(_subfolders(child)[::-1])
    return found


def _subfolders(folder: Path) -> list[Path]:
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return []
    return [
        child
        for child in children
        if not child.name.startswith(".") and child.name not in SKIPPED and child.is_dir() and not child.is_symlink()
    ]
