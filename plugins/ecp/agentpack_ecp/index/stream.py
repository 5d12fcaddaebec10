"""A full build in bounded memory: chunks made file by file, consumed in batches, every index written as it goes.

``build_group`` makes one pass over the files of some sources for every index that shares their chunking:
files are chunked in chunk-id order and cut into batches of about ``batch_chars()`` characters of text; each
batch is tokenised once (``TermMatrix.from_texts``) and handed to each index's writer:

* every index: its ``chunks.jsonl`` and ``texts.jsonl`` lines (encoded once per batch for all of them), and
  the per-chunk columns of its caches, appended to files of the spill folder (``spill.Column``);
* keyword-index-v2: the ``documents`` of ``index_data.json`` appended, and the batch's postings spilled as
  one sorted run (doc ids, term frequencies, and the postings already serialised as JSON); at the end a
  k-way merge of the runs writes the ``terms`` of ``index_data.json`` term by term;
* sqlite-fts-index-v1: the batch's rows inserted, all batches in one transaction, and its postings spilled
  as a run of numpy pages (``spill.write_pages``); at the end their merge (``spill.merge_pages``: numpy
  per block of terms, no Python per term) writes the top-k side tables (``ftstopk``);
* vector-index-v1: the batch's vectors appended to the payload.

What stays in memory is one batch (its texts, term matrix and serialised lines), a read buffer per merged
run (at most ``spill.FAN_IN`` open at once) and a small record per file (the file manifest); never a
whole-corpus array. The artifacts are byte for byte those of a build from one batch (tested). The spill
folder lives inside the build's staging folder and is removed when the group is written (a killed build's
staging folder, spill files included, is removed by the next build).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from operator import add
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError
from agentpack.io.hashing import sha256_file, sha256_text

from .. import __version__
from ..pack.crashpoints import crashpoint
from ..sources.snapshot import SourceSnapshot
from . import fts, keyword, vector
from .chunking import chunk_id, line_windows, split_lines
from .chunkstore import CHUNKS_NAME, COMPACT, TEXTS_NAME, Chunk, provenance_line, save_cache, text_line, write_json
from .embed import get_embedder
from .incremental import save_state
from .spill import BLOCK, Column, Joined, joined, merge_pages, merge_runs, write_pages, write_run
from .termmatrix import TermMatrix

BATCH_ENV = "AGENTPACK_ECP_BUILD_BATCH_CHARS"
DEFAULT_BATCH_CHARS = 4_000_000
"""Characters of chunk text per batch: the unit of a build's working memory."""


_PLAIN_TERM = re.compile(rb"[a-z0-9_]+")


def _quoted(term: bytes) -> bytes:
    """A term as a JSON string (the canonical tokenizer's terms need no escape)."""
    return b'"' + term + b'"' if _PLAIN_TERM.fullmatch(term) else json.dumps(term.decode("utf-8")).encode()


def batch_chars() -> int:
    """The batch size: ``AGENTPACK_ECP_BUILD_BATCH_CHARS`` when set (tests force the spill path with a small one)."""
    raw = os.environ.get(BATCH_ENV)
    if not raw:
        return DEFAULT_BATCH_CHARS
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise AgentpackError(f"{BATCH_ENV} must be a positive number of characters (got {raw!r})")
    return value


def file_chunks(source_id: str, path: str, text: str, file_sha: str, chunking: dict[str, Any]) -> list[Chunk]:
    """The line-window chunks of one file, in line order."""
    return [
        Chunk(
            chunk_id(source_id, path, w.start_line, w.end_line),
            source_id,
            path,
            w.start_line,
            w.end_line,
            w.text,
            sha256_text(w.text),
            file_sha,
        )
        for w in line_windows(split_lines(text), chunking["max_chars"], chunking["overlap_chars"])
    ]


def chunk_batches(snaps: list[SourceSnapshot], chunking: dict[str, Any], limit: int, bar=None) -> Iterator[list]:
    """Chunks of every text of ``snaps`` in chunk-id order, in batches of at least ``limit`` characters.

    Files are taken in the order of their chunk-id prefix (``<source>::<path>#L``); the chunks of files whose
    ids can interleave (a prefix that starts with another, as ``a#L`` and ``a#L1#L``) are sorted together, and
    a batch never ends among them.
    """
    files = sorted((f"{s.source_id}::{path}#L", i, path) for i, s in enumerate(snaps) for path in s.texts)
    batch: list[Chunk] = []
    size = 0
    unit: list[Chunk] = []
    prefix = None
    for key, i, path in files:
        if prefix is None or not key.startswith(prefix):
            unit.sort(key=lambda c: c.chunk_id)
            batch += unit
            if size >= limit:
                yield batch
                batch, size = [], 0
            prefix, unit = key, []
        snap = snaps[i]
        made = file_chunks(snap.source_id, path, snap.texts[path], snap.manifest[path]["sha256"], chunking)
        size += sum(len(c.text or "") for c in made)
        unit += made
        if bar is not None:
            bar.advance()
    unit.sort(key=lambda c: c.chunk_id)
    batch += unit
    if batch:
        yield batch


