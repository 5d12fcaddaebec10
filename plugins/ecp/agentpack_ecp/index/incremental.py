"""Incremental builds: patch the previous build of an index instead of re-tokenising and rewriting it.

Every build leaves a private sidecar, ``agentpack-state.npz``: each chunk's id, source, path, lines,
hashes and ``texts.jsonl`` offsets, plus what its format needs to be patched (keyword: the byte
offset of every term's entry in ``index_data.json``; sqlite: the rowid of every chunk; vector with a
JSONL payload: the vectors). Like the query cache it records fingerprints of the files it describes
and is ignored when they no longer match (then the index is built in full).

An incremental build of an index (same configuration and sources as the previous build) re-chunks
and re-tokenises only the files whose content hash changed (or that a refresh names), and keeps
every other chunk as it was:

* keyword-index-v2: the postings of the kept chunks (from the query cache) are merged with those of
  the new chunks; term entries whose postings did not change are copied byte for byte from the
  previous ``index_data.json``;
* sqlite-fts-index-v1: the previous database is copied into the staging directory and updated in
  place (rows of changed files deleted, new rows inserted);
* vector-index-v1: kept rows of the previous payload plus embeddings of the new chunks only.

The result has the same chunks, term frequencies and vectors as a full rebuild (tested), and
``chunks.jsonl``/``texts.jsonl``/``index_data.json`` are byte-identical to it.
"""

from __future__ import annotations

import json
from bisect import bisect_left
from dataclasses import dataclass
from itertools import compress
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from agentpack.io import jsonio

from ..pack.files import open_regular, read_regular
from .chunkstore import CACHE_NAME, CHUNKS_NAME, TEXTS_NAME, Chunk, as_arrays, load_cache, revision_bytes, save_cache
from .fts import DB_NAME, has_text_column
from .npz import BYTES, FLOATS, INTEGERS, Layout
from .termmatrix import TermMatrix
from .vector import read_payload

STATE_NAME = "agentpack-state.npz"
STATE_LAYOUT: Layout = {
    **{name: (BYTES, 1) for name in ("chunk_ids", "paths", "source_of", "chunk_sha", "file_sha", "fingerprints")},
    **{name: (INTEGERS, 1) for name in ("text_offsets", "term_starts", "rowids")},
    "lines": (INTEGERS, 2),
    "vectors": (FLOATS, 2),
}


def state_arrays(chunks: list[Chunk], text_offsets: list[int], **extra: Any) -> dict[str, Any]:
    import numpy as np

    def joined(values) -> Any:
        return np.frombuffer("\n".join(values).encode("utf-8"), dtype=np.uint8)

    arrays = {
        "chunk_ids": joined(c.chunk_id for c in chunks),
        "paths": joined(c.path for c in chunks),
        "source_of": joined(c.source_id for c in chunks),
        "chunk_sha": joined(c.chunk_sha256 for c in chunks),
        "file_sha": joined(c.file_sha256 for c in chunks),
        "lines": np.array([(c.start_line, c.end_line) for c in chunks], dtype=np.int64).reshape(-1, 2),
        "text_offsets": np.array(text_offsets, dtype=np.int64),
    }
    arrays.update({k: v for k, v in extra.items() if v is not None})
    return arrays


def save_state(out: Path, arrays: dict[str, Any], depends_on: list[str]) -> None:
    save_cache(out, arrays, depends_on, name=STATE_NAME)


def _split(raw) -> list[str]:
    return raw.tobytes().decode("utf-8").split("\n") if len(raw) else []


