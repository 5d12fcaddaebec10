"""Answering questions from a pack's indexes with the response contract of spec 6.3.

Public, stable API:

* ``query_pack(pack_root, request, *, clock=SYSTEM_CLOCK, synthesize=None) -> dict``:
  ``request`` holds ``question`` and optionally ``top_k``, ``mode``, ``filters``
  (``source_id``, ``path_prefix``: a string or a list), ``query_vector``,
  ``query_embedding``, ``index_ids``. The result has ``answer``, ``as_of``,
  ``citations``, ``chunks``, ``synthesis`` (spec 6.3) and ``retrieval`` (which
  index answered, which was skipped or failed, and why). ``synthesize(question,
  chunks, as_of) -> (answer, synthesis)`` replaces the local extractive answer.
* ``forget(pack_root)``: drop the cached indexes of a pack (after a rebuild).

Retrieval modes: ``keyword`` (keyword-index-v2), ``fts`` (sqlite-fts-index-v1),
``vector``, or ``hybrid``/none (every index, fused by reciprocal rank). ECP case
modes (``ephemeral``, ``persistent``, ``summarized``) are echoed; ``summarized``
also ranks the pack's summaries. Indexes are loaded once per process and kept
until their files change.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC
from functools import lru_cache, partial
from pathlib import Path
from typing import Any

from agentpack.clock import SYSTEM_CLOCK, Clock
from agentpack.errors import AgentpackError
from agentpack.hashing import normalize_newlines, sha256_text

from ..index.chunking import chunk_id, line_windows, split_lines
from ..index.tokenize import term_counts, tokenize
from ..pack.manifest import ARTIFACT_SOURCE_ID, ExpertPack, IndexEntry, load_pack

RRF_K = 60
FUSION_FLOOR = 0.1
RETRIEVAL_MODES = {
    "keyword": ("keyword-index-v2",),
    "fts": ("sqlite-fts-index-v1",),
    "sqlite": ("sqlite-fts-index-v1",),
    "vector": ("vector-index-v1",),
    "hybrid": None,
}
CASE_MODES = ("ephemeral", "persistent", "summarized")
SUMMARY_CHUNKING = (1200, 0)
MAX_EVIDENCE = 3


@dataclass
class LoadedIndex:
    entry: IndexEntry
    format: str | None = None
    index: Any = None
    error: str | None = None
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass
class LoadedPack:
    pack: ExpertPack
    signature: tuple
    indexes: dict[str, LoadedIndex] = field(default_factory=dict)
    summaries: list[dict[str, Any]] | None = None


_CACHE: dict[Path, LoadedPack] = {}
_LOCK = threading.RLock()


def _stat(path: Path) -> tuple:
    try:
        st = os.stat(path)
        return st.st_mtime_ns, st.st_size, st.st_ino
    except OSError:
        return ()


def _signature(root: Path, pack: ExpertPack | None) -> tuple:
    parts = [_stat(root / "expert" / "EXPERT.yaml")]
    if pack is not None:
        for entry in pack.indexes:
            parts.append(_stat(root / entry.path / "index_data.json"))
        for summary in pack.summaries:
            parts.append(_stat(root / summary.path))
    return tuple(parts)


def forget(pack_root: str | Path) -> None:
    with _LOCK:
        _CACHE.pop(Path(pack_root).resolve(), None)


def _loaded(pack_root: str | Path) -> LoadedPack:
    root = Path(pack_root).resolve()
    from ..lifecycle.staging import cache_for  # lifecycle hook: a staged build's evals get their own cache

    with _LOCK:
        cache = cache_for(root, _CACHE)
        cached = cache.get(root)
        if cached is not None and cached.signature == _signature(root, cached.pack):
            return cached
        pack = load_pack(root)
        cached = LoadedPack(pack, _signature(pack.root, pack))
        cache[root] = cached
        return cached


def _load_index(loaded: LoadedPack, entry: IndexEntry) -> LoadedIndex:
    with _LOCK:
        if entry.id in loaded.indexes:
            return loaded.indexes[entry.id]
        item = LoadedIndex(entry)
        loaded.indexes[entry.id] = item
        try:
            item.format, item.index = _open_index(loaded.pack, entry)
            item.sources = {s.get("source_id"): s for s in item.index.head.get("sources") or [] if isinstance(s, dict)}
        except AgentpackError as exc:
            item.error = exc.message
        except (OSError, ValueError, KeyError, TypeError) as exc:
            item.error = f"unreadable index: {exc}"
        return item


def _open_index(pack: ExpertPack, entry: IndexEntry):
    from agentpack.paths import resolve_under

    index_dir = resolve_under(pack.root, entry.path)
    descriptor = resolve_under(pack.root, entry.descriptor) if entry.descriptor else index_dir / "index.json"
    data_rel = "index_data.json"
    if descriptor.is_file():
        prov = (json.loads(descriptor.read_text(encoding="utf-8")) or {}).get("provenance") or {}
        data_rel = str(prov.get("index_data_path") or data_rel)
    data_path = resolve_under(index_dir, data_rel)
    if not data_path.is_file():
        raise AgentpackError(f"not built yet ({entry.path}/{data_rel} missing; run agentpack ecp build)")
    with open(data_path, "rb") as handle:
        head = handle.read(4096).decode("utf-8", "replace")
    fmt = next((f for f in ("keyword-index-v2", "sqlite-fts-index-v1", "vector-index-v1") if f'"{f}"' in head), None)
    if fmt is None:
        raise AgentpackError(f"{entry.path}/{data_rel}: unknown index payload format")
    if fmt == "keyword-index-v2":
        from ..index.keyword import KeywordIndex

        return fmt, KeywordIndex.load(index_dir, data_path)
    if fmt == "sqlite-fts-index-v1":
        from ..index.fts import FtsIndex

        return fmt, FtsIndex(index_dir, json.loads(data_path.read_text(encoding="utf-8")))
    from ..index.vector import VectorIndex

    return fmt, VectorIndex.load(index_dir, data_path)


# -- request helpers -------------------------------------------------------------------------
def _as_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


@dataclass
class Hit:
    key: str
    score: float
    index_id: str
    record: dict[str, Any]
    text: str | None
    source: dict[str, Any]
    load: Callable[[], str | None] | None = None
    """Reads ``text`` when it is needed (only the hits that make the answer are read)."""

    def get_text(self) -> str | None:
        if self.text is None and self.load is not None:
            self.text, self.load = self.load(), None
        return self.text


def _keyword_like_hits(item: LoadedIndex, results, depth: int) -> list[Hit]:
    docs = item.index.docs
    hits = []
    for doc, score in results[:depth]:
        record = docs.record(doc)
        hits.append(
            Hit(
                record["chunk_id"],
                score,
                item.entry.id,
                record,
                None,
                item.sources.get(record.get("source_id"), {}),
                partial(docs.text, doc),
            )
        )
    return hits


def _search(
    item: LoadedIndex, terms: list[str], request: dict[str, Any], depth: int, source_ids, prefixes
) -> tuple[list[Hit], str | None]:
    """Hits of one index, or (no hits, why it was skipped)."""
    index = item.index
    if item.format == "sqlite-fts-index-v1":
        rows = index.search(terms, depth, source_ids, prefixes)
        return [
            Hit(
                r["chunk_id"],
                s,
                item.entry.id,
                r,
                text,
                item.sources.get(r["source_id"], {}),
                None if text is not None else partial(index.text, r["chunk_id"]),
            )
            for r, s in rows
            for text in [r.pop("text")]
        ], None
    mask = index.docs.mask(source_ids, prefixes)
    if item.format == "keyword-index-v2":
        return _keyword_like_hits(item, index.search(terms, depth, mask), depth), None
    from ..index.embed import get_embedder
    from ..index.vector import coerce_query_vector

    if request.get("query_vector") is not None:
        given = request.get("query_embedding") or {}
        if not isinstance(given, dict) or not given.get("model") or not given.get("dimensions"):
            return [], "query_vector needs query_embedding with model and dimensions"
        if given.get("model") != index.embedding.get("model") or int(given["dimensions"]) != index.dimensions:
            return [], (
                f"query_embedding {given.get('model')}/{given.get('dimensions')} does not match the "
                f"index embedding {index.embedding.get('model')}/{index.dimensions}"
            )
        query = coerce_query_vector(request["query_vector"], index.dimensions)
    else:
        embedder = get_embedder(index.embedding, for_query=True)
        if embedder is None:
            return [], (
                f"no embedder for model '{index.embedding.get('model')}'; pass query_vector with query_embedding"
            )
        query = embedder.embed_texts([request["question"]])[0]
    return _keyword_like_hits(item, index.search(query, depth, mask), depth), None


# -- summaries (derived artifacts, spec 6.3.2) ---------------------------------------------------
def _summary_chunks(loaded: LoadedPack) -> list[dict[str, Any]]:
    if loaded.summaries is not None:
        return loaded.summaries
    from agentpack.paths import resolve_under

    from ..sources.snapshot import file_record, manifest_hash

    pack = loaded.pack
    chunks, manifest, stamps = [], {}, []
    for summary in pack.summaries:
        try:
            path = resolve_under(pack.root, summary.path)
            data = path.read_bytes()
        except (AgentpackError, OSError):
            continue
        record, text = file_record(data, len(data), 10 * 1024 * 1024)
        manifest[summary.path] = record
        stamps.append(os.stat(path).st_mtime)
        if text is None:
            continue
        for w in line_windows(split_lines(text), *SUMMARY_CHUNKING):
            counts = term_counts(w.text)
            if counts:
                chunks.append(
                    {
                        "chunk_id": chunk_id(ARTIFACT_SOURCE_ID, summary.path, w.start_line, w.end_line),
                        "source_id": ARTIFACT_SOURCE_ID,
                        "artifact_path": summary.path,
                        "loc": {"start_line": w.start_line, "end_line": w.end_line},
                        "chunk_hash": sha256_text(w.text),
                        "text": w.text,
                        "counts": counts,
                    }
                )
    from datetime import datetime

    from ..sources.snapshot import iso_utc

    stamp = iso_utc(datetime.fromtimestamp(max(stamps), UTC)) if stamps else None
    revision = {"hash": manifest_hash(manifest)}
    if stamp:
        revision["timestamp"] = stamp
    for chunk in chunks:
        chunk["revision"] = revision
    loaded.summaries = chunks
    return chunks


def _summary_hits(loaded: LoadedPack, terms: list[str], depth: int, prefixes: list[str]) -> list[Hit]:
    import math

    chunks = [
        c for c in _summary_chunks(loaded) if not prefixes or any(c["artifact_path"].startswith(p) for p in prefixes)
    ]
    if not chunks:
        return []
    n = len(chunks)
    df = {t: sum(1 for c in chunks if t in c["counts"]) for t in terms}
    scored = []
    for c in chunks:
        score = sum(
            math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) * (1 + math.log(c["counts"][t]))
            for t in terms
            if t in c["counts"]
        )
        if score > 0:
            scored.append((score, c))
    scored.sort(key=lambda sc: (-sc[0], sc[1]["chunk_id"]))
    source = {"source_id": ARTIFACT_SOURCE_ID, "source_type": "artifact", "uri": "."}
    hits = []
    for score, c in scored[:depth]:
        record = {k: v for k, v in c.items() if k not in ("text", "counts")}
        hits.append(Hit(c["chunk_id"], score, "summaries", record, c["text"], dict(source, revision=c["revision"])))
    return hits


# -- fusion, hydration, answer ------------------------------------------------------------------
def fuse(rankings: list[list[Hit]], top_k: int) -> list[Hit]:
    """Reciprocal-rank fusion (k=60) of each ranking's confident hits; one ranking passes through as is.

    A hit scoring under ``FUSION_FLOOR`` of its own ranking's best score is left out of the fusion:
    otherwise a weak tail that several indexes share outranks one index's clear best answer.
    """
    rankings = [r for r in rankings if r]
    if len(rankings) == 1:
        return rankings[0][:top_k]
    rankings = [[h for h in r if h.score >= FUSION_FLOOR * r[0].score] for r in rankings]
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, 1):
            scores[hit.key] = scores.get(hit.key, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(hit.key, hit)
    order = sorted(scores, key=lambda k: (-scores[k], k))[:top_k]
    return [
        Hit(k, round(scores[k], 6), first[k].index_id, first[k].record, first[k].text, first[k].source, first[k].load)
        for k in order
    ]


def _snippet(pack: ExpertPack, hit: Hit, revision: dict[str, Any], notes: list[str]) -> str:
    """The indexed text of a hit; for indexes without texts, the cited lines of the source as built."""
    text = hit.get_text()
    if text is not None:
        return normalize_newlines(text)
    from ..sources.snapshot import open_source_text

    source = pack.source(hit.record.get("source_id", ""))
    loc = hit.record.get("loc") or {}
    try:
        if source is None:
            raise AgentpackError("source not declared in EXPERT.yaml")
        lines = split_lines(open_source_text(pack, source, hit.record["artifact_path"], revision))
        text = "".join(lines[int(loc.get("start_line", 1)) - 1 : int(loc.get("end_line", 1))])
    except (AgentpackError, OSError, ValueError) as exc:
        notes.append(f"{hit.key}: no indexed text and the source cannot be read ({exc})")
        return ""
    if sha256_text(text) != hit.record.get("chunk_hash"):
        notes.append(f"{hit.key}: the source changed since the index was built (snippet from the current file)")
    return text


def _citation(pack: ExpertPack, hit: Hit, retrieved_at: str) -> dict[str, Any]:
    record, source = hit.record, hit.source
    sid = record.get("source_id") or source.get("source_id")
    declared = pack.source(sid)
    loc = record.get("loc") or {}
    citation = {
        "source_id": sid,
        "source_type": source.get("source_type") or (declared.type if declared else "filesystem"),
        "uri": source.get("uri") or record.get("uri") or (declared.uri if declared else ""),
        "revision": record.get("revision") or source.get("revision") or (declared.revision if declared else {}),
        "artifact_path": record.get("artifact_path"),
        "chunk_id": record.get("chunk_id"),
        "retrieved_at": retrieved_at,
        "loc": {"start_line": int(loc.get("start_line", 1)), "end_line": int(loc.get("end_line", 1))},
        "chunk_hash": record.get("chunk_hash"),
    }
    classification = record.get("classification") or source.get("classification") or pack.security.get("classification")
    license_ = record.get("license") or source.get("license") or pack.security.get("license")
    if classification:
        citation["classification"] = classification
    if license_:
        citation["license"] = license_
    return citation


def _as_of(pack: ExpertPack, loaded_sources: dict[str, dict[str, Any]], cited: list[dict[str, Any]]) -> dict[str, Any]:
    entries: dict[str, dict[str, Any]] = {}
    for source in pack.sources:
        built = loaded_sources.get(source.source_id)
        entries[source.source_id] = (built or {}).get("revision") or source.revision
    for citation in cited:
        entries.setdefault(citation["source_id"], citation["revision"])
    if len(entries) == 1:
        sid, revision = next(iter(entries.items()))
        return {"source_id": sid, "revision": revision}
    return {"sources": [{"source_id": sid, "revision": rev} for sid, rev in entries.items()]}


@lru_cache(maxsize=65536)
def _stem(term: str) -> str:
    """A light suffix strip so 'constituents' and 'constituent' meet when picking answer lines."""
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if len(term) > len(suffix) + 3 and term.endswith(suffix):
            return term[: -len(suffix)]
    return term


def extractive_answer(
    question: str, chunks: list[dict[str, Any]], max_evidence: int = MAX_EVIDENCE
) -> tuple[str, dict[str, Any]]:
    """A local answer: the (up to two) most relevant lines of each top chunk, with its citation number."""
    synthesis = {"provider": "local", "method": "extractive", "model": None, "max_evidence_chunks": max_evidence}
    if not chunks:
        return "No indexed material matches the question.", synthesis
    terms = {_stem(t) for t in tokenize(question)}
    needles = {t[:4] for t in terms}
    parts = []
    for n, chunk in enumerate(chunks[:max_evidence], 1):
        lines = [line.strip() for line in chunk["snippet"].split("\n")]
        scored = []
        for i, line in enumerate(lines):
            if line:
                lower = line.lower()
                hit = any(x in lower for x in needles)
                scored.append((len(terms.intersection(map(_stem, tokenize(line)))) if hit else 0, -i))
        scored.sort(reverse=True)
        picked = sorted(-i for score, i in scored[:2] if score > 0) or ([-scored[0][1]] if scored else [])
        best = " ... ".join(lines[i] for i in picked)
        if len(best) > 300:
            best = best[:297].rstrip() + "..."
        where = chunk["citation"]["artifact_path"]
        loc = chunk["citation"]["loc"]
        parts.append(f"- {best} [{n}] ({where}:{loc['start_line']}-{loc['end_line']})")
    count = min(len(chunks), max_evidence)
    head = f"From {count} cited excerpt{'s' if count != 1 else ''}:"
    return head + "\n" + "\n".join(parts), synthesis


def query_pack(
    pack_root: str | Path,
    request: dict[str, Any],
    *,
    clock: Clock = SYSTEM_CLOCK,
    synthesize: Callable[..., tuple[str, dict[str, Any]]] | None = None,
) -> dict[str, Any]:
    """Answer ``request`` from the pack at ``pack_root`` (see the module docstring)."""
    question = str(request.get("question") or "").strip()
    if not question:
        raise AgentpackError("the question is empty")
    top_k = int(request.get("top_k") or 5)
    if top_k < 1:
        raise AgentpackError("top_k must be at least 1")
    mode = str(request.get("mode") or "ephemeral")
    case_mode = mode if mode in CASE_MODES else "ephemeral"
    if mode not in CASE_MODES and mode not in RETRIEVAL_MODES:
        raise AgentpackError(f"unknown mode '{mode}'; use one of: {', '.join([*RETRIEVAL_MODES, *CASE_MODES])}")
    filters = dict(request.get("filters") or {})
    source_ids = _as_list(filters.pop("source_id", None))
    prefixes = [p.lstrip("/") for p in _as_list(filters.pop("path_prefix", None))]
    loaded = _loaded(pack_root)
    pack = loaded.pack
    notes = [f"filter '{k}' is not supported (supported: source_id, path_prefix)" for k in filters]
    formats = RETRIEVAL_MODES.get(mode)
    wanted_ids = _as_list(request.get("index_ids"))
    terms = tokenize(question)
    depth = max(top_k * 4, 20)
    report, rankings = [], []
    loaded_sources: dict[str, dict[str, Any]] = {}
    for entry in pack.indexes:
        if wanted_ids and entry.id not in wanted_ids:
            continue
        if formats is not None and entry.format not in formats:
            report.append(
                {
                    "index_id": entry.id,
                    "format": entry.format,
                    "status": "skipped",
                    "reason": f"not used in mode '{mode}'",
                }
            )
            continue
        item = _load_index(loaded, entry)
        status = {"index_id": entry.id, "format": item.format or entry.format}
        if item.error:
            report.append(dict(status, status="error", reason=item.error))
            continue
        for sid, meta in item.sources.items():
            loaded_sources.setdefault(sid, meta)
        if not terms and item.format != "vector-index-v1":
            report.append(dict(status, status="skipped", reason="the question has no searchable terms"))
            continue
        try:
            hits, skipped = _search(item, terms, dict(request, question=question), depth, source_ids, prefixes)
        except AgentpackError as exc:
            report.append(dict(status, status="error", reason=exc.message))
            continue
        if skipped:
            report.append(dict(status, status="skipped", reason=skipped))
            continue
        report.append(dict(status, status="ok", hits=len(hits)))
        rankings.append(hits)
    use_summaries = (
        pack.summaries
        and (case_mode == "summarized" or not any(rankings))
        and (not source_ids or ARTIFACT_SOURCE_ID in source_ids)
    )
    summary_hits: list[Hit] = []
    if use_summaries:
        summary_hits = _summary_hits(loaded, terms, depth, prefixes)
        report.append({"index_id": "summaries", "format": "summaries", "status": "ok", "hits": len(summary_hits)})
    if not pack.indexes and not pack.summaries:
        notes.append("the pack declares no index and no summary")
    if case_mode == "summarized":
        lead = summary_hits[: max(1, (top_k + 1) // 2)]
        fused = lead + fuse(rankings, top_k)[: top_k - len(lead)]
    else:
        fused = fuse(rankings + [summary_hits], top_k)
    retrieved_at = clock.iso()
    chunks, citations, seen = [], [], set()
    for hit in fused:
        citation = _citation(pack, hit, retrieved_at)
        snippet = _snippet(pack, hit, citation["revision"], notes)
        chunks.append(
            {
                "snippet": snippet,
                "score": round(float(hit.score), 6),
                "path": citation["artifact_path"],
                "line_start": citation["loc"]["start_line"],
                "line_end": citation["loc"]["end_line"],
                "index_id": hit.index_id,
                "citation": citation,
            }
        )
        key = (citation["source_id"], citation["chunk_id"])
        if key not in seen:
            seen.add(key)
            citations.append(citation)
    as_of = _as_of(pack, loaded_sources, citations)
    if synthesize is not None:
        answer, synthesis = synthesize(question, chunks, as_of)
    else:
        answer, synthesis = extractive_answer(question, chunks, min(MAX_EVIDENCE, top_k))
    response: dict[str, Any] = {
        "question": question,
        "mode": case_mode,
        "answer": answer,
        "as_of": as_of,
        "citations": citations,
        "chunks": chunks,
        "synthesis": synthesis,
        "retrieval": {
            "mode": mode if mode in RETRIEVAL_MODES else "hybrid",
            "top_k": top_k,
            "fusion": "rrf" if len([r for r in rankings if r]) > 1 else None,
            "filters": {"source_id": source_ids, "path_prefix": prefixes},
            "indexes": report,
        },
    }
    problems = [
        f"{r['index_id']}: {r['status']} ({r['reason']})"
        for r in report
        if r["status"] != "ok" and not r["reason"].startswith("not used in mode")
    ]
    if problems or notes:
        response["limitations"] = "; ".join(problems + notes)
    return response
