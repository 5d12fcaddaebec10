"""Local reliability history: ``.dci/state/reliability.v1.json`` at the workspace root.

Reads never write. ``record`` takes a file lock, re-reads, appends the outcome
(keeping the last 20) and writes atomically. When the state cannot be used
(unreadable, invalid, or a read-only workspace) resolution falls back to an
in-memory state and the report says ``history_state=ephemeral``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, NamedTuple

from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.io.errors import AgentpackError

from . import schemas_store
from .artifacts import require_valid

STATE_FILE = Path(".dci") / "state" / "reliability.v1.json"
WINDOW = 20


class History(NamedTuple):
    outcomes: tuple[int, ...]
    last_used_at: str | None

    @property
    def sample_size(self) -> int:
        return len(self.outcomes)

    @property
    def success_rate(self) -> float:
        """Share of successes in the window; 1.0 with no samples (untried skills are not penalised)."""
        return sum(self.outcomes) / len(self.outcomes) if self.outcomes else 1.0

    @property
    def multiplier(self) -> float:
        return min(1.0, max(0.70, 0.70 + 0.30 * self.success_rate))


EMPTY = History((), None)


def _writable(path: Path) -> bool:
    for directory in (path.parent, *path.parent.parents):
        if directory.exists():
            return os.access(directory, os.W_OK)
    return False


class ReliabilityStore:
    """The state of one workspace root; ``mode`` is ``persistent`` or ``ephemeral`` (with ``reason``)."""

    def __init__(self, root: Path, *, clock: Clock = SYSTEM_CLOCK, ephemeral: bool = False) -> None:
        self.root = root
        self.path = root / STATE_FILE
        self.clock = clock
        self.reason: str | None = "requested" if ephemeral else None
        self.data: dict[str, Any] = self._empty()
        self.loaded_key: tuple | None = None
        if not ephemeral:
            self.reload()

    @property
    def mode(self) -> str:
        return "ephemeral" if self.reason else "persistent"

    def _empty(self) -> dict[str, Any]:
        return {"schema_version": "1", "updated_at": self.clock.iso(), "candidates": {}}

    def reload(self) -> None:
        """Re-read the file when it changed since the last read; fall back to ephemeral when unusable."""
        if self.reason == "requested":
            return
        try:
            stat = self.path.stat()
        except FileNotFoundError:
            self.data, self.loaded_key = self._empty(), None
            self.reason = None if _writable(self.path) else "the workspace is not writable"
            return
        except OSError as exc:
            self.reason = f"cannot read {STATE_FILE.as_posix()}: {exc.strerror or exc}"
            return
        key = (stat.st_mtime_ns, stat.st_size)
        if key == self.loaded_key:
            return
        try:
            self.data = self._read()
            self.loaded_key, self.reason = key, None
        except AgentpackError as exc:
            self.data, self.reason = self._empty(), f"unusable state file: {exc.message}"

    def _read(self) -> dict[str, Any]:
        return require_valid(
            self.path, schemas_store.RELIABILITY, code="DCI103", what="reliability state", display=STATE_FILE.as_posix()
        )

    def history(self, candidate_id: str) -> History:
        entry = self.data["candidates"].get(candidate_id)
        if not entry:
            return EMPTY
        return History(tuple(entry["outcomes_last_20"]), entry["last_used_at"])

    @property
    def updated_at(self) -> str:
        return self.data["updated_at"]

    def record(self, candidate_id: str, success: bool) -> dict[str, Any]:
        """Append one outcome under a lock and write atomically; returns the candidate's new entry."""
        from agentpack.io.fsutil import atomic_write_json, file_lock, remove_stale_temporaries

        if "::" not in candidate_id:
            raise AgentpackError(f"'{candidate_id}' is not a candidate id 'skill-name::skill-path'")
        with file_lock(self.path.with_name(self.path.name + ".lock"), timeout=10.0, what="reliability state"):
            remove_stale_temporaries(self.path.parent)  # what a record killed mid-write left
            data = self._read() if os.path.lexists(self.path) else self._empty()
            now = self.clock.iso()
            entry = data["candidates"].get(candidate_id, {"outcomes_last_20": []})
            outcomes = [*entry["outcomes_last_20"], 1 if success else 0][-WINDOW:]
            entry = {
                "outcomes_last_20": outcomes,
                "success_rate_last_20": round(sum(outcomes) / len(outcomes), 6),
                "last_used_at": now,
                "sample_size": len(outcomes),
            }
            data["candidates"][candidate_id] = entry
            data["updated_at"] = now
            problems = schemas_store.store().validate(schemas_store.RELIABILITY, data)
            if problems:  # a bug: never write a state the next run would reject
                raise RuntimeError(f"the new reliability state is invalid: {problems[0].message}")
            atomic_write_json(self.path, data)
        self.loaded_key = None
        self.reason = None
        self.reload()
        return entry
