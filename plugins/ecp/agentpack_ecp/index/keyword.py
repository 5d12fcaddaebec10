"""``keyword-index-v2`` (spec 6.1.1): writing ``index_data.json`` and BM25 search over it.

Postings are ``[chunk_id, tf]`` with true term frequencies; BM25 parameters are
recorded in ``config.bm25``. ``index_data.json`` is streamed out term by term
(no giant intermediate object); the cache holds the same postings as arrays.
A query needs no numpy: it scores the postings of the question's terms alone,
in Python, over the cache's memoryviews (a few thousand postings per term).
"""

from __future__ import annotations

import heapq
import json
import math
from bisect import bisect_left
from collections.abc import Sequence
from contextlib import ExitStack
from operator import add
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError

from ..pack.files import load_json_payload
from .chunkstore import CHUNKS_NAME, Chunk, DocTable, load_cache, read_jsonl, read_texts
from .fileops import copy_range

FORMAT = "keyword-index-v2"
BM25 = {"k1": 1.2, "b": 0.75}


PLAIN = json.JSONEncoder(ensure_ascii=False).encode


def documents(chunks: list[Chunk], lengths: list[int]) -> str:
    """The members of the ``documents`` object: what ``COMPACT`` writes for them, one template per chunk
    (three times faster than encoding a dict of dicts; strings still go through the JSON encoder)."""
    plain = PLAIN
    return ",".join(
        [
            f'{plain(c.chunk_id)}:{{"source_id":{plain(c.source_id)},"path":{plain(c.path)},'
            f'"start_line":{c.start_line},"end_line":{c.end_line},"file_sha256":{plain(c.file_sha256)},'
            f'"chunk_sha256":{plain(c.chunk_sha256)},"length":{n}}}'
            for c, n in zip(chunks, lengths, strict=True)
        ]
    )


def write(out: Path, head: dict[str, Any], chunks: list[Chunk], matrix, previous=None) -> dict[str, Any]:
    """Stream ``index_data.json`` out; return the cache arrays of the postings (and term byte offsets).

    ``previous`` (``(old file path, old term starts, old id of each term, reusable runs)``, see
    ``incremental.py``): the entries of terms whose postings did not change are copied byte for byte
    from the previous file (runs of consecutive terms at once, ``copy_file_range``) instead of being
    serialised again; the file is identical to a full write.
    """
    import numpy as np

    dumps = json.dumps
    prefix = ["[" + PLAIN(c.chunk_id) + "," for c in chunks]
    # a full write converts every posting at once; a patch only those of the terms it serialises
    doc_list, tf_list = (matrix.doc.tolist(), matrix.tf.tolist()) if previous is None else (matrix.doc, matrix.tf)
    bounds = matrix.indptr.tolist()
    nterms = len(matrix.terms)
    starts = np.zeros(nterms + 1, dtype=np.int64)

    def entry(t: int) -> bytes:
        lo, hi = bounds[t], bounds[t + 1]
        docs, tfs = doc_list[lo:hi], tf_list[lo:hi]
        if previous is not None:
            docs, tfs = docs.tolist(), tfs.tolist()
        body = "],".join(map(add, map(prefix.__getitem__, docs), map(str, tfs)))
        return f'{dumps(matrix.terms[t])}:{{"df":{hi - lo},"postings":[{body}]]}}'.encode()

    with ExitStack() as stack:
        handle = stack.enter_context(open(out / "index_data.json", "wb"))
        old_file = stack.enter_context(open(previous[0], "rb")) if previous is not None else None
        handle.write(
            (
                dumps(head, ensure_ascii=False)[:-1]
                + ',"documents":{'
                + documents(chunks, matrix.doc_len.tolist())
                + '},"terms":{'
            ).encode("utf-8")
        )
        pos = handle.tell()
        runs = [] if previous is None else previous[3]
        t = 0
        for run_lo, run_hi in [*runs, (nterms, nterms)]:
            while t < run_lo:  # serialise the terms up to the next reusable run
                data = (b"," if t else b"") + entry(t)
                handle.write(data)
                starts[t] = pos + (1 if t else 0)
                pos += len(data)
                t += 1
            if run_lo == run_hi:
                continue
            old_starts, old_ids = previous[1:3]
            o_lo, o_hi = int(old_ids[run_lo]), int(old_ids[run_hi - 1]) + 1
            a, b = int(old_starts[o_lo]), int(old_starts[o_hi]) - 1
            if t:
                handle.write(b",")
                pos += 1
            copy_range(old_file, handle, a, b)
            starts[run_lo:run_hi] = old_starts[o_lo:o_hi] - a + pos
            pos += b - a
            t = run_hi
        starts[nterms] = pos + 1
        handle.write(b"}}\n")
    return {
        "vocab": np.frombuffer("\n".join(matrix.terms).encode("utf-8"), dtype=np.uint8),
        "indptr": matrix.indptr,
        "post_doc": matrix.doc,
        "post_tf": matrix.tf,
        "doc_len": np.asarray(matrix.doc_len, dtype=np.int64),
        "term_starts": starts,
    }


