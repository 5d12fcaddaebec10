"""Building a pack's indexes: sources -> line-window chunks -> index artifacts, atomically.

Public, stable API (reused by incremental refresh):

``build_pack(root, *, rebuild=False, index_ids=None, out_dir=None, changed=None,
clock=SYSTEM_CLOCK, lock=True, revisions=None) -> BuildResult``

* every selected index is written into ``expert/context/.staging/<run>/`` and all of them are
  swapped in together through the publish journal (``pack.journal``), so an interrupted build
  leaves the previous indexes, or (once the journal is written) the next command or query finishes
  it: never a mix; a killed build's staging folder is removed by the next build;
* ``out_dir``: write each index to ``out_dir / <entry path>`` instead, publish
  nothing and leave EXPERT.yaml alone (the caller publishes, e.g. after evals);
* without ``rebuild`` an index whose recorded source revisions and build
  configuration equal the current ones is left as is, and the chunks of files
  whose content hash did not change are copied from the previous index rather
  than re-chunked; ``changed`` (``{source_id: paths}``) forces those files to be
  re-chunked;
* ``snapshots`` (``{source_id: SourceSnapshot}``): sources already read (by change detection)
  at the default ``max_file_bytes``, not read again;
* ``revisions`` (``{source_id: revision}``) overrides what a source is read at
  (for git: which commit);
* ``lock`` takes ``expert/context/.lifecycle/lock`` (pass ``False`` when the
  caller already holds it);
* on success (and without ``out_dir``) ``sources[].revision`` in EXPERT.yaml is
  updated in place by the same journal, comments and formatting kept (``pack.revisions``).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
from collections.abc import Iterable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentpack.io import jsonio
from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.io.console import logger, progress
from agentpack.io.errors import AgentpackError
from agentpack.io.fsutil import file_lock
from agentpack.io.hashing import sha256_file, sha256_text
from agentpack.io.paths import resolve_under

from .. import __version__
from ..pack import journal, layout, leftovers
from ..pack.crashpoints import crashpoint
from ..pack.files import read_regular
from ..pack.layout import MANIFEST_PATH, lock_path
from ..pack.manifest import ExpertPack, IndexEntry, load_pack
from ..pack.schemas import MANIFEST_SCHEMA, schema_store
from ..pack.spec import REVISION_IDENTITY
from ..sources.recipes import DEFAULT_MAX_FILE_BYTES
from ..sources.snapshot import SourceSnapshot, snapshot_source
from ..sources.statcache import StatCache
from . import fts, keyword, vector
from .chunking import chunk_id, line_windows, split_lines
from .chunkstore import CHUNKS_NAME, TEXTS_NAME, Chunk, doc_arrays, read_jsonl, save_cache, write_common, write_json
from .embed import get_embedder
from .fileops import copy_file, link_tree
from .incremental import (
    Previous,
    dirty_files,
    merge_postings,
    merged_order,
    previous_vectors,
    reusable_runs,
    save_state,
    state_arrays,
)
from .termmatrix import TermMatrix
from .tokenize import TOKENIZER_ID

DEFAULT_MAX_CHARS = 4000
DEFAULT_OVERLAP = 200


@dataclass
class BuildResult:
    root: Path
    indexes: list[dict[str, Any]] = field(default_factory=list)
    revisions: dict[str, dict[str, Any]] = field(default_factory=dict)
    duration_s: float = 0.0
    out_dir: Path | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.root),
            "indexes": self.indexes,
            "revisions": self.revisions,
            "duration_s": round(self.duration_s, 3),
            "staged_in": str(self.out_dir) if self.out_dir else None,
        }


def chunking_params(entry: IndexEntry) -> dict[str, Any]:
    cfg = entry.chunking
    method = cfg.get("method", "line-window")
    if method not in ("line-window", "lines"):
        raise AgentpackError(
            f"index '{entry.id}': chunking method '{method}' is not supported (use line-window)", file=MANIFEST_PATH
        )
    max_chars = int(cfg.get("max_chars") or DEFAULT_MAX_CHARS)
    overlap = int(cfg.get("overlap_chars", DEFAULT_OVERLAP) or 0)
    overlap = max(0, min(overlap, max_chars - 1))
    return {
        "method": "line-window",
        "max_chars": max_chars,
        "overlap_chars": overlap,
        "language_hints": [h for h in cfg.get("language_hints") or [] if isinstance(h, str)],
    }


def _check_manifest(pack: ExpertPack) -> None:
    findings = schema_store().validate(MANIFEST_SCHEMA, pack.manifest, document=pack.manifest_doc, code="ECP100")
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more; run agentpack validate)" if len(errors) > 1 else ""
        raise AgentpackError(first.message + more, file=first.file, line=first.line)


def _select(pack: ExpertPack, index_ids: Iterable[str] | None) -> list[IndexEntry]:
    entries = pack.indexes
    if index_ids:
        wanted = list(index_ids)
        unknown = [i for i in wanted if i not in {e.id for e in entries}]
        if unknown:
            raise AgentpackError(
                f"no index with id {', '.join(map(repr, unknown))} in {MANIFEST_PATH}",
                hint="ids: " + ", ".join(e.id for e in entries),
            )
        entries = [e for e in entries if e.id in wanted]
    for entry in entries:
        if entry.format is None:
            raise AgentpackError(
                f"index '{entry.id}': type '{entry.type}' has no portable artifact format agentpack can build",
                file=MANIFEST_PATH,
                line=pack.manifest_doc.line_of(f"{entry.pointer}/type"),
                hint="declare separate keyword and vector indexes; queries fuse them (reciprocal-rank fusion)",
            )
    return entries


def _entry_config(entry: IndexEntry, chunking: dict[str, Any], max_file_bytes: int) -> dict[str, Any]:
    config: dict[str, Any] = {
        "tokenizer": TOKENIZER_ID,
        "chunking": chunking,
        "max_file_bytes": max_file_bytes,
        "path_terms": True,
    }
    if entry.format == "keyword-index-v2":
        config["bm25"] = dict(keyword.BM25)
    if entry.format == "vector-index-v1":
        config["embedding"] = get_embedder(entry.embedding).config()
        config["vector"] = vector.vector_config(entry.vector)
    return config


def _identity(revision: dict[str, Any]) -> dict[str, Any]:
    return {k: revision[k] for k in REVISION_IDENTITY if k in revision}


def _up_to_date(target: Path, config: dict[str, Any], snaps: list[SourceSnapshot]) -> bool:
    try:
        info = jsonio.loads(read_regular(target / "build_info.json"))
    except (OSError, ValueError):
        return False
    if info.get("config") != json.loads(json.dumps(config)):
        return False
    recorded = {s.get("source_id"): _identity(s.get("revision") or {}) for s in info.get("sources") or []}
    return recorded == {s.source_id: _identity(s.revision) for s in snaps} and all(
        (target / name).exists() for name in info.get("artifacts") or {}
    )


def _previous_chunks(target: Path, chunking: dict[str, Any]) -> dict[tuple[str, str, str], list[Chunk]]:
    """Chunks of the previous build by (source_id, path, file sha256), when its chunking was the same."""
    try:
        info = jsonio.loads(read_regular(target / "build_info.json"))
        if (info.get("config") or {}).get("chunking") != chunking:
            return {}
        records = read_jsonl(target / CHUNKS_NAME)
        texts = read_jsonl(target / TEXTS_NAME)
    except (OSError, ValueError):
        return {}
    found: dict[tuple[str, str, str], list[Chunk]] = {}
    for record, text in zip(records, texts, strict=False):
        if record.get("chunk_id") != text.get("chunk_id") or not text.get("file_sha256"):
            return {}
        loc = record["loc"]
        found.setdefault((record["source_id"], record["artifact_path"], text["file_sha256"]), []).append(
            Chunk(
                record["chunk_id"],
                record["source_id"],
                record["artifact_path"],
                loc["start_line"],
                loc["end_line"],
                text["text"],
                record["chunk_hash"],
                text["file_sha256"],
            )
        )
    return found


def make_chunks(
    snaps: list[SourceSnapshot], chunking: dict[str, Any], previous=None, changed=None, progress=None
) -> list[Chunk]:
    """Line-window chunks of every text of ``snaps``, sorted by chunk id."""
    previous = previous or {}
    chunks: list[Chunk] = []
    for snap in snaps:
        forced = set((changed or {}).get(snap.source_id) or ())
        for path, text in snap.texts.items():
            file_sha = snap.manifest[path]["sha256"]
            reused = previous.get((snap.source_id, path, file_sha)) if path not in forced else None
            if reused is not None:
                chunks.extend(reused)
            else:
                for w in line_windows(split_lines(text), chunking["max_chars"], chunking["overlap_chars"]):
                    chunks.append(
                        Chunk(
                            chunk_id(snap.source_id, path, w.start_line, w.end_line),
                            snap.source_id,
                            path,
                            w.start_line,
                            w.end_line,
                            w.text,
                            sha256_text(w.text),
                            file_sha,
                        )
                    )
            if progress is not None:
                progress.advance()
    chunks.sort(key=lambda c: c.chunk_id)
    return chunks


def chunk_counts(chunks: list[Chunk]) -> tuple[list[Chunk], TermMatrix]:
    """Term counts per chunk (plus the path's terms once) as a ``TermMatrix``; chunks without terms are dropped."""
    kept, matrix = TermMatrix.from_texts((c.text or "", c.path) for c in chunks)
    return [chunks[i] for i in kept], matrix


@dataclass
class Increment:
    """How an incremental build patches the previous build (``incremental.py``)."""

    prev: Any
    removed: Any
    """A bool per previous chunk: dropped (its file changed or is gone)."""
    added: list[Chunk]
    added_matrix: TermMatrix
    """Term counts of ``added`` (rows in ``added`` order)."""


def _write_index(
    out: Path,
    entry: IndexEntry,
    config: dict[str, Any],
    chunks: list[Chunk],
    matrix,
    snaps: list[SourceSnapshot],
    created_at: str,
    built_at: str,
    inc: Increment | None = None,
) -> dict[str, Any]:
    """Write one index into ``out``: from ``chunks``/``matrix`` (a full build), or by patching the
    previous build (``inc``; ``chunks`` then mixes reused chunks, ``Chunk.old``, and added ones;
    ``matrix`` is the merged term matrix for keyword indexes, unused otherwise)."""
    import numpy as np

    sources = [s.meta() for s in snaps]
    fmt = entry.format
    head: dict[str, Any] = {
        "format": fmt,
        "index_id": entry.id,
        "created_at": created_at,
        "built_at": built_at,
        "sources": sources,
        "config": config,
    }
    chunk_offsets, text_offsets = write_common(
        out, chunks, sources, inc.prev.texts() if inc else None, inc.prev.provenance_lines(sources) if inc else None
    )
    arrays = {}
    extra_prov: dict[str, str] = {}
    state: dict[str, Any] = {}
    if fmt == "keyword-index-v2":
        previous = None
        if inc is not None:
            matrix, new_to_old, changed = matrix
            previous = (
                inc.prev.dir / "index_data.json",
                inc.prev.state["term_starts"],
                new_to_old,
                reusable_runs(new_to_old, changed),
            )
        arrays = keyword.write(out, head, chunks, matrix, previous)
        state["term_starts"] = arrays.pop("term_starts")
    elif fmt == "sqlite-fts-index-v1":
        if inc is None:
            rowids = fts.write(out, chunks, matrix)
            fts.add_bounds(out / fts.DB_NAME, matrix)
        else:
            copy_file(inc.prev.dir / fts.DB_NAME, out / fts.DB_NAME)
            old_rowids = inc.prev.state["rowids"]
            given = fts.patch(out / fts.DB_NAME, old_rowids[inc.removed].tolist(), inc.added, inc.added_matrix)
            new_rowid = {id(c): r for c, r in zip(inc.added, given, strict=False)}
            rowids = [int(old_rowids[c.old]) if c.old >= 0 else new_rowid[id(c)] for c in chunks]
        state["rowids"] = np.array(rowids, dtype=np.int64)
        head["sqlite"] = {"path": fts.DB_NAME, "table": fts.TABLE, "fts5": True}
        head["stats"] = {"chunks": len(chunks), "files": sum(len(s.texts) for s in snaps)}
        write_json(out / "index_data.json", head)
        extra_prov["sqlite_path"] = fts.DB_NAME
    else:
        embedder = get_embedder(config["embedding"])
        source_matrix = inc.added_matrix if inc else matrix
        source_chunks = inc.added if inc else chunks

        if hasattr(embedder, "embed_matrix"):
            vectors = embedder.embed_matrix(source_matrix)
        else:
            vectors = embedder.embed_texts([c.text for c in source_chunks])
        if inc is not None:
            old = previous_vectors(inc.prev, config["vector"], int(config["embedding"]["dimensions"]))
            full = np.zeros((len(chunks), vectors.shape[1] if len(vectors) else old.shape[1]), dtype=np.float32)
            new_row = {id(c): j for j, c in enumerate(inc.added)}
            olds = np.array([c.old for c in chunks], dtype=np.int64)
            reused = olds >= 0
            full[reused] = old[olds[reused]]
            fresh = np.flatnonzero(~reused)
            if len(fresh):
                full[fresh] = vectors[[new_row[id(chunks[i])] for i in fresh.tolist()]]
            vectors = full
        vector.write(out, config["vector"], [c.chunk_id for c in chunks], vectors)
        if config["vector"]["vectors_path"].endswith(".jsonl"):
            state["vectors"] = np.asarray(vectors, dtype=np.float32)
        head["documents"] = {
            c.chunk_id: {
                "source_id": c.source_id,
                "path": c.path,
                "start_line": c.start_line,
                "end_line": c.end_line,
                "file_sha256": c.file_sha256,
                "chunk_sha256": c.chunk_sha256,
            }
            for c in chunks
        }
        write_json(out / "index_data.json", head, compact=True)
        head.pop("documents")
        arrays["chunk_ids"] = np.frombuffer("\n".join(c.chunk_id for c in chunks).encode("utf-8"), dtype=np.uint8)
        extra_prov["vectors_path"] = config["vector"]["vectors_path"]
    descriptor = {
        "index_id": entry.id,
        "type": entry.type,
        "created_at": created_at,
        "built_at": built_at,
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
        {"format": "ecp-file-manifest-v2", "built_at": built_at, "sources": {s.source_id: s.manifest for s in snaps}},
        compact=True,
    )
    arrays.update(doc_arrays(chunks, sources, chunk_offsets, text_offsets))
    arrays["head"] = np.frombuffer(json.dumps(head).encode("utf-8"), dtype=np.uint8)
    depends = ["index_data.json", CHUNKS_NAME, TEXTS_NAME] + (
        [config["vector"]["vectors_path"]] if fmt == "vector-index-v1" else []
    )
    save_cache(out, arrays, depends)
    save_state(
        out,
        state_arrays(chunks, text_offsets, **state),
        depends + (["fts.sqlite"] if fmt == "sqlite-fts-index-v1" else []),
    )
    artifacts = {name: sha256_file(out / name) for name in sorted(os.listdir(out)) if (out / name).is_file()}
    stats: dict[str, Any] = {
        "chunks": len(chunks),
        "files": sum(len(s.texts) for s in snaps),
        "skipped_files": sum(1 for s in snaps for r in s.manifest.values() if r["skipped"]),
    }
    if fmt == "keyword-index-v2":
        stats["terms"] = int(len(arrays["indptr"]) - 1)
    if inc is not None:
        stats["incremental"] = {
            "reused_chunks": int(len(chunks) - len(inc.added)),
            "added_chunks": len(inc.added),
            "removed_chunks": int(inc.removed.sum()),
        }
    write_json(
        out / "build_info.json",
        {
            "index_id": entry.id,
            "type": entry.type,
            "format": fmt,
            "created_at": created_at,
            "built_at": built_at,
            "tool": {"name": "agentpack-ecp", "version": __version__},
            "sources": sources,
            "config": config,
            "stats": stats,
            "artifacts": artifacts,
        },
    )
    return stats


def _increment(
    target: Path,
    entry: IndexEntry,
    config: dict[str, Any],
    entry_snaps: list[SourceSnapshot],
    chunking: dict[str, Any],
    changed,
    memo: dict[str, Any],
):
    """(chunks, matrix, Increment) patching the previous build at ``target``, or ``None`` (full build)."""
    prev = Previous.load(target, str(entry.format), config)
    if prev is None:
        return None
    removed, parts = dirty_files(prev, entry_snaps, changed)
    key = json.dumps([chunking, sorted((p.source_id, sorted(p.texts)) for p in parts)])
    if key not in memo:
        memo[key] = chunk_counts(make_chunks(parts, chunking))
    added, added_matrix = memo[key]
    chunks, remap, added_pos = merged_order(prev.kept_chunks(removed), list(added), len(prev.chunk_ids))
    inc = Increment(prev, removed, list(added), added_matrix)
    matrix = None
    if entry.format == "keyword-index-v2":
        matrix = merge_postings(prev, removed, remap, added_matrix, added_pos, len(chunks))
    return chunks, matrix, inc


def build_pack(
    root: str | Path,
    *,
    rebuild: bool = False,
    index_ids: Iterable[str] | None = None,
    out_dir: str | Path | None = None,
    changed: Mapping[str, Iterable[str]] | None = None,
    clock: Clock = SYSTEM_CLOCK,
    lock: bool = True,
    revisions: dict[str, dict[str, Any]] | None = None,
    snapshots: dict[str, SourceSnapshot] | None = None,
) -> BuildResult:
    """Build the pack's indexes (see the module docstring)."""
    pack = load_pack(root)
    _check_manifest(pack)
    entries = _select(pack, index_ids)
    if not entries:
        raise AgentpackError(
            f"{MANIFEST_PATH} declares no index to build",
            file=MANIFEST_PATH,
            hint="add context.artifacts.indexes[] (see agentpack ecp init)",
        )
    started = clock.monotonic()
    result = BuildResult(pack.root, out_dir=Path(out_dir).resolve() if out_dir else None)
    guard = file_lock(lock_path(pack.root), what=f"pack {pack.root.name}") if lock else nullcontext()
    with guard, progress(f"building {pack.root.name}", total=len(pack.sources)) as bar:
        if result.out_dir is None:
            if journal.recover(pack.root) is not None:
                pack = load_pack(pack.root)
                entries = _select(pack, index_ids)
            leftovers.remove(pack.root, [e.path for e in pack.indexes])
        _build_locked(
            pack,
            entries,
            result,
            bar,
            rebuild=rebuild,
            changed=changed,
            clock=clock,
            revisions=revisions,
            snapshots=snapshots,
        )
    result.duration_s = clock.monotonic() - started
    return result


def _build_locked(
    pack: ExpertPack,
    entries: list[IndexEntry],
    result: BuildResult,
    bar: Any,
    *,
    rebuild: bool,
    changed: Mapping[str, Iterable[str]] | None,
    clock: Clock,
    revisions: dict[str, dict[str, Any]] | None,
    snapshots: dict[str, SourceSnapshot] | None,
) -> None:
    """Build ``entries`` into ``result.out_dir`` (a refresh's staging) or a run of our own that the
    publish journal swaps in as a whole (the caller holds the pack lock); ``bar`` shows the progress."""
    log = logger(__name__)
    run = f"{layout.STAGING}/{clock.now():%Y%m%dT%H%M%SZ}-build-{secrets.token_hex(3)}"
    stage = result.out_dir or pack.root / run
    built: list[IndexEntry] = []
    try:
        max_bytes = max([int(e.raw.get("max_file_bytes") or 0) for e in entries] + [0]) or DEFAULT_MAX_FILE_BYTES
        given = {k: v for k, v in (snapshots or {}).items() if k not in (revisions or {})}
        if max_bytes != DEFAULT_MAX_FILE_BYTES:
            given = {}
        stat_cache = None  # read only for a source the caller did not snapshot (a refresh did them all)
        snaps = []
        for s in pack.sources:
            bar.update(description=f"scanning source {s.source_id}")
            snap = given.get(s.source_id)
            if snap is None:
                stat_cache = stat_cache or StatCache.for_pack(pack.root)
                snap = snapshot_source(
                    pack,
                    s,
                    clock=clock,
                    max_file_bytes=max_bytes,
                    revision=(revisions or {}).get(s.source_id),
                    stat_cache=stat_cache,
                )
            snaps.append(snap)
            log.info(
                "source %s: %d files in scope, %d text", s.source_id, len(snaps[-1].manifest), len(snaps[-1].texts)
            )
            bar.advance()
        if stat_cache is not None:
            stat_cache.save()
        for snap, source in zip(snaps, pack.sources, strict=False):
            result.revisions[snap.source_id] = snap.revision
            if not snap.texts:
                skipped = len(snap.manifest)
                raise AgentpackError(
                    f"source '{snap.source_id}' has no text file to index ({skipped} in scope, all skipped as "
                    "binary or too large)"
                    if skipped
                    else f"source '{snap.source_id}' has no file in its scope",
                    file=MANIFEST_PATH,
                    line=pack.manifest_doc.line_of(f"{source.pointer}/scope"),
                    hint="check the source's uri and scope.include/exclude",
                )
        built_at = clock.iso()
        chunk_memo: dict[str, tuple[list[Chunk], TermMatrix]] = {}
        inc_memo: dict[str, tuple[list[Chunk], TermMatrix]] = {}
        for entry in entries:
            t0 = clock.monotonic()
            chunking = chunking_params(entry)
            config = _entry_config(entry, chunking, max_bytes)
            wanted = entry.raw.get("source_ids")
            entry_snaps = [s for s in snaps if not isinstance(wanted, list) or s.source_id in wanted]
            target = resolve_under(pack.root, entry.path)
            if result.out_dir is None and not rebuild and not changed and _up_to_date(target, config, entry_snaps):
                log.info("index %s: up to date", entry.id)
                result.indexes.append(
                    {"index_id": entry.id, "format": entry.format, "path": entry.path, "status": "up-to-date"}
                )
                continue
            staged_link = (
                result.out_dir is not None
                and not rebuild
                and not changed_here(changed, entry_snaps)
                and _up_to_date(target, config, entry_snaps)
            )
            inc = None
            if not rebuild and not staged_link and target.is_dir():
                bar.phase(f"{entry.id}: chunking the changed files")
                found = _increment(target, entry, config, entry_snaps, chunking, changed, inc_memo)
                if found is not None:
                    chunks, matrix, inc = found
            if inc is None and not staged_link:
                key = json.dumps([chunking, [s.source_id for s in entry_snaps]])
                if key not in chunk_memo:
                    previous = {} if rebuild else _previous_chunks(target, chunking)
                    bar.phase(f"chunking for {entry.id}", total=sum(len(s.texts) for s in entry_snaps))
                    made = make_chunks(entry_snaps, chunking, previous, changed, bar)
                    bar.phase(f"counting the terms of {len(made)} chunks for {entry.id}")
                    chunk_memo[key] = chunk_counts(made)
                chunks, matrix = chunk_memo[key]
            created_at = _created_at(target) or built_at
            staged = stage / entry.path
            if staged.exists():
                shutil.rmtree(staged)
            staged.mkdir(parents=True)
            if staged_link:
                log.info("index %s: unchanged, linked into the staged build", entry.id)
                link_tree(target, staged)
                stats = {"linked": True}
            else:
                how = "patching" if inc is not None else "writing"
                bar.phase(f"{how} {entry.id} ({entry.format}): {len(chunks)} chunks")
                log.info("index %s: %s %s with %d chunks", entry.id, how, entry.format, len(chunks))
                stats = _write_index(staged, entry, config, chunks, matrix, entry_snaps, created_at, built_at, inc)
                built.append(entry)
            result.indexes.append(
                {
                    "index_id": entry.id,
                    "format": entry.format,
                    "path": entry.path,
                    "status": "unchanged" if staged_link else "built",
                    **stats,
                    "duration_s": round(clock.monotonic() - t0, 3),
                }
            )
    except BaseException:
        if result.out_dir is None:
            shutil.rmtree(stage, ignore_errors=True)
        raise
    if result.out_dir is None:
        _publish(pack, run, built, result.revisions, clock)


def _publish(
    pack: ExpertPack, run: str, built: list[IndexEntry], revisions: dict[str, dict[str, Any]], clock: Clock
) -> None:
    """Swap every index of this build in at once through the publish journal, with the new revisions."""
    crashpoint("build.after_stage")
    if not built:
        shutil.rmtree(pack.root / run, ignore_errors=True)
        return
    steps = [journal.plan_step(pack.root, e.path, f"{run}/{e.path}", f"{run}/.replaced/{e.path}") for e in built]
    record = {
        "action": "build",
        "run_id": run.rsplit("/", 1)[-1],
        "started_at": clock.iso(),
        "steps": steps,
        "revisions": revisions,
        "state": None,
        "cleanup": run,
    }
    try:
        journal.start(pack.root, record)
    except BaseException:
        if not layout.journal_path(pack.root).exists():  # nothing was swapped: the staged run is of no use
            shutil.rmtree(pack.root / run, ignore_errors=True)
        raise


def changed_here(changed: Mapping[str, Iterable[str]] | None, snaps: list[SourceSnapshot]) -> bool:
    """Whether ``changed`` names a file of one of ``snaps``' sources."""
    return any((changed or {}).get(s.source_id) for s in snaps)


def _created_at(target: Path) -> str | None:
    try:
        value = jsonio.loads(read_regular(target / "index.json")).get("created_at")
    except (OSError, ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None
