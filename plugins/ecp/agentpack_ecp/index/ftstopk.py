"""Exact FTS5 bm25 top-k without scoring every matching row (MaxScore over per-term postings).

``ORDER BY bm25() LIMIT k`` scores every row that matches the OR of the question's terms: FTS5's bm25
costs 1-2 us per row (it reads each row's size and positions), so a warm query grows with the corpus.
Our builds add side tables to ``fts.sqlite`` that the reference runtime ignores: ``ecp_postings`` (for
each term in more than ``RARE_DF`` rows: its rows and term frequencies as two uint32 arrays, its df and
an upper bound of its bm25 factor) and ``ecp_postings_meta`` (every row's length, the mean length the
bounds were computed at, and FTS5's row and token counts the tables agree with). Rarer terms are read
from FTS5 itself: the ``bm25()`` of a one-phrase query is that term's exact share of the full score.

A query is MaxScore: terms by decreasing bound; the rows of the leading terms are scanned into partial
sums until the bounds of the terms left cannot lift a row holding none of the scanned ones to the k-th
best partial sum (or the k-th best exact score of the leading rows); the terms left are only probed
(binary search) for the candidates that can still make the top k. Shares are computed with FTS5's own
formula, order of operations and statistics (the averages record of ``%_data``) and summed in the
MATCH's phrase order, so every score equals FTS5's to the bit; ties are ordered by rowid, as before.

The result equals ``ORDER BY bm25(t), rowid LIMIT k`` of the same MATCH. A database without the side
tables (another tool's build, an older agentpack) or whose FTS5 counts no longer match them (changed by
another writer) is answered by that query instead.
"""

from __future__ import annotations

import bisect
import heapq
import math
import sys
from array import array
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import sqlite3

K1, B = 1.2, 0.75
"""FTS5's bm25 constants (``fts5_aux.c``)."""
SLACK = 1.5
"""Bounds are computed at this multiple of the build's mean row length, so they stay upper bounds while
refreshes move the mean up to it (beyond, each term's largest tf and smallest row give a looser one)."""
EPS = 1e-9
"""Relative margin of every bound comparison (scores are summed in another order than bounds)."""

RARE_DF = 8
"""Terms in at most this many rows are not stored (most of a vocabulary, few postings): a query reads
their shares from FTS5 itself, a one-phrase ``bm25()`` over at most this many rows."""

POSTINGS = "ecp_postings"
META = "ecp_postings_meta"


def _g(tf: Any, dl: Any, avgdl: float) -> Any:
    """FTS5's per-phrase bm25 factor, in FTS5's order of operations (floats, or numpy arrays at build)."""
    return (tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * dl / avgdl))


def _idf(nrow: int, nhit: int) -> float:
    idf = math.log((nrow - nhit + 0.5) / (nhit + 0.5))
    return idf if idf > 0.0 else 1e-6


def _varints(blob: bytes) -> list[int]:
    """SQLite varints (big-endian 7-bit groups; a 9th byte carries 8 bits)."""
    out, i = [], 0
    while i < len(blob):
        value = 0
        for _ in range(8):
            byte = blob[i]
            i += 1
            value = (value << 7) | (byte & 0x7F)
            if byte < 0x80:
                break
        else:
            value = (value << 8) | blob[i]
            i += 1
        out.append(value)
    return out


def averages(con: sqlite3.Connection, table: str) -> tuple[int, int]:
    """(rows, tokens of all columns) from FTS5's averages record: what its bm25 uses."""
    row = con.execute(f"SELECT block FROM {table}_data WHERE id = 1").fetchone()
    values = _varints(bytes(row[0])) if row and row[0] else [0]
    return values[0], sum(values[1:])


def _u32(values: Any) -> bytes:
    """Little-endian uint32 bytes (the side tables' array format)."""
    import numpy as np

    return np.asarray(values, dtype="<u4").tobytes()


def _array(blob: bytes) -> array:
    out = array("I")
    out.frombytes(blob)
    if sys.byteorder == "big":  # pragma: no cover - the arrays are stored little-endian
        out.byteswap()
    return out


def one_block(matrix: Any) -> tuple[list[tuple[Any, Any, Any, Any]], Any]:
    """``write_blocks``'s arguments for the docs of one term matrix, rowids 1, 2, ..."""
    import numpy as np

    lens = np.zeros(len(matrix.doc_len) + 1, dtype=np.int64)
    lens[1:] = matrix.doc_len
    return [(matrix.terms, matrix.indptr, matrix.doc, matrix.tf)], lens


