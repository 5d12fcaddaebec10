"""On-disk pieces of a streaming build: append-only columns, sorted postings runs and their k-way merge,
and ``.npz`` members written from either.

A full build never holds a whole-corpus array: each per-chunk or per-posting array is a ``Column``
(raw items appended batch by batch to a file of the build's spill folder), the postings of each batch
are one sorted ``Run``, and ``merge_runs`` streams them out term by term. ``write_npz`` writes what
``numpy.savez`` writes, taking a ``Column``'s items from its file in blocks.
"""

from __future__ import annotations

import heapq
import shutil
import struct
from collections.abc import Iterator, Mapping
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


class Run:
    """One sorted run of postings: records ``(term, docs, tfs, serialised postings)`` by ascending term."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle = open(path, "wb")  # noqa: SIM115 (closed by close())

    def add(self, term: bytes, docs: bytes, tfs: bytes, body: bytes) -> None:
        """``docs``/``tfs``: the postings' int32 doc ids and term frequencies; ``body``: their JSON members."""
        self._handle.write(_RECORD.pack(len(term), len(docs) // 4, len(body)) + term + docs + tfs + body)

    def close(self) -> None:
        self._handle.close()


def _records(path: Path, rank: int) -> Iterator[tuple[bytes, int, bytes, bytes, bytes]]:
    """The records of a run file as ``(term, rank, docs, tfs, body)``; ``rank`` orders equal terms."""
    size = _RECORD.size
    with open(path, "rb", buffering=BLOCK // 4) as handle:
        read = handle.read
        while head := read(size):
            term_len, df, body_len = _RECORD.unpack(head)
            data = read(term_len + 8 * df + body_len)
            a, b = term_len, term_len + 4 * df
            yield data[:a], rank, data[a:b], data[b : b + 4 * df], data[b + 4 * df :]


def merge_runs(runs: list[Path], folder: Path) -> Iterator[tuple[bytes, list[tuple[bytes, bytes, bytes]]]]:
    """Each term of ``runs`` once, ascending, with the ``(docs, tfs, body)`` of every run holding it in run
    order (runs hold ascending doc ids, so concatenating them keeps the postings sorted). Beyond
    ``FAN_IN`` runs, groups are merged into intermediate runs in ``folder`` first."""
    level = 0
    while len(runs) > FAN_IN:
        merged = []
        for lo in range(0, len(runs), FAN_IN):
            out = Run(folder / f"merge-{level}-{lo}.run")
            for term, parts in merge_runs(runs[lo : lo + FAN_IN], folder):
                docs, tfs = b"".join(p[0] for p in parts), b"".join(p[1] for p in parts)
                out.add(term, docs, tfs, b",".join(p[2] for p in parts))
            out.close()
            for done in runs[lo : lo + FAN_IN]:
                done.unlink()
            merged.append(out.path)
        runs, level = merged, level + 1
    streams = [_records(path, rank) for rank, path in enumerate(runs)]
    for term, group in groupby(heapq.merge(*streams), key=itemgetter(0)):
        yield term, [record[2:] for record in group]
