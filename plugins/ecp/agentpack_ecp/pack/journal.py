"""The publish journal: several index directories swapped in as one, crash-safe.

``start(root, journal)`` first writes ``expert/context/.lifecycle/journal.json`` naming every
directory move (with the inode of each incoming directory), then performs the moves, then writes
the new ``sources[].revision`` values into EXPERT.yaml and the lifecycle state the journal carries,
then deletes the journal and its staging folder. Each index is swapped with
``renameat2(RENAME_EXCHANGE)`` where the kernel offers it, so the published path always holds a
complete index; the old one then moves to the step's ``outgoing`` path. Without the exchange call
the old index is moved away first and the journal covers the short gap.

A journal is written only once everything it publishes is built (and, for a refresh, approved),
so finishing it is always right: ``recover`` rolls an interrupted journal forward, telling from
the inodes which moves already happened. ``settle`` is what readers call before they open indexes:
a journal left by a killed process is finished first, under the pack lock, so a query never
serves a mix of old and new indexes.

Journal keys: ``action``, ``run_id``, ``started_at``, ``steps`` (``target``, ``incoming``,
``incoming_ino``, ``outgoing``), ``revisions`` (``{source_id: revision}``), ``state`` (the whole
lifecycle state to write, or ``None``), ``clear_pending`` and ``cleanup`` (a folder to delete last).
"""

from __future__ import annotations

import errno
import os
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError
from agentpack.io.fsutil import LockedError, atomic_write_json, file_lock, fsync_dir

from . import layout
from .crashpoints import crashpoint
from .files import read_json_state
from .revisions import update_manifest, update_text

if TYPE_CHECKING:  # ctypes and shutil are imported where a publish swaps or deletes folders: a query only settles
    import ctypes

_PUBLISHED: list[Callable[[Path], None]] = []
"""Called with a pack's root after a refresh, publish or rollback changed what it serves (``published``)."""


def on_published(callback: Callable[[Path], None]) -> None:
    """Have ``callback(root)`` called after each change of a pack's published indexes in this process
    (the query path's index cache registers itself when imported; a process that never queried has none)."""
    _PUBLISHED.append(callback)


def published(root: str | Path) -> None:
    """Tell the ``on_published`` callbacks that the pack at ``root`` serves other indexes now."""
    for callback in _PUBLISHED:
        callback(Path(root))


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
SETTLE_TIMEOUT = 30.0
"""Seconds a reader waits for another process to finish publishing (a publish only moves folders)."""


@cache
def _libc() -> ctypes.CDLL | None:
    import ctypes

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
    import ctypes

    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.EPERM):
        return False
    raise OSError(err, os.strerror(err), str(a))


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
            import shutil

            shutil.rmtree(incoming)
    else:
        if outgoing is None:
            raise AgentpackError("no backup path for a non-atomic swap")
        _move(target, outgoing)
        crashpoint("publish.after_swap")
        _move(incoming, target)


def plan_step(root: Path, target_rel: str, incoming_rel: str, outgoing_rel: str | None) -> dict[str, Any]:
    """The journal step that swaps ``incoming_rel`` in at ``target_rel`` (the old one to ``outgoing_rel``)."""
    incoming = root / incoming_rel
    target = root / target_rel
    return {
        "target": target_rel,
        "incoming": incoming_rel,
        "incoming_ino": incoming.stat().st_ino,
        "outgoing": outgoing_rel if target.exists() else None,
    }


def run(root: Path, journal: dict[str, Any]) -> None:
    """Perform (or finish) every step of ``journal``, then its revisions and state; delete it."""
    for step in journal["steps"]:
        _complete_step(root, step)
        crashpoint("publish.after_step")
    if journal.get("revisions"):
        update_manifest(root, journal["revisions"])
    crashpoint("publish.after_manifest")
    if journal.get("state") is not None:
        atomic_write_json(layout.state_path(root), journal["state"])
    if journal.get("clear_pending"):
        layout.pending_path(root).unlink(missing_ok=True)
    layout.journal_path(root).unlink(missing_ok=True)
    fsync_dir(layout.lifecycle_dir(root))
    if journal.get("cleanup"):
        import shutil

        shutil.rmtree(root / journal["cleanup"], ignore_errors=True)


def start(root: Path, journal: dict[str, Any]) -> None:
    """Write ``journal``, then run it (the caller holds the pack lock). The revisions are tried on
    EXPERT.yaml first: a journal is only written when it can be finished."""
    if journal.get("revisions"):
        manifest = Path(root) / layout.MANIFEST_PATH
        update_text(manifest.read_text(encoding="utf-8"), journal["revisions"], file=layout.MANIFEST_PATH)
    atomic_write_json(layout.journal_path(root), journal)
    crashpoint("publish.after_journal")
    run(root, journal)


def read(root: Path) -> dict[str, Any] | None:
    """The pending journal of the pack at ``root``, or ``None``."""
    path = layout.journal_path(root)
    data = read_json_state(
        path,
        problem="the publish journal cannot be read",
        hint="restore the indexes with 'agentpack ecp rollback' or rebuild them, then delete the journal",
    )
    if data is None:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        raise AgentpackError("the publish journal is not a journal", file=str(path))
    return data


def recover(root: Path) -> dict[str, Any] | None:
    """Finish an interrupted publish or rollback (the caller holds the pack lock); returns it, if any."""
    journal = read(root)
    if journal is None:
        return None
    run(root, journal)
    return journal


def settle(root: Path, timeout: float = SETTLE_TIMEOUT) -> None:
    """Before reading indexes: finish a publish that a killed process left half done, or wait (up to
    ``timeout`` seconds) for the live one that holds the pack lock to finish. ``AgentpackError`` when
    it cannot be finished here (the pack is read-only, say): never a mix of old and new indexes."""
    deadline = time.monotonic() + timeout
    while layout.journal_path(root).exists():
        try:
            with file_lock(layout.lock_path(root), what=f"pack {Path(root).name}"):
                recover(root)
            return
        except LockedError:
            if time.monotonic() >= deadline:
                raise AgentpackError(
                    f"pack {Path(root).name} is being published by another process (still after {timeout:.0f} s)",
                    hint="try again when the publish is over",
                ) from None
            time.sleep(0.05)
        except OSError as exc:
            raise AgentpackError(
                f"an interrupted publish of pack {Path(root).name} must be finished before it can answer, "
                f"and it cannot be finished here: {exc.strerror or exc}",
                file=str(layout.journal_path(root)),
                hint="run 'agentpack ecp refresh' (or build) where the pack is writable",
            ) from None
