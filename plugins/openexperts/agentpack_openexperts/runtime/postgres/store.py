"""The runtime's durable store in PostgreSQL, shared by every process of a deployment.

The same tables and methods as the SQLite store (``storeapi.RuntimeStore``: runs, execution log, tool-call journal,
dedupe window, dead letters, outbox), plus approvals, cron ticks and run ownership.
Every method is one statement (or one ``transaction()`` block) on a pooled connection.

Commits: the writes a crash of the database must not lose are flushed before they return
(an accepted event with its job, a tool call's journal entry before the call, a run's end,
dead letters, approval decisions), on connections of their own (``synchronous_commit = on``);
the others commit asynchronously (``synchronous_commit = off``: PostgreSQL may lose the last
fraction of a second of them in its own crash, never reorder them, and any later flushed
commit makes them durable too). A lost completion only turns a finished call into one in
doubt; a run's end is flushed so that its deliveries are never lost with it and made again.

Faults: a lost connection is retried with backoff for up to ``pause`` seconds (work
pauses while the database is away), then ``StoreUnavailable`` leaves the run resumable.
Writes are idempotent or harmless when a retry repeats them. A worker executing a run
*owns* it (``claim``); the writes that matter (journal, outbox, run state) check the
owner, so a worker presumed dead that wakes up cannot act after another took its run over.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import psycopg
import psycopg_pool
from psycopg import sql
from psycopg.rows import dict_row
from psycopg.types.json import Json

from agentpack.io.errors import AgentpackError

from ..errors import Cancelled, StoreUnavailable
from ..storeapi import CallJournal, check_updatable
from . import schema

log = logging.getLogger("agentpack.openexperts")
T = TypeVar("T")
RUN_COLUMNS = ", ".join(
    [
        "run_id",
        "process",
        "trigger",
        "session",
        "lane",
        "inputs",
        "payload",
        "status",
        "attempt",
        "created",
        "updated",
        "error",
        "result",
        "dry_run",
    ]
)
CONNECT_TIMEOUT = 10


class TakenOver(Cancelled):
    """Another worker owns this run now (this one was presumed dead); this one stops without acting."""

    reason = "taken_over"


def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def _json(value: Any) -> Json | None:
    return None if value is None else Json(value, dumps=_dumps)


def redacted(url: str) -> str:
    """``url`` without its password, for messages."""
    try:
        info = psycopg.conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return "postgresql://..."
    host, port, name = info.get("host") or "localhost", info.get("port") or "5432", info.get("dbname") or ""
    user = f"{info['user']}@" if info.get("user") else ""
    return f"postgresql://{user}{host}:{port}/{name}"


def connect_error(url: str, exc: Exception) -> AgentpackError:
    """The ``AgentpackError`` for a failed first connection: where, why, and what to check."""
    reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    reason = reason.removeprefix("connection failed: ")
    return AgentpackError(
        f"cannot connect to PostgreSQL at {redacted(url)}: {reason}",
        hint="check --store (postgresql://USER:PASSWORD@HOST:PORT/DATABASE), that the server runs "
        "and accepts this user",
    )


class PostgresStore(CallJournal):
    """The durable store of a deployment (``postgresql://`` URL); thread-safe."""

    def __init__(
        self, url: str, package: str, *, pool_size: int = 8, pause: float = 300.0, create: bool = True
    ) -> None:
        self.url = url
        self.path = redacted(url)  # what messages show where the SQLite store shows its file
        self.pause = pause
        self._local = threading.local()
        self._closing = False
        try:
            with psycopg.connect(url, connect_timeout=CONNECT_TIMEOUT, autocommit=True) as conn:
                schema.migrate(conn, package, create=create)
        except AgentpackError as exc:
            exc.file = exc.file or self.path
            raise
        except psycopg.ProgrammingError as exc:
            raise AgentpackError(f"the store is not a usable PostgreSQL URL: {exc}") from None
        except psycopg.Error as exc:
            raise connect_error(url, exc) from None
        self.pool = _pool(url, pool_size, "openexperts", _relaxed)
        self.flushing = _pool(url, pool_size, "openexperts-flushed", _flushed)

    def close(self) -> None:
        self._closing = True
        self.pool.close()
        self.flushing.close()

    # -- connections -----------------------------------------------------------------------------
    def _do(
        self,
        send: Callable[[psycopg.Connection[Any]], psycopg.Cursor[Any]],
        read: Callable[[psycopg.Cursor[Any]], T],
        durable: bool = False,
    ) -> T:
        """``read(send(conn))`` on a pooled connection, one whose commits are flushed when ``durable``.
        A lost connection is retried with backoff for up to ``pause`` seconds."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:  # inside transaction(): the block fails as a whole
            return read(send(conn))
        delay, deadline = 0.05, 0.0
        while True:
            try:
                with (self.flushing if durable else self.pool).connection() as conn:
                    return read(send(conn))
            except (psycopg.OperationalError, psycopg.InterfaceError, psycopg_pool.PoolTimeout) as exc:
                now = time.monotonic()
                if not deadline:
                    deadline = now + self.pause
                    log.warning("PostgreSQL unavailable (%s); retrying for up to %.0f s", _first_line(exc), self.pause)
                if now >= deadline or self._closing:
                    raise StoreUnavailable(f"PostgreSQL unavailable: {_first_line(exc)}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 2.0)

    def _rows(self, query: str | sql.Composed, args: Any = (), *, durable: bool = False) -> list[dict[str, Any]]:
        def send(conn: psycopg.Connection[Any]) -> psycopg.Cursor[Any]:
            return conn.cursor(row_factory=dict_row).execute(query, args)

        return self._do(send, lambda cursor: cursor.fetchall(), durable)

    def _exec(self, query: str | sql.Composed, args: Any = (), *, durable: bool = False) -> int:
        """Execute one statement; the number of rows it touched."""
        return self._do(lambda conn: conn.execute(query, args), lambda cursor: cursor.rowcount, durable)

    def query(self, query: str, args: Any = ()) -> list[dict[str, Any]]:
        """Rows of a read of the database (the queue counts its jobs with it)."""
        return self._rows(query, args)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """The store calls of this thread inside the block commit together (re-entrant)."""
        if getattr(self._local, "conn", None) is not None:
            yield
            return
        try:
            with self.flushing.connection() as conn, conn.transaction():
                self._local.conn = conn
                try:
                    yield
                finally:
                    self._local.conn = None
        except (psycopg.OperationalError, psycopg.InterfaceError, psycopg_pool.PoolTimeout) as exc:
            raise StoreUnavailable(f"PostgreSQL unavailable: {_first_line(exc)}") from exc

    def connection(self) -> psycopg.Connection[Any] | None:
        """The connection of the enclosing ``transaction()`` on this thread, if any."""
        return getattr(self._local, "conn", None)

    # -- ownership ---------------------------------------------------------------------------------
    def claim(self, run_id: str, token: str) -> None:
        """This thread executes ``run_id`` as ``token``; a later claim by another worker fences this one.

        The claim reads the run too: this thread's next ``run(run_id)`` returns that row (one round trip less
        per job)."""
        rows = self._rows(
            f"UPDATE openexperts_runs SET owner = %s WHERE run_id = %s RETURNING {RUN_COLUMNS}", (token, run_id)
        )
        self._local.fence = (run_id, token)
        self._local.claimed = rows[0] if rows else None

    def release(self) -> None:
        self._local.fence = self._local.claimed = None

    def _fence(self, run_id: str) -> tuple[sql.Composable, tuple[Any, ...]]:
        """An SQL condition that holds while this thread still owns ``run_id`` (always, when unclaimed)."""
        fence = getattr(self._local, "fence", None)
        if fence is None or fence[0] != run_id:
            return sql.SQL("TRUE"), ()
        return sql.SQL("EXISTS (SELECT 1 FROM openexperts_runs WHERE run_id = %s AND owner = %s)"), fence

    def _check_owner(self, run_id: str) -> None:
        fence, fence_args = self._fence(run_id)
        self._fenced(run_id, len(self._rows(sql.SQL("SELECT 1 AS owned WHERE {}").format(fence), fence_args)))

    def _fenced(self, run_id: str, count: int) -> None:
        if count == 0 and getattr(self._local, "fence", None) is not None:
            raise TakenOver(f"run {run_id} was taken over by another worker")

    # -- runs --------------------------------------------------------------------------------------
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
            "INSERT INTO openexperts_runs (run_id, process, trigger, session, lane, inputs, payload, status, created, "
            "updated, dry_run) VALUES (%s,%s,%s,%s,%s,%s,%s,'queued',%s,%s,%s) ON CONFLICT (run_id) DO NOTHING",
            (run_id, process, trigger, session, lane, _json(inputs), _json(payload), now, now, dry_run),
        )

    def update_run(self, run_id: str, now: float, **fields: Any) -> None:
        check_updatable(fields)
        if "result" in fields:
            fields["result"] = _json(fields["result"])
        fence, fence_args = self._fence(run_id)
        sets = sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(k)) for k in fields)
        query = sql.SQL("UPDATE openexperts_runs SET {}, updated = %s WHERE run_id = %s AND {}").format(sets, fence)
        durable = fields.get("status") != "running"  # a run's end (or any other change but its start)
        self._fenced(run_id, self._exec(query, (*fields.values(), now, run_id, *fence_args), durable=durable))

    def run(self, run_id: str) -> dict[str, Any] | None:
        claimed = getattr(self._local, "claimed", None)
        if claimed is not None and claimed["run_id"] == run_id:
            self._local.claimed = None
            return claimed
        rows = self._rows(f"SELECT {RUN_COLUMNS} FROM openexperts_runs WHERE run_id = %s", (run_id,))
        return rows[0] if rows else None

    def runs(self, status: tuple[str, ...] | None = None) -> list[dict[str, Any]]:
        if status:
            return self._rows(
                f"SELECT {RUN_COLUMNS} FROM openexperts_runs WHERE status = ANY(%s) ORDER BY created, run_id",
                (list(status),),
            )
        return self._rows(f"SELECT {RUN_COLUMNS} FROM openexperts_runs ORDER BY created, run_id")

    # -- execution log -------------------------------------------------------------------------------
    def start_segment(self, run_id: str, attempt: int, reason: str, now: float) -> int:
        rows = self._rows(
            "INSERT INTO openexperts_segments SELECT %s, COALESCE(MAX(segment), 0) + 1, %s, %s, %s "
            "FROM openexperts_segments WHERE run_id = %s RETURNING segment",
            (run_id, attempt, reason, now, run_id),
        )
        segment: int = rows[0]["segment"]
        return segment

    def segments(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM openexperts_segments WHERE run_id = %s ORDER BY segment", (run_id,))

    def complete_step(self, run_id: str, step: int, summary: str, segment: int, now: float) -> None:
        self._exec(
            "INSERT INTO openexperts_steps VALUES (%s,%s,%s,%s,%s) ON CONFLICT (run_id, step) "
            "DO UPDATE SET summary = EXCLUDED.summary, segment = EXCLUDED.segment, at = EXCLUDED.at",
            (run_id, step, summary, segment, now),
        )

    def steps(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM openexperts_steps WHERE run_id = %s ORDER BY step", (run_id,))

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
        fence, fence_args = self._fence(run_id)
        query = sql.SQL(
            "INSERT INTO openexperts_calls SELECT %s, COALESCE(MAX(seq), 0) + 1, %s, %s, %s, %s, %s, %s, %s, %s, %s "
            "FROM openexperts_calls WHERE run_id = %s HAVING {} RETURNING seq"
        ).format(fence)
        args = (run_id, segment, operation, args_hash, _json(arguments), _json(result), tier, status, now, key, run_id)
        rows = self._rows(query, (*args, *fence_args), durable=key is not None)
        self._fenced(run_id, len(rows))
        seq: int = rows[0]["seq"]
        return seq

    def finish_call(self, run_id: str, seq: int, status: str, result: Any, now: float) -> None:
        """How a started call ended (``executed``, ``failed``, ``refused``) and its result."""
        fence, fence_args = self._fence(run_id)
        query = sql.SQL(
            "UPDATE openexperts_calls SET status = %s, result = %s, at = %s WHERE run_id = %s AND seq = %s AND {}"
        ).format(fence)
        self._fenced(run_id, self._exec(query, (status, _json(result), now, run_id, seq, *fence_args)))

    def set_call(self, run_id: str, seq: int, status: str, result: Any = None) -> None:
        """A later decision about an earlier call (``superseded``: it is issued again with its key)."""
        fence, fence_args = self._fence(run_id)
        query = sql.SQL(
            "UPDATE openexperts_calls SET status = %s, result = COALESCE(%s, result) WHERE run_id = %s AND seq = %s "
            "AND {}"
        ).format(fence)
        self._fenced(run_id, self._exec(query, (status, _json(result), run_id, seq, *fence_args)))

    def calls_like(
        self, run_id: str, operation: str, args_hash: str, statuses: frozenset[str], before_segment: int
    ) -> list[dict[str, Any]]:
        """Calls of earlier segments with this operation, argument hash and a status in ``statuses``, oldest first."""
        return self._rows(
            "SELECT * FROM openexperts_calls WHERE run_id = %s AND operation = %s AND args_hash = %s AND segment < %s "
            "AND status = ANY(%s) ORDER BY seq",
            (run_id, operation, args_hash, before_segment, sorted(statuses)),
        )

    def calls(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT * FROM openexperts_calls WHERE run_id = %s ORDER BY seq", (run_id,))

    def event(self, run_id: str, kind: str, data: Any, now: float) -> None:
        self._exec(
            "INSERT INTO openexperts_events (run_id, kind, data, at) VALUES (%s,%s,%s,%s)",
            (run_id, kind, _json(data), now),
        )

    def events(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows("SELECT kind, data, at FROM openexperts_events WHERE run_id = %s ORDER BY id", (run_id,))

    # -- dedupe and cron ticks -----------------------------------------------------------------------
    def first_sighting(self, trigger: str, key: str, now: float, window: float) -> bool:
        """Record ``key`` for ``trigger``; False when it was already seen within ``window`` seconds."""
        rows = self._rows(
            "INSERT INTO openexperts_dedupe VALUES (%s,%s,%s) ON CONFLICT (trigger, key) DO UPDATE "
            "SET seen = EXCLUDED.seen WHERE openexperts_dedupe.seen <= %s RETURNING 1 AS fresh",
            (trigger, key, now, now - window),
        )
        return bool(rows)

    def purge_dedupe(self, now: float, window: float) -> None:
        """Forget dedupe keys older than the window, and cron ticks older than a day."""
        self._exec("DELETE FROM openexperts_dedupe WHERE seen < %s", (now - window,))
        self._exec("DELETE FROM openexperts_ticks WHERE tick < %s", (now - 86400.0,))

    def claim_tick(self, trigger: str, tick: float) -> bool:
        """True for the one process of the deployment that fires ``trigger`` for the cron tick ``tick``."""
        rows = self._rows(
            "INSERT INTO openexperts_ticks VALUES (%s, %s) ON CONFLICT DO NOTHING RETURNING 1 AS won", (trigger, tick)
        )
        return bool(rows)

    # -- dead letters ---------------------------------------------------------------------------------
    def add_dead_letter(self, letter_id: str, run: dict[str, Any], error: str, attempts: int, now: float) -> None:
        self._check_owner(run["run_id"])
        self._exec(
            "INSERT INTO openexperts_dead_letters VALUES (%s,%s,%s,%s,%s,%s,%s,%s,%s,NULL) ON CONFLICT (id) DO NOTHING",
            (
                letter_id,
                run["run_id"],
                run["process"],
                run["trigger"],
                _json(run["inputs"]),
                _json(run["payload"]),
                error,
                attempts,
                now,
            ),
            durable=True,
        )

    def dead_letters(self, include_replayed: bool = False) -> list[dict[str, Any]]:
        where = "" if include_replayed else " WHERE replayed_as IS NULL"
        return self._rows(f"SELECT * FROM openexperts_dead_letters{where} ORDER BY created, id")

    def mark_replayed(self, letter_id: str, run_id: str) -> None:
        self._exec(
            "UPDATE openexperts_dead_letters SET replayed_as = %s WHERE id = %s", (run_id, letter_id), durable=True
        )

    # -- outbox ------------------------------------------------------------------------------------------
    def add_message(
        self, channel: str, kind: str, run_id: str | None, process: str | None, data: Any, now: float
    ) -> int:
        fence, fence_args = self._fence(run_id or "")
        query = sql.SQL(
            "INSERT INTO openexperts_outbox (channel, kind, run_id, process, data, at) "
            "SELECT %s,%s,%s,%s,%s,%s WHERE {} RETURNING id"
        ).format(fence)
        rows = self._rows(query, (channel, kind, run_id, process, _json(data), now, *fence_args))
        self._fenced(run_id or "", len(rows))
        message_id: int = rows[0]["id"]
        return message_id

    def messages(self, run_id: str | None = None, kind: str | None = None) -> list[dict[str, Any]]:
        where = sql.SQL(" AND ").join(
            [sql.SQL("TRUE")]
            + [sql.SQL("{} = %s").format(sql.Identifier(k)) for k, v in (("run_id", run_id), ("kind", kind)) if v]
        )
        args = tuple(v for v in (run_id, kind) if v)
        return self._rows(sql.SQL("SELECT * FROM openexperts_outbox WHERE {} ORDER BY id").format(where), args)

    # -- approvals -----------------------------------------------------------------------------------------
    def open_approval(self, request: dict[str, Any], args_hash: str, now: float) -> str:
        """Record a pending request; the id of an open one for the same call of the run when there is one."""
        rows = self._rows(
            "WITH found AS (UPDATE openexperts_approvals SET open = true WHERE id = ("
            "  SELECT id FROM openexperts_approvals WHERE run_id = %s AND operation = %s AND args_hash = %s"
            "  AND (status = 'pending' OR open) ORDER BY opened DESC LIMIT 1 FOR UPDATE) RETURNING id), "
            "made AS (INSERT INTO openexperts_approvals (id, run_id, process, operation, args_hash, arguments, "
            "description, created, opened) SELECT %s,%s,%s,%s,%s,%s,%s,%s,%s WHERE NOT EXISTS (SELECT 1 FROM found) "
            "RETURNING id) SELECT id FROM found UNION ALL SELECT id FROM made",
            (
                request["run_id"],
                request["operation"],
                args_hash,
                request["id"],
                request["run_id"],
                request["process"],
                request["operation"],
                args_hash,
                _json(request["arguments"]),
                request["description"],
                request["created"],
                now,
            ),
            durable=True,
        )
        opened: str = rows[0]["id"]
        return opened

    def decide_approval(self, request_id: str, approved: bool, by: str, note: str, now: float) -> bool:
        """Record a decision from any node; False when no such request is pending."""
        return bool(
            self._exec(
                "UPDATE openexperts_approvals SET status = %s, decided_by = %s, note = %s, decided_at = %s "
                "WHERE id = %s AND status = 'pending' AND open",
                ("approved" if approved else "rejected", by, note, now, request_id),
                durable=True,
            )
        )

    def approval(self, request_id: str) -> dict[str, Any] | None:
        rows = self._rows("SELECT * FROM openexperts_approvals WHERE id = %s", (request_id,))
        return rows[0] if rows else None

    def close_approval(self, request_id: str) -> None:
        self._exec("UPDATE openexperts_approvals SET open = false WHERE id = %s", (request_id,))

    def approvals(self, include_closed: bool = False) -> list[dict[str, Any]]:
        where = "" if include_closed else " WHERE status = 'pending' AND open"
        return self._rows(f"SELECT * FROM openexperts_approvals{where} ORDER BY opened, id")


def _pool(
    url: str, size: int, name: str, configure: Callable[[psycopg.Connection[Any]], None]
) -> psycopg_pool.ConnectionPool:
    pool = psycopg_pool.ConnectionPool(
        url,
        min_size=1,
        max_size=max(2, size),
        kwargs={"autocommit": True, "connect_timeout": CONNECT_TIMEOUT},
        timeout=5.0,
        open=False,
        name=name,
        configure=configure,
    )
    pool.open(wait=False)
    return pool


def _relaxed(conn: psycopg.Connection[Any]) -> None:
    """The connections of the writes that may commit asynchronously."""
    conn.execute("SET synchronous_commit TO off")


def _flushed(conn: psycopg.Connection[Any]) -> None:
    """The connections of the writes flushed before they return: one statement, one round trip (a SET LOCAL
    around each, even pipelined, cost more time and CPU than the statement)."""
    conn.execute("SET synchronous_commit TO on")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
