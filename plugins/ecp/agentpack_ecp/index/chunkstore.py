"""The files every index directory shares, and the doc table queries read them through.

Written for every format: ``index.json`` (descriptor), ``chunks.jsonl``
(provenance, spec 6.2), ``texts.jsonl`` (the indexed text and file hash of each
chunk, same order: snippets come from here so citations stay valid when sources change),
``build_info.json`` and ``file_manifest.json``. ``agentpack-cache.npz`` is a
private sidecar (byte offsets, postings) that lets a query start without
parsing the large JSON payloads; it carries fingerprints of the files it was
derived from and is ignored when they do not match (for example an index
rebuilt by another tool), in which case the portable files are parsed instead.
numpy writes it; a query reads it without numpy (``npz.py``: memoryviews).
"""

from __future__ import annotations

import hashlib
import json
import mmap
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError

from ..pack.files import open_regular
from .fileops import copy_range
from .npz import BYTES, INTEGERS, Layout, read_npz
from .spill import write_npz

CACHE_NAME = "agentpack-cache.npz"
CACHE_LAYOUT: Layout = {
    **{name: (BYTES, 1) for name in ("vocab", "head", "fingerprints", "doc_paths", "source_ids", "chunk_ids")},
    **{name: (INTEGERS, 1) for name in ("indptr", "post_doc", "post_tf", "doc_source", "chunk_offsets")},
    "text_offsets": (INTEGERS, 1),
    "doc_len": (INTEGERS, 1),
}
"""What the readers of the cache index into: anything else in a damaged sidecar makes it absent."""
CHUNKS_NAME = "chunks.jsonl"
TEXTS_NAME = "texts.jsonl"
FINGERPRINT_SPAN = 65536


@dataclass
class Chunk:
    chunk_id: str
    source_id: str
    path: str
    start_line: int
    end_line: int
    text: str | None
    """``None`` for a chunk an incremental build reuses (see ``old``)."""
    chunk_sha256: str
    file_sha256: str
    old: int = -1
    """The chunk's position in the previous build when an incremental build reuses it (its text is then
    not loaded: its ``texts.jsonl`` line is copied)."""

    def document(self) -> dict[str, Any]:
        """The chunk's entry in ``index_data.json``'s ``documents`` (spec 6.1.1), keyed by its id."""
        return {
            "source_id": self.source_id,
            "path": self.path,
            "start_line": self.start_line,
            "end_line": self.end_line,
            "file_sha256": self.file_sha256,
            "chunk_sha256": self.chunk_sha256,
        }


def fingerprint(path: Path) -> str:
    """Size plus a hash of the first and last 64 KiB: cheap, and changes when the file is replaced."""
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open_regular(path) as handle:
        digest.update(handle.read(FINGERPRINT_SPAN))
        if size > FINGERPRINT_SPAN:
            handle.seek(max(FINGERPRINT_SPAN, size - FINGERPRINT_SPAN))
            digest.update(handle.read())
    return digest.hexdigest()


COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
"""``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` without building an encoder per call."""


def write_json(path: Path, value: Any, compact: bool = False) -> None:
    """Indented JSON; ``compact`` (one line) for large payloads: only then does ``json`` use its C
    encoder, several times faster."""
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(COMPACT(value) if compact else json.dumps(value, indent=2, ensure_ascii=False))
        handle.write("\n")


def provenance_record(chunk: Chunk, source: dict[str, Any]) -> dict[str, Any]:
    record = {
        "chunk_id": chunk.chunk_id,
        "source_id": chunk.source_id,
        "uri": source["uri"],
        "artifact_path": chunk.path,
        "revision": source["revision"],
        "loc": {"start_line": chunk.start_line, "end_line": chunk.end_line},
        "chunk_hash": chunk.chunk_sha256,
    }
    for key in ("classification", "license"):
        if source.get(key):
            record[key] = source[key]
    return record


def provenance_line(chunk: Chunk, source: dict[str, Any]) -> bytes:
    """The ``chunks.jsonl`` line of ``chunk``."""
    return (COMPACT(provenance_record(chunk, source)) + "\n").encode("utf-8")