def write_blocks(con: sqlite3.Connection, table: str, blocks: Any, lens: Any) -> None:
    """Create the side tables for a freshly written FTS5 table (each row's ``tokens``: its terms, each
    repeated tf times). ``blocks``: the postings by term, ascending, in blocks of consecutive terms
    ``(terms, indptr, doc ids from 0, tfs)`` (a streaming build never holds them all); ``lens``: every
    row's length, indexed by rowid (0 unused)."""
    import numpy as np

    nrow, ntok = averages(con, table)
    avgdl = (ntok / nrow if nrow else 1.0) * SLACK
    _create(con)
    for block_terms, block_indptr, doc, block_tf in blocks:
        indptr = np.asarray(block_indptr, dtype=np.int64)
        rows = np.asarray(doc, dtype=np.int64) + 1
        tf = np.asarray(block_tf, dtype=np.int64)
        df = np.diff(indptr)
        stored = np.flatnonzero(df > RARE_DF)
        picked = np.repeat(df > RARE_DF, df)
        starts = np.zeros(len(stored) + 1, dtype=np.int64)
        np.cumsum(df[stored], out=starts[1:])
        terms = [block_terms[t] for t in stored.tolist()]
        entries = _entries(terms, starts, rows[picked], tf[picked], lens, avgdl)
        con.executemany(f"INSERT INTO {POSTINGS} VALUES (?,?,?,?,?,?,?)", entries)
    con.executemany(
        f"INSERT INTO {META} VALUES (?,?)",
        [("avgdl", avgdl), ("rows", nrow), ("tokens", ntok), ("lengths", _u32(lens))],
    )


def _entries(terms, indptr, rows, tf, lens, avgdl):
    """The ``POSTINGS`` row of each term: rows, tfs, df, largest tf, smallest row length, bound."""
    import numpy as np

    if not len(rows):
        return []
    starts = indptr[:-1]
    nonempty = np.flatnonzero(np.diff(indptr) > 0)
    dl = lens[rows]
    g = _g(tf.astype(np.float64), dl.astype(np.float64), avgdl)
    bound = np.maximum.reduceat(g, starts[nonempty])
    max_tf = np.maximum.reduceat(tf, starts[nonempty])
    min_dl = np.minimum.reduceat(dl, starts[nonempty])
    rows_bytes, tf_bytes = _u32(rows), _u32(tf)
    bounds = indptr.tolist()
    return (
        (
            terms[t],
            rows_bytes[4 * bounds[t] : 4 * bounds[t + 1]],
            tf_bytes[4 * bounds[t] : 4 * bounds[t + 1]],
            bounds[t + 1] - bounds[t],
            m,
            n,
            x,
        )
        for t, m, n, x in zip(nonempty.tolist(), max_tf.tolist(), min_dl.tolist(), bound.tolist(), strict=True)
    )


def _create(con: sqlite3.Connection) -> None:
    con.execute(
        f"CREATE TABLE {POSTINGS}(term TEXT PRIMARY KEY, rows BLOB, tfs BLOB, df INTEGER, max_tf INTEGER, "
        "min_dl INTEGER, bound REAL) WITHOUT ROWID"
    )
    con.execute(f"CREATE TABLE {META}(key TEXT PRIMARY KEY, value) WITHOUT ROWID")


def has_tables(con: sqlite3.Connection) -> bool:
    return con.execute("SELECT 1 FROM sqlite_master WHERE name = ?", (POSTINGS,)).fetchone() is not None