@dataclass
class Previous:
    """What an incremental build reuses of the previous build of one index."""

    dir: Path
    state: dict[str, Any]
    chunk_ids: list[str]
    source_of: list[str]
    paths: list[str]
    file_sha: list[str]
    chunk_sha: list[str]
    cache: dict[str, Any] | None = None
    sources: list[dict[str, Any]] | None = None

    @classmethod
    def load(cls, target: Path, fmt: str, config: dict[str, Any]) -> Previous | None:
        """The previous build at ``target`` when it was built by us with ``config`` and is intact."""
        try:
            info = jsonio.loads(read_regular(target / "build_info.json"))
        except (OSError, ValueError):
            return None
        if info.get("format") != fmt or info.get("config") != json.loads(json.dumps(config)):
            return None
        cached = load_cache(target, STATE_NAME, STATE_LAYOUT)
        if cached is None:
            return None
        state = as_arrays(cached)
        prev = cls(
            target,
            state,
            _split(state["chunk_ids"]),
            _split(state["source_of"]),
            _split(state["paths"]),
            _split(state["file_sha"]),
            _split(state["chunk_sha"]),
            sources=info.get("sources"),
        )
        if fmt == "keyword-index-v2":
            cache = load_cache(target, CACHE_NAME)
            if cache is None or "term_starts" not in state:
                return None
            prev.cache = as_arrays(cache)
        if fmt == "sqlite-fts-index-v1" and ("rowids" not in state or has_text_column(target / DB_NAME)):
            return None  # a database with the text column of older builds is rebuilt without it
        return prev

    def kept_chunks(self, removed) -> list[Chunk]:
        """The chunks of the previous build that stay (``removed`` False), texts not loaded."""
        import numpy as np

        lines = self.state["lines"].tolist()
        return [
            Chunk(
                self.chunk_ids[i],
                self.source_of[i],
                self.paths[i],
                lines[i][0],
                lines[i][1],
                None,
                self.chunk_sha[i],
                self.file_sha[i],
                old=i,
            )
            for i in np.flatnonzero(~removed).tolist()
        ]

    def provenance_lines(self, sources: list[dict[str, Any]]) -> list[bytes] | None:
        """The previous ``chunks.jsonl`` lines with each source's revision brought up to date, as a full
        build would write them; ``None`` when that cannot be done by substitution (another field of a
        source changed: then the lines are encoded again)."""
        old_by_id = {s.get("source_id"): s for s in self.sources or [] if isinstance(s, dict)}
        try:
            with open_regular(self.dir / CHUNKS_NAME) as handle:
                data = handle.read()
        except OSError:
            return None
        counts: dict[str, int] = {}
        for sid in self.source_of:
            counts[sid] = counts.get(sid, 0) + 1
        for source in sources:
            sid = source["source_id"]
            if sid not in counts:
                continue
            old = old_by_id.get(sid)
            if old is None or any(old.get(k) != source.get(k) for k in ("uri", "classification", "license")):
                return None
            before, after = revision_bytes(old), revision_bytes(source)
            if before == after:
                continue
            # every record of the source carries these bytes once (a 64-hex revision hash or commit
            # in them makes an accidental match elsewhere impossible in practice; the count checks it)
            if data.count(before) != counts[sid]:
                return None
            data = data.replace(before, after)
        lines = data.split(b"\n")
        if len(lines) != len(self.chunk_ids) + 1 or lines[-1]:
            return None
        return lines[:-1]

    def texts(self) -> tuple[Path, Any]:
        """The previous ``texts.jsonl`` and its line offsets."""
        return self.dir / TEXTS_NAME, self.state["text_offsets"]


def dirty_files(prev: Previous, snaps, forced: dict[str, Any] | None):
    """(removed: a bool per previous chunk, the snapshots restricted to the files to chunk again)."""
    import numpy as np

    before: dict[tuple[str, str], str] = {}
    for sid, path, sha in zip(prev.source_of, prev.paths, prev.file_sha, strict=False):
        before[(sid, path)] = sha
    dirty: set[tuple[str, str]] = set()
    parts = []
    for snap in snaps:
        names = set((forced or {}).get(snap.source_id) or ())
        texts = {}
        for path in snap.texts:
            if path in names or before.get((snap.source_id, path)) != snap.manifest[path]["sha256"]:
                dirty.add((snap.source_id, path))
                texts[path] = snap.texts[path]
        parts.append(SimpleNamespace(source_id=snap.source_id, texts=texts, manifest=snap.manifest))
    present = {(s.source_id, p) for s in snaps for p in s.texts}
    removed = np.fromiter(
        (
            (sid, path) in dirty or (sid, path) not in present
            for sid, path in zip(prev.source_of, prev.paths, strict=False)
        ),
        dtype=bool,
        count=len(prev.paths),
    )
    return removed, parts


def merged_order(kept: list[Chunk], added: list[Chunk], n_old: int):
    """Kept and added chunks in chunk-id order, the new position of every old chunk (-1: removed)
    and of every added one."""
    import numpy as np

    merged = sorted(kept + added, key=lambda c: c.chunk_id)
    remap = np.full(n_old, -1, dtype=np.int64)
    added_pos = np.zeros(len(added), dtype=np.int64)
    index_of_added = {id(c): j for j, c in enumerate(added)}
    for pos, c in enumerate(merged):
        if c.old >= 0:
            remap[c.old] = pos
        else:
            added_pos[index_of_added[id(c)]] = pos
    return merged, remap, added_pos