def text_line(chunk: Chunk) -> bytes:
    """The ``texts.jsonl`` line of ``chunk``."""
    return (COMPACT({"chunk_id": chunk.chunk_id, "file_sha256": chunk.file_sha256, "text": chunk.text}) + "\n").encode(
        "utf-8"
    )


def revision_bytes(source: dict[str, Any]) -> bytes:
    """The bytes of the revision every ``chunks.jsonl`` record of ``source`` carries
    (``provenance_record``'s encoding), which an incremental build substitutes in reused lines."""
    return b',"revision":' + COMPACT(source["revision"]).encode("utf-8") + b',"loc":'


def write_common(
    out: Path,
    chunks: list[Chunk],
    sources: list[dict[str, Any]],
    previous_texts: tuple[Any, Any] | None = None,
    previous_lines: list[bytes] | None = None,
) -> tuple[list[int], list[int]]:
    """``chunks.jsonl`` and ``texts.jsonl``; returns their line offsets.

    ``previous_texts`` (old ``texts.jsonl`` path, its line offsets): the lines of reused chunks
    (``Chunk.old``) are copied from there, byte for byte (runs of them with ``copy_file_range``);
    ``previous_lines``: the old ``chunks.jsonl`` lines, already brought up to date
    (``incremental.Previous.provenance_lines``), likewise.
    """
    by_id = {s["source_id"]: s for s in sources}
    chunk_offsets = [0]
    lines = []
    for c in chunks:
        if previous_lines is not None and c.old >= 0:
            line = previous_lines[c.old] + b"\n"
        else:
            line = provenance_line(c, by_id[c.source_id])
        lines.append(line)
        chunk_offsets.append(chunk_offsets[-1] + len(line))
    with open(out / CHUNKS_NAME, "wb") as handle:
        handle.write(b"".join(lines))
    text_offsets = [0]
    old_path, old_offsets = previous_texts or (None, None)
    old_starts: list[int] = old_offsets.tolist() if old_offsets is not None else []
    with open(out / TEXTS_NAME, "wb") as handle, open(old_path or os.devnull, "rb") as old:
        run_lo = run_hi = -1  # a range of the old file whose lines are copied next, in one go
        for c in chunks:
            if c.old >= 0 and old_path is not None:
                lo, hi = old_starts[c.old], old_starts[c.old + 1]
                if lo != run_hi:
                    if run_hi > run_lo:
                        copy_range(old, handle, run_lo, run_hi)
                    run_lo = lo
                run_hi = hi
                text_offsets.append(text_offsets[-1] + hi - lo)
                continue
            if run_hi > run_lo:
                copy_range(old, handle, run_lo, run_hi)
                run_lo = run_hi = -1
            line = text_line(c)
            handle.write(line)
            text_offsets.append(text_offsets[-1] + len(line))
        if run_hi > run_lo:
            copy_range(old, handle, run_lo, run_hi)
    return chunk_offsets, text_offsets


def doc_arrays(
    chunks: list[Chunk], sources: list[dict[str, Any]], chunk_offsets: list[int], text_offsets: list[int]
) -> dict[str, Any]:
    """The doc-table arrays of the cache."""
    import numpy as np

    source_ids = [s["source_id"] for s in sources]
    position = {sid: i for i, sid in enumerate(source_ids)}
    return {
        "doc_source": np.array([position[c.source_id] for c in chunks], dtype=np.int32),
        "doc_paths": np.frombuffer("\n".join(c.path for c in chunks).encode("utf-8"), dtype=np.uint8),
        "chunk_offsets": np.array(chunk_offsets, dtype=np.int64),
        "text_offsets": np.array(text_offsets, dtype=np.int64),
        "source_ids": np.frombuffer(json.dumps(source_ids).encode("utf-8"), dtype=np.uint8),
    }


def save_cache(out: Path, arrays: dict[str, Any], depends_on: list[str], name: str = CACHE_NAME) -> None:
    """The arrays (numpy arrays or ``spill.Column``s) and the fingerprints of ``depends_on`` as an ``.npz``."""
    import numpy as np

    prints = {name: fingerprint(out / name) for name in depends_on}
    arrays = dict(arrays, fingerprints=np.frombuffer(json.dumps(prints).encode("utf-8"), dtype=np.uint8))
    write_npz(out / name, arrays)


