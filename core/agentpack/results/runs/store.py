"""The SQLite run store: versioned schema with migrations, WAL for concurrent writers, one transaction per run.

A damaged file is a ``StoreError`` naming it; the store never deletes or
rewrites a file it cannot read. Writers take the write lock at the start of
their transaction (``BEGIN IMMEDIATE``) and wait up to ``BUSY_TIMEOUT_S`` for
another writer, so parallel CI jobs sharing a store all land their runs.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError
from agentpack.kernel.runtypes import Case, Run

ENV_STORE = "AGENTPACK_RUNS"
DEFAULT_RELATIVE = Path(".agentpack") / "runs.sqlite"
BUSY_TIMEOUT_S = 30.0

MIGRATIONS: list[str] = [
    # 1: runs, their cases and tags
    """
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        uid TEXT NOT NULL UNIQUE,
        command TEXT NOT NULL,
        format TEXT,
        name TEXT,
        input TEXT NOT NULL,
        input_digest TEXT,
        status TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'error', 'interrupted')),
        started_at TEXT NOT NULL,
        duration_s REAL NOT NULL DEFAULT 0,
        total INTEGER NOT NULL DEFAULT 0,
        passed INTEGER NOT NULL DEFAULT 0,
        failed INTEGER NOT NULL DEFAULT 0,
        errors INTEGER NOT NULL DEFAULT 0,
        skipped INTEGER NOT NULL DEFAULT 0,
        pass_rate REAL NOT NULL DEFAULT 0,
        input_tokens INTEGER,
        output_tokens INTEGER,
        total_tokens INTEGER,
        git_commit TEXT,
        git_branch TEXT,
        git_dirty INTEGER,
        agent TEXT,
        settings TEXT NOT NULL DEFAULT '{}',
        message TEXT,
        tool_version TEXT,
        report TEXT NOT NULL
    );
    CREATE INDEX runs_by_input ON runs (input, id);
    CREATE INDEX runs_by_started ON runs (started_at);
    CREATE TABLE cases (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        seq INTEGER NOT NULL,
        suite TEXT NOT NULL DEFAULT '',
        case_id TEXT NOT NULL,
        name TEXT,
        status TEXT NOT NULL,
        duration_s REAL NOT NULL DEFAULT 0,
        total_tokens INTEGER,
        message TEXT NOT NULL DEFAULT '',
        detail TEXT NOT NULL DEFAULT '{}',
        PRIMARY KEY (run_id, seq)
    );
    CREATE INDEX cases_by_key ON cases (suite, case_id);
    CREATE TABLE run_tags (
        run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
        tag TEXT NOT NULL,
        PRIMARY KEY (run_id, tag)
    );
    CREATE INDEX run_tags_by_tag ON run_tags (tag);
    """,
]
"""``MIGRATIONS[n]`` takes the schema from version ``n`` to ``n + 1``. Append, never edit."""

SCHEMA_VERSION = len(MIGRATIONS)

_RUN_COLUMNS = (
    "id",
    "uid",
    "command",
    "format",
    "name",
    "input",
    "input_digest",
    "status",
    "started_at",
    "duration_s",
    "total",
    "passed",
    "failed",
    "errors",
    "skipped",
    "pass_rate",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "git_commit",
    "git_branch",
    "git_dirty",
    "agent",
    "settings",
    "message",
    "tool_version",
)
_SEARCH = (
    "(lower(coalesce(name, '')) LIKE ? ESCAPE '\\' OR lower(input) LIKE ? ESCAPE '\\'"
    " OR lower(command) LIKE ? ESCAPE '\\' OR lower(coalesce(format, '')) LIKE ? ESCAPE '\\'"
    " OR lower(status) LIKE ? ESCAPE '\\' OR lower(coalesce(message, '')) LIKE ? ESCAPE '\\'"
    " OR id IN (SELECT run_id FROM run_tags WHERE lower(tag) LIKE ? ESCAPE '\\') OR id = ? OR uid LIKE ?)"
)
"""One word of a free-text search: in the name, input, command, format, status, message or a tag; or the id."""
_REF = re.compile(r"^(?:latest|last)(?:~(\d+))?$")


SQLITE_FULL, SQLITE_IOERR = 13, 10
"""SQLite's primary result codes (the low byte of ``sqlite3.Error.sqlite_errorcode``) for no space, an I/O error."""
LOW_SPACE = 1 << 20


class StoreError(AgentpackError):
    """The run store cannot be opened, is damaged, is busy, or has no such run."""