def patch(con: sqlite3.Connection, table: str, removed: dict[int, set[str]], matrix: Any, rowids: list[int]) -> None:
    """Bring the side tables in step after an in-place patch: ``removed`` maps each deleted rowid to its
    terms; the docs of ``matrix`` were inserted as ``rowids``. Rewrites the entries of the terms those
    rows hold (a copy of each one's arrays: O(its df) bytes, no per-posting Python) and the lengths
    array; FTS5's counts are recorded last."""
    import numpy as np

    meta = dict(con.execute(f"SELECT key, value FROM {META}"))
    avgdl = float(meta["avgdl"])
    lens = np.frombuffer(meta["lengths"], dtype="<u4").astype(np.int64)
    top = max([len(lens) - 1, *rowids])
    if top >= len(lens):
        lens = np.concatenate([lens, np.zeros(top + 1 - len(lens), dtype=np.int64)])
    nrow = int(meta["rows"]) - len(removed) + len(rowids)
    ntok = int(meta["tokens"]) - int(lens[list(removed)].sum()) + int(np.asarray(matrix.doc_len).sum())
    lens[list(removed)] = 0
    new_rows = np.asarray(rowids, dtype=np.int64)
    lens[new_rows] = matrix.doc_len
    gone = np.asarray(sorted(removed), dtype=np.int64)
    indptr = np.asarray(matrix.indptr, dtype=np.int64)
    added = {term: t for t, term in enumerate(matrix.terms) if indptr[t + 1] > indptr[t]}
    lost = set().union(*removed.values())
    touched = sorted(lost.union(added))
    entries, emptied = [], []
    for lo in range(0, len(touched), 500):
        batch = touched[lo : lo + 500]
        marks = ",".join("?" * len(batch))
        sql = f"SELECT term, rows, tfs, max_tf, min_dl, bound FROM {POSTINGS} WHERE term IN ({marks})"
        have = {r[0]: r[1:] for r in con.execute(sql, batch)}
        for term in batch:
            if term not in have:
                continue  # a rare term (or a new one): queries read it from FTS5
            old_rows, old_tf, max_tf, min_dl, bound = have[term]
            r = np.frombuffer(old_rows, dtype="<u4")
            f = np.frombuffer(old_tf, dtype="<u4")
            if term in lost:  # the deleted rows found by binary search (rows are ascending)
                at = np.searchsorted(r, gone)
                inside = at < len(r)
                at = at[inside][r[at[inside]] == gone[inside]]
                r, f = np.delete(r, at), np.delete(f, at)
            t = added.get(term)
            if t is not None:  # new rowids follow every old one: appending keeps the order; the bound
                # only rises (it stays an upper bound when rows go)
                new_r = new_rows[np.asarray(matrix.doc[indptr[t] : indptr[t + 1]], dtype=np.int64)]
                new_f = np.asarray(matrix.tf[indptr[t] : indptr[t + 1]], dtype=np.int64)
                dl = lens[new_r]
                bound = max(bound, float(_g(new_f.astype(np.float64), dl.astype(np.float64), avgdl).max()))
                max_tf, min_dl = max(max_tf, int(new_f.max())), min(min_dl, int(dl.min()))
                r, f = np.concatenate([r, new_r]).astype("<u4"), np.concatenate([f, new_f]).astype("<u4")
            if len(r):
                entries.append((term, r.tobytes(), f.tobytes(), len(r), max_tf, min_dl, bound))
            else:
                emptied.append((term,))
    con.executemany(f"INSERT OR REPLACE INTO {POSTINGS} VALUES (?,?,?,?,?,?,?)", entries)
    con.executemany(f"DELETE FROM {POSTINGS} WHERE term = ?", emptied)
    con.executemany(
        f"UPDATE {META} SET value = ? WHERE key = ?",
        [(nrow, "rows"), (ntok, "tokens"), (_u32(lens), "lengths")],
    )