def load_cache(index_dir: Path, name: str = CACHE_NAME, layout: Layout = CACHE_LAYOUT) -> dict[str, Any] | None:
    """The cache arrays (memoryviews, see ``npz.py``), or ``None`` when absent, unreadable or no longer
    matching the files it came from."""
    path = index_dir / name
    try:
        arrays = read_npz(path, layout)
        if arrays is None:
            return None
        prints = json.loads(arrays["fingerprints"].tobytes())
        for name, expected in prints.items():
            if fingerprint(index_dir / name) != expected:
                return None
    except (OSError, ValueError, KeyError, AttributeError):  # damaged: use the portable files
        return None
    return arrays


def as_arrays(cache: dict[str, Any]) -> dict[str, Any]:
    """The arrays of ``load_cache`` as (read-only) numpy arrays, for the code that computes with them."""
    import numpy as np

    return {name: np.asarray(view) for name, view in cache.items()}


class DocTable:
    """Per-chunk metadata and text of one index, read lazily by line offsets when a cache exists."""

    def __init__(
        self,
        index_dir: Path,
        source_ids: list[str],
        doc_source,
        paths: list[str] | None,
        chunk_offsets=None,
        text_offsets=None,
        records: list[dict] | None = None,
        texts: dict[str, str] | None = None,
    ) -> None:
        self.index_dir = index_dir
        self.source_ids = source_ids
        self.doc_source = doc_source
        self._paths = paths
        self._chunk_offsets = chunk_offsets
        self._text_offsets = text_offsets
        self._records = records
        self._texts = texts
        self._maps: dict[str, mmap.mmap | bytes] = {}

    @classmethod
    def from_cache(cls, index_dir: Path, arrays: dict[str, Any]) -> DocTable:
        return cls(
            index_dir,
            json.loads(arrays["source_ids"].tobytes()),
            arrays["doc_source"],
            arrays.get("doc_paths"),
            arrays["chunk_offsets"],
            arrays["text_offsets"],
        )

    @classmethod
    def from_records(cls, index_dir: Path, records: list[dict[str, Any]], texts: dict[str, str] | None) -> DocTable:
        for record in records:
            checked_record(record)
        source_ids = sorted({r["source_id"] for r in records})
        position = {sid: i for i, sid in enumerate(source_ids)}
        doc_source = [position[r["source_id"]] for r in records]
        return cls(
            index_dir, source_ids, doc_source, [r["artifact_path"] for r in records], records=records, texts=texts
        )

    def __len__(self) -> int:
        return len(self.doc_source)

    @property
    def paths(self) -> list[str]:
        if self._paths is None or not isinstance(self._paths, list):
            raw = self._paths
            self._paths = raw.tobytes().decode("utf-8").split("\n") if raw is not None and len(raw) else []
        return self._paths

    def mask(self, source_ids: list[str] | None, prefixes: list[str] | None) -> list[bool] | None:
        """Whether each doc passes the filters (``None`` when there are none)."""
        if not source_ids and not prefixes:
            return None
        keep = [True] * len(self)
        if source_ids:
            wanted = {i for i, sid in enumerate(self.source_ids) if sid in source_ids}
            keep = [s in wanted for s in self.doc_source]
        if prefixes:
            starts = tuple(prefixes)
            keep = [k and p.startswith(starts) for k, p in zip(keep, self.paths, strict=True)]
        return keep

    def _line(self, name: str, offsets, i: int) -> dict[str, Any]:
        data = self._maps.get(name)
        if data is None:  # mapped once: a warm query reads its lines without opening files
            with open_regular(self.index_dir / name) as handle:
                try:
                    data = self._maps[name] = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
                except ValueError:  # an empty file: every line is missing
                    data = self._maps[name] = b""
        value = jsonio.loads(data[int(offsets[i]) : int(offsets[i + 1])], file=name)
        if not isinstance(value, dict):
            raise jsonio.JsonError("a line is not a JSON object", file=name)
        return value

    def record(self, i: int) -> dict[str, Any]:
        if self._records is not None:
            return self._records[i]
        return checked_record(self._line(CHUNKS_NAME, self._chunk_offsets, i))

    def text(self, i: int) -> str | None:
        """The indexed text of doc ``i`` (``None`` when the index carries no texts)."""
        if self._text_offsets is not None:
            text = self._line(TEXTS_NAME, self._text_offsets, i).get("text")
            return text if isinstance(text, str) else None
        if self._texts is not None:
            return self._texts.get(self.record(i)["chunk_id"])
        return None


