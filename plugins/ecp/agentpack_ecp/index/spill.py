"""On-disk pieces of a streaming build: append-only columns, sorted postings runs and their k-way merge,
and ``.npz`` members written from either.

A full build never holds a whole-corpus array: each per-chunk or per-posting array is a ``Column``
(raw items appended batch by batch to a file of the build's spill folder), the postings of each batch
are one sorted run file (``write_run``), and ``merge_runs`` streams them out term by term (the keyword
index's runs, which carry each term's serialised postings). The FTS5 index's runs hold arrays only: they are
written in pages (``write_pages``) that ``merge_pages`` merges with numpy, a block of terms at a time.
``write_npz`` writes what ``numpy.savez`` writes, taking a ``Column``'s items from its file in blocks.
"""

from __future__ import annotations

import bisect
import heapq
import shutil
import struct
from collections.abc import Iterable, Iterator, Mapping
from itertools import groupby
from operator import itemgetter
from pathlib import Path
from typing import Any

BLOCK = 1 << 20
"""Bytes copied at a time from a spill file."""
FAN_IN = 64
"""Runs merged at once; more are first merged into bigger runs, so open files stay bounded."""
_RECORD = struct.Struct("<III")
"""A run record's head: term bytes, postings (df), serialised-postings bytes."""


class Column:
    """An append-only 1-D (or ``width``-column 2-D) array of ``dtype`` in a file."""

    def __init__(self, path: Path, dtype: str, width: int = 0) -> None:
        import numpy as np

        self.path, self.dtype, self.width = path, np.dtype(dtype), width
        self.rows = 0
        self._handle = open(path, "wb")  # noqa: SIM115 (closed by close(), after the last batch)

    def extend(self, values: Any) -> None:
        import numpy as np

        data = np.ascontiguousarray(values, dtype=self.dtype)
        self._handle.write(data.tobytes())
        self.rows += len(data)

    def extend_bytes(self, data: bytes) -> None:
        """Items already encoded as this column's dtype."""
        self._handle.write(data)
        self.rows += len(data) // self.dtype.itemsize

    @property
    def shape(self) -> tuple[int, ...]:
        return (self.rows, self.width) if self.width else (self.rows,)

    def close(self) -> None:
        self._handle.close()


class Joined(Column):
    """Strings joined by newlines, as the ``uint8`` array the caches hold (``"\\n".join(...)`` encoded)."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, "u1")
        self.items = 0

    def add(self, values: list[str]) -> None:
        if not values:
            return
        data = (("\n" if self.items else "") + "\n".join(values)).encode("utf-8")
        self._handle.write(data)
        self.rows += len(data)
        self.items += len(values)

    def add_bytes(self, values: list[bytes]) -> None:
        """``add`` for values already encoded."""
        if not values:
            return
        data = (b"\n" if self.items else b"") + b"\n".join(values)
        self._handle.write(data)
        self.rows += len(data)
        self.items += len(values)


def write_npz(path: Path, members: Mapping[str, Any]) -> None:
    """What ``numpy.savez(path, **members)`` writes; a ``Column`` member is copied from its file."""
    import zipfile

    import numpy as np

    fmt = np.lib.format
    with zipfile.ZipFile(path, mode="w", compression=zipfile.ZIP_STORED, allowZip64=True) as zipf:
        for name, value in members.items():
            with zipf.open(name + ".npy", "w", force_zip64=True) as member:
                if not isinstance(value, Column):
                    fmt.write_array(member, np.asanyarray(value), allow_pickle=False)
                    continue
                value.close()
                header = {"descr": fmt.dtype_to_descr(value.dtype), "fortran_order": False, "shape": value.shape}
                fmt.write_array_header_1_0(member, header)
                with open(value.path, "rb") as source:
                    shutil.copyfileobj(source, member, BLOCK)


Record = tuple[bytes, bytes, bytes, bytes]
"""One term of a run: the term, its postings' int32 doc ids and term frequencies, their JSON members."""