class Common:
    """What every index of a group holds the same: ``chunks.jsonl``, ``texts.jsonl`` and the per-chunk columns."""

    def __init__(self, spill: Path, sources: list[dict[str, Any]], outs: list[Path]) -> None:
        self.sources = {s["source_id"]: s for s in sources}
        self.position = {s["source_id"]: i for i, s in enumerate(sources)}
        self.files = [(open(out / CHUNKS_NAME, "wb"), open(out / TEXTS_NAME, "wb")) for out in outs]  # noqa: SIM115
        self.count = 0
        self.ends = [0, 0]
        self.cols: dict[str, Any] = {
            "chunk_offsets": Column(spill / "chunk_offsets", "<i8"),
            "text_offsets": Column(spill / "text_offsets", "<i8"),
            "doc_source": Column(spill / "doc_source", "<i4"),
            "lines": Column(spill / "lines", "<i8", width=2),
            **{name: Joined(spill / name) for name in ("chunk_ids", "paths", "source_of", "chunk_sha", "file_sha")},
        }
        self.cols["chunk_offsets"].extend([0])
        self.cols["text_offsets"].extend([0])

    def add(self, chunks: list[Chunk], matrix: TermMatrix) -> None:
        cols = self.cols
        for which, lines in enumerate(
            ([provenance_line(c, self.sources[c.source_id]) for c in chunks], [text_line(c) for c in chunks])
        ):
            data = b"".join(lines)
            for files in self.files:  # each index its own copy: an index's files are never shared
                files[which].write(data)
            name = ("chunk_offsets", "text_offsets")[which]
            end = self.ends[which]
            offsets = []
            for line in lines:
                end += len(line)
                offsets.append(end)
            self.ends[which] = end
            cols[name].extend(offsets)
        cols["doc_source"].extend([self.position[c.source_id] for c in chunks])
        cols["lines"].extend([(c.start_line, c.end_line) for c in chunks])
        cols["chunk_ids"].add([c.chunk_id for c in chunks])
        cols["paths"].add([c.path for c in chunks])
        cols["source_of"].add([c.source_id for c in chunks])
        cols["chunk_sha"].add([c.chunk_sha256 for c in chunks])
        cols["file_sha"].add([c.file_sha256 for c in chunks])
        self.count += len(chunks)

    def close(self) -> None:
        for files in self.files:
            for handle in files:
                handle.close()
        for column in self.cols.values():
            column.close()

    def cache_arrays(self) -> dict[str, Any]:
        """The doc-table members of the query cache (``chunkstore.doc_arrays``'s, from the columns)."""
        import numpy as np

        cols = self.cols
        return {
            "doc_source": cols["doc_source"],
            "doc_paths": cols["paths"],
            "chunk_offsets": cols["chunk_offsets"],
            "text_offsets": cols["text_offsets"],
            "source_ids": np.frombuffer(json.dumps(list(self.position)).encode("utf-8"), dtype=np.uint8),
        }

    def state_arrays(self) -> dict[str, Any]:
        """The members of ``incremental.state_arrays`` every format has."""
        names = ("chunk_ids", "paths", "source_of", "chunk_sha", "file_sha", "lines", "text_offsets")
        return {name: self.cols[name] for name in names}