class SortedVocab:
    """Term ids of a sorted vocabulary by binary search (no dict of every term to build at load)."""

    def __init__(self, terms: list[str]) -> None:
        self.terms = terms

    def get(self, term: str) -> int | None:
        i = bisect_left(self.terms, term)
        return i if i < len(self.terms) and self.terms[i] == term else None


def _bm25_param(bm25: dict[str, Any], name: str) -> float:
    value = bm25.get(name, BM25[name])
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < 1e6:
        raise AgentpackError(f"index_data.json: config.bm25.{name} must be a number from 0 to 1e6, not {value!r}")
    return float(value)


class KeywordIndex:
    """A loaded keyword-index-v2: vocabulary, postings (CSR by term), each doc's length, its doc table.

    The arrays are any sequences of numbers: memoryviews of the cache, or lists parsed from
    ``index_data.json``.
    """

    kind = "keyword"

    def __init__(
        self,
        index_dir: Path,
        data_head: dict[str, Any],
        vocab: dict[str, int] | SortedVocab,
        indptr: Sequence[int],
        post_doc: Sequence[int],
        post_tf: Sequence[int],
        docs: DocTable,
        doc_len: Sequence[int] | None = None,
    ) -> None:
        self.index_dir = index_dir
        self.head = data_head
        self.vocab = vocab
        self.indptr = indptr
        self.post_doc = post_doc
        self.post_tf = post_tf
        self.docs = docs
        bm25 = (data_head.get("config") or {}).get("bm25") or {}
        self.k1, self.b = (_bm25_param(bm25, name) for name in ("k1", "b"))
        self._doc_len = doc_len
        self._norms: list[float] | None = None

    def norms(self) -> list[float]:
        """BM25's length normalisation of each doc, ``k1 * (1 - b + b * dl / avgdl)`` (computed once)."""
        if self._norms is None:
            lengths = self._doc_len
            if lengths is None:  # a cache from before doc_len was kept: sum the postings once
                summed = [0] * len(self.docs)
                for doc, tf in zip(self.post_doc, self.post_tf, strict=True):
                    summed[doc] += tf
                lengths = summed
            avgdl = (sum(lengths) / len(lengths) if len(lengths) else 0.0) or 1.0
            k1, b = self.k1, self.b
            self._norms = [k1 * (1.0 - b + b * n / avgdl) for n in lengths]
        return self._norms

    @classmethod
    def load(cls, index_dir: Path, data_path: Path) -> KeywordIndex:
        cache = load_cache(index_dir)
        if cache is not None and "vocab" in cache:
            head = json.loads(cache["head"].tobytes())
            terms = cache["vocab"].tobytes().decode("utf-8").split("\n") if len(cache["vocab"]) else []
            return cls(
                index_dir,
                head,
                SortedVocab(terms),
                cache["indptr"],
                cache["post_doc"],
                cache["post_tf"],
                DocTable.from_cache(index_dir, cache),
                cache.get("doc_len"),
            )
        data = load_json_payload(data_path, data_path.name)
        documents = data.get("documents") or {}
        order = {cid: i for i, cid in enumerate(documents)}
        terms = sorted(data.get("terms") or {})
        indptr = [0]
        docs_flat: list[int] = []
        tfs: list[int] = []
        lengths = [0] * len(order)
        for term in terms:
            for cid, tf in data["terms"][term].get("postings") or []:
                if cid in order:
                    if isinstance(tf, bool) or not isinstance(tf, int) or tf < 1:
                        raise AgentpackError(f"index_data.json: term '{term}' has a posting whose tf is not a count")
                    docs_flat.append(order[cid])
                    tfs.append(tf)
                    lengths[order[cid]] += tf
            indptr.append(len(docs_flat))
        head = {k: v for k, v in data.items() if k not in ("documents", "terms", "doc_terms", "file_chunks")}
        records = _records_for(index_dir, documents, head)
        table = DocTable.from_records(index_dir, records, read_texts(index_dir))
        return cls(index_dir, head, {t: i for i, t in enumerate(terms)}, indptr, docs_flat, tfs, table, lengths)

    def search(self, terms: list[str], k: int, mask: Sequence[bool] | None) -> list[tuple[int, float]]:
        """The ``k`` best docs by BM25 for ``terms`` (each occurrence counts), best first, ties by doc order."""
        n = len(self.docs)
        if not n:
            return []
        norms = self.norms()
        scores: dict[int, float] = {}
        get = scores.get
        for term in terms:
            t = self.vocab.get(term)
            if t is None:
                continue
            lo, hi = self.indptr[t], self.indptr[t + 1]
            if lo == hi:
                continue
            df = hi - lo
            weight = math.log(1.0 + (n - df + 0.5) / (df + 0.5)) * (self.k1 + 1.0)
            for doc, tf in zip(self.post_doc[lo:hi], self.post_tf[lo:hi], strict=True):
                scores[doc] = get(doc, 0.0) + weight * tf / (tf + norms[doc])
        if mask is not None:
            scores = {doc: score for doc, score in scores.items() if mask[doc]}
        return best(scores, k)