def write_run(path: Path, records: Iterable[Record]) -> Path:
    """A run file holding ``records`` (ascending terms), written as they come."""
    pack = _RECORD.pack
    with open(path, "wb", buffering=BLOCK) as handle:
        write = handle.write
        for term, docs, tfs, body in records:
            write(pack(len(term), len(docs) // 4, len(body)) + term + docs + tfs + body)
    return path


def _records(path: Path, rank: int) -> Iterator[tuple[bytes, int, Record]]:
    """The records of a run file, each as ``(term, rank, record)`` (``rank`` orders a term's runs)."""
    size = _RECORD.size
    with open(path, "rb", buffering=BLOCK // 4) as handle:
        read = handle.read
        while head := read(size):
            term_len, df, body_len = _RECORD.unpack(head)
            data = read(term_len + 8 * df + body_len)
            a, b, c = term_len, term_len + 4 * df, term_len + 8 * df
            term = data[:a]
            yield term, rank, (term, data[a:b], data[b:c], data[c:])


def merge_runs(runs: list[Path], folder: Path) -> Iterator[tuple[bytes, list[Record]]]:
    """Each term of ``runs`` once, ascending, with the records of every run holding it in run order (runs
    hold ascending doc ids, so concatenating their postings keeps them sorted). Beyond ``FAN_IN`` runs,
    groups are merged into intermediate runs in ``folder`` first."""
    level = 0
    while len(runs) > FAN_IN:
        merged = []
        for lo in range(0, len(runs), FAN_IN):
            records = (joined(term, parts) for term, parts in merge_runs(runs[lo : lo + FAN_IN], folder))
            merged.append(write_run(folder / f"merge-{level}-{lo}.run", records))
            for done in runs[lo : lo + FAN_IN]:
                done.unlink()
        runs, level = merged, level + 1
    streams: list[Iterable[tuple[bytes, int, Record]]] = [_records(path, rank) for rank, path in enumerate(runs)]
    if len(streams) == 1:
        for term, _, record in streams[0]:
            yield term, [record]
        return
    for term, group in groupby(heapq.merge(*streams), key=itemgetter(0)):
        yield term, [item[2] for item in group]


def joined(term: bytes, parts: list[Record]) -> Record:
    """The records of one term from several runs as one."""
    return term, b"".join(p[1] for p in parts), b"".join(p[2] for p in parts), b",".join(p[3] for p in parts)


PAGE_TERMS = 4096
"""Most terms in one page of a postings file (``write_pages``)."""
PAGE_POSTINGS = 16_384
"""Postings after which a page ends (a page holds at least one term, whatever its postings): a merge holds
one page of each of up to ``FAN_IN`` runs (about 0.15 MB each)."""
MERGE_POSTINGS = 262_144
"""About the most postings one merged block takes from all the runs together (a block holds at least one
term): the merge's working arrays stay the same size however many runs there are."""
_PAGE = struct.Struct("<III")
"""A page's head: terms, bytes of their newline-joined names, postings."""


def write_pages(path: Path, blocks: Iterable[tuple[list[str], Any, Any, Any]], base: int = 0) -> Path:
    """A postings file of ``blocks`` ``(terms, indptr, doc ids, tfs)`` of ascending terms (no newline in
    any; term ``t``'s postings: ``doc[indptr[t]:indptr[t + 1]] + base`` and their tfs), in pages of arrays
    that ``merge_pages`` reads with numpy: no Python per term or posting."""
    import numpy as np

    with open(path, "wb", buffering=BLOCK) as handle:
        for terms, indptr, doc, tf in blocks:
            bounds = np.asarray(indptr, dtype=np.int64)
            docs = np.asarray(doc, dtype="<i4") + np.int32(base)
            tfs = np.asarray(tf, dtype="<i4")
            dfs = np.diff(bounds).astype("<i4")
            lo = 0
            while lo < len(terms):
                cap = int(np.searchsorted(bounds, bounds[lo] + PAGE_POSTINGS, side="right")) - 1
                hi = min(len(terms), lo + PAGE_TERMS, max(cap, lo + 1))
                names = "\n".join(terms[lo:hi]).encode("utf-8")
                a, b = int(bounds[lo]), int(bounds[hi])
                handle.write(_PAGE.pack(hi - lo, len(names), b - a) + names)
                handle.write(dfs[lo:hi].tobytes() + docs[a:b].tobytes() + tfs[a:b].tobytes())
                lo = hi
    return path


class _Pages:
    """The pages of a postings file, read one at a time; ``pos``: the first term of the page not yet taken."""

    def __init__(self, path: Path) -> None:
        self.handle = open(path, "rb", buffering=BLOCK // 4)  # noqa: SIM115 (closed at its end)
        self.terms: Any = None
        self.next_page()

    def close(self) -> None:
        self.handle.close()
        self.terms = None

    def next_page(self) -> None:
        import numpy as np

        head = self.handle.read(_PAGE.size)
        if not head:
            self.close()
            return
        count, name_bytes, postings = _PAGE.unpack(head)
        data = self.handle.read(name_bytes + 4 * count + 8 * postings)
        self.terms = data[:name_bytes].split(b"\n")  # not a numpy "S" array: one long term would widen them all
        self.df = np.frombuffer(data, "<i4", count, name_bytes)
        self.ptr = np.zeros(count + 1, dtype=np.int64)
        np.cumsum(self.df, out=self.ptr[1:])
        self.docs = np.frombuffer(data, "<i4", postings, name_bytes + 4 * count)
        self.tfs = np.frombuffer(data, "<i4", postings, name_bytes + 4 * count + 4 * postings)
        self.pos = 0

    def cutoff(self, postings: int) -> bytes:
        """The term at which this page's next ``postings`` postings end (its last term when it has fewer)."""
        import numpy as np

        end = int(np.searchsorted(self.ptr, self.ptr[self.pos] + postings, side="left"))
        return self.terms[min(max(end - 1, self.pos), len(self.terms) - 1)]

    def take(self, cutoff: bytes) -> tuple[Any, Any, Any, Any]:
        """The terms up to ``cutoff`` not taken yet: (terms, dfs, docs, tfs)."""
        lo = self.pos
        hi = bisect.bisect_right(self.terms, cutoff, lo)
        a, b = int(self.ptr[lo]), int(self.ptr[hi])
        out = (self.terms[lo:hi], self.df[lo:hi], self.docs[a:b], self.tfs[a:b])
        self.pos = hi
        if hi == len(self.terms):
            self.next_page()
        return out


def merge_pages(runs: list[Path], folder: Path) -> Iterator[tuple[list[str], Any, Any, Any]]:
    """The postings of the ``write_pages`` files ``runs`` merged, as blocks ``(terms, indptr, doc ids, tfs)``
    of consecutive ascending terms, each term's postings from every run in run order (runs hold
    ascending doc ids, so they stay sorted). Each block is the terms up to a cutoff, merged with numpy
    (the block's distinct terms sorted, a stable sort of its postings by term): the smallest of the
    runs' last page terms and of the terms where each run's next ``MERGE_POSTINGS / runs`` postings
    end, so a block never needs a page not yet read and stays about ``MERGE_POSTINGS`` postings.
    Beyond ``FAN_IN`` runs, groups are merged into intermediate files in ``folder`` first, so open files
    and pages held stay bounded."""
    import numpy as np

    level = 0
    while len(runs) > FAN_IN:
        merged = []
        for lo in range(0, len(runs), FAN_IN):
            merged.append(write_pages(folder / f"pages-{level}-{lo}.run", merge_pages(runs[lo : lo + FAN_IN], folder)))
            for done in runs[lo : lo + FAN_IN]:
                done.unlink()
        runs, level = merged, level + 1
    cursors = [_Pages(path) for path in runs]
    try:
        while live := [c for c in cursors if c.terms is not None]:
            cutoff = min(c.cutoff(max(1, MERGE_POSTINGS // len(live))) for c in live)
            taken = [c.take(cutoff) for c in live]
            names = [name for t in taken for name in t[0]]
            dfs = np.concatenate([t[1] for t in taken])
            unique = sorted(set(names))
            rank = {name: i for i, name in enumerate(unique)}
            inverse = np.fromiter(map(rank.__getitem__, names), dtype=np.int64, count=len(names))
            order = np.argsort(np.repeat(inverse, dfs), kind="stable")
            indptr = np.zeros(len(unique) + 1, dtype=np.int64)
            np.cumsum(np.bincount(inverse, weights=dfs, minlength=len(unique)).astype(np.int64), out=indptr[1:])
            docs = np.concatenate([t[2] for t in taken])[order]
            tfs = np.concatenate([t[3] for t in taken])[order]
            yield [name.decode("utf-8") for name in unique], indptr, docs, tfs
    finally:  # a build stopped mid-merge (an error writing the side tables) leaves no file open
        for cursor in cursors:
            if cursor.terms is not None:
                cursor.close()
