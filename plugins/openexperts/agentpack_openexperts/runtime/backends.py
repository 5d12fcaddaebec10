"""Where a runtime keeps its state: the SQLite file of its workdir (the default) or PostgreSQL.

``open_backend(None, workdir, ...)`` is today's embedded runtime: ``runtime.db`` in the
workdir, approvals in memory, the in-process queue. A ``postgresql://`` URL puts the
run state, the journal, approvals and the queue in one database that any number of
processes share (``agentpack-openexperts[postgres]``; imported only then).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

from agentpack.io.errors import AgentpackError, MissingDependencyError

from ..names import RUNTIME_DB
from .approvals import ApprovalDesk
from .runstore import SqliteStore
from .storeapi import RuntimeStore

SCHEMES = ("postgresql://", "postgres://")


class Backend(NamedTuple):
    store: RuntimeStore
    """The durable store (``SqliteStore`` or ``PostgresStore``)."""
    desk: Any
    """Where approval requests wait for a decision."""
    queue: str
    """The queue registration that goes with the store."""


def is_postgres(store: str | None) -> bool:
    return isinstance(store, str) and store.startswith(SCHEMES)


def open_backend(
    store: str | None, workdir: Path, package: str, clock: Any, *, workers: int = 4, create: bool = True
) -> Backend:
    """The backend for ``store``: None for SQLite in ``workdir``, or a PostgreSQL URL.

    ``create=False`` refuses a database or workdir where nothing has run yet (for commands that only read).
    """
    if store is None:
        if not create and not (workdir / RUNTIME_DB).is_file():
            raise AgentpackError(f"no runtime state in {workdir} (nothing has run there yet)")
        return Backend(SqliteStore(workdir / RUNTIME_DB), ApprovalDesk(), "memory")
    if not is_postgres(store):
        raise AgentpackError(f"the store must be a postgresql:// URL, not '{store}'")
    try:
        from .postgres.desk import PostgresDesk
        from .postgres.store import PostgresStore
    except ImportError as exc:
        raise MissingDependencyError(
            exc.name or "psycopg",
            distribution="agentpack-openexperts",
            extra="postgres",
            feature="--store postgresql://",
        ) from None
    pg = PostgresStore(store, package, pool_size=workers + 4, create=create)
    return Backend(pg, PostgresDesk(pg, clock), "postgres")
