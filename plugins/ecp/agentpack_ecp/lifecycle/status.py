"""``agentpack ecp status`` / ``expert_status``: sources and revisions, index age and staleness,
the last refresh, the last eval results, and anything pending or interrupted."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from agentpack.io import jsonio
from agentpack.io.clock import SYSTEM_CLOCK, Clock

from ..pack import layout
from ..pack.files import read_regular
from ..pack.logs import LogConfig
from ..pack.manifest import IndexEntry, load_pack
from . import backups, state
from .changes import detect
from .state import parse_time


def _index_info(root: Path, entry: IndexEntry, now: datetime, changed_sources: set[str]) -> dict[str, Any]:
    folder = root / entry.path
    info: dict[str, Any] = {
        "index_id": entry.id,
        "type": entry.type,
        "format": entry.format,
        "path": entry.path,
        "built": False,
    }
    try:
        build = jsonio.loads(read_regular(folder / "build_info.json"))
    except (OSError, ValueError):
        info.update(stale=True, stale_reason="not built yet")
        return info
    built_at = parse_time(build.get("built_at"))
    sources = [s.get("source_id") for s in build.get("sources") or [] if isinstance(s, dict)]
    stale = sorted(changed_sources.intersection(sources))
    info.update(
        built=True,
        built_at=build.get("built_at"),
        created_at=build.get("created_at"),
        age_seconds=round((now - built_at).total_seconds()) if built_at else None,
        chunks=(build.get("stats") or {}).get("chunks"),
        sources=sources,
        stale=bool(stale),
        stale_sources=stale,
        backups=len(backups.list_backups(root, entry.path)),
    )
    if stale:
        info["stale_reason"] = "sources changed since the build: " + ", ".join(stale)
    return info


def pack_status(root: str | Path, *, check_sources: bool = True, clock: Clock = SYSTEM_CLOCK) -> dict[str, Any]:
    """The status payload; ``check_sources`` diffs the sources against the indexes (reads them)."""
    pack = load_pack(root)
    root = pack.root
    now = clock.now()
    changes_by_source: dict[str, Any] = {}
    problems: list[str] = []
    if check_sources:
        try:
            changes, _ = detect(pack, clock=clock)
            changes_by_source = {c.source_id: c for c in changes}
        except Exception as exc:
            problems.append(f"cannot check sources for changes: {getattr(exc, 'message', exc)}")
    changed = {sid for sid, c in changes_by_source.items() if c.paths or c.rebuild_reason}
    sources = []
    for source in pack.sources:
        item = {
            "source_id": source.source_id,
            "type": source.type,
            "uri": source.uri,
            "revision": source.revision,
            "refresh_strategy": source.refresh.get("strategy"),
        }
        c = changes_by_source.get(source.source_id)
        if c is not None:
            item.update(changed_files=len(c.paths), current=c.new, stale=source.source_id in changed)
        sources.append(item)
    current = state.load(root)
    pending = state.read_json(layout.pending_path(root))
    journal = state.read_json(layout.journal_path(root))
    generations = current.get("generations", [])
    logs = LogConfig.from_manifest(pack.manifest, pack.policy)
    return {
        "path": str(root),
        "expert_id": pack.expert_id,
        "skill": pack.name,
        "profile": pack.profile,
        "checked_at": clock.iso(),
        "sources": sources,
        "indexes": [_index_info(root, e, now, changed) for e in pack.indexes],
        "stale": bool(changed) or any(not (root / e.path / "build_info.json").is_file() for e in pack.indexes),
        "last_refresh": current.get("last_refresh"),
        "last_evals": current.get("last_evals"),
        "last_publish": current.get("last_publish"),
        "last_rollback": current.get("last_rollback"),
        "last_full_rebuild_at": current.get("last_full_rebuild_at"),
        "published_generations": len([g for g in generations if not g.get("rolled_back")]),
        "pending": {k: pending.get(k) for k in ("run_id", "status", "created_at", "strategy", "evals")}
        if pending
        else None,
        "interrupted": {"action": journal.get("action"), "run_id": journal.get("run_id")} if journal else None,
        "triggers": (pack.policy or {}).get("refresh_triggers") or [],
        "logs": {
            "enabled": logs.enabled,
            "retention_days": logs.retention_days,
            "store_question": logs.store_question,
            "store_answer": logs.store_answer,
        },
        "problems": problems,
    }
