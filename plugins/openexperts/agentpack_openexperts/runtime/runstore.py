"""The default runtime store, ``SqliteStore`` (``runtime.db``): runs, execution log, tool-call journal
(``idempotency`` says what its statuses mean), dedupe window, dead letters and the delivery outbox, as
``storeapi.RuntimeStore`` says. One connection guarded by a lock; WAL so a killed process loses nothing it
committed. (State files live in the workspace.)"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .storeapi import CallJournal, check_updatable

SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
  run_id TEXT PRIMARY KEY, process TEXT NOT NULL, trigger TEXT, session TEXT NOT NULL, lane TEXT,
  inputs TEXT NOT NULL, payload TEXT, status TEXT NOT NULL, attempt INTEGER NOT NULL DEFAULT 0,
  created REAL NOT NULL, updated REAL NOT NULL, error TEXT, result TEXT, dry_run INTEGER NOT NULL DEFAULT 0);
CREATE TABLE IF NOT EXISTS segments (
  run_id TEXT NOT NULL, segment INTEGER NOT NULL, attempt INTEGER NOT NULL, reason TEXT NOT NULL, at REAL NOT NULL,
  PRIMARY KEY (run_id, segment));
CREATE TABLE IF NOT EXISTS steps (
  run_id TEXT NOT NULL, step INTEGER NOT NULL, summary TEXT, segment INTEGER NOT NULL, at REAL NOT NULL,
  PRIMARY KEY (run_id, step));
CREATE TABLE IF NOT EXISTS calls (
  run_id TEXT NOT NULL, seq INTEGER NOT NULL, segment INTEGER NOT NULL, operation TEXT NOT NULL,
  args_hash TEXT NOT NULL, arguments TEXT, result TEXT, tier TEXT, status TEXT NOT NULL, at REAL NOT NULL,
  key TEXT, PRIMARY KEY (run_id, seq));
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, kind TEXT NOT NULL, data TEXT, at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS dedupe (
  trigger TEXT NOT NULL, key TEXT NOT NULL, seen REAL NOT NULL, PRIMARY KEY (trigger, key));
CREATE TABLE IF NOT EXISTS dead_letters (
  id TEXT PRIMARY KEY, run_id TEXT NOT NULL, process TEXT NOT NULL, trigger TEXT, inputs TEXT NOT NULL,
  payload TEXT, error TEXT, attempts INTEGER NOT NULL, created REAL NOT NULL, replayed_as TEXT);
CREATE TABLE IF NOT EXISTS outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT, channel TEXT NOT NULL, kind TEXT NOT NULL, run_id TEXT, process TEXT,
  data TEXT NOT NULL, at REAL NOT NULL);
CREATE INDEX IF NOT EXISTS calls_op ON calls (run_id, operation, args_hash);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status);
"""


def _dump(value: Any) -> str | None:
    return None if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _load(text: str | None) -> Any:
    return None if text is None else json.loads(text)