def merge_postings(prev: Previous, removed, remap, added, added_pos, ndocs: int):
    """The full ``TermMatrix`` of the new build from the previous postings and the added chunks' ones;
    plus, per new term, its id in the previous vocabulary (-1: new) and whether its postings changed.

    Whole-array work stays in numpy (about 1.5M postings for the standard library); what is per
    term or per added posting is small."""
    import numpy as np

    cache = prev.cache
    assert cache is not None, "Previous.load keeps a keyword index only with its query cache"
    old_terms = _split(cache["vocab"])
    indptr, post_doc, post_tf = cache["indptr"], cache["post_doc"], cache["post_tf"]
    old_term_of = np.repeat(np.arange(len(old_terms), dtype=np.int32), np.diff(indptr))
    gone = removed[post_doc]
    touched = np.zeros(len(old_terms), dtype=bool)
    touched[old_term_of[gone]] = True
    keep = ~gone
    old_term_of, kept_doc, kept_tf = old_term_of[keep], remap.astype(np.int32)[post_doc[keep]], post_tf[keep]
    alive = np.bincount(old_term_of, minlength=len(old_terms)) > 0
    alive_ids = np.flatnonzero(alive)
    old_alive = list(compress(old_terms, alive.tolist()))
    extra = sorted({t for t in added.terms if not _has(old_alive, t)})
    # new vocabulary = old live terms plus the extra ones, sorted; the insertion point of each extra term
    # among the old ones tells how far every old term moves
    vocab = sorted(old_alive + extra) if extra else old_alive
    insert_at = np.array([bisect_left(old_alive, t) for t in extra], dtype=np.int64)
    alive_new = np.arange(len(old_alive), dtype=np.int64) + np.searchsorted(
        insert_at, np.arange(len(old_alive)), side="right"
    )
    old_to_new = np.full(len(old_terms), -1, dtype=np.int64)
    old_to_new[alive_ids] = alive_new
    new_to_old = np.full(len(vocab), -1, dtype=np.int64)
    new_to_old[alive_new] = alive_ids
    add_to_new = np.array([bisect_left(vocab, t) for t in added.terms], dtype=np.int64)
    changed = np.zeros(len(vocab), dtype=bool)
    changed[add_to_new] = True
    changed[old_to_new[touched & alive]] = True
    add_term_of = np.repeat(np.arange(len(added.terms), dtype=np.int64), np.diff(added.indptr))
    kept_terms = old_to_new[old_term_of]
    new_terms, new_docs = add_to_new[add_term_of], added_pos[added.doc]
    order = np.argsort(new_terms * ndocs + new_docs, kind="stable")
    new_terms, new_docs = new_terms[order], new_docs[order]
    at = np.searchsorted(kept_terms * ndocs + kept_doc, new_terms * ndocs + new_docs)
    slots = at + np.arange(len(at))  # where the added postings go in the merged arrays
    old_slots = np.ones(len(kept_doc) + len(at), dtype=bool)
    old_slots[slots] = False
    docs = np.empty(len(old_slots), dtype=np.int32)
    docs[old_slots], docs[slots] = kept_doc, new_docs
    tfs = np.empty(len(old_slots), dtype=np.int32)
    tfs[old_slots], tfs[slots] = kept_tf, added.tf[order]
    counts = np.bincount(kept_terms, minlength=len(vocab)) + np.bincount(new_terms, minlength=len(vocab))
    new_indptr = np.zeros(len(vocab) + 1, dtype=np.int64)
    np.cumsum(counts, out=new_indptr[1:])
    if "doc_len" in cache:  # each kept doc keeps its length: no pass over every posting
        doc_len = np.zeros(ndocs, dtype=np.int64)
        kept_docs = np.flatnonzero(~removed)
        doc_len[remap[kept_docs]] = cache["doc_len"][kept_docs]
        doc_len[added_pos] = added.doc_len
    else:
        doc_len = np.bincount(docs, weights=tfs, minlength=ndocs).astype(np.int64)
    return TermMatrix(vocab, new_indptr, docs, tfs, doc_len), new_to_old, changed


def _has(terms: list[str], term: str) -> bool:
    """Whether the sorted ``terms`` hold ``term``."""
    i = bisect_left(terms, term)
    return i < len(terms) and terms[i] == term


def reusable_runs(new_to_old, changed) -> list[tuple[int, int]]:
    """Ranges of new term ids whose entries can be copied as one block of the previous file."""
    import numpy as np

    ok = (new_to_old >= 0) & ~changed
    cont = np.zeros(len(ok), dtype=bool)
    cont[1:] = ok[1:] & ok[:-1] & (new_to_old[1:] == new_to_old[:-1] + 1)
    starts = np.flatnonzero(ok & ~cont)
    ends = np.flatnonzero(ok & ~np.append(cont[1:], False)) + 1
    return list(zip(starts.tolist(), ends.tolist(), strict=False))


def previous_vectors(prev: Previous, vcfg: dict[str, Any], dims: int):
    """The previous build's vectors, rows in chunk order."""
    import numpy as np

    if "vectors" in prev.state:
        return prev.state["vectors"]
    return np.asarray(read_payload(prev.dir, vcfg, dims, prev.chunk_ids), dtype=np.float32)