def project_root(start: Path | None = None) -> Path:
    """The nearest folder from ``start`` (the working directory) up that holds ``.agentpack`` or ``.git``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / ".agentpack").is_dir() or (folder / ".git").exists():
            return folder
    return here


def default_store_path(start: Path | None = None) -> Path:
    """``$AGENTPACK_RUNS``, else the project configuration's ``store`` (docs/configuration.md), else
    ``.agentpack/runs.sqlite`` in the project root."""
    env = os.environ.get(ENV_STORE)
    if env:
        return Path(env).expanduser()
    from agentpack.kernel.config import load

    return load(start).store or project_root(start) / DEFAULT_RELATIVE


def _disk_full(path: Path, exc: BaseException) -> bool:
    """Whether ``exc`` is a write that found no space: SQLITE_FULL, or an I/O error (growing the WAL index
    reports ENOSPC as one) while the store's file system has less than ``LOW_SPACE`` bytes free."""
    code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
    if code == SQLITE_FULL or "disk is full" in str(exc):
        return True
    if code != SQLITE_IOERR:
        return False
    statvfs = getattr(os, "statvfs", None)  # POSIX only
    try:
        free = statvfs(path.parent) if statvfs is not None else None
    except OSError:
        return False
    if free is None:
        return False
    return bool(free.f_bavail * free.f_frsize < LOW_SPACE)


def _damaged(path: Path, exc: BaseException) -> StoreError:
    text = str(exc)
    if isinstance(exc, sqlite3.OperationalError) and "locked" in text:
        return StoreError(
            f"the run store is busy (another process held it for {BUSY_TIMEOUT_S:.0f} s): {text}",
            file=str(path),
            hint="retry when the other run has finished",
        )
    if isinstance(exc, sqlite3.OperationalError) and ("unable to open" in text or "readonly" in text):
        return StoreError(f"cannot open the run store: {text}", file=str(path), hint="check the path and permissions")
    if _disk_full(path, exc):
        return StoreError(
            f"the disk holding the run store is full ({text}): nothing was written",
            file=str(path),
            hint="free some space and run again; the store is intact and usable once there is room",
        )
    return StoreError(
        f"the run store is damaged or not a run store: {text}",
        file=str(path),
        hint=f"move it aside (mv {path} {path}.broken) and agentpack starts a new one; it never deletes it for you",
    )