def best(scores: dict[int, float], k: int) -> list[tuple[int, float]]:
    """The ``k`` best positive scores, best first, ties broken by doc order (chunk id order)."""
    top = heapq.nlargest(k, scores.values())
    if not top or top[-1] <= 0:
        top = [score for score in top if score > 0]
        if not top:
            return []
    cut = top[-1]  # every doc scoring at least the k-th best score, then ordered with ties by doc
    ranked = sorted((-score, doc) for doc, score in scores.items() if score >= cut)[:k]
    return [(doc, -negated) for negated, doc in ranked]


def _records_for(index_dir: Path, documents: dict[str, Any], head: dict[str, Any]) -> list[dict[str, Any]]:
    """Provenance records in ``documents`` order: from chunks.jsonl, else derived from the payload."""
    path = index_dir / CHUNKS_NAME
    by_id = {}
    if path.is_file():
        by_id = {r.get("chunk_id"): r for r in read_jsonl(path)}
    sources = {s.get("source_id"): s for s in head.get("sources") or [] if isinstance(s, dict)}
    records = []
    for cid, meta in documents.items():
        record = by_id.get(cid)
        if record is None:
            src = sources.get(meta.get("source_id")) or {}
            record = {
                "chunk_id": cid,
                "source_id": meta.get("source_id"),
                "uri": src.get("uri", ""),
                "artifact_path": meta.get("path"),
                "revision": src.get("revision") or {},
                "loc": {"start_line": meta.get("start_line", 1), "end_line": meta.get("end_line", 1)},
                "chunk_hash": meta.get("chunk_sha256") or "",
            }
        records.append(record)
    return records
