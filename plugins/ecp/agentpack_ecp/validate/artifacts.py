"""What validation reads of each built index: its descriptor, payload and provenance map, checked
against their schemas, the index entry and each other (codes ECP13x, ECP124, ECP129, ECP180).

An index is *built* when its payload lists documents or its provenance map holds a record; an
index that is neither (the upstream templates' ``documents: {}``, an empty ``chunks.jsonl`` and a
1-byte ``fts.sqlite``) is a placeholder: a warning, as the spec's "SHOULD contain" asks no more.
The payload files of a built index must be what its payload says (an SQLite database with the
FTS5 table, a ``.npy``/``.bin`` matrix of the declared shape, a non-empty ``chunks.jsonl``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError
from agentpack.io.paths import check_relative, resolve_under
from agentpack.kernel.models import Finding

from ..index import fts, vector
from ..index.chunking import parse_chunk_id
from ..pack.files import check_uri_safe, file_kind, load_json_payload, open_regular, read_json_doc
from ..pack.manifest import ExpertPack, IndexEntry, as_dict
from ..pack.schemas import CHUNK_SCHEMA, DESCRIPTOR_SCHEMA, PAYLOAD_SCHEMAS, schema_store
from ..pack.spec import ARTIFACT_SOURCE_ID, MAX_DIMENSIONS, is_rfc3339

CHUNK_SAMPLE = 500
PAYLOAD_SAMPLE = 200
REVISION_TIMES = ("timestamp", "retrieved_at")
"""The keys of a revision the spec types as RFC 3339 strings (5.6.2)."""


@dataclass
class IndexArtifacts:
    """What validation read of one built index (``None`` fields were missing or unreadable)."""

    entry: IndexEntry
    dir: Path | None = None
    descriptor: dict[str, Any] | None = None
    data: dict[str, Any] | None = None
    chunk_records: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    """``(line number, record)`` of the chunks.jsonl objects read (the first ``CHUNK_SAMPLE`` lines)."""
    has_payload: bool = False
    """Whether ``index_data.json`` exists and is JSON (``data`` is set only for a known format)."""
    has_chunks: bool = False
    chunks_complete: bool = False
    """Whether ``chunk_records`` holds every record of chunks.jsonl (the file is within the sample)."""
    chunk_lines: int = 0
    """Non-empty lines of chunks.jsonl read (all of them when ``chunks_complete``)."""


def _sample_payload(data: dict[str, Any]) -> dict[str, Any]:
    sample = dict(data)
    for key in ("documents", "terms"):
        if isinstance(data.get(key), dict) and len(data[key]) > PAYLOAD_SAMPLE:
            sample[key] = dict(list(data[key].items())[:PAYLOAD_SAMPLE])
    return sample


def check_times(record: Any, pointers: tuple[str, ...], out: list[Finding], where) -> None:
    """ECP124 for each of ``pointers`` (``/created_at``, ``/revision/timestamp``...) in ``record`` that is
    present but not an RFC 3339 date-time; ``where(pointer)`` gives the finding's location."""
    for pointer in pointers:
        value: Any = record
        for key in pointer.strip("/").split("/"):
            value = value.get(key) if isinstance(value, dict) else None
        if value is not None and not is_rfc3339(value):
            out.append(
                Finding.error("ECP124", f"{pointer[1:]} {value!r} is not an RFC 3339 date-time", **where(pointer))
            )