class SqliteStore(CallJournal):
    """Thread-safe access to ``runtime.db``; every method is one short transaction, unless inside ``transaction()``."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        if "key" not in {row[1] for row in self._db.execute("PRAGMA table_info(calls)")}:  # an older runtime.db
            self._db.execute("ALTER TABLE calls ADD COLUMN key TEXT")
        self._lock = threading.RLock()  # re-entrant: store calls inside ``transaction()``

    def close(self) -> None:
        with self._lock:
            self._db.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The store calls of this thread inside the block commit together, or not at all (re-entrant).

        Other threads' calls wait for the block to end (the store's one lock is held through it)."""
        with self._lock:
            if self._db.in_transaction:  # this thread's enclosing block: the lock is ours
                yield
                return
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # a COMMIT that failed (a full disk) leaves nothing half-done either
                    self._db.execute("ROLLBACK")
                raise

    def _exec(self, sql: str, args: tuple = ()) -> sqlite3.Cursor:
        with self._lock:
            return self._db.execute(sql, args)

    def _rows(self, sql: str, args: tuple = ()) -> list[dict[str, Any]]:
        with self._lock:
            cursor = self._db.execute(sql, args)
            names = [d[0] for d in cursor.description]
            return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]

    # -- runs ----------------------------------------------------------------------------------
    def create_run(
        self,
        run_id: str,
        process: str,
        trigger: str | None,
        session: str,
        lane: str | None,
        inputs: dict[str, Any],
        payload: Any,
        now: float,
        dry_run: bool = False,
    ) -> None:
        self._exec(
            "INSERT INTO runs (run_id, process, trigger, session, lane, inputs, payload, status, created, "
            "updated, dry_run) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, process, trigger, session, lane, _dump(inputs), _dump(payload), "queued", now, now, int(dry_run)),
        )

    def update_run(self, run_id: str, now: float, **fields: Any) -> None:
        check_updatable(fields)
        if "result" in fields:
            fields["result"] = _dump(fields["result"])
        sets = ", ".join(f"{k} = ?" for k in fields)
        self._exec(f"UPDATE runs SET {sets}, updated = ? WHERE run_id = ?", (*fields.values(), now, run_id))

    def run(self, run_id: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT * FROM runs WHERE run_id = ?", (run_id,))
        return self._run_row(rows[0]) if rows else None

    def runs(self, status: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        if status:
            marks = ",".join("?" * len(status))
            rows = self._rows(f"SELECT * FROM runs WHERE status IN ({marks}) ORDER BY created, run_id", status)
        else:
            rows = self._rows("SELECT * FROM runs ORDER BY created, run_id")
        return [self._run_row(r) for r in rows]

    @staticmethod
    def _run_row(row: dict[str, Any]) -> dict[str, Any]:
        row = dict(row)
        for key in ("inputs", "payload", "result"):
            row[key] = _load(row[key])
        row["dry_run"] = bool(row["dry_run"])
        return row

    # -- execution log ---------------------------------------------------------------------------
    def start_segment(self, run_id: str, attempt: int, reason: str, now: float) -> int:
        rows = self._rows("SELECT COALESCE(MAX(segment), 0) AS n FROM segments WHERE run_id = ?", (run_id,))
        segment = rows[0]["n"] + 1
        self._exec("INSERT INTO segments VALUES (?,?,?,?,?)", (run_id, segment, attempt, reason, now))
        return segment

    def segments(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM segments WHERE run_id = ? ORDER BY segment", (run_id,))

    def complete_step(self, run_id: str, step: int, summary: str, segment: int, now: float) -> None:
        self._exec("INSERT OR REPLACE INTO steps VALUES (?,?,?,?,?)", (run_id, step, summary, segment, now))

    def steps(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM steps WHERE run_id = ? ORDER BY step", (run_id,))

    def _insert_call(
        self,
        run_id: str,
        segment: int,
        operation: str,
        args_hash: str,
        arguments: Any,
        result: Any,
        tier: str,
        status: str,
        now: float,
        key: str | None,
    ) -> int:
        with self._lock:
            seq = self._db.execute(
                "SELECT COALESCE(MAX(seq), 0) + 1 FROM calls WHERE run_id = ?", (run_id,)
            ).fetchone()[0]
            self._db.execute(
                "INSERT INTO calls VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                (run_id, seq, segment, operation, args_hash, _dump(arguments), _dump(result), tier, status, now, key),
            )
            return seq

    def finish_call(self, run_id: str, seq: int, status: str, result: Any, now: float) -> None:
        """How a started call ended (``executed``, ``failed``, ``refused``) and its result."""
        self._exec(
            "UPDATE calls SET status = ?, result = ?, at = ? WHERE run_id = ? AND seq = ?",
            (status, _dump(result), now, run_id, seq),
        )

    def set_call(self, run_id: str, seq: int, status: str, result: Any = None) -> None:
        """A later decision about an earlier call (reconciled, settled, superseded, unknown)."""
        self._exec(
            "UPDATE calls SET status = ?, result = COALESCE(?, result) WHERE run_id = ? AND seq = ?",
            (status, _dump(result), run_id, seq),
        )

    def calls_like(
        self, run_id: str, operation: str, args_hash: str, statuses: frozenset[str], before_segment: int
    ) -> list[dict[str, Any]]:
        """Calls of earlier segments with this operation, argument hash and a status in ``statuses``, oldest first."""
        marks = ",".join("?" * len(statuses))
        rows = self._rows(
            "SELECT * FROM calls WHERE run_id = ? AND operation = ? AND args_hash = ? AND segment < ? "
            f"AND status IN ({marks}) ORDER BY seq",
            (run_id, operation, args_hash, before_segment, *sorted(statuses)),
        )
        for row in rows:
            row["result"] = _load(row["result"])
            row["arguments"] = _load(row["arguments"])
        return rows

    def calls(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._rows("SELECT * FROM calls WHERE run_id = ? ORDER BY seq", (run_id,))
        for row in rows:
            row["result"] = _load(row["result"])
            row["arguments"] = _load(row["arguments"])
        return rows

    def event(self, run_id: str, kind: str, data: Any, now: float) -> None:
        self._exec("INSERT INTO events (run_id, kind, data, at) VALUES (?,?,?,?)", (run_id, kind, _dump(data), now))

    def events(self, run_id: str) -> list[dict[str, Any]]:
        rows = self._rows("SELECT kind, data, at FROM events WHERE run_id = ? ORDER BY id", (run_id,))
        for row in rows:
            row["data"] = _load(row["data"])
        return rows

    # -- dedupe ------------------------------------------------------------------------------------
    def first_sighting(self, trigger: str, key: str, now: float, window: float) -> bool:
        """Record ``key`` for ``trigger``; False when it was already seen within ``window`` seconds."""
        with self._lock:
            row = self._db.execute("SELECT seen FROM dedupe WHERE trigger = ? AND key = ?", (trigger, key)).fetchone()
            if row is not None and now - row[0] < window:
                return False
            self._db.execute("INSERT OR REPLACE INTO dedupe VALUES (?,?,?)", (trigger, key, now))
            return True

    def purge_dedupe(self, now: float, window: float) -> None:
        """Forget keys older than the window (called when a runtime starts)."""
        self._exec("DELETE FROM dedupe WHERE seen < ?", (now - window,))

    def claim_tick(self, trigger: str, tick: float) -> bool:
        """Whether this process fires ``trigger`` for a cron tick: always, one process owns this store."""
        return True

    # -- dead letters -------------------------------------------------------------------------------
    def add_dead_letter(self, letter_id: str, run: dict[str, Any], error: str, attempts: int, now: float) -> None:
        self._exec(
            "INSERT INTO dead_letters VALUES (?,?,?,?,?,?,?,?,?,NULL)",
            (
                letter_id,
                run["run_id"],
                run["process"],
                run["trigger"],
                _dump(run["inputs"]),
                _dump(run["payload"]),
                error,
                attempts,
                now,
            ),
        )

    def dead_letters(self, include_replayed: bool = False) -> list[dict[str, Any]]:
        sql = "SELECT * FROM dead_letters" + ("" if include_replayed else " WHERE replayed_as IS NULL")
        rows = self._rows(sql + " ORDER BY created, id")
        for row in rows:
            row["inputs"] = _load(row["inputs"])
            row["payload"] = _load(row["payload"])
        return rows

    def mark_replayed(self, letter_id: str, run_id: str) -> None:
        self._exec("UPDATE dead_letters SET replayed_as = ? WHERE id = ?", (run_id, letter_id))

    # -- outbox ---------------------------------------------------------------------------------------
    def add_message(
        self, channel: str, kind: str, run_id: str | None, process: str | None, data: Any, now: float
    ) -> int:
        cursor = self._exec(
            "INSERT INTO outbox (channel, kind, run_id, process, data, at) VALUES (?,?,?,?,?,?)",
            (channel, kind, run_id, process, _dump(data), now),
        )
        return int(cursor.lastrowid or 0)

    def messages(self, run_id: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        where, args = [], []
        if run_id:
            where.append("run_id = ?")
            args.append(run_id)
        if kind:
            where.append("kind = ?")
            args.append(kind)
        sql = "SELECT * FROM outbox" + (" WHERE " + " AND ".join(where) if where else "") + " ORDER BY id"
        rows = self._rows(sql, tuple(args))
        for row in rows:
            row["data"] = _load(row["data"])
        return rows
