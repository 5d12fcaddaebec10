"""Retrieval: opening a pack's indexes (kept per process until their files change) and searching them.

``IndexCache`` holds the opened indexes of each pack root; ``SHARED`` is the
process-wide one, a staged build under evaluation gets its own. ``search``
returns the hits of one index, ``search_summaries`` those of the pack's summaries
(derived artifacts, spec 6.3.2).
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError
from agentpack.io.hashing import sha256_text
from agentpack.io.paths import resolve_under

from ..index.fields import field_bonuses
from ..index.tokenize import term_counts
from ..pack import journal, layout
from ..pack.files import file_kind, load_json_payload, open_regular, read_json_doc, read_regular
from ..pack.layout import MANIFEST_PATH
from ..pack.manifest import ExpertPack, IndexEntry, as_dict
from ..pack.spec import ARTIFACT_SOURCE_ID

SUMMARY_CHUNKING = (1200, 0)


@dataclass
class LoadedIndex:
    entry: IndexEntry
    format: str | None = None
    index: Any = None
    error: str | None = None
    sources: dict[Any, dict[str, Any]] = field(default_factory=dict)
    """The ``sources[]`` records of the index payload by ``source_id``."""


@dataclass
class LoadedPack:
    """What the cache keeps of one pack: its opened indexes and summary chunks, and the signature
    (stat of EXPERT.yaml, each index payload and each summary) they belong to."""

    signature: tuple
    indexes: dict[str, LoadedIndex] = field(default_factory=dict)
    summaries: list[dict[str, Any]] | None = None


def _stat(path: Path) -> tuple:
    try:
        st = os.stat(path)
        return st.st_mtime_ns, st.st_size, st.st_ino
    except OSError:
        return ()


def _signature(pack: ExpertPack) -> tuple:
    parts = [_stat(pack.root / MANIFEST_PATH)]
    for entry in pack.indexes:
        parts.append(_stat(pack.root / entry.path / "index_data.json"))
    for summary in pack.summaries:
        parts.append(_stat(pack.root / summary.path))
    return tuple(parts)


class IndexCache:
    """Opened indexes by pack root, reused while the pack's signature stays the same (thread-safe)."""

    def __init__(self) -> None:
        self._packs: dict[Path, LoadedPack] = {}
        self._lock = threading.RLock()

    def loaded(self, pack: ExpertPack) -> LoadedPack:
        """The pack's cache entry, after any interrupted publish was finished (``journal.settle``)."""
        journal.settle(pack.root)
        signature = _signature(pack)
        with self._lock:
            cached = self._packs.get(pack.root)
            if cached is None or cached.signature != signature:
                cached = self._packs[pack.root] = LoadedPack(signature)
            return cached

    def current(self, pack: ExpertPack, loaded: LoadedPack) -> bool:
        """Whether nothing was published since ``loaded`` was read: no journal, the same signature
        (a query that read some indexes before a swap and some after reads them all again)."""
        return not layout.journal_path(pack.root).exists() and _signature(pack) == loaded.signature

    def index(self, loaded: LoadedPack, pack: ExpertPack, entry: IndexEntry) -> LoadedIndex:
        """``entry``'s index, opened on first use (an index that cannot be opened records why)."""
        with self._lock:
            if entry.id in loaded.indexes:
                return loaded.indexes[entry.id]
            item = LoadedIndex(entry)
            loaded.indexes[entry.id] = item
            try:
                item.format, item.index = open_index(pack, entry)
                item.sources = {
                    s.get("source_id"): s for s in item.index.head.get("sources") or [] if isinstance(s, dict)
                }
            except AgentpackError as exc:
                item.error = f"{exc.location()}: {exc.message}" if exc.file else exc.message
            except (OSError, ValueError, KeyError, TypeError, AttributeError, EOFError, RecursionError) as exc:
                item.error = f"unreadable index ({type(exc).__name__}: {exc})"
            return item

    def forget(self, root: str | Path) -> None:
        with self._lock:
            self._packs.pop(Path(root).resolve(), None)


SHARED = IndexCache()
"""The process-wide cache (an MCP server answers from it across requests); a publish drops a pack's
opened indexes from it (``journal.on_published``)."""
journal.on_published(SHARED.forget)


