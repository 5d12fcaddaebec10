"""Publishing a refresh's staged indexes and rolling back, through the publish journal.

``publish_staged`` and ``rollback`` work out what a publish changes (the index moves, the
EXPERT.yaml revisions, the lifecycle state with its new generation) and hand it to
``pack.journal``, which performs it crash-safely: an interrupted publish or rollback is finished
by the next command that touches the pack, or by the next query (``journal.settle``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.io.errors import AgentpackError

from ..pack import journal as journals
from ..pack import layout
from . import state


def stamp(clock: Clock) -> str:
    return clock.now().strftime("%Y%m%dT%H%M%SZ")


def backup_name(clock: Clock, run_id: str, suffix: str = "") -> str:
    """``<UTC stamp>-<run id><suffix>`` (run ids that start with a stamp are used as they are)."""
    if not suffix and re.match(r"^\d{8}T\d{6}Z-", run_id):
        return run_id
    return f"{stamp(clock)}-{run_id}{suffix}"


def publish_staged(
    root: Path,
    *,
    run_id: str,
    indexes: dict[str, str],
    staged_dir: str,
    revisions: dict[str, dict[str, Any]],
    previous_revisions: dict[str, dict[str, Any]],
    strategy: str,
    extra_state: dict[str, Any] | None = None,
    clear_pending: bool = False,
    clock: Clock = SYSTEM_CLOCK,
) -> dict[str, Any]:
    """Swap the staged index directories into place.

    ``indexes`` maps index id to its published path; the staged copy of each is
    at ``<staged_dir>/<published path>`` (where ``build_pack(out_dir=...)`` writes).
    """
    steps = []
    generation_indexes: dict[str, Any] = {}
    for index_id, target_rel in indexes.items():
        incoming_rel = f"{staged_dir}/{target_rel}"
        target = root / target_rel
        backup_rel = (layout.backup_root(target) / backup_name(clock, run_id)).relative_to(root).as_posix()
        step = journals.plan_step(root, target_rel, incoming_rel, backup_rel)
        steps.append(step)
        generation_indexes[index_id] = {"path": target_rel, "backup": step["outgoing"]}
    generation = {
        "run_id": run_id,
        "published_at": clock.iso(),
        "strategy": strategy,
        "indexes": generation_indexes,
        "previous_revisions": previous_revisions,
        "revisions": revisions,
        "rolled_back": False,
    }
    after = state.load(root)
    if not any(g.get("run_id") == run_id for g in after["generations"]):
        after["generations"].append(generation)
    after["last_publish"] = {"run_id": run_id, "at": generation["published_at"]}
    if strategy == "rebuild":
        after["last_full_rebuild_at"] = generation["published_at"]
    after.update(extra_state or {})
    journal = {
        "action": "publish",
        "run_id": run_id,
        "started_at": clock.iso(),
        "steps": steps,
        "revisions": revisions,
        "state": state.trimmed(after),
        "cleanup": staged_dir,
        "clear_pending": clear_pending,
    }
    journals.start(root, journal)
    return generation


def rollback(root: Path, *, clock: Clock = SYSTEM_CLOCK) -> dict[str, Any]:
    """Restore the state before the last published (not yet rolled back) generation."""
    current = state.load(root)
    for generation in reversed(current["generations"]):
        if generation.get("rolled_back"):
            continue
        restorable = {
            i: v for i, v in generation.get("indexes", {}).items() if v.get("backup") and (root / v["backup"]).is_dir()
        }
        if not restorable:
            raise AgentpackError(
                f"no backup is left to roll back publish {generation['run_id']} (first build, or pruned by retention)",
                hint="rebuild with 'agentpack ecp refresh --rebuild'",
            )
        steps = []
        for _, info in sorted(restorable.items()):
            target = root / info["path"]
            out_rel = layout.backup_root(target) / backup_name(clock, generation["run_id"], "-rolled-back")
            steps.append(journals.plan_step(root, info["path"], info["backup"], out_rel.relative_to(root).as_posix()))
        generation["rolled_back"] = True
        current["last_rollback"] = {"run_id": generation["run_id"], "at": clock.iso()}
        journal = {
            "action": "rollback",
            "run_id": generation["run_id"],
            "started_at": clock.iso(),
            "steps": steps,
            "revisions": generation.get("previous_revisions") or {},
            "state": state.trimmed(current),
        }
        journals.start(root, journal)
        return {
            "rolled_back": generation["run_id"],
            "published_at": generation.get("published_at"),
            "indexes": sorted(restorable),
            "revisions": journal["revisions"],
        }
    raise AgentpackError(
        "nothing to roll back: no published generation is recorded for this pack",
        hint="only publishes made by 'agentpack ecp refresh/publish' can be rolled back",
    )