def load_index_artifacts(
    pack: ExpertPack, entry: IndexEntry, out: list[Finding], strict: bool = False
) -> IndexArtifacts:
    """Read and check one index's descriptor, payload and provenance."""
    art = IndexArtifacts(entry)
    pointer = entry.pointer
    if not entry.path or not entry.descriptor:
        return art
    try:
        check_relative(entry.path)
        check_relative(entry.descriptor)
        art.dir = resolve_under(pack.root, entry.path)
        resolve_under(pack.root, entry.descriptor)
    except AgentpackError as exc:
        out.append(Finding.error("ECP110", f"index '{entry.id}': {exc.message}", **pack.where(pointer)))
        return art
    descriptor_path = pack.root / entry.descriptor
    if not os.path.lexists(descriptor_path):
        if not art.dir.exists():
            make = Finding.error if strict else Finding.warning
            out.append(
                make(
                    "ECP136",
                    f"index '{entry.id}' is not built yet"
                    + (" (--strict: a declared index must be built)" if strict else ""),
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
    check_times(doc.data, ("/created_at", "/built_at"), out, doc.where)
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
    check_dimensions(as_dict(doc.data.get("embedding")).get("dimensions"), out, **doc.where("/embedding/dimensions"))
    prov = as_dict(doc.data.get("provenance"))
    _load_payload(pack, art, prov, out)
    _load_chunks(pack, art, prov, out)
    _check_built(art, prov, out)
    return art


def check_dimensions(dims: Any, out: list[Finding], **where: Any) -> None:
    """ECP129 when ``dims`` is more than agentpack accepts (such an index is refused before allocating)."""
    if isinstance(dims, int) and not isinstance(dims, bool) and dims > MAX_DIMENSIONS:
        out.append(
            Finding.error(
                "ECP129", f"embedding.dimensions {dims} is more than agentpack's limit of {MAX_DIMENSIONS}", **where
            )
        )


def _under_index(art: IndexArtifacts, rel: Any, what: str, out: list[Finding]) -> Path | None:
    if art.dir is None:
        return None
    try:
        check_relative(str(rel))
        check_uri_safe(str(rel))
        resolve_under(art.dir, str(rel))
    except AgentpackError as exc:
        out.append(Finding.error("ECP110", f"index '{art.entry.id}': {what}: {exc.message}", file=art.entry.descriptor))
        return None
    return art.dir / str(rel)


def _load_payload(pack: ExpertPack, art: IndexArtifacts, prov: dict, out: list[Finding]) -> None:
    entry = art.entry
    rel = prov.get("index_data_path") or "index_data.json"
    path = _under_index(art, rel, "provenance.index_data_path", out)
    display = f"{entry.path}/{rel}"
    if path is None:
        return
    if not os.path.lexists(path):
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
        data = load_json_payload(path, display)
    except AgentpackError as exc:
        out.append(Finding.error("ECP133", f"index payload: {exc.message}", file=display, line=exc.line))
        return
    art.has_payload = True
    if data == {}:
        out.append(
            Finding.warning(
                "ECP133",
                f"index '{entry.id}': {display} is empty ({{}}): the index offers no portable payload "
                "(spec 6.1.1: the index directory SHOULD contain one)",
                file=display,
                hint="run agentpack ecp build",
            )
        )
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
    out.extend(schema_store().validate(PAYLOAD_SCHEMAS[fmt], _sample_payload(data), file=display, code="ECP133"))
    art.data = data

    def where(pointer: str) -> dict[str, Any]:
        return {"file": display, "pointer": pointer}

    check_times(data, ("/created_at", "/built_at"), out, where)
    for i, source in enumerate(data.get("sources") or []):
        check_times(
            source, tuple(f"/revision/{k}" for k in REVISION_TIMES), out, lambda p, i=i: where(f"/sources/{i}{p}")
        )
    if data.get("index_id") != entry.id:
        out.append(
            Finding.error(
                "ECP132",
                f"payload index_id '{data.get('index_id')}' differs from the index entry '{entry.id}'",
                **where("/index_id"),
            )
        )
    expects_vector = entry.type == "vector"
    if expects_vector != (fmt == "vector-index-v1") and entry.type in ("vector", "keyword"):
        out.append(
            Finding.error(
                "ECP132", f"index '{entry.id}' has type '{entry.type}' but a {fmt} payload", **where("/format")
            )
        )
    if fmt == "vector-index-v1":
        emb = as_dict(as_dict(data.get("config")).get("embedding"))
        check_dimensions(emb.get("dimensions"), out, **where("/config/embedding/dimensions"))
        desc_emb = as_dict((art.descriptor or {}).get("embedding"))
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
    documents = data.get("documents")
    for doc in list(documents.values())[:2000] if isinstance(documents, dict) else []:
        path_value = doc.get("path") if isinstance(doc, dict) else None
        if isinstance(path_value, str):
            try:
                check_relative(path_value)
            except AgentpackError as exc:
                out.append(Finding.error("ECP138", f"document path: {exc.message}", **where("/documents")))
                break


def _load_chunks(pack: ExpertPack, art: IndexArtifacts, prov: dict, out: list[Finding]) -> None:
    entry = art.entry
    rel = prov.get("chunks_path") or "chunks.jsonl"
    path = _under_index(art, rel, "provenance.chunks_path", out)
    display = f"{entry.path}/{rel}"
    if path is None:
        return
    kind = file_kind(path)
    if kind is not None:
        what = "is missing" if kind.startswith("nothing") else f"is {kind}, not a file"
        out.append(
            Finding.error("ECP134", f"index '{entry.id}': provenance map {display} {what}", file=entry.descriptor)
        )
        return
    art.has_chunks = True
    known = {s.source_id for s in pack.sources} | {ARTIFACT_SOURCE_ID}
    store = schema_store()
    art.chunks_complete = True
    try:
        handle = open_regular(path)
    except OSError as exc:
        out.append(Finding.error("ECP137", f"cannot read: {exc.strerror or exc}", file=display))
        return
    with handle:
        for n, raw in enumerate(handle, 1):
            if art.chunk_lines >= CHUNK_SAMPLE:
                art.chunks_complete = False
                break
            if not raw.strip():
                continue
            art.chunk_lines += 1
            try:
                record = jsonio.loads(raw, file=display)
            except jsonio.JsonError as exc:
                out.append(Finding.error("ECP137", exc.message, file=display, line=n))
                continue
            if isinstance(record, dict):
                art.chunk_records.append((n, record))
            problems = store.validate(CHUNK_SCHEMA, record, file=display, code="ECP137")
            out.extend(f.model_copy(update={"line": n}) for f in problems)
            if problems or not isinstance(record, dict):
                continue
            check_times(
                record,
                tuple(f"/revision/{k}" for k in REVISION_TIMES),
                out,
                lambda p, n=n: {"file": display, "line": n, "pointer": p},
            )
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


def _check_built(art: IndexArtifacts, prov: dict, out: list[Finding]) -> None:
    """A placeholder index (no document, no provenance record) is a warning; the payload files of a
    built index must be what its payload says (ECP180)."""
    data, entry = art.data, art.entry
    if data is None or art.dir is None:
        return
    documents = data.get("documents")
    listed = len(documents) if isinstance(documents, dict) else 0
    stats = as_dict(data.get("stats")).get("chunks")
    built = listed > 0 or art.chunk_lines > 0 or (isinstance(stats, int) and stats > 0)
    display = f"{entry.path}/{prov.get('index_data_path') or 'index_data.json'}"
    if not built:
        out.append(
            Finding.warning(
                "ECP136",
                f"index '{entry.id}' is a placeholder: it holds no chunk and answers nothing until it is built",
                file=display,
                hint="run agentpack ecp build",
            )
        )
        return
    if art.has_chunks and art.chunk_lines == 0:
        out.append(
            Finding.error(
                "ECP180",
                f"index '{entry.id}': {entry.path}/{prov.get('chunks_path') or 'chunks.jsonl'} is empty, "
                f"but the index is built ({listed or stats} chunks)",
                file=display,
                hint="run agentpack ecp build --rebuild",
            )
        )
    rows = listed or art.chunk_lines
    fmt = data.get("format")
    if fmt == "sqlite-fts-index-v1":
        sqlite_cfg = as_dict(data.get("sqlite"))
        rel = str(sqlite_cfg.get("path") or fts.DB_NAME)
        target = _under_index(art, rel, "sqlite.path", out)
        if target is None:
            return
        if not os.path.lexists(target):
            out.append(
                Finding.error(
                    "ECP134",
                    f"index '{entry.id}': SQLite database {rel} is missing",
                    file=display,
                    pointer="/sqlite/path",
                )
            )
            return
        problem = fts.check_database(target, str(sqlite_cfg.get("table") or fts.TABLE))
        if problem:
            out.append(
                Finding.error(
                    "ECP180",
                    f"index '{entry.id}': {rel} {problem}",
                    file=display,
                    pointer="/sqlite",
                    hint="run agentpack ecp build --rebuild",
                )
            )
    elif fmt == "vector-index-v1":
        config = as_dict(data.get("config"))
        vcfg = as_dict(config.get("vector"))
        rel = str(vcfg.get("vectors_path") or "vectors.jsonl")
        target = _under_index(art, rel, "config.vector.vectors_path", out)
        if target is None:
            return
        if not os.path.lexists(target):
            out.append(
                Finding.error(
                    "ECP134",
                    f"index '{entry.id}': vector payload {rel} is missing",
                    file=display,
                    pointer="/config/vector/vectors_path",
                )
            )
            return
        ids = [str(k) for k in documents] if isinstance(documents, dict) else []
        problem = _vector_problem(art.dir, rel, vcfg, as_dict(config.get("embedding")).get("dimensions"), rows, ids)
        if problem:
            out.append(
                Finding.error(
                    "ECP180",
                    f"index '{entry.id}': {problem}",
                    file=display,
                    pointer="/config/vector",
                    hint="run agentpack ecp build --rebuild",
                )
            )


def _vector_problem(
    index_dir: Path, rel: str, vcfg: dict[str, Any], dims: Any, rows: int, ids: list[str]
) -> str | None:
    """Why a vector payload does not hold ``rows`` vectors of ``dims`` values (``None`` when it does)."""
    target = index_dir / rel
    kind = file_kind(target)
    if kind is not None:
        return f"{rel} is {kind}, not a file"
    try:
        dims = vector.check_dimensions(dims, "config.embedding.dimensions")
        if target.suffix.lower() in (".npy", ".bin"):
            problem = vector.check_binary(target, vcfg, rows, dims)
            return f"{rel} {problem}" if problem else None
        vector.read_payload(index_dir, vcfg, dims, ids)
    except AgentpackError as exc:
        return exc.message
    return None
