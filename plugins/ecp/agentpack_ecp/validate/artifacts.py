"""What validation reads of each built index: its descriptor, payload and provenance map, checked
against their schemas and the index entry (codes ECP13x)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentpack.errors import AgentpackError
from agentpack.models import Finding
from agentpack.paths import check_relative, resolve_under

from ..index.chunking import parse_chunk_id
from ..pack.manifest import ExpertPack, IndexEntry, as_dict, read_json_doc
from ..pack.schemas import CHUNK_SCHEMA, DESCRIPTOR_SCHEMA, PAYLOAD_SCHEMAS, schema_store
from ..pack.spec import ARTIFACT_SOURCE_ID

CHUNK_SAMPLE = 500
PAYLOAD_SAMPLE = 200


@dataclass
class IndexArtifacts:
    """What validation read of one built index (``None`` fields were missing or unreadable)."""

    entry: IndexEntry
    dir: Path | None = None
    descriptor: dict[str, Any] | None = None
    data: dict[str, Any] | None = None
    chunk_records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    """``(line number, record)`` of the chunks.jsonl objects read (the first ``CHUNK_SAMPLE`` lines)."""
    has_chunks: bool = False
    chunks_complete: bool = False
    """Whether ``chunk_records`` holds every record of chunks.jsonl (the file is within the sample)."""


def _sample_payload(data: dict[str, Any]) -> dict[str, Any]:
    sample = dict(data)
    for key in ("documents", "terms"):
        if isinstance(data.get(key), dict) and len(data[key]) > PAYLOAD_SAMPLE:
            sample[key] = dict(list(data[key].items())[:PAYLOAD_SAMPLE])
    return sample


def load_index_artifacts(pack: ExpertPack, entry: IndexEntry, out: list[Finding]) -> IndexArtifacts:
    """Read and check one index's descriptor, payload and provenance."""
    art = IndexArtifacts(entry)
    pointer = entry.pointer
    if not entry.path or not entry.descriptor:
        return art
    try:
        check_relative(entry.path)
        check_relative(entry.descriptor)
        art.dir = resolve_under(pack.root, entry.path)
        descriptor_path = resolve_under(pack.root, entry.descriptor)
    except AgentpackError as exc:
        out.append(Finding.error("ECP110", f"index '{entry.id}': {exc.message}", **pack.where(pointer)))
        return art
    if not descriptor_path.is_file():
        if not art.dir.exists():
            out.append(
                Finding.warning(
                    "ECP136",
                    f"index '{entry.id}' is not built yet",
                    **pack.where(f"{pointer}/path"),
                    hint="run agentpack ecp build",
                )
            )
        else:
            out.append(
                Finding.error(
                    "ECP134",
                    f"index '{entry.id}': descriptor {entry.descriptor} is missing",
                    **pack.where(f"{pointer}/descriptor"),
                )
            )
        return art
    try:
        doc = read_json_doc(descriptor_path, entry.descriptor)
    except AgentpackError as exc:
        out.append(Finding.error("ECP131", exc.message, file=entry.descriptor, line=exc.line, column=exc.column))
        return art
    out.extend(schema_store().validate(DESCRIPTOR_SCHEMA, doc.data, document=doc, code="ECP131"))
    if not isinstance(doc.data, dict):
        return art
    art.descriptor = doc.data
    for key, expected in (("index_id", entry.id), ("type", entry.type)):
        if doc.data.get(key) != expected:
            out.append(
                Finding.error(
                    "ECP132",
                    f"descriptor {key} '{doc.data.get(key)}' differs from the index entry '{expected}'",
                    **doc.where(f"/{key}"),
                )
            )
    chunking = as_dict(doc.data.get("chunking"))
    for key, value in entry.chunking.items():
        if key in ("max_chars", "overlap_chars") and chunking.get(key) != value:
            out.append(
                Finding.warning(
                    "ECP132",
                    f"index '{entry.id}' asks for chunking.{key} {value} but was built "
                    f"with {chunking.get(key)} (rebuild it)",
                    **doc.where(f"/chunking/{key}"),
                )
            )
    prov = as_dict(doc.data.get("provenance"))
    _load_payload(pack, art, prov, out)
    _load_chunks(pack, art, prov, out)
    return art


def _under_index(art: IndexArtifacts, rel: Any, what: str, out: list[Finding]) -> Path | None:
    if art.dir is None:
        return None
    try:
        check_relative(str(rel))
        return resolve_under(art.dir, str(rel))
    except AgentpackError as exc:
        out.append(Finding.error("ECP110", f"index '{art.entry.id}': {what}: {exc.message}", file=art.entry.descriptor))
        return None