class RunStore:
    """A connection to one store file. Use ``open_store``; close it (or use ``with``) when done."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection

    # -- lifecycle ----------------------------------------------------------------------------
    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _guard(self) -> Iterator[None]:
        """SQLite errors become ``StoreError`` naming the file."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            raise _damaged(self.path, exc) from None

    @contextmanager
    def transaction(self) -> Iterator[sqlite3.Connection]:
        """``BEGIN IMMEDIATE`` ... ``COMMIT``; any exception rolls the whole transaction back."""
        with self._guard():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
                self._db.execute("COMMIT")
            except BaseException:
                if self._db.in_transaction:  # also after a COMMIT that failed (a full disk): nothing half-written
                    self._db.execute("ROLLBACK")
                raise

    def schema_version(self) -> int:
        with self._guard():
            exists = self._db.execute(
                "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
            ).fetchone()
            if not exists:
                return 0
            row = self._db.execute("SELECT version FROM schema_version").fetchone()
            return int(row[0]) if row else 0

    def migrate(self) -> None:
        """Bring the schema to ``SCHEMA_VERSION``, one migration per transaction."""
        current = self.schema_version()
        if current > len(MIGRATIONS):
            raise StoreError(
                f"the run store has schema version {current}; this agentpack knows up to {len(MIGRATIONS)}",
                file=str(self.path),
                hint="upgrade agentpack, or use another store with --store",
            )
        while current < len(MIGRATIONS):
            with self.transaction() as db:
                current = self.schema_version()  # another process may have migrated meanwhile
                if current >= len(MIGRATIONS):
                    break
                if current == 0:
                    db.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
                for statement in _statements(MIGRATIONS[current]):
                    db.execute(statement)
                db.execute("DELETE FROM schema_version")
                db.execute("INSERT INTO schema_version (version) VALUES (?)", (current + 1,))
                current += 1

    # -- writing --------------------------------------------------------------------------------
    def add(self, run: Run) -> Run:
        """Insert ``run`` with its cases and tags in one transaction; returns it with its new ``id``."""
        values = {name: getattr(run, name) for name in _RUN_COLUMNS if name != "id"}
        values["git_dirty"] = None if run.git_dirty is None else int(run.git_dirty)
        values["agent"] = _dump(run.agent) if run.agent is not None else None
        values["settings"] = _dump(run.settings or {})
        values["report"] = _dump(run.report)
        names = list(values)
        with self.transaction() as db:
            cursor = db.execute(
                f"INSERT INTO runs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
                [values[n] for n in names],
            )
            run.id = int(cursor.lastrowid or 0)
            db.executemany(
                "INSERT INTO cases (run_id, seq, suite, case_id, name, status, duration_s, total_tokens, message, "
                "detail) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        run.id,
                        seq,
                        c.suite,
                        c.id,
                        c.name,
                        c.status,
                        c.duration_s,
                        c.total_tokens,
                        c.message,
                        _dump(c.detail),
                    )
                    for seq, c in enumerate(run.cases)
                ],
            )
            db.executemany(
                "INSERT OR IGNORE INTO run_tags (run_id, tag) VALUES (?, ?)", [(run.id, t) for t in run.tags]
            )
        return run

    def delete(self, run_id: int) -> bool:
        with self.transaction() as db:
            return db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount > 0

    def prunable(self, *, keep: int | None = None, older_than: str | None = None) -> list[Run]:
        """The runs ``prune`` would delete, newest first: of each input, all but its newest ``keep``, and every
        run started before ``older_than`` (ISO text); with both, a run goes when either says so."""
        doomed: dict[int, Run] = {}
        if keep is not None:
            for input_key, _, _ in self.inputs():
                for run in self.find(input=input_key, offset=keep, limit=None):
                    doomed[run.id] = run
        if older_than:
            with self._guard():
                rows = self._db.execute(
                    f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE started_at < ? ORDER BY id DESC", (older_than,)
                ).fetchall()
            for row in rows:
                run = _run(row)
                doomed.setdefault(run.id, run)
        return sorted(doomed.values(), key=lambda r: -r.id)

    def delete_many(self, run_ids: Sequence[int]) -> int:
        """Delete these runs (their cases and tags with them) in one transaction; how many there were."""
        with self.transaction() as db:
            return sum(db.execute("DELETE FROM runs WHERE id = ?", (i,)).rowcount for i in run_ids)

    # -- reading --------------------------------------------------------------------------------
    def find(
        self,
        *,
        command: str | None = None,
        format: str | None = None,
        input: str | None = None,
        status: str | None = None,
        tag: str | None = None,
        since: str | None = None,
        until: str | None = None,
        search: str | None = None,
        limit: int | None = None,
        offset: int = 0,
        before_id: int | None = None,
        ascending: bool = False,
    ) -> list[Run]:
        """Runs (without report and cases), newest first, filtered by the arguments given.

        ``since``/``until`` compare with ``started_at`` (ISO text: ``2026-03-01`` or a full timestamp;
        ``until`` of a bare date includes that whole day). ``search`` is free text: every word must occur
        (case-insensitive) in the run's name, input, command, format, status, message, a tag, or be its
        id (``#12``) or uid prefix. ``offset`` skips that many runs (paging).
        """
        where, args = self._where(command, format, input, status, tag, since, until, search, before_id)
        sql = f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs{where}"
        sql += f" ORDER BY id {'ASC' if ascending else 'DESC'}"
        if limit is not None or offset:
            sql += " LIMIT ? OFFSET ?"
            args += [-1 if limit is None else limit, offset]
        with self._guard():
            rows = self._db.execute(sql, args).fetchall()
            runs = [_run(row) for row in rows]
            self._attach_tags(runs)
        return runs

    def count_found(self, **filters: str | None) -> int:
        """How many runs ``find`` with these filters (no paging) returns."""
        where, args = self._where(
            filters.get("command"),
            filters.get("format"),
            filters.get("input"),
            filters.get("status"),
            filters.get("tag"),
            filters.get("since"),
            filters.get("until"),
            filters.get("search"),
            None,
        )
        with self._guard():
            return int(self._db.execute(f"SELECT COUNT(*) FROM runs{where}", args).fetchone()[0])

    @staticmethod
    def _where(
        command: str | None,
        format: str | None,
        input: str | None,
        status: str | None,
        tag: str | None,
        since: str | None,
        until: str | None,
        search: str | None,
        before_id: int | None,
    ) -> tuple[str, list[Any]]:
        where: list[str] = []
        args: list[Any] = []
        for column, value in (("command", command), ("format", format), ("input", input), ("status", status)):
            if value:
                where.append(f"{column} = ?")
                args.append(value)
        if tag:
            where.append("id IN (SELECT run_id FROM run_tags WHERE tag = ?)")
            args.append(tag)
        if since:
            where.append("started_at >= ?")
            args.append(since)
        if until:
            where.append("substr(started_at, 1, 10) <= ?" if len(until) == 10 else "started_at <= ?")
            args.append(until)
        for word in (search or "").split():
            where.append(_SEARCH)
            number = word.lstrip("#")
            like = "%" + word.lower().replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
            args += [like] * 7 + [int(number) if number.isdigit() else -1, word.lower() + "%"]
        if before_id is not None:
            where.append("id < ?")
            args.append(before_id)
        return (" WHERE " + " AND ".join(where) if where else ""), args

    def _attach_tags(self, runs: Sequence[Run]) -> None:
        if not runs:
            return
        by_id = {run.id: run for run in runs}
        marks = ", ".join("?" * len(by_id))
        for run_id, tag in self._db.execute(
            f"SELECT run_id, tag FROM run_tags WHERE run_id IN ({marks}) ORDER BY tag", list(by_id)
        ):
            by_id[run_id].tags.append(tag)

    def get(self, run_id: int, *, report: bool = True) -> Run:
        """The run with its cases (and report unless ``report=False``); ``StoreError`` when there is none."""
        with self._guard():
            row = self._db.execute(f"SELECT {', '.join(_RUN_COLUMNS)} FROM runs WHERE id = ?", (run_id,)).fetchone()
            if row is None:
                raise StoreError(f"no run #{run_id} in the store", file=str(self.path), hint="agentpack runs list")
            run = _run(row)
            self._attach_tags([run])
            if report:
                text = self._db.execute("SELECT report FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
                run.report = json.loads(text)
            run.cases = [
                Case(
                    suite=suite,
                    id=case_id,
                    name=name,
                    status=status,
                    duration_s=duration,
                    total_tokens=tokens,
                    message=message,
                    detail=json.loads(detail),
                )
                for suite, case_id, name, status, duration, tokens, message, detail in self._db.execute(
                    "SELECT suite, case_id, name, status, duration_s, total_tokens, message, detail FROM cases "
                    "WHERE run_id = ? ORDER BY seq",
                    (run_id,),
                )
            ]
        return run

    def resolve(self, ref: str | int) -> int:
        """The id of run ``ref``: an id (``12``, ``#12``), ``latest``/``latest~N``, or a uid prefix (of six or more
        characters; one of digits only is a uid prefix when no run has that id)."""
        raw = str(ref).strip()
        text = raw.lstrip("#")
        if text.isdigit() and (raw.startswith("#") or len(text) < 6 or self._exists(int(text))):
            return int(text)
        match = _REF.match(text)
        with self._guard():
            if match:
                back = int(match.group(1) or 0)
                row = self._db.execute("SELECT id FROM runs ORDER BY id DESC LIMIT 1 OFFSET ?", (back,)).fetchone()
                if row is None:
                    raise StoreError(f"no run '{text}': the store has fewer runs", file=str(self.path))
                return int(row[0])
            if re.fullmatch(r"[0-9a-f]{6,32}", text):
                rows = self._db.execute("SELECT id FROM runs WHERE uid LIKE ? LIMIT 2", (text + "%",)).fetchall()
                if len(rows) == 1:
                    return int(rows[0][0])
                if rows:
                    raise StoreError(f"run uid prefix '{text}' is ambiguous", hint="give more characters or the id")
            if text.isdigit():  # a long number that is neither an id nor a uid prefix: the id, as the caller said
                return int(text)
        raise StoreError(
            f"no run '{text}'", file=str(self.path), hint="name a run by its id (see agentpack runs list) or 'latest'"
        )

    def _exists(self, run_id: int) -> bool:
        with self._guard():
            return self._db.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is not None

    def previous(self, run: Run) -> Run | None:
        """The latest run of the same command and input before ``run`` (for ``compare``)."""
        found = self.find(command=run.command, input=run.input, before_id=run.id, limit=1)
        return found[0] if found else None

    def history(self, input: str, *, command: str | None = None, last: int | None = None) -> list[Run]:
        """The runs of ``input``, oldest first (the ``last`` N), with their cases."""
        ids = [r.id for r in self.find(input=input, command=command, limit=last)]
        return [self.get(run_id, report=False) for run_id in reversed(ids)]

    def inputs(self) -> list[tuple[str, int, str]]:
        """``(input, runs, latest started_at)`` for every input, most recent first."""
        with self._guard():
            rows = self._db.execute(
                "SELECT input, COUNT(*), MAX(started_at) FROM runs GROUP BY input ORDER BY MAX(id) DESC"
            ).fetchall()
        return [(str(i), int(n), str(at)) for i, n, at in rows]

    def distinct(self, column: str) -> list[str]:
        """The distinct values of ``column`` (``command``, ``format``, ``status``) or of tags (``tag``)."""
        if column == "tag":
            sql = "SELECT DISTINCT tag FROM run_tags ORDER BY tag"
        elif column in ("command", "format", "status", "input"):
            sql = f"SELECT DISTINCT {column} FROM runs WHERE {column} IS NOT NULL ORDER BY {column}"
        else:
            raise ValueError(column)
        with self._guard():
            return [str(row[0]) for row in self._db.execute(sql)]

    def count(self) -> int:
        with self._guard():
            return int(self._db.execute("SELECT COUNT(*) FROM runs").fetchone()[0])


def _statements(script: str) -> list[str]:
    return [s.strip() for s in script.split(";") if s.strip()]


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def _run(row: Sequence[Any]) -> Run:
    values = dict(zip(_RUN_COLUMNS, row, strict=True))
    values["git_dirty"] = None if values["git_dirty"] is None else bool(values["git_dirty"])
    values["agent"] = json.loads(values["agent"]) if values["agent"] else None
    values["settings"] = json.loads(values["settings"] or "{}")
    return Run(**values)


GITIGNORE = "# agentpack's local state (the run store): not part of the project\n*\n"


def _ignore_in_git(folder: Path) -> None:
    """Give an ``.agentpack`` folder its own ``.gitignore`` (once) so the store never shows in ``git status``."""
    ignore = folder / ".gitignore"
    if folder.name == DEFAULT_RELATIVE.parent.name and not ignore.exists():
        from agentpack.io.fsutil import SHARED, atomic_write_text

        atomic_write_text(ignore, GITIGNORE, mode=SHARED)


def open_store(path: str | Path | None = None, *, create: bool = True) -> RunStore:
    """Open (and with ``create``, create or migrate) the store at ``path`` (default: ``default_store_path()``).

    Without ``create`` a missing store is a ``StoreError`` and nothing is written.
    """
    path = Path(path) if path is not None else default_store_path()
    if not create and not path.is_file():
        raise StoreError(
            "no runs recorded yet: the run store does not exist",
            file=str(path),
            hint="run an evaluation (agentpack eval PACK) to record one, or name a store with --store",
        )
    if path.is_dir():
        raise StoreError("the run store path is a folder, not a file", file=str(path))
    if create:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            _ignore_in_git(path.parent)
        except OSError as exc:
            raise StoreError(f"cannot create the folder of the run store: {exc.strerror}", file=str(path)) from None
        if not path.exists():
            _create_store(path)
    return _connect(path)


def _connect(path: Path) -> RunStore:
    """Open the store file at ``path`` in WAL mode and migrate its schema."""
    try:
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise _damaged(path, exc) from None
    store = RunStore(path, db)
    try:
        with store._guard():
            db.execute("PRAGMA foreign_keys = ON")
            if str(db.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
                db.execute("PRAGMA journal_mode = WAL")  # persistent: a store made before WAL is switched once
            db.execute("PRAGMA synchronous = NORMAL")
        store.migrate()
    except BaseException:
        db.close()
        raise
    return store


def _create_store(path: Path) -> None:
    """Build a new store whole beside ``path`` (WAL, schema migrated), then link it into place.

    Writers that start together on a missing store never meet in rollback-journal mode, where
    SQLite answers the switch to WAL with "database is locked" without waiting: the first link
    wins and the others open the finished file.
    """
    draft = path.with_name(f".{path.name}.{os.getpid()}.new")
    try:
        _connect(draft).close()  # closing the only connection checkpoints and removes the -wal/-shm files
        os.link(draft, path)
    except FileExistsError:
        pass  # another process created it first
    except OSError:
        pass  # no hard links on this file system: the store is then made in place, as a single writer would
    finally:
        for leftover in (draft, draft.with_name(draft.name + "-wal"), draft.with_name(draft.name + "-shm")):
            leftover.unlink(missing_ok=True)
