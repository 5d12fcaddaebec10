"""Publishing staged indexes, rolling back, and finishing an interrupted publish (crash safety).

A publish (or rollback) first writes a journal naming every directory move,
then performs them, then updates EXPERT.yaml and the state, then deletes the
journal. Each index is swapped with ``renameat2(RENAME_EXCHANGE)`` where the
kernel offers it, so the published path always holds a complete index, then
the old index is moved to ``.backup/``. Without the exchange call the old
index is moved away first and the journal covers the short gap. The journal
records the inode of every incoming directory, so ``recover`` can tell which
moves happened and completes the rest (a journal is only written after the
evals passed, so finishing it is always right).
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import shutil
from functools import cache
from pathlib import Path
from typing import Any

from agentpack.clock import SYSTEM_CLOCK, Clock
from agentpack.errors import AgentpackError
from agentpack.fsutil import atomic_write_json, fsync_dir

from ..pack import layout
from . import state
from .crashpoints import crashpoint
from .revisions import update_manifest

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


@cache
def _libc() -> ctypes.CDLL | None:
    try:
        return ctypes.CDLL(None, use_errno=True)
    except OSError:
        return None


def exchange(a: Path, b: Path) -> bool:
    """Atomically swap two directories (Linux ``renameat2``); False when the system cannot."""
    libc = _libc()
    fn = getattr(libc, "renameat2", None) if libc is not None else None
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(a))


def stamp(clock: Clock) -> str:
    return clock.now().strftime("%Y%m%dT%H%M%SZ")


def _move(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    os.replace(src, dst)
    fsync_dir(dst.parent)


def _complete_step(root: Path, step: dict[str, Any]) -> None:
    """Bring one index to its journalled end state, whatever part of the move already happened."""
    target = root / step["target"]
    incoming = root / step["incoming"]
    outgoing = root / step["outgoing"] if step.get("outgoing") else None
    ino = step["incoming_ino"]
    if target.exists() and target.stat().st_ino == ino:
        if incoming.exists() and outgoing is not None:
            _move(incoming, outgoing)  # the exchange happened; the old index is still at `incoming`
        return
    if not incoming.exists() or incoming.stat().st_ino != ino:
        raise AgentpackError(
            f"cannot finish the interrupted publish: {step['incoming']} is gone",
            file=str(layout.journal_path(root)),
            hint="restore the index with 'agentpack ecp rollback' or rebuild it",
        )
    if not target.exists():
        _move(incoming, target)
        return
    crashpoint("publish.before_swap")
    if exchange(incoming, target):
        fsync_dir(target.parent)
        crashpoint("publish.after_swap")
        if outgoing is not None:
            _move(incoming, outgoing)
        else:
            shutil.rmtree(incoming)
    else:
        if outgoing is None:
            raise AgentpackError("no backup path for a non-atomic swap")
        _move(target, outgoing)
        crashpoint("publish.after_swap")
        _move(incoming, target)


def plan_step(root: Path, target_rel: str, incoming_rel: str, outgoing_rel: str | None) -> dict[str, Any]:
    incoming = root / incoming_rel
    target = root / target_rel
    return {
        "target": target_rel,
        "incoming": incoming_rel,
        "incoming_ino": incoming.stat().st_ino,
        "outgoing": outgoing_rel if target.exists() else None,
    }


def run_journal(root: Path, journal: dict[str, Any]) -> None:
    """Perform (or finish) every step of ``journal``, then update EXPERT.yaml and the state."""
    for step in journal["steps"]:
        _complete_step(root, step)
        crashpoint("publish.after_step")
    if journal.get("revisions"):
        update_manifest(root, journal["revisions"])
    crashpoint("publish.after_manifest")
    current = state.load(root)
    generation = journal.get("generation")
    if journal["action"] == "publish" and generation:
        if not any(g.get("run_id") == generation["run_id"] for g in current["generations"]):
            current["generations"].append(generation)
        current["last_publish"] = {"run_id": generation["run_id"], "at": generation["published_at"]}
        if generation.get("strategy") == "rebuild":
            current["last_full_rebuild_at"] = generation["published_at"]
    elif journal["action"] == "rollback":
        for g in current["generations"]:
            if g.get("run_id") == journal["run_id"]:
                g["rolled_back"] = True
        current["last_rollback"] = {"run_id": journal["run_id"], "at": journal["started_at"]}
    for key, value in (journal.get("state") or {}).items():
        current[key] = value
    state.save(root, current)
    if journal.get("clear_pending"):
        layout.pending_path(root).unlink(missing_ok=True)
    layout.journal_path(root).unlink(missing_ok=True)
    if journal.get("cleanup"):
        shutil.rmtree(root / journal["cleanup"], ignore_errors=True)


def start_journal(root: Path, journal: dict[str, Any]) -> None:
    atomic_write_json(layout.journal_path(root), journal)
    crashpoint("publish.after_journal")
    run_journal(root, journal)


def recover(root: Path) -> dict[str, Any] | None:
    """Finish an interrupted publish or rollback; returns the journal it finished, if any."""
    journal = state.read_json(layout.journal_path(root))
    if journal is None:
        return None
    run_journal(root, journal)
    return journal


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
        step = plan_step(root, target_rel, incoming_rel, backup_rel)
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
    journal = {
        "action": "publish",
        "run_id": run_id,
        "started_at": clock.iso(),
        "steps": steps,
        "revisions": revisions,
        "generation": generation,
        "state": extra_state or {},
        "cleanup": staged_dir,
        "clear_pending": clear_pending,
    }
    start_journal(root, journal)
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
            steps.append(plan_step(root, info["path"], info["backup"], out_rel.relative_to(root).as_posix()))
        journal = {
            "action": "rollback",
            "run_id": generation["run_id"],
            "started_at": clock.iso(),
            "steps": steps,
            "revisions": generation.get("previous_revisions") or {},
        }
        start_journal(root, journal)
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
