"""Index backups under ``expert/context/**/.backup/`` and their retention (spec 7.6).

A backup is a whole former index directory named ``<UTC stamp>-<run id>[-rolled-back]``,
so the newest sorts last. Retention only ever deletes inside ``.backup/``.
"""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from ..pack import layout


def _stamp(name: str) -> datetime | None:
    try:
        return datetime.strptime(name[:16], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def list_backups(root: Path, index_path: str) -> list[dict[str, Any]]:
    """Backups of one index, oldest first."""
    folder = layout.backup_root(Path(root) / index_path)
    if not folder.is_dir():
        return []
    out = []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.is_dir() and not entry.is_symlink():
            made = _stamp(entry.name)
            out.append(
                {
                    "path": entry.relative_to(root).as_posix(),
                    "name": entry.name,
                    "created_at": made.isoformat().replace("+00:00", "Z") if made else None,
                }
            )
    return out


def prune_backups(
    root: Path,
    index_paths: list[str],
    *,
    max_per_index: int | None,
    max_age_days: int | None,
    now: datetime,
    dry_run: bool = False,
) -> list[str]:
    """Delete backups beyond ``max_per_index`` (oldest first) or older than ``max_age_days``."""
    removed: list[str] = []
    for index_path in index_paths:
        backups = list_backups(root, index_path)
        doomed = set()
        if max_per_index is not None and len(backups) > max_per_index:
            doomed |= {b["path"] for b in backups[: len(backups) - max_per_index]}
        if max_age_days is not None:
            cutoff = now - timedelta(days=max_age_days)
            for backup in backups:
                made = _stamp(backup["name"])
                if made is not None and made < cutoff:
                    doomed.add(backup["path"])
        for rel in sorted(doomed):
            if not dry_run:
                shutil.rmtree(Path(root) / rel)
            removed.append(rel)
    return removed