def _load_payload(pack: ExpertPack, art: IndexArtifacts, prov: dict, out: list[Finding]) -> None:
    entry = art.entry
    rel = prov.get("index_data_path") or "index_data.json"
    path = _under_index(art, rel, "provenance.index_data_path", out)
    display = f"{entry.path}/{rel}"
    if path is None:
        return
    if not path.is_file():
        out.append(
            Finding.error(
                "ECP134",
                f"index '{entry.id}': payload {display} is missing",
                file=entry.descriptor,
                hint="run agentpack ecp build",
            )
        )
        return
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        out.append(Finding.error("ECP133", f"index payload is not valid JSON: {exc}", file=display))
        return
    if not isinstance(data, dict):
        out.append(Finding.error("ECP133", "index payload must be a JSON object", file=display))
        return
    fmt = data.get("format")
    if fmt not in PAYLOAD_SCHEMAS:
        out.append(
            Finding.error(
                "ECP133",
                f"unknown index payload format '{fmt}' (expected one of {', '.join(PAYLOAD_SCHEMAS)})",
                file=display,
                pointer="/format",
            )
        )
        return
    for f in schema_store().validate(PAYLOAD_SCHEMAS[fmt], _sample_payload(data), file=display, code="ECP133"):
        out.append(f)
    art.data = data
    if data.get("index_id") != entry.id:
        out.append(
            Finding.error(
                "ECP132",
                f"payload index_id '{data.get('index_id')}' differs from the index entry '{entry.id}'",
                file=display,
                pointer="/index_id",
            )
        )
    expects_vector = entry.type == "vector"
    if expects_vector != (fmt == "vector-index-v1") and entry.type in ("vector", "keyword"):
        out.append(
            Finding.error(
                "ECP132",
                f"index '{entry.id}' has type '{entry.type}' but a {fmt} payload",
                file=display,
                pointer="/format",
            )
        )
    if fmt == "sqlite-fts-index-v1":
        db = (data.get("sqlite") or {}).get("path") if isinstance(data.get("sqlite"), dict) else None
        target = _under_index(art, db or "fts.sqlite", "sqlite.path", out)
        if target is not None and not target.is_file():
            out.append(
                Finding.error(
                    "ECP134",
                    f"index '{entry.id}': SQLite database {db} is missing",
                    file=display,
                    pointer="/sqlite/path",
                )
            )
    if fmt == "vector-index-v1":
        config = as_dict(data.get("config"))
        vcfg = as_dict(config.get("vector"))
        target = _under_index(art, vcfg.get("vectors_path") or "vectors.jsonl", "config.vector.vectors_path", out)
        if target is not None and not target.is_file():
            out.append(
                Finding.error(
                    "ECP134",
                    f"index '{entry.id}': vector payload {vcfg.get('vectors_path')} is missing",
                    file=display,
                    pointer="/config/vector/vectors_path",
                )
            )
        emb = as_dict(config.get("embedding"))
        desc_emb = (art.descriptor or {}).get("embedding") or {}
        if (
            desc_emb
            and emb
            and (desc_emb.get("model"), desc_emb.get("dimensions")) != (emb.get("model"), emb.get("dimensions"))
        ):
            out.append(
                Finding.error(
                    "ECP132",
                    f"index '{entry.id}': descriptor embedding differs from the payload's",
                    file=entry.descriptor,
                    pointer="/embedding",
                )
            )
    for doc in list((data.get("documents") or {}).values())[:2000]:
        path_value = doc.get("path") if isinstance(doc, dict) else None
        if isinstance(path_value, str):
            try:
                check_relative(path_value)
            except AgentpackError as exc:
                out.append(Finding.error("ECP138", f"document path: {exc.message}", file=display, pointer="/documents"))
                break


def _load_chunks(pack: ExpertPack, art: IndexArtifacts, prov: dict, out: list[Finding]) -> None:
    entry = art.entry
    rel = prov.get("chunks_path") or "chunks.jsonl"
    path = _under_index(art, rel, "provenance.chunks_path", out)
    display = f"{entry.path}/{rel}"
    if path is None or not path.is_file():
        if path is not None:
            out.append(
                Finding.error(
                    "ECP134", f"index '{entry.id}': provenance map {display} is missing", file=entry.descriptor
                )
            )
        return
    art.has_chunks = True
    known = {s.source_id for s in pack.sources} | {ARTIFACT_SOURCE_ID}
    store = schema_store()
    art.chunks_complete = True
    with open(path, encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            if n > CHUNK_SAMPLE:
                art.chunks_complete = False
                break
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                out.append(Finding.error("ECP137", f"not JSON: {exc}", file=display, line=n))
                continue
            if isinstance(record, dict):
                art.chunk_records.append((n, record))
            problems = store.validate(CHUNK_SCHEMA, record, file=display, code="ECP137")
            out.extend(f.model_copy(update={"line": n}) for f in problems)
            if problems or not isinstance(record, dict):
                continue
            parts = parse_chunk_id(record["chunk_id"])
            loc = record["loc"]
            if parts is None or parts != (
                record["source_id"],
                record["artifact_path"],
                loc.get("start_line"),
                loc.get("end_line"),
            ):
                out.append(
                    Finding.warning(
                        "ECP138",
                        f"chunk_id '{record['chunk_id']}' is not the canonical "
                        "<source_id>::<path>#L<a>-L<b> of its record",
                        file=display,
                        line=n,
                        pointer="/chunk_id",
                    )
                )
            try:
                check_relative(record["artifact_path"])
            except AgentpackError as exc:
                out.append(
                    Finding.error(
                        "ECP138", f"artifact_path: {exc.message}", file=display, line=n, pointer="/artifact_path"
                    )
                )
            if record["source_id"] not in known:
                out.append(
                    Finding.error(
                        "ECP139",
                        f"chunk cites source_id '{record['source_id']}', which EXPERT.yaml does not declare",
                        file=display,
                        line=n,
                        pointer="/source_id",
                    )
                )