class Postings:
    """The side tables of one read-only connection: row lengths loaded once, refreshed when FTS5's
    counts change (a database replaced under a kept connection is not expected; a stale table is)."""

    def __init__(self, con: sqlite3.Connection, table: str) -> None:
        self.con, self.table = con, table
        self.stamp: tuple[int, int] | None = None
        self.lens = array("I")
        self.avgdl = 1.0

    def _current(self) -> bool:
        """Whether the side tables exist and agree with FTS5's counts (loading the lengths if new)."""
        counts = averages(self.con, self.table)
        if counts == self.stamp:
            return True
        try:
            meta = dict(self.con.execute(f"SELECT key, value FROM {META}"))
        except Exception:  # no side table: sqlite3.OperationalError (sqlite3 is imported lazily)
            return False
        if counts[0] <= 0 or (meta.get("rows"), meta.get("tokens")) != counts:
            return False
        self.lens = _array(bytes(meta["lengths"]))
        self.avgdl = float(meta["avgdl"])
        self.stamp = counts
        return True

    def top_k(
        self,
        terms: list[str],
        k: int,
        informative: Callable[[list[str], dict[str, int], int], list[str]],
        keep: Callable[[Sequence[int]], set[int]] | None,
    ) -> list[tuple[int, float]] | None:
        """The k best (rowid, score) of the OR of ``informative(terms, df, rows)``, best first, ties by
        rowid, score = -bm25; ``keep(rowids)`` is the subset a filter lets through. ``None`` when the side
        tables are missing or stale (answer with FTS5's own ranking then)."""
        if not self._current():
            return None
        assert self.stamp is not None
        nrow, ntok = self.stamp
        avgdl = ntok / nrow
        terms = list(dict.fromkeys(terms))
        marks = ",".join("?" * len(terms))
        sql = f"SELECT term, rows, tfs, df, max_tf, min_dl, bound FROM {POSTINGS} WHERE term IN ({marks})"
        found = {r[0]: r[1:] for r in self.con.execute(sql, terms)}
        rare: dict[str, dict[int, float]] = {}  # terms not stored: each row's share, FTS5's own bm25
        for t in terms:
            if t not in found:
                sql = f"SELECT rowid, bm25({self.table}) FROM {self.table} WHERE {self.table} MATCH ?"
                shares = {r: -s for r, s in self.con.execute(sql, ('"' + t.replace('"', '""') + '"',))}
                if shares:
                    rare[t] = shares
        df = {t: int(v[2]) for t, v in found.items() if v[2] > 0} | {t: len(v) for t, v in rare.items()}
        terms = informative(terms, df, nrow)
        if not terms:
            return []
        lens = self.lens
        idf, ub, rows, tfs = {}, {}, {}, {}
        for t in terms:
            idf[t] = _idf(nrow, df[t])
            if t in rare:
                ub[t] = max(rare[t].values()) * (1 + EPS)
                continue
            blob_rows, blob_tf, _, max_tf, min_dl, bound = found[t]
            g = bound if avgdl <= self.avgdl else _g(max_tf, min_dl, avgdl)
            ub[t] = idf[t] * g * (1 + EPS)
            rows[t], tfs[t] = _array(bytes(blob_rows)), _array(bytes(blob_tf))

        def share(t: str, row: int) -> float | None:
            """The share of ``t`` in ``row`` (``None``: the row does not hold it), computed as FTS5 does."""
            if t in rare:
                return rare[t].get(row)
            r = rows[t]
            i = bisect.bisect_left(r, row)
            if i == len(r) or r[i] != row:
                return None
            tf = tfs[t][i]
            return idf[t] * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * lens[row] / avgdl)))

        def exact(row: int) -> float:
            score = 0.0
            for t in terms:  # FTS5's order: the phrases of the MATCH
                value = share(t, row)
                if value is not None:
                    score += value
            return score

        by_bound = sorted(terms, key=lambda t: (-ub[t], t))
        rest = [0.0] * (len(by_bound) + 1)  # rest[i]: the bounds of by_bound[i:] summed
        for i in range(len(by_bound) - 1, -1, -1):
            rest[i] = rest[i + 1] + ub[by_bound[i]]
        # partial: the shares of the terms scanned so far, a lower bound of each row's score (rows a
        # filter rejects are left out), so its k-th largest value is a lower bound of the k-th best score
        partial: dict[int, float] = {}
        floor, scanned = -math.inf, 0
        while scanned < len(by_bound) and rest[scanned] * (1 + EPS) >= floor:
            t = by_bound[scanned]  # rows holding none of the terms scanned so far could still reach the top k
            if t in rare:
                allowed = keep(list(rare[t])) if keep is not None else None
                for row, value in rare[t].items():
                    if allowed is None or row in allowed:
                        partial[row] = partial.get(row, 0.0) + value
            else:
                r, f, weight = rows[t], tfs[t], idf[t]
                allowed = keep(r) if keep is not None else None
                for j in range(len(r)):
                    row, tf = r[j], f[j]
                    if allowed is None or row in allowed:  # share(t, row) inlined: this loop is the hot one
                        value = weight * ((tf * (K1 + 1.0)) / (tf + K1 * (1 - B + B * lens[row] / avgdl)))
                        partial[row] = partial.get(row, 0.0) + value
            scanned += 1
            if len(partial) >= k and scanned < len(by_bound):
                # the k best partial sums, and the exact scores of those rows, are both lower bounds of
                # the k-th best score: the higher one may spare the scan of the next (longer) lists
                leaders = heapq.nlargest(k, partial.items(), key=lambda item: item[1])
                floor = max(leaders[-1][1], floor)
                if rest[scanned] * (1 + EPS) >= floor:
                    floor = max(floor, min(exact(row) for row, _ in leaders))
        later, probe = rest[scanned], by_bound[scanned:]
        bar = floor / (1 + EPS) - later
        order = sorted(((v + later, row) for row, v in partial.items() if v >= bar), reverse=True)
        best: list[tuple[float, int]] = []  # a min-heap of the k best (score, -rowid)
        for upper, row in order:
            threshold = max(floor, best[0][0] if len(best) >= k else -math.inf) / (1 + EPS)
            if upper < threshold:
                break
            # the terms not scanned, probed by binary search while the row can still reach the threshold
            known, left = partial[row], later
            for t in probe:
                left -= ub[t]
                known += share(t, row) or 0.0
                if known + left < threshold:
                    break
            else:
                item = (exact(row), -row)
                if len(best) < k:
                    heapq.heappush(best, item)
                elif item > best[0]:
                    heapq.heapreplace(best, item)
        return [(-neg, s) for s, neg in sorted(best, key=lambda x: (-x[0], -x[1]))]
