"""The database schema: numbered migrations, applied once under an advisory lock at start.

``openexperts_meta`` records the schema version and the package the database serves
(one deployment per database or PostgreSQL schema). A database migrated by a newer
agentpack, or holding another package's runtime, is refused with a clear error.
procrastinate's own tables are created from its schema file the first time, and its
later migration files are applied when a newer procrastinate is installed.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError

LOCK = 0x6F65_7870  # pg_advisory_xact_lock key: one migrating process at a time
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE openexperts_runs (
      run_id text PRIMARY KEY, process text NOT NULL, trigger text, session text NOT NULL, lane text,
      inputs json NOT NULL, payload json, status text NOT NULL, attempt integer NOT NULL DEFAULT 0,
      created double precision NOT NULL, updated double precision NOT NULL, error text, result json,
      dry_run boolean NOT NULL DEFAULT false, owner text);
    CREATE INDEX openexperts_runs_status ON openexperts_runs (status);
    CREATE INDEX openexperts_runs_created ON openexperts_runs (created, run_id);
    CREATE TABLE openexperts_segments (
      run_id text NOT NULL, segment integer NOT NULL, attempt integer NOT NULL, reason text NOT NULL,
      at double precision NOT NULL, PRIMARY KEY (run_id, segment));
    CREATE TABLE openexperts_steps (
      run_id text NOT NULL, step integer NOT NULL, summary text, segment integer NOT NULL,
      at double precision NOT NULL, PRIMARY KEY (run_id, step));
    CREATE TABLE openexperts_calls (
      run_id text NOT NULL, seq integer NOT NULL, segment integer NOT NULL, operation text NOT NULL,
      args_hash text NOT NULL, arguments json, result json, tier text, status text NOT NULL,
      at double precision NOT NULL, key text, PRIMARY KEY (run_id, seq));
    CREATE INDEX openexperts_calls_op ON openexperts_calls (run_id, operation, args_hash);
    CREATE TABLE openexperts_events (
      id bigserial PRIMARY KEY, run_id text NOT NULL, kind text NOT NULL, data json, at double precision NOT NULL);
    CREATE INDEX openexperts_events_run ON openexperts_events (run_id, id);
    CREATE TABLE openexperts_dedupe (
      trigger text NOT NULL, key text NOT NULL, seen double precision NOT NULL, PRIMARY KEY (trigger, key));
    CREATE TABLE openexperts_dead_letters (
      id text PRIMARY KEY, run_id text NOT NULL, process text NOT NULL, trigger text, inputs json NOT NULL,
      payload json, error text, attempts integer NOT NULL, created double precision NOT NULL, replayed_as text);
    CREATE TABLE openexperts_outbox (
      id bigserial PRIMARY KEY, channel text NOT NULL, kind text NOT NULL, run_id text, process text,
      data json NOT NULL, at double precision NOT NULL);
    CREATE INDEX openexperts_outbox_run ON openexperts_outbox (run_id, id);
    CREATE TABLE openexperts_approvals (
      id text PRIMARY KEY, run_id text NOT NULL, process text NOT NULL, operation text NOT NULL,
      args_hash text NOT NULL, arguments json, description text NOT NULL, created text NOT NULL,
      opened double precision NOT NULL, status text NOT NULL DEFAULT 'pending', open boolean NOT NULL DEFAULT true,
      decided_by text, note text, decided_at double precision);
    CREATE INDEX openexperts_approvals_call ON openexperts_approvals (run_id, operation, args_hash);
    CREATE TABLE openexperts_ticks (
      trigger text NOT NULL, tick double precision NOT NULL, PRIMARY KEY (trigger, tick));
    """,
    # procrastinate takes a job only when no earlier job of its lock waits or runs; its own index on (id, lock)
    # answers that by reading every queued job, for each candidate (4 ms a take with 2,000 queued): by lock first
    """
    CREATE INDEX IF NOT EXISTS openexperts_jobs_lock ON procrastinate_jobs (lock, id)
      WHERE status IN ('todo', 'doing');
    """,
)
VERSION = len(MIGRATIONS)


def _procrastinate_files() -> tuple[str, list[Path]]:
    """procrastinate's schema text and its migration files, oldest first."""
    from procrastinate.schema import SchemaManager

    folder = Path(SchemaManager.get_migrations_path())
    return SchemaManager.get_schema(), sorted(folder.glob("*.sql"))


def migrate(conn: Any, package: str, *, create: bool = True) -> None:
    """Bring the database to this version's schema, for ``package``; ``AgentpackError`` when it cannot.

    ``create=False`` refuses a database where no runtime was set up yet.
    """
    with conn.transaction():
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS openexperts_meta (key text PRIMARY KEY, value text NOT NULL)")
        meta = dict(conn.execute("SELECT key, value FROM openexperts_meta").fetchall())
        version = int(meta.get("schema_version", 0))
        if not version and not create:
            raise AgentpackError("no runtime state in this database (nothing has run there yet)")
        if version > VERSION:
            raise AgentpackError(
                f"the database schema is version {version}, newer than this agentpack-openexperts knows ({VERSION})",
                hint="upgrade agentpack-openexperts on this machine to the version the other processes run",
            )
        owner = meta.get("package")
        if owner is not None and owner != package:
            raise AgentpackError(
                f"the database holds the runtime of package '{owner}', not '{package}'",
                hint="give each package its own database (or schema: ?options=-csearch_path%3Dmy_schema)",
            )
        _migrate_procrastinate(conn, meta.get("procrastinate"))  # first: a migration of ours may index its tables
        for number in range(version, VERSION):
            conn.execute(MIGRATIONS[number])
        for key, value in (("schema_version", str(VERSION)), ("package", package)):
            conn.execute(
                "INSERT INTO openexperts_meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (key, value),
            )


def _migrate_procrastinate(conn: Any, applied: str | None) -> None:
    """Create procrastinate's tables, or apply its migration files newer than the ones recorded."""
    schema, files = _procrastinate_files()
    latest = files[-1].name if files else ""
    present = conn.execute("SELECT to_regclass('procrastinate_jobs') IS NOT NULL").fetchone()[0]
    if not present:
        conn.execute(schema)
    elif applied is not None and applied > latest:
        raise AgentpackError(
            f"the job tables were migrated by a newer procrastinate ({applied}) than the one installed here",
            hint="install the procrastinate version the other processes run",
        )
    elif applied is not None:
        for path in files:
            if path.name > applied:
                conn.execute(path.read_text(encoding="utf-8"))
    conn.execute(
        "INSERT INTO openexperts_meta VALUES ('procrastinate', %s) ON CONFLICT (key) DO UPDATE SET value = %s",
        (latest, latest),
    )
