"""The query hook's adapter: the core's ``QueryRequest`` in, the ECP response (as the payload) out."""

from __future__ import annotations

from typing import Any

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError
from agentpack.kernel.packtypes import Citation, QueryRequest, QueryResponse

from ..pack.layout import MANIFEST_PATH
from ..pack.manifest import ExpertPack
from .answer import answer
from .rerank import registered


def read_query_vector(path: str) -> dict[str, Any]:
    """``{"query_vector": [...], "query_embedding": {"model", "dimensions"}}`` from a JSON file."""
    try:
        data = jsonio.load_file(path)
    except jsonio.JsonError as exc:
        raise AgentpackError(f"cannot read the query vector: {exc.message}", file=path, line=exc.line) from None
    if not isinstance(data, dict) or "query_vector" not in data or not isinstance(data.get("query_embedding"), dict):
        raise AgentpackError(
            "expected a JSON object with query_vector and query_embedding {model, dimensions}", file=path
        )
    return {"query_vector": data["query_vector"], "query_embedding": data["query_embedding"]}


def request_dict(request: QueryRequest) -> dict[str, Any]:
    out: dict[str, Any] = {
        "question": request.question,
        "top_k": request.top_k,
        "mode": request.mode,
        "filters": dict(request.filters),
    }
    options = dict(request.options)
    if options.get("query_vector_file"):
        out.update(read_query_vector(str(options.pop("query_vector_file"))))
    for key in ("query_vector", "query_embedding"):
        if key in options:
            out[key] = options.pop(key)
    if options.get("rerank"):
        out["rerank"] = str(options.pop("rerank"))
    if str(options.pop("explain", "")).lower() in ("1", "true", "yes", "on"):
        out["explain"] = True
    if options.get("index"):
        out["index_ids"] = [i for i in str(options.pop("index")).split(",") if i]
    return out


def query(pack: ExpertPack, request: QueryRequest, host: Any = None) -> QueryResponse:
    """Answer a core ``QueryRequest``; the ECP response is the payload, citations and findings its display form.

    ``--option rerank=NAME`` re-orders the hits with a reranker the plugins of ``host`` register."""
    asked = request_dict(request)
    rerankers = registered(host) if asked.get("rerank") and host is not None else None
    response = answer(pack, asked, request.options, rerankers=rerankers)
    citations = [
        Citation(
            label=f"{c['artifact_path']}:{c['loc']['start_line']}-{c['loc']['end_line']} ({c['source_id']})",
            source_id=c["source_id"],
            path=c["artifact_path"],
            line_start=c["loc"]["start_line"],
            line_end=c["loc"]["end_line"],
            snippet=chunk["snippet"],
        )
        for chunk in response["chunks"]
        for c in [chunk["citation"]]
    ]
    missed = missed_indexes(response)
    return QueryResponse(
        format="ecp",
        answer=response["answer"],
        citations=citations,
        payload=response,
        findings=index_findings(pack, missed),
    )


def missed_indexes(response: dict[str, Any]) -> list[dict[str, Any]]:
    """The indexes a query meant to use and could not (skipped or failed), with why."""
    return [
        r
        for r in response["retrieval"]["indexes"]
        if r["status"] != "ok" and not r["reason"].startswith("not used in mode")
    ]


def index_findings(pack: ExpertPack, missed: list[dict[str, Any]]) -> list[Any]:
    """A warning per index skipped or failed (pydantic's ``Finding`` is imported only then)."""
    if not missed:
        return []
    from agentpack.kernel.models import Finding

    entries = {e.id: e for e in pack.indexes}
    return [
        Finding.warning(
            "ECP301" if r["status"] == "skipped" else "ECP302",
            f"index '{r['index_id']}' {r['status']}: {r['reason']}",
            **(pack.where(entries[r["index_id"]].pointer) if r["index_id"] in entries else {"file": MANIFEST_PATH}),
        )
        for r in missed
    ]
