"""``sqlite-fts-index-v1`` (spec 6.1.2): an SQLite FTS5 table of normalised token streams.

Columns (the layout the reference runtime reads and writes):
``chunk_id, source_id, path, start_line, end_line, file_sha256, chunk_sha256``
(unindexed) and ``tokens`` (the chunk's terms, each repeated as often as it occurs,
so FTS5's bm25 sees true term frequencies). Snippets come from ``texts.jsonl``
(looked up by chunk id, ``chunkstore.TextsFile``); the indexed text is not stored in the
database a second time, which keeps the file a refresh copies small. Databases
that have a ``text`` column (older agentpack builds) are read from it.
Query terms are quoted, so any table tokenizer accepts them.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from functools import partial
from operator import mul
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError
from agentpack.io.paths import resolve_under

from ..pack.files import check_uri_safe, connect_readonly, open_regular
from . import ftstopk
from .chunkstore import Chunk, TextsFile

FORMAT = "sqlite-fts-index-v1"
DB_NAME = "fts.sqlite"
TABLE = "chunks"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

if TYPE_CHECKING:
    import sqlite3


def _sqlite(target: str | Path, **kwargs: Any) -> sqlite3.Connection:
    import sqlite3  # only for FTS indexes: queries of keyword and vector indexes do without it

    return sqlite3.connect(target, **kwargs)


ROWS_AT_ONCE = 256
"""Chunks whose ``tokens`` strings are made at a time (the words of a whole batch would be a string per posting)."""


def _rows(chunks: list[Chunk], matrix):
    """The table row of each chunk; ``tokens``: its terms ascending, each repeated tf times (one string
    multiplication per term and chunk)."""
    indptr, term_ids, tfs = matrix.by_doc()
    spaced = [term + " " for term in matrix.terms]
    bounds = indptr.tolist()
    for lo in range(0, len(chunks), ROWS_AT_ONCE):
        hi = min(lo + ROWS_AT_ONCE, len(chunks))
        first, last = bounds[lo], bounds[hi]
        words = list(map(mul, map(spaced.__getitem__, term_ids[first:last].tolist()), tfs[first:last].tolist()))
        for i in range(lo, hi):
            c = chunks[i]
            tokens = "".join(words[bounds[i] - first : bounds[i + 1] - first])[:-1]
            yield c.chunk_id, c.source_id, c.path, c.start_line, c.end_line, c.file_sha256, c.chunk_sha256, tokens


def _connect(path: Path) -> sqlite3.Connection:
    con = _sqlite(path)
    con.execute("PRAGMA journal_mode=OFF")
    con.execute("PRAGMA synchronous=OFF")
    return con


BULK = {"automerge": 0, "crisismerge": 64}
"""FTS5 merge settings while a build fills the table: no automatic merges, and a forced one only once a
level holds 64 segments (FTS5's default 16 merged the 1 MB segments of a 64 MB corpus again and again)."""
DEFAULTS = {"automerge": 4, "crisismerge": 16}
"""FTS5's defaults, restored before the final ``optimize`` for later patches."""

_INSERT = (
    "INSERT INTO {table}(rowid, chunk_id, source_id, path, start_line, end_line, file_sha256, chunk_sha256, tokens) "
    "VALUES (?,?,?,?,?,?,?,?,?)"
)


class Writer:
    """A new database filled batch by batch in one transaction (rowids 1, 2, ... in chunk order), optimised
    and committed by ``close``. FTS5's merges are held off while it fills (``BULK``: every segment is merged
    about once, by the final ``optimize``; 20-30% less insert time) and back at FTS5's defaults for later
    patches."""

    def __init__(self, out: Path, db_name: str = DB_NAME, table: str = TABLE) -> None:
        self.con = _connect(out / db_name)
        self.table, self.rows = table, 0
        self.con.execute(
            f"CREATE VIRTUAL TABLE {table} USING fts5(chunk_id UNINDEXED, source_id UNINDEXED, path UNINDEXED, "
            "start_line UNINDEXED, end_line UNINDEXED, file_sha256 UNINDEXED, chunk_sha256 UNINDEXED, tokens, "
            "tokenize=\"unicode61 tokenchars '_'\")"
        )
        self.con.execute("BEGIN")
        for key, value in BULK.items():
            self._config(key, value)

    def _config(self, key: str, value: int) -> None:
        self.con.execute(f"INSERT INTO {self.table}({self.table}, rank) VALUES (?, ?)", (key, value))

    def add(self, chunks: list[Chunk], matrix) -> None:
        """Rows for ``chunks`` (whose term counts are ``matrix``), after those added before."""
        first = self.rows + 1
        self.con.executemany(
            _INSERT.format(table=self.table), ((i, *row) for i, row in enumerate(_rows(chunks, matrix), first))
        )
        self.rows += len(chunks)

    def close(self) -> None:
        try:
            for key, value in DEFAULTS.items():
                self._config(key, value)
            self.con.execute(f"INSERT INTO {self.table}({self.table}) VALUES ('optimize')")
            self.con.commit()
        finally:
            self.con.close()


def has_text_column(db: Path, table: str = TABLE) -> bool:
    con = connect_readonly(db)
    try:
        return "text" in {row[1] for row in con.execute(f"PRAGMA table_info({table})")}
    finally:
        con.close()


def add_bounds(db: Path, blocks, lens, table: str = TABLE) -> None:
    """Add the per-term bounds of exact top-k queries (``ftstopk.write_blocks``: postings by term in
    blocks, each row's length) to a database ``Writer`` made."""
    con = _connect(db)
    try:
        with con:
            ftstopk.write_blocks(con, table, blocks, lens)
    finally:
        con.close()


def write(out: Path, chunks: list[Chunk], matrix, table: str = TABLE) -> list[int]:
    """The database of ``chunks`` (whose term counts are ``matrix``) in one go, without the top-k bounds
    (``add_bounds``); return the rowid of every chunk. (A build streams batches through ``Writer``.)"""
    writer = Writer(out, table=table)
    writer.add(chunks, matrix)
    writer.close()
    return list(range(1, len(chunks) + 1))


def patch(db: Path, removed_rowids: list[int], added: list[Chunk], matrix, table: str = TABLE) -> list[int]:
    """Update a copy of the database in place: delete the rows of removed chunks, insert ``added``
    (whose term counts are ``matrix``), keep the top-k bounds in step; return the rowids given to ``added``."""
    con = _connect(db)
    try:
        with con:
            side = ftstopk.has_tables(con)
            removed: dict[int, set[str]] = {}
            for lo in range(0, len(removed_rowids), 500) if side else ():
                batch = removed_rowids[lo : lo + 500]
                sql = f"SELECT rowid, tokens FROM {table} WHERE rowid IN ({','.join('?' * len(batch))})"
                removed.update((r, set(str(tokens or "").split())) for r, tokens in con.execute(sql, batch))
            for lo in range(0, len(removed_rowids), 500):
                batch = removed_rowids[lo : lo + 500]
                con.execute(f"DELETE FROM {table} WHERE rowid IN ({','.join('?' * len(batch))})", batch)
            start = (con.execute(f"SELECT max(rowid) FROM {table}").fetchone()[0] or 0) + 1
            con.executemany(
                f"INSERT INTO {table}(rowid, chunk_id, source_id, path, start_line, end_line, "
                "file_sha256, chunk_sha256, tokens) VALUES (?,?,?,?,?,?,?,?,?)",
                ((start + i, *row) for i, row in enumerate(_rows(added, matrix))),
            )
            if side:
                ftstopk.patch(con, table, removed, matrix, list(range(start, start + len(added))))
    finally:
        con.close()
    return list(range(start, start + len(added)))


REQUIRED_COLUMNS = ("chunk_id", "source_id", "path", "start_line", "end_line", "chunk_sha256")
"""Columns a sqlite-fts-index-v1 table needs (plus ``tokens``, or ``text`` in older agentpack builds)."""
HEADER = b"SQLite format 3\x00"


def check_database(db: Path, table: str = TABLE) -> str | None:
    """Why ``db`` is not a usable sqlite-fts-index-v1 database (``None`` when it is): not SQLite
    (an empty or 1-byte placeholder), shorter than its header says, unreadable, or without the
    FTS5 table and columns. Reads the header and the schema only, never the rows."""
    import sqlite3

    try:
        size = db.stat().st_size
        with open_regular(db) as handle:
            header = handle.read(100)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if len(header) < 100:
        return f"is not an SQLite database ({size} bytes: a placeholder until the index is built)"
    if not header.startswith(HEADER):
        return f"is not an SQLite database ({size} bytes)"
    page_size = int.from_bytes(header[16:18], "big")
    pages = int.from_bytes(header[28:32], "big")
    if header[24:28] == header[92:96] and size < (65536 if page_size == 1 else page_size) * pages:
        return f"is truncated ({size} bytes; its header says {pages} pages of {page_size})"
    try:
        con = connect_readonly(db)
        try:
            row = con.execute("SELECT sql FROM sqlite_master WHERE name = ?", (table,)).fetchone()
            columns = {r[1] for r in con.execute(f"PRAGMA table_info({table})")} if row else set()
            if row:
                con.execute(f"SELECT rowid FROM {table} LIMIT 1").fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        return f"is not a readable SQLite database ({exc})"
    if not row:
        return f"has no table '{table}'"
    if "fts5" not in str(row[0]).lower():
        return f"table '{table}' is not an FTS5 table"
    missing = [c for c in REQUIRED_COLUMNS if c not in columns]
    if "tokens" not in columns and "text" not in columns:
        missing.append("tokens")
    if missing:
        return f"table '{table}' lacks the column(s) {', '.join(missing)}"
    return None


def informative(terms: list[str], df: dict[str, int], rows: int) -> list[str]:
    """The terms that can move FTS5's bm25: those in at most half the chunks (others get idf ~ 0).

    FTS5 clamps the idf of a term found in more than half the rows to a negligible value, yet
    decoding its long doclist dominates the query time; when every term is that common the
    rarest one is kept so the query still matches.
    """
    present = [t for t in terms if t in df]
    keep = [t for t in present if df[t] * 2 <= rows]
    return keep or sorted(present, key=lambda t: df[t])[:1]


class FtsIndex:
    """A loaded sqlite-fts-index-v1: one read-only connection, kept open."""

    kind = "fts"

    def __init__(self, index_dir: Path, head: dict[str, Any]) -> None:
        sqlite_cfg = head.get("sqlite") or {}
        self.index_dir = index_dir
        self.head = head
        self.table = str(sqlite_cfg.get("table") or TABLE)
        if not _IDENT.match(self.table):
            raise AgentpackError(f"index_data.json: sqlite.table '{self.table}' is not a plain table name")
        rel = str(sqlite_cfg.get("path") or DB_NAME)
        check_uri_safe(rel)
        db = resolve_under(index_dir, rel)
        if not db.is_file():
            raise AgentpackError(f"SQLite database {rel} not found")
        problem = check_database(db, self.table)
        if problem:
            raise AgentpackError(f"{rel} {problem}", hint="run agentpack ecp build")
        import sqlite3

        try:
            self._con = connect_readonly(db, check_same_thread=False)
            self._lock = threading.Lock()
            columns = {row[1] for row in self._con.execute(f"PRAGMA table_info({self.table})")}
            self.has_text = "text" in columns
            self.texts = None if self.has_text else TextsFile.open(index_dir)
            self._postings = ftstopk.Postings(self._con, self.table)
            self._vocab = False  # the fts5vocab table of ``_df``, made on first use
            recorded = (head.get("stats") or {}).get("chunks") if head.get("format") == FORMAT else None
            # our builds record the row count; counting an FTS5 table reads all of its content rows
            self.rows = (
                recorded
                if isinstance(recorded, int) and not isinstance(recorded, bool)
                else self._con.execute(f"SELECT count(*) FROM {self.table}").fetchone()[0]
            )
        except sqlite3.Error as exc:
            raise AgentpackError(f"{rel} cannot be read: {exc}", hint="run agentpack ecp build") from None

    def _kept(self, source_ids: set[str], prefixes: tuple[str, ...], rowids: Sequence[int]) -> set[int]:
        """The ``rowids`` whose source is one of ``source_ids`` and whose path starts with one of
        ``prefixes`` (case-sensitive, as for the other formats; an empty filter lets all through)."""
        kept: set[int] = set()
        for lo in range(0, len(rowids), 500):
            batch = list(rowids[lo : lo + 500])
            sql = f"SELECT rowid, source_id, path FROM {self.table} WHERE rowid IN ({','.join('?' * len(batch))})"
            kept.update(
                r
                for r, source_id, path in self._con.execute(sql, batch)
                if (not source_ids or source_id in source_ids) and (not prefixes or str(path).startswith(prefixes))
            )
        return kept

    def _df(self, terms: list[str]) -> dict[str, int]:
        if not self._vocab:
            self._con.execute(f"CREATE VIRTUAL TABLE temp.ecp_vocab USING fts5vocab(main, {self.table}, row)")
            self._vocab = True
        marks = ",".join("?" * len(terms))
        return dict(self._con.execute(f"SELECT term, doc FROM temp.ecp_vocab WHERE term IN ({marks})", terms))

    def search(
        self, terms: list[str], k: int, source_ids: list[str] | None, prefixes: list[str] | None
    ) -> list[tuple[dict[str, Any], float]]:
        import sqlite3

        try:
            return self._search(terms, k, source_ids, prefixes)
        except sqlite3.Error as exc:  # a database damaged after it was opened
            raise AgentpackError(f"the SQLite database cannot be read: {exc}", hint="run agentpack ecp build") from None
        except (ValueError, TypeError) as exc:  # a row whose line numbers are not integers
            raise AgentpackError(f"the SQLite database holds a malformed row: {exc}") from None

    def _search(
        self, terms: list[str], k: int, source_ids: list[str] | None, prefixes: list[str] | None
    ) -> list[tuple[dict[str, Any], float]]:
        if not terms:
            return []
        k = min(int(k), 1 << 62)  # SQLite integers are 64-bit
        keep = partial(self._kept, set(source_ids or ()), tuple(prefixes or ())) if source_ids or prefixes else None
        with self._lock:
            top = self._postings.top_k(terms, k, informative, keep)
            if top is None:
                top = self._ranked(terms, k, source_ids, prefixes)
            if not top:
                return []
            text_column = "text" if self.has_text else "NULL"
            rows = {
                r[0]: r[1:]
                for r in self._con.execute(
                    f"SELECT rowid, chunk_id, source_id, path, start_line, end_line, chunk_sha256, {text_column} "
                    f"FROM {self.table} WHERE rowid IN ({','.join('?' * len(top))})",
                    [r[0] for r in top],
                )
            }
        hits = []
        for rowid, score in top:
            r = rows[rowid]
            text = r[6] if self.has_text else None
            hits.append(
                (
                    {
                        "chunk_id": r[0],
                        "source_id": r[1],
                        "artifact_path": r[2],
                        "loc": {"start_line": int(r[3]), "end_line": int(r[4])},
                        "chunk_hash": r[5],
                        "text": text,
                    },
                    float(score),
                )
            )
        return hits

    def _ranked(
        self, terms: list[str], k: int, source_ids: list[str] | None, prefixes: list[str] | None
    ) -> list[tuple[int, float]]:
        """FTS5's own ranking (databases without top-k bounds): every matching row scored by bm25."""
        terms = informative(terms, self._df(terms), self.rows)
        if not terms:
            return []
        match = " OR ".join('"' + t.replace('"', '""') + '"' for t in terms)
        where, params = [f"{self.table} MATCH ?"], [match]
        if source_ids:
            where.append(f"source_id IN ({','.join('?' * len(source_ids))})")
            params += source_ids
        if prefixes:
            where.append("(" + " OR ".join("substr(path, 1, ?) = ?" for _ in prefixes) + ")")
            for prefix in prefixes:
                params += [str(len(prefix)), prefix]  # SQLite's substr takes a text length too
        ranked = (
            f"SELECT rowid, -bm25({self.table}) AS score FROM {self.table} WHERE {' AND '.join(where)} "
            "ORDER BY score DESC, rowid LIMIT ?"
        )
        return self._con.execute(ranked, [*params, k]).fetchall()

    def text(self, chunk_id: str) -> str | None:
        """The indexed text of a chunk from ``texts.jsonl`` (databases without a ``text`` column)."""
        return self.texts.find(chunk_id) if self.texts is not None else None

    def close(self) -> None:
        self._con.close()
        if self.texts is not None:
            self.texts.close()
