"""Database sources: an SQLite file and a declared read-only query, one text per row."""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from agentpack.io.hashing import normalize_newlines, sha256_text

from ..pack.files import connect_readonly
from .recipes import SourceError, inside_pack, resolve_location


def database_path(uri: str, pack_root: Path) -> Path:
    """The SQLite file of a database source: ``sqlite:///rel.db``, ``sqlite:////abs.db``, ``file:`` or a path."""
    if uri.startswith("sqlite:"):
        rest = uri[len("sqlite:") :]
        if rest.startswith("///"):
            rest = rest[3:]
        elif rest.startswith("//"):
            raise SourceError(f"'{uri}': use sqlite:///relative/path.db or sqlite:////absolute/path.db")
        return Path(rest).resolve() if rest.startswith("/") else inside_pack(pack_root, pack_root / rest, uri)
    scheme = urlparse(uri).scheme
    if len(scheme) > 1 and scheme != "file":
        raise SourceError(
            f"database '{uri}': only SQLite database files are supported (got scheme '{scheme}')",
            hint="export the data to an SQLite file and use uri: sqlite:///path/to/file.db",
        )
    return resolve_location(uri, pack_root)


def _render_value(value: Any) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, bytes):
        return f"<{len(value)} bytes>"
    return normalize_newlines(str(value))


def run_query(db: Path, query: str) -> tuple[str, list[str], list[tuple]]:
    """Run ``query`` read-only; return (the name of the table it reads or "query", columns, rows)."""
    import sqlite3  # only for database sources: evals and queries of other packs do without it

    if not db.is_file():
        raise SourceError(f"database file not found: {db}")
    read: set[str] = set()

    def authorize(action, arg1, arg2, dbname, source):
        if action == sqlite3.SQLITE_READ:
            read.add(arg1)
            return sqlite3.SQLITE_OK
        if action in (sqlite3.SQLITE_SELECT, sqlite3.SQLITE_FUNCTION):
            return sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    con = connect_readonly(db)
    try:
        con.set_authorizer(authorize)
        cur = con.execute(query)
        columns = [d[0] for d in cur.description or []]
        rows = cur.fetchall()
    except sqlite3.DatabaseError as exc:
        raise SourceError(f"database query failed on {db.name}: {exc} (only a read-only SELECT is allowed)") from None
    finally:
        con.close()
    tables = sorted(t for t in read if t and not t.startswith("sqlite_"))
    return (tables[0] if len(tables) == 1 else "query"), columns, rows


def render_rows(name: str, columns: list[str], rows: list[tuple]) -> dict[str, str]:
    """One text per row, ``<name>/<n>`` (1-based), a ``column: value`` line per column."""
    return {
        f"{name}/{n}": "".join(f"{c}: {_render_value(v)}\n" for c, v in zip(columns, row, strict=False))
        for n, row in enumerate(rows, 1)
    }


def query_hash(query: str) -> str:
    return "sha256:" + sha256_text(query.strip())
