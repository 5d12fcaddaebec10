"""Where things live inside a pack (light: the entry point uses it to detect packs).

The manifest is ``expert/EXPERT.yaml``; everything the lifecycle writes lives under ``expert/``:

* ``expert/context/.staging/<run>/``      builds waiting for evals or approval
* ``expert/context/**/.backup/``          previous published indexes (``retention`` applies)
* ``expert/context/.lifecycle/``          lock, publish journal, pending run, state
* ``expert/logs/{updates,queries}/``      dated JSONL logs

None of these are packaged (see ``packaging.package.DEFAULT_EXCLUDES``).
"""

from __future__ import annotations

import os
from pathlib import Path

MANIFEST_PATH = "expert/EXPERT.yaml"
PACKAGE_JSON = "expert/package.json"
STAGING = "expert/context/.staging"
LIFECYCLE = "expert/context/.lifecycle"
LOGS = "expert/logs"
BACKUP_DIR = ".backup"
PACK_INTERNAL_DIRS = (STAGING, LIFECYCLE, LOGS)
"""Folders of a pack that are never indexed, even when a source's root contains the pack."""
SKILL_FILES = ("SKILL.md", "skill.md")
PACK_PARTS = ("expert/maintenance/policy.json", "expert/evals", "expert/context")


def skill_root(path: Path) -> Path | None:
    """The skill directory ``path`` names: the directory itself, its SKILL.md or its expert/EXPERT.yaml."""
    if path.is_file():
        if path.name in SKILL_FILES:
            return path.parent
        if path.name == "EXPERT.yaml" and path.parent.name == "expert":
            return path.parent.parent
        return None
    return path if path.is_dir() else None


def has_manifest(root: Path) -> bool:
    """``expert/EXPERT.yaml`` is there as anything: a folder or a broken link in its place is the
    loader's error to report, never a reason to take the pack for a plain skill."""
    return os.path.lexists(root / MANIFEST_PATH)


def has_pack_parts(root: Path) -> bool:
    """``expert/`` holds a part only ECP defines (spec 4: ``maintenance/policy.json``, ``evals/``,
    ``context/``): a pack whose EXPERT.yaml is missing, which the loader reports."""
    return any(os.path.lexists(root / rel) for rel in PACK_PARTS)


def has_skill_md(root: Path) -> bool:
    return any((root / name).is_file() for name in SKILL_FILES)


def find_pack_root(path: str | Path) -> Path | None:
    """The skill root for ``path`` when it is a pack: SKILL.md and expert/EXPERT.yaml both present."""
    root = skill_root(Path(path))
    if root is not None and has_manifest(root) and has_skill_md(root):
        return root
    return None


def lifecycle_dir(root: Path) -> Path:
    return Path(root) / LIFECYCLE


def lock_path(root: Path) -> Path:
    return lifecycle_dir(root) / "lock"


def journal_path(root: Path) -> Path:
    return lifecycle_dir(root) / "journal.json"


def pending_path(root: Path) -> Path:
    return lifecycle_dir(root) / "pending.json"


def state_path(root: Path) -> Path:
    return lifecycle_dir(root) / "state.json"


def staging_root(root: Path) -> Path:
    return Path(root) / STAGING


def backup_root(index_dir: Path) -> Path:
    """Backups of an index live beside it: ``<parent>/.backup/<index dir name>/<stamp>/``."""
    return index_dir.parent / BACKUP_DIR / index_dir.name
