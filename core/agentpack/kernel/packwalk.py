"""The packs a command's paths name: a folder that no format claims stands for the packs under it,
as a linter given a folder checks the files under it."""

from __future__ import annotations

from fnmatch import fnmatchcase
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from agentpack.kernel.config import Settings
    from agentpack.kernel.host import Host
    from agentpack.kernel.packtypes import Detection

SKIPPED = frozenset({"node_modules", "__pycache__", "__pypackages__", "site-packages", "venv"})
"""Folders never searched (besides hidden ones): installed dependencies and caches, never packs."""

HOST_SKILL_ROOTS = (
    ".agents/skills",
    ".claude/skills",
    ".codex/skills",
    ".cursor/skills",
    ".gemini/skills",
    ".github/skills",
    ".opencode/skill",
    ".opencode/skills",
)
"""The hidden folders that agent hosts read skills from in a project (docs/skills.md lists which host reads
which, with sources): searched in every folder the walk visits, though other hidden folders are not."""


class Walk(NamedTuple):
    """What a walk searches: the hidden skill roots (the hosts' and the user's) and the excluded paths
    (``fnmatch`` patterns: one without ``/`` matches a folder's name, one with ``/`` its path below the
    folder walked; a folder below an excluded one is excluded too)."""

    roots: tuple[str, ...] = HOST_SKILL_ROOTS
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(cls, settings: Settings) -> Walk:
        """The walk the project settings ask for: the hosts' roots and the user's, minus the excluded."""
        return cls(tuple(dict.fromkeys((*HOST_SKILL_ROOTS, *settings.skill_roots))), settings.exclude)

    def excludes(self, relative: str) -> bool:
        """Whether the folder at ``relative`` (POSIX, below the folder walked) or a folder above it is excluded."""
        parts = relative.split("/")
        prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
        return any(
            any(fnmatchcase(text, pattern.strip("/")) for text in (prefixes if "/" in pattern.strip("/") else parts))
            for pattern in self.exclude
        )


def expand(
    host: Host, paths: tuple[Path, ...] | list[Path], walk: Walk | None = None
) -> list[tuple[Path, Detection | None]]:
    """``(path, detection)`` for each pack (pass both to ``host.load``): a claimed path as given, an unclaimed
    folder replaced by the packs under it, in name order. A path that is neither stays, with no detection, so
    that loading it explains what it holds. Without ``walk``, the project's settings
    (``agentpack.kernel.config``) say what to search."""
    if walk is None:
        from agentpack.kernel.config import load

        walk = Walk.of(load())
    packs: list[tuple[Path, Detection | None]] = []
    for path in paths:
        detection = host.detect(path)
        if detection is not None:
            packs.append((path, detection))
            continue
        under = packs_under(host, path, walk) if path.is_dir() else []
        packs.extend(under or [(path, None)])
    return packs


def packs_under(host: Host, folder: Path, walk: Walk | None = None) -> list[tuple[Path, Detection | None]]:
    """The claimed folders below ``folder``, outermost only (a pack's own folders are not searched).
    Hidden folders other than the skill roots, those in ``SKIPPED`` and those excluded are not searched,
    and symbolic links not followed."""
    walk = walk or Walk()
    found: list[tuple[Path, Detection | None]] = []
    seen: set[Path] = set()
    stack = _subfolders(folder, folder, walk)[::-1]
    while stack:
        child = stack.pop()
        if child in seen:
            continue
        seen.add(child)
        detection = host.detect(child)
        if detection is not None:
            found.append((child, detection))
        else:
            stack.extend(_subfolders(child, folder, walk)[::-1])
    return found


def _subfolders(folder: Path, top: Path, walk: Walk) -> list[Path]:
    """The folders to search below ``folder``: its visible children and its skill roots, in name order."""
    try:
        children = sorted(folder.iterdir())
    except OSError:
        return []
    visible = [
        child
        for child in children
        if not child.name.startswith(".") and child.name not in SKIPPED and child.is_dir() and not child.is_symlink()
    ]
    names = {child.name for child in children}  # a root is looked at only when its first folder is here
    roots = [folder / root for root in walk.roots if root.split("/", 1)[0] in names and _real_folder(folder, root)]
    return [
        child
        for child in sorted(dict.fromkeys((*visible, *roots)))
        if not walk.exclude or not walk.excludes(child.relative_to(top).as_posix())
    ]


def _real_folder(folder: Path, relative: str) -> bool:
    """Whether ``folder/relative`` is a folder reached through no symbolic link."""
    path = folder
    for part in relative.split("/"):
        path = path / part
        if path.is_symlink() or not path.is_dir():
            return False
    return True