class KeywordWriter:
    """keyword-index-v2: ``documents`` as batches come, postings spilled as runs, ``terms`` merged at the end."""

    def __init__(self, out: Path, head: dict[str, Any], spill: Path) -> None:
        self.spill = spill
        self.data = open(out / "index_data.json", "wb")  # noqa: SIM115 (closed by finish())
        self.data.write((json.dumps(head, ensure_ascii=False)[:-1] + ',"documents":{').encode("utf-8"))
        self.runs: list[Path] = []
        self.doc_len = Column(spill / "doc_len", "<i8")
        self.docs = 0

    def add(self, chunks: list[Chunk], matrix: TermMatrix) -> None:

        if not chunks:
            return
        members = keyword.documents(chunks, matrix.doc_len.tolist())
        self.data.write((("," if self.docs else "") + members).encode("utf-8"))
        self.doc_len.extend(matrix.doc_len)
        plain = keyword.PLAIN
        prefix = ["[" + plain(c.chunk_id) + "," for c in chunks]
        doc_list, tf_list = matrix.doc.tolist(), matrix.tf.tolist()

        def body(lo: int, hi: int) -> bytes:
            members = "],".join(map(add, map(prefix.__getitem__, doc_list[lo:hi]), map(str, tf_list[lo:hi])))
            return (members + "]").encode("utf-8")

        self.runs.append(spill_postings(self.spill / f"postings-{len(self.runs)}.run", matrix, self.docs, body))
        self.docs += len(chunks)

    def finish(self) -> tuple[dict[str, Any], dict[str, Any], int]:
        """Write the ``terms``; return the cache members, the state members and the number of terms."""
        from itertools import accumulate

        handle = self.data
        handle.write(b'},"terms":{')
        vocab, indptr = Joined(self.spill / "vocab"), Column(self.spill / "indptr", "<i8")
        post_doc, post_tf = Column(self.spill / "post_doc", "<i4"), Column(self.spill / "post_tf", "<i4")
        starts = Column(self.spill / "term_starts", "<i8")
        indptr.extend([0])
        terms: list[bytes] = []
        doc_parts: list[bytes] = []
        tf_parts: list[bytes] = []
        entries: list[bytes] = []
        state = {"pos": handle.tell() - 1, "total": 0, "terms": 0}
        """``pos``: where the next entry's separating comma goes (the first entry has none: its start is
        ``pos + 1`` all the same); ``total``: postings so far."""

        def flush() -> None:
            if not entries:
                return
            sizes = [len(e) + 1 for e in entries]
            starts.extend(list(accumulate(sizes[:-1], initial=state["pos"] + 1)))
            state["pos"] += sum(sizes)
            dfs = [len(d) >> 2 for d in doc_parts]
            indptr.extend(list(accumulate(dfs, initial=state["total"]))[1:])
            state["total"] += sum(dfs)
            vocab.add_bytes(terms)
            post_doc.extend_bytes(b"".join(doc_parts))
            post_tf.extend_bytes(b"".join(tf_parts))
            handle.write((b"," if state["terms"] else b"") + b",".join(entries))
            state["terms"] += len(entries)
            for done in (terms, doc_parts, tf_parts, entries):
                done.clear()

        quoted = _quoted
        buffered = 0
        for term, parts in merge_runs(self.runs, self.spill):
            _, docs, tfs, body = parts[0] if len(parts) == 1 else joined(term, parts)
            doc_parts.append(docs)
            tf_parts.append(tfs)
            terms.append(term)
            entry = b'%s:{"df":%d,"postings":[%s]}' % (quoted(term), len(docs) >> 2, body)
            entries.append(entry)
            buffered += len(entry)
            if buffered >= BLOCK:
                flush()
                buffered = 0
        flush()
        starts.extend([state["pos"] + (1 if state["terms"] else 2)])  # keyword.write's end offset, with no term too
        handle.write(b"}}\n")
        handle.close()
        cache = {"vocab": vocab, "indptr": indptr, "post_doc": post_doc, "post_tf": post_tf, "doc_len": self.doc_len}
        return cache, {"term_starts": starts}, state["terms"]

    def close(self) -> None:
        """Close the open files (a failed build)."""
        self.data.close()
        self.doc_len.close()


def spill_postings(path: Path, matrix: TermMatrix, base: int, body) -> Path:
    """A run of the postings of ``matrix`` (doc ids offset by ``base``); ``body(lo, hi)``: the serialised
    postings ``lo:hi``."""
    import numpy as np

    bounds = matrix.indptr.tolist()
    docs = (np.asarray(matrix.doc, dtype="<i4") + np.int32(base)).tobytes()
    tfs = np.asarray(matrix.tf, dtype="<i4").tobytes()
    records = (
        (term.encode("utf-8"), docs[4 * lo : 4 * hi], tfs[4 * lo : 4 * hi], body(lo, hi))
        for term, lo, hi in zip(matrix.terms, bounds, bounds[1:], strict=False)
    )
    return write_run(path, records)