def checked_record(record: Any) -> dict[str, Any]:
    """``record`` when it has what a citation needs (string ids and path, integer line range);
    ``AgentpackError`` otherwise, so a damaged provenance map fails its index, never the query."""
    loc = record.get("loc") if isinstance(record, dict) else None
    if not (
        isinstance(record, dict)
        and all(isinstance(record.get(k), str) for k in ("chunk_id", "source_id", "artifact_path"))
        and isinstance(loc, dict)
        and all(isinstance(loc.get(k), int) and not isinstance(loc.get(k), bool) for k in ("start_line", "end_line"))
    ):
        raise AgentpackError(
            "a provenance record lacks chunk_id, source_id, artifact_path or an integer loc", file=CHUNKS_NAME
        )
    return record


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Every object of a JSON Lines file (strict JSON per line); ``AgentpackError`` naming the line otherwise."""
    out = []
    with open_regular(path) as handle:
        for n, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                value = jsonio.loads(line, file=path.name)
            except jsonio.JsonError as exc:
                raise jsonio.JsonError(exc.message, file=path.name, line=n) from None
            if not isinstance(value, dict):
                raise jsonio.JsonError("not a JSON object", file=path.name, line=n)
            out.append(value)
    return out


def read_texts(index_dir: Path) -> dict[str, str] | None:
    path = index_dir / TEXTS_NAME
    if not path.is_file():
        return None
    return {r["chunk_id"]: r["text"] for r in read_jsonl(path) if isinstance(r.get("text"), str)}


class TextsFile:
    """``texts.jsonl`` searched by chunk id (its lines are in chunk-id order): a binary search over
    the memory-mapped file, so no offsets table has to be loaded. A line whose id does not match
    (a file in another order) gives ``None``, and the caller reads the source instead."""

    def __init__(self, data) -> None:
        self._data = data

    @classmethod
    def open(cls, index_dir: Path) -> TextsFile | None:
        try:
            with open_regular(index_dir / TEXTS_NAME) as handle:
                if not handle.seek(0, 2):
                    return None
                return cls(mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ))
        except OSError:
            return None

    def _line_at(self, pos: int) -> tuple[int, int]:
        """The (start, end) of the line holding byte ``pos``."""
        data = self._data
        start = data.rfind(b"\n", 0, pos) + 1
        end = data.find(b"\n", pos)
        return start, len(data) if end < 0 else end

    _PREFIX = b'{"chunk_id":"'
    _AFTER = b'","file_sha256":'

    def _id(self, start: int, end: int) -> str | None:
        """The chunk id of the line ``data[start:end]``, read from the bytes between its quotes (no copy
        of the line); an id with escapes is decoded as JSON, a line of another shape gives ``None``."""
        data = self._data
        if data[start : start + len(self._PREFIX)] != self._PREFIX:
            return None
        stop = data.find(self._AFTER, start, end)
        if stop < 0:
            return None
        raw = data[start + len(self._PREFIX) - 1 : stop + 1]
        try:
            value = jsonio.loads(raw) if b"\\" in raw else raw[1:-1].decode("utf-8")
        except ValueError:
            value = None
        if not isinstance(value, str):  # a path holding that very separator: parse the whole line
            try:
                value = jsonio.loads(data[start:end]).get("chunk_id")
            except (ValueError, AttributeError):
                return None
        return value if isinstance(value, str) else None

    def find(self, chunk_id: str) -> str | None:
        lo, hi = 0, len(self._data)
        while lo < hi:
            start, end = self._line_at((lo + hi) // 2)
            found = self._id(start, end)
            if found is None:
                return None
            if found == chunk_id:
                try:
                    record = jsonio.loads(self._data[start:end])
                except ValueError:
                    return None
                text = record.get("text")
                return text if isinstance(text, str) else None
            if found < chunk_id:
                lo = end + 1
            else:
                hi = start
        return None

    def close(self) -> None:
        self._data.close()