def open_index(pack: ExpertPack, entry: IndexEntry) -> tuple[str, Any]:
    """(payload format, the opened index) of ``entry``; ``AgentpackError`` when it is not built."""
    index_dir = resolve_under(pack.root, entry.path)
    descriptor = resolve_under(pack.root, entry.descriptor) if entry.descriptor else index_dir / "index.json"
    data_rel = "index_data.json"
    if os.path.lexists(descriptor):
        prov = as_dict(read_json_doc(descriptor, entry.descriptor).data).get("provenance")
        data_rel = str(as_dict(prov).get("index_data_path") or data_rel)
    data_path = resolve_under(index_dir, data_rel)
    if not os.path.lexists(data_path):
        raise AgentpackError(f"not built yet ({entry.path}/{data_rel} missing; run agentpack ecp build)")
    kind = file_kind(data_path)
    if kind is not None:
        raise AgentpackError(f"{entry.path}/{data_rel}: expected a JSON file, found {kind}")
    with open_regular(data_path) as handle:
        head = handle.read(4096).decode("utf-8", "replace")
    fmt = next((f for f in ("keyword-index-v2", "sqlite-fts-index-v1", "vector-index-v1") if f'"{f}"' in head), None)
    if fmt is None:
        raise AgentpackError(f"{entry.path}/{data_rel}: unknown index payload format")
    # each format's module is imported for its own indexes only (a cold query pays for what it opens)
    if fmt == "keyword-index-v2":
        from ..index.keyword import KeywordIndex

        return fmt, KeywordIndex.load(index_dir, data_path)
    if fmt == "sqlite-fts-index-v1":
        from ..index.fts import FtsIndex

        return fmt, FtsIndex(index_dir, as_dict(load_json_payload(data_path, f"{entry.path}/{data_rel}")))
    from ..index.vector import VectorIndex

    return fmt, VectorIndex.load(index_dir, data_path)


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
    features: dict[str, Any] = field(default_factory=dict)
    """What ranked the hit (index score, field bonuses, fused ranks, role, diversity): ``explain`` shows it."""

    def get_text(self) -> str | None:
        """The indexed text (``None`` when the index has none, or its texts file is damaged: the
        snippet is then read from the source)."""
        if self.text is None and self.load is not None:
            load, self.load = self.load, None
            try:
                self.text = load()
            except (AgentpackError, OSError, ValueError):
                self.text = None
        return self.text


def keyword_like_hits(item: LoadedIndex, results, depth: int) -> list[Hit]:
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


def field_ranked(terms: list[str], hits: list[Hit]) -> list[Hit]:
    """Keyword hits re-ranked by their score relative to the best plus their field bonus (``index/fields.py``)."""
    if not hits:
        return hits
    best = max(h.score for h in hits) or 1.0
    for hit in hits:
        bonuses = field_bonuses(terms, str(hit.record.get("artifact_path") or ""), hit.get_text())
        hit.features.update(index_score=round(hit.score, 6), relative=round(hit.score / best, 6), fields=bonuses)
        hit.score = hit.score / best + sum(bonuses.values())
    return sorted(hits, key=lambda h: (-h.score, h.key))


def search(
    item: LoadedIndex, terms: list[str], request: dict[str, Any], depth: int, source_ids, prefixes
) -> tuple[list[Hit], str | None]:
    """Hits of one index, or (no hits, why it was skipped)."""
    index = item.index
    if item.format == "sqlite-fts-index-v1":
        rows = index.search(terms, depth, source_ids, prefixes)
        return field_ranked(
            terms,
            [
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
            ],
        ), None
    mask = index.docs.mask(source_ids, prefixes)
    if item.format == "keyword-index-v2":
        return field_ranked(terms, keyword_like_hits(item, index.search(terms, depth, mask), depth)), None
    if request.get("query_vector") is not None:
        given = request.get("query_embedding") or {}
        if not isinstance(given, dict) or not given.get("model") or not given.get("dimensions"):
            return [], "query_vector needs query_embedding with model and dimensions"
        if given.get("model") != index.embedding.get("model") or int(given["dimensions"]) != index.dimensions:
            return [], (
                f"query_embedding {given.get('model')}/{given.get('dimensions')} does not match the "
                f"index embedding {index.embedding.get('model')}/{index.dimensions}"
            )
        from ..index.vector import coerce_query_vector

        query = coerce_query_vector(request["query_vector"], index.dimensions)
    else:
        from ..index.embed import get_embedder

        embedder = get_embedder(index.embedding, for_query=True)
        if embedder is None:
            return [], (
                f"no embedder for model '{index.embedding.get('model')}'; pass query_vector with query_embedding"
            )
        query = embedder.embed_texts([request["question"]])[0]
    return keyword_like_hits(item, index.search(query, depth, mask), depth), None


def _summary_chunks(loaded: LoadedPack, pack: ExpertPack) -> list[dict[str, Any]]:
    if loaded.summaries is not None:
        return loaded.summaries
    # what only a pack with summaries needs (hashlib, chunking, datetime): not imported by every query
    from datetime import UTC, datetime

    from ..index.chunking import chunk_id, line_windows, split_lines
    from ..sources.recipes import file_record, iso_utc, manifest_hash

    chunks, manifest, stamps = [], {}, []
    for summary in pack.summaries:
        try:
            path = resolve_under(pack.root, summary.path)
            data = read_regular(path)
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
    stamp = iso_utc(datetime.fromtimestamp(max(stamps), UTC)) if stamps else None
    revision = {"hash": manifest_hash(manifest)}
    if stamp:
        revision["timestamp"] = stamp
    for chunk in chunks:
        chunk["revision"] = revision
    loaded.summaries = chunks
    return chunks


def search_summaries(
    loaded: LoadedPack, pack: ExpertPack, terms: list[str], depth: int, prefixes: list[str]
) -> list[Hit]:
    """Hits among the pack's summaries (derived artifacts, spec 6.3.2), ranked by a small BM25-like score."""
    chunks = [
        c
        for c in _summary_chunks(loaded, pack)
        if not prefixes or any(c["artifact_path"].startswith(p) for p in prefixes)
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