class FtsWriter:
    """sqlite-fts-index-v1: each batch's rows inserted; its postings spilled for the top-k bounds
    (``ftstopk``), which are written from their merge once the table is complete."""

    def __init__(self, out: Path, spill: Path) -> None:
        self.db_path = out / fts.DB_NAME
        self.db = fts.Writer(out)
        self.spill = spill
        self.runs: list[Path] = []
        self.lens = Column(spill / "lens", "<i8")
        self.lens.extend([0])
        self.docs = 0

    def add(self, chunks: list[Chunk], matrix: TermMatrix) -> None:
        self.db.add(chunks, matrix)
        if not chunks:
            return
        block = (matrix.terms, matrix.indptr, matrix.doc, matrix.tf)
        self.runs.append(write_pages(self.spill / f"postings-{len(self.runs)}.run", [block], self.docs))
        self.lens.extend(matrix.doc_len)
        self.docs += len(chunks)

    def finish(self) -> None:
        import numpy as np

        self.db.close()
        self.lens.close()
        lens = np.fromfile(self.lens.path, dtype="<i8")  # 8 bytes a chunk: what the side tables record
        fts.add_bounds(self.db_path, merge_pages(self.runs, self.spill), lens)

    def close(self) -> None:
        self.db.con.close()
        self.lens.close()


class VectorWriter:
    """vector-index-v1: each batch embedded and appended to the payload; ``documents`` streamed out."""

    def __init__(self, out: Path, config: dict[str, Any], head: dict[str, Any], spill: Path, tag: str) -> None:
        self.embedder = get_embedder(config["embedding"])
        dims = int(config["embedding"]["dimensions"])
        self.payload = vector.PayloadWriter(out, config["vector"], dims)
        self.data = open(out / "index_data.json", "wb")  # noqa: SIM115 (closed by finish())
        self.data.write((COMPACT(head)[:-1] + ',"documents":{').encode("utf-8"))
        keep = config["vector"]["vectors_path"].endswith(".jsonl")
        self.vectors = Column(spill / f"vectors-{tag}", "<f4", width=dims) if keep else None
        self.docs = 0

    def add(self, chunks: list[Chunk], matrix: TermMatrix) -> None:
        if hasattr(self.embedder, "embed_matrix"):
            vectors = self.embedder.embed_matrix(matrix)
        else:
            vectors = self.embedder.embed_texts([c.text for c in chunks])
        self.payload.add([c.chunk_id for c in chunks], vectors)
        if self.vectors is not None and len(chunks):
            self.vectors.extend(vectors)
        documents = {c.chunk_id: c.document() for c in chunks}
        if documents:
            self.data.write((("," if self.docs else "") + COMPACT(documents)[1:-1]).encode("utf-8"))
        self.docs += len(chunks)

    def finish(self) -> dict[str, Any]:
        self.payload.close()
        self.data.write(b"}}\n")
        self.data.close()
        return {"vectors": self.vectors} if self.vectors is not None else {}

    def close(self) -> None:
        self.payload.handle.close()
        self.data.close()
        if self.vectors is not None:
            self.vectors.close()


def build_group(
    targets: list[dict[str, Any]],
    snaps: list[SourceSnapshot],
    chunking: dict[str, Any],
    stage: Path,
    built_at: str,
    bar=None,
) -> list[dict[str, Any]]:
    """Write every index of ``targets`` (dicts of ``out``, ``entry``, ``config``, ``created_at``; all over
    ``snaps`` with ``chunking``) in one pass; return the stats of each."""
    limit = batch_chars()
    spill = Path(tempfile.mkdtemp(prefix=".spill-", dir=stage))
    writers: list[Any] = []
    try:
        sources = [s.meta() for s in snaps]
        common = Common(spill, sources, [t["out"] for t in targets])
        writers.append(common)
        for n, target in enumerate(targets):
            entry, config = target["entry"], target["config"]
            head = _head(entry, config, sources, target["created_at"], built_at)
            if entry.format == "keyword-index-v2":
                (spill / f"kw-{n}").mkdir()
                writers.append(KeywordWriter(target["out"], head, spill / f"kw-{n}"))
            elif entry.format == "sqlite-fts-index-v1":
                (spill / f"fts-{n}").mkdir()
                writers.append(FtsWriter(target["out"], spill / f"fts-{n}"))
            else:
                writers.append(VectorWriter(target["out"], config, head, spill, str(n)))
            target["head"] = head
        for batch in chunk_batches(snaps, chunking, limit, bar):
            kept, matrix = TermMatrix.from_texts((c.text or "", c.path) for c in batch)
            chunks = [batch[i] for i in kept]
            del batch
            for writer in writers:
                writer.add(chunks, matrix)
            del chunks, matrix  # not held while the next batch is read and chunked
            crashpoint("build.batch")
        common.close()
        return [_finish(target, writer, common, snaps) for target, writer in zip(targets, writers[1:], strict=True)]
    except BaseException:
        for writer in writers:
            writer.close()
        raise
    finally:
        shutil.rmtree(spill, ignore_errors=True)


