"""``agentpack ecp prune``: retention of logs and index backups, and leftovers of killed runs, under the pack lock."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.io.fsutil import file_lock

from ..pack import journal, layout, leftovers
from ..pack.logs import logger_for, prune_logs, retention_days
from ..pack.manifest import load_pack
from .backups import prune_backups
from .policy import Policy


def prune_pack(
    root: str | Path, *, dry_run: bool = False, clock: Clock = SYSTEM_CLOCK, who: str = "user"
) -> dict[str, Any]:
    """Retention (spec 7.6 and 9): old dated logs and index backups, only inside logs/ and .backup/;
    and what killed builds and refreshes left behind (``pack.leftovers``), after finishing any
    interrupted publish."""
    pack = load_pack(root)
    root = pack.root
    policy = Policy.load(pack)
    days = retention_days(pack.manifest, policy.raw)
    with file_lock(layout.lock_path(root), what=f"pack {root.name}"):
        index_paths = [e.path for e in pack.indexes]
        if dry_run:
            stale = leftovers.find(root, index_paths)
        else:
            journal.recover(root)
            stale = leftovers.remove(root, index_paths)
        logs_removed = prune_logs(root, days, now=clock.now(), dry_run=dry_run)
        backups_removed = prune_backups(
            root,
            [e.path for e in pack.indexes],
            max_per_index=policy.max_backups_per_index,
            max_age_days=policy.max_backup_age_days,
            now=clock.now(),
            dry_run=dry_run,
        )
    if not dry_run and (logs_removed or backups_removed or stale):
        logger_for(root, pack.manifest, policy.raw, clock=clock).update(
            "prune",
            who=who,
            outputs={
                "deleted_logs": len(logs_removed),
                "deleted_backups": len(backups_removed),
                "deleted_leftovers": len(stale),
            },
        )
    return {
        "path": str(root),
        "dry_run": dry_run,
        "log_retention_days": days,
        "max_backups_per_index": policy.max_backups_per_index,
        "max_backup_age_days": policy.max_backup_age_days,
        "deleted_logs": logs_removed,
        "deleted_backups": backups_removed,
        "deleted_leftovers": stale,
    }
