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
  configuration equal the current ones is left as is, and one whose previous build
  has the same configuration is patched (``incremental.py``): only files whose
  content hash changed are re-chunked; ``changed`` (``{source_id: paths}``) forces
  those files to be re-chunked;
* any other index is built in full in bounded memory (``stream.py``): one streaming
  pass per group of indexes with the same chunking and sources;
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
from agentpack.io.paths import resolve_under

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
from .chunkstore import Chunk, doc_arrays, write_common, write_json
from .embed import get_embedder
from .fileops import copy_file, link_tree
from .incremental import (
    Previous,
    dirty_files,
    merge_postings,
    merged_order,
    previous_vectors,
    reusable_runs,
    state_arrays,
)
from .stream import build_group, file_chunks, seal
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


def make_chunks(snaps: list[SourceSnapshot], chunking: dict[str, Any]) -> list[Chunk]:
    """Line-window chunks of every text of ``snaps``, sorted by chunk id (all in memory: for the few files an
    incremental build chunks again; a full build streams, ``stream.py``)."""
    chunks: list[Chunk] = []
    for snap in snaps:
        for path, text in snap.texts.items():
            chunks += file_chunks(snap.source_id, path, text, snap.manifest[path]["sha256"], chunking)
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
    inc: Increment,
) -> dict[str, Any]:
    """Write one index into ``out`` by patching the previous build (``inc``; ``chunks`` mixes reused
    chunks, ``Chunk.old``, and added ones; ``matrix`` is the merged term matrix for keyword indexes, unused
    otherwise). A full build streams instead (``stream.build_group``)."""
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
        out, chunks, sources, inc.prev.texts(), inc.prev.provenance_lines(sources)
    )
    arrays = {}
    state: dict[str, Any] = {}
    if fmt == "keyword-index-v2":
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
        copy_file(inc.prev.dir / fts.DB_NAME, out / fts.DB_NAME)
        old_rowids = inc.prev.state["rowids"]
        given = fts.patch(out / fts.DB_NAME, old_rowids[inc.removed].tolist(), inc.added, inc.added_matrix)
        new_rowid = {id(c): r for c, r in zip(inc.added, given, strict=False)}
        rowids = [int(old_rowids[c.old]) if c.old >= 0 else new_rowid[id(c)] for c in chunks]
        state["rowids"] = np.array(rowids, dtype=np.int64)
        head["sqlite"] = {"path": fts.DB_NAME, "table": fts.TABLE, "fts5": True}
        head["stats"] = {"chunks": len(chunks), "files": sum(len(s.texts) for s in snaps)}
        write_json(out / "index_data.json", head)
    else:
        embedder = get_embedder(config["embedding"])
        if hasattr(embedder, "embed_matrix"):
            vectors = embedder.embed_matrix(inc.added_matrix)
        else:
            vectors = embedder.embed_texts([c.text for c in inc.added])
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
        head["documents"] = {c.chunk_id: c.document() for c in chunks}
        write_json(out / "index_data.json", head, compact=True)
        head.pop("documents")
        arrays["chunk_ids"] = np.frombuffer("\n".join(c.chunk_id for c in chunks).encode("utf-8"), dtype=np.uint8)
    arrays.update(doc_arrays(chunks, sources, chunk_offsets, text_offsets))
    extra: dict[str, Any] = {}
    if fmt == "keyword-index-v2":
        extra["terms"] = int(len(arrays["indptr"]) - 1)
    extra["incremental"] = {
        "reused_chunks": int(len(chunks) - len(inc.added)),
        "added_chunks": len(inc.added),
        "removed_chunks": int(inc.removed.sum()),
    }
    state = state_arrays(chunks, text_offsets, **state)
    return seal(out, entry, config, snaps, head, arrays, state, len(chunks), extra)


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
        inc_memo: dict[str, tuple[list[Chunk], TermMatrix]] = {}
        rows: list[dict[str, Any]] = []
        groups: dict[str, list[dict[str, Any]]] = {}
        """Indexes to build in full, by chunking and sources: each group is written in one streaming pass."""
        for entry in entries:
            t0 = clock.monotonic()
            chunking = chunking_params(entry)
            config = _entry_config(entry, chunking, max_bytes)
            wanted = entry.raw.get("source_ids")
            entry_snaps = [s for s in snaps if not isinstance(wanted, list) or s.source_id in wanted]
            target = resolve_under(pack.root, entry.path)
            row: dict[str, Any] = {"index_id": entry.id, "format": entry.format, "path": entry.path}
            rows.append(row)
            if result.out_dir is None and not rebuild and not changed and _up_to_date(target, config, entry_snaps):
                log.info("index %s: up to date", entry.id)
                row["status"] = "up-to-date"
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
            created_at = _created_at(target) or built_at
            staged = stage / entry.path
            if staged.exists():
                shutil.rmtree(staged)
            staged.mkdir(parents=True)
            if staged_link:
                log.info("index %s: unchanged, linked into the staged build", entry.id)
                link_tree(target, staged)
                row.update(status="unchanged", linked=True)
            elif inc is not None:
                bar.phase(f"patching {entry.id} ({entry.format}): {len(chunks)} chunks")
                log.info("index %s: patching %s with %d chunks", entry.id, entry.format, len(chunks))
                stats = _write_index(staged, entry, config, chunks, matrix, entry_snaps, created_at, built_at, inc)
                built.append(entry)
                row.update(status="built", **stats)
            else:
                key = json.dumps([chunking, [s.source_id for s in entry_snaps]])
                groups.setdefault(key, []).append(
                    {
                        "out": staged,
                        "entry": entry,
                        "config": config,
                        "created_at": created_at,
                        "row": row,
                        "snaps": entry_snaps,
                    }
                )
                continue
            row["duration_s"] = round(clock.monotonic() - t0, 3)
        for targets in groups.values():
            t0 = clock.monotonic()
            lead = targets[0]
            group_snaps = lead["snaps"]
            ids = ", ".join(t["entry"].id for t in targets)
            bar.phase(f"writing {ids}", total=sum(len(s.texts) for s in group_snaps))
            log.info("indexes %s: writing in one pass", ids)
            all_stats = build_group(targets, group_snaps, lead["config"]["chunking"], stage, built_at, bar)
            for member, stats in zip(targets, all_stats, strict=True):
                member["row"].update(status="built", **stats, duration_s=round(clock.monotonic() - t0, 3))
                built.append(member["entry"])
        result.indexes.extend(rows)
        built.sort(key=entries.index)
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