def _head(
    entry, config: dict[str, Any], sources: list[dict[str, Any]], created_at: str, built_at: str
) -> dict[str, Any]:
    return {
        "format": entry.format,
        "index_id": entry.id,
        "created_at": created_at,
        "built_at": built_at,
        "sources": sources,
        "config": config,
    }


def _finish(target: dict[str, Any], writer, common: Common, snaps: list[SourceSnapshot]) -> dict[str, Any]:
    import numpy as np

    out, entry, head = target["out"], target["entry"], target["head"]
    cache: dict[str, Any] = {}
    state: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    if isinstance(writer, KeywordWriter):
        cache, state, extra["terms"] = writer.finish()
    elif isinstance(writer, FtsWriter):
        writer.finish()
        state["rowids"] = np.arange(1, common.count + 1, dtype=np.int64)
        head["sqlite"] = {"path": fts.DB_NAME, "table": fts.TABLE, "fts5": True}
        head["stats"] = {"chunks": common.count, "files": sum(len(s.texts) for s in snaps)}
        write_json(out / "index_data.json", head)
    else:
        state = writer.finish()
        cache["chunk_ids"] = common.cols["chunk_ids"]
    cache.update(common.cache_arrays())
    return seal(
        out, entry, target["config"], snaps, head, cache, {**common.state_arrays(), **state}, common.count, extra
    )


def seal(
    out: Path,
    entry,
    config: dict[str, Any],
    snaps: list[SourceSnapshot],
    head: dict[str, Any],
    cache: dict[str, Any],
    state: dict[str, Any],
    chunks: int,
    extra_stats: dict[str, Any],
) -> dict[str, Any]:
    """The files an index folder ends with, once its data files are written: the descriptor, the file
    manifest, the query cache and build state (``cache``/``state`` members: arrays or spill columns) and
    ``build_info.json``; returns the build's stats."""
    import numpy as np

    fmt = entry.format
    extra_prov = {}
    if fmt == "sqlite-fts-index-v1":
        extra_prov["sqlite_path"] = fts.DB_NAME
    elif fmt == "vector-index-v1":
        extra_prov["vectors_path"] = config["vector"]["vectors_path"]
    descriptor = {
        "index_id": entry.id,
        "type": entry.type,
        "created_at": head["created_at"],
        "built_at": head["built_at"],
        "chunking": config["chunking"],
        "retrieval_defaults": {"top_k": 8, "filters_supported": ["source_id", "path_prefix"]},
        "provenance": {
            "index_data_path": "index_data.json",
            "chunks_path": CHUNKS_NAME,
            "build_info_path": "build_info.json",
            "file_manifest_path": "file_manifest.json",
            **extra_prov,
        },
    }
    if "embedding" in config:
        descriptor["embedding"] = config["embedding"]
    write_json(out / "index.json", descriptor)
    write_json(
        out / "file_manifest.json",
        {
            "format": "ecp-file-manifest-v2",
            "built_at": head["built_at"],
            "sources": {s.source_id: s.manifest for s in snaps},
        },
        compact=True,
    )
    cache["head"] = np.frombuffer(json.dumps(head).encode("utf-8"), dtype=np.uint8)
    depends = ["index_data.json", CHUNKS_NAME, TEXTS_NAME] + (
        [config["vector"]["vectors_path"]] if fmt == "vector-index-v1" else []
    )
    save_cache(out, cache, depends)
    save_state(out, state, depends + (["fts.sqlite"] if fmt == "sqlite-fts-index-v1" else []))
    artifacts = {name: sha256_file(out / name) for name in sorted(os.listdir(out)) if (out / name).is_file()}
    stats: dict[str, Any] = {
        "chunks": chunks,
        "files": sum(len(s.texts) for s in snaps),
        "skipped_files": sum(1 for s in snaps for r in s.manifest.values() if r["skipped"]),
        **extra_stats,
    }
    write_json(
        out / "build_info.json",
        {
            "index_id": entry.id,
            "type": entry.type,
            "format": fmt,
            "created_at": head["created_at"],
            "built_at": head["built_at"],
            "tool": {"name": "agentpack-ecp", "version": __version__},
            "sources": head["sources"],
            "config": config,
            "stats": stats,
            "artifacts": artifacts,
        },
    )
    return stats
