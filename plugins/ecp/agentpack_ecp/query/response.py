"""Answering a question from a loaded pack with the response contract of spec 6.3.

``query_pack(pack, request, *, clock=SYSTEM_CLOCK, synthesize=None, cache=SHARED) -> dict``:
``pack`` is the loaded ``ExpertPack``; ``request`` holds ``question`` and
optionally ``top_k``, ``mode``, ``filters`` (``source_id``, ``path_prefix``: a
string or a list), ``query_vector``, ``query_embedding``, ``index_ids``, ``explain`` (each chunk
then carries ``explain``: the features that ranked it, ``ranking.py``). The result has ``answer``,
``as_of``, ``citations``, ``chunks``, ``synthesis`` (spec 6.3) and ``retrieval`` (which index
answered, which was skipped or failed, and why). ``synthesize(question, chunks, as_of) -> (answer, synthesis)``
replaces the local extractive answer; ``cache`` holds the opened indexes.

Retrieval modes: ``keyword`` (keyword-index-v2), ``fts`` (sqlite-fts-index-v1),
``vector``, or ``hybrid``/none (every index, fused by weighted reciprocal rank, ``fuse.py``). ECP case
modes (``ephemeral``, ``persistent``, ``summarized``) are echoed; ``summarized``
also ranks the pack's summaries.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.io.errors import AgentpackError
from agentpack.io.hashing import normalize_newlines, sha256_text

from ..index.chunking import split_lines
from ..index.tokenize import tokenize
from ..pack.manifest import ExpertPack
from ..pack.ranking import ranking_settings
from ..pack.spec import ARTIFACT_SOURCE_ID
from .extractive import MAX_EVIDENCE, extractive_answer
from .fuse import FUSION_WEIGHTS, fuse
from .ranking import arrange
from .rerank import Reranker, rerank
from .retrieve import SHARED, Hit, IndexCache, LoadedPack, search, search_summaries

RETRIEVAL_MODES = {
    "keyword": ("keyword-index-v2",),
    "fts": ("sqlite-fts-index-v1",),
    "sqlite": ("sqlite-fts-index-v1",),
    "vector": ("vector-index-v1",),
    "hybrid": None,
}
CASE_MODES = ("ephemeral", "persistent", "summarized")
READ_ATTEMPTS = 3
"""Reads of the indexes before a query gives up on a pack that keeps being republished under it."""


def _as_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def _snippet(pack: ExpertPack, hit: Hit, revision: dict[str, Any], notes: list[str]) -> str:
    """The indexed text of a hit; for indexes without texts, the cited lines of the source as built."""
    text = hit.get_text()
    if text is not None:
        return normalize_newlines(text)
    source = pack.source(hit.record.get("source_id", ""))
    loc = hit.record.get("loc") or {}
    try:
        if source is None:
            raise AgentpackError("source not declared in EXPERT.yaml")
        from ..sources.snapshot import open_source_text  # source readers (git, databases): only for a hit without text

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
    declared = pack.source(sid) if isinstance(sid, str) else None
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


def _gather(
    pack: ExpertPack,
    request: dict[str, Any],
    question: str,
    top_k: int,
    mode: str,
    case_mode: str,
    filters: dict[str, Any],
    source_ids: list[str],
    prefixes: list[str],
    cache: IndexCache,
    loaded: LoadedPack,
    clock: Clock,
    rerankers: dict[str, Reranker] | None,
) -> dict[str, Any]:
    """One read of the pack's indexes: what each index said, the fused evidence, its citations."""
    notes = [f"filter '{k}' is not supported (supported: source_id, path_prefix)" for k in filters]
    formats = RETRIEVAL_MODES.get(mode)
    wanted_ids = _as_list(request.get("index_ids"))
    terms = tokenize(question)
    depth = max(top_k * 4, 20)
    report: list[dict[str, Any]] = []
    rankings: list[list[Hit]] = []
    weights: list[float] = []
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
        item = cache.index(loaded, pack, entry)
        status: dict[str, Any] = {"index_id": entry.id, "format": item.format or entry.format}
        if item.error:
            report.append(dict(status, status="error", reason=item.error))
            continue
        for sid, meta in item.sources.items():
            loaded_sources.setdefault(sid, meta)
        if not terms and item.format != "vector-index-v1":
            report.append(dict(status, status="skipped", reason="the question has no searchable terms"))
            continue
        try:
            hits, skipped = search(item, terms, dict(request, question=question), depth, source_ids, prefixes)
        except AgentpackError as exc:
            report.append(dict(status, status="error", reason=exc.message))
            continue
        except (OSError, ValueError, KeyError, TypeError) as exc:  # files damaged since the index was opened
            report.append(dict(status, status="error", reason=f"unreadable index ({type(exc).__name__}: {exc})"))
            continue
        if skipped:
            report.append(dict(status, status="skipped", reason=skipped))
            continue
        report.append(dict(status, status="ok", hits=len(hits)))
        rankings.append(hits)
        weights.append(FUSION_WEIGHTS.get(item.format or "", 1.0))
    use_summaries = (
        pack.summaries
        and (case_mode == "summarized" or not any(rankings))
        and (not source_ids or ARTIFACT_SOURCE_ID in source_ids)
    )
    summary_hits: list[Hit] = []
    if use_summaries:
        summary_hits = search_summaries(loaded, pack, terms, depth, prefixes)
        report.append({"index_id": "summaries", "format": "summaries", "status": "ok", "hits": len(summary_hits)})
    if not pack.indexes and not pack.summaries:
        notes.append("the pack declares no index and no summary")
    settings = ranking_settings(pack)
    if case_mode == "summarized":
        lead = summary_hits[: max(1, (top_k + 1) // 2)]
        fused = lead + arrange(fuse(rankings, depth, weights), top_k - len(lead), settings)
    else:
        fused = arrange(fuse([*rankings, summary_hits], depth, [*weights, 1.0]), top_k, settings)
    if request.get("rerank"):
        fused = rerank(question, fused, str(request["rerank"]), rerankers or {})
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
                **({"explain": hit.features} if request.get("explain") else {}),
            }
        )
        key = (citation["source_id"], citation["chunk_id"])
        if key not in seen:
            seen.add(key)
            citations.append(citation)
    return {
        "report": report,
        "rankings": rankings,
        "chunks": chunks,
        "citations": citations,
        "as_of": _as_of(pack, loaded_sources, citations),
        "notes": notes,
    }


def query_pack(
    pack: ExpertPack,
    request: dict[str, Any],
    *,
    clock: Clock = SYSTEM_CLOCK,
    synthesize: Callable[..., tuple[str, dict[str, Any]]] | None = None,
    cache: IndexCache = SHARED,
    rerankers: dict[str, Reranker] | None = None,
) -> dict[str, Any]:
    """Answer ``request`` from the loaded ``pack`` (see the module docstring); ``request["rerank"]`` names one
    of ``rerankers`` to re-order the fused hits."""
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
    for _ in range(READ_ATTEMPTS):
        loaded = cache.loaded(pack)
        got = _gather(
            pack,
            request,
            question,
            top_k,
            mode,
            case_mode,
            filters,
            source_ids,
            prefixes,
            cache,
            loaded,
            clock,
            rerankers,
        )
        if cache.current(pack, loaded):
            break
        cache.forget(pack.root)  # republished while being read: read again, never answer from a mix
    else:
        raise AgentpackError(
            f"the indexes of pack {pack.root.name} were republished {READ_ATTEMPTS} times while being read",
            hint="try again",
        )
    report, rankings, chunks, citations = got["report"], got["rankings"], got["chunks"], got["citations"]
    as_of, notes = got["as_of"], got["notes"]
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
