"""Incremental builds give the same index contents as a full rebuild, for every format and payload."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from agentpack.io.clock import FixedClock

VECTOR_PAYLOADS = ["vectors.npy", "vectors.bin", "vectors.jsonl"]


def _set_payload(pack: Path, vectors_path: str) -> None:
    manifest = pack / "expert" / "EXPERT.yaml"
    text = manifest.read_text()
    fmt = ", vector_format: sparse-jsonl-v1" if vectors_path.endswith(".jsonl") else ""
    manifest.write_text(text.replace("vectors_path: vectors.npy}", f"vectors_path: {vectors_path}{fmt}}}"))


def _edit_corpus(pack: Path) -> dict[str, list[str]]:
    corpus = pack / "expert" / "sources" / "corpus"
    files = sorted(p for p in corpus.rglob("*") if p.is_file())
    edited, deleted = files[0], files[1]
    edited.write_text(edited.read_text() + "\nA new closing line about zebrafish_migration patterns.\n")
    deleted.unlink()
    (corpus / "docs" / "added-note.md").write_text("# Added\n\nThe brand-new page mentions zebrafish and tides.\n")
    rel = lambda p: p.relative_to(corpus).as_posix()  # noqa: E731
    return {"corpus": [rel(edited), rel(deleted), "docs/added-note.md"]}


def _fts_rows(index: Path) -> list[tuple]:
    con = sqlite3.connect(index / "fts.sqlite")
    try:
        return sorted(
            con.execute(
                "SELECT chunk_id, source_id, path, start_line, end_line, file_sha256, chunk_sha256, tokens FROM chunks"
            )
        )
    finally:
        con.close()


def _vectors(index: Path, name: str) -> np.ndarray:
    from agentpack_ecp.index.vector import VectorIndex

    return VectorIndex.load(index, index / "index_data.json").matrix


def _index_dirs(root: Path) -> dict[str, Path]:
    return {p.name: p for p in (root / "expert" / "context" / "indexes").iterdir() if p.is_dir()}


@pytest.mark.parametrize("vectors_path", VECTOR_PAYLOADS)
def test_incremental_build_equals_full_rebuild(example_pack: Path, tmp_path: Path, vectors_path: str) -> None:
    from agentpack_ecp.index.build import build_pack

    clock = FixedClock("2026-02-01T00:00:00Z")
    _set_payload(example_pack, vectors_path)
    build_pack(example_pack, rebuild=True, clock=clock)
    changed = _edit_corpus(example_pack)
    inc = build_pack(example_pack, out_dir=tmp_path / "inc", changed=changed, lock=False, clock=clock)
    full = build_pack(example_pack, out_dir=tmp_path / "full", rebuild=True, lock=False, clock=clock)
    assert all("incremental" in i for i in inc.indexes), inc.indexes
    assert all("incremental" not in i for i in full.indexes)
    assert all(
        i["incremental"]["added_chunks"] >= 2
        and i["incremental"]["removed_chunks"] >= 2
        and i["incremental"]["reused_chunks"] > 0
        for i in inc.indexes
    )
    a, b = _index_dirs(tmp_path / "inc"), _index_dirs(tmp_path / "full")
    assert sorted(a) == sorted(b) == ["corpus-fts", "corpus-keyword", "corpus-vector"]
    for name in a:
        for shared in ("chunks.jsonl", "texts.jsonl", "file_manifest.json", "index.json"):
            assert (a[name] / shared).read_bytes() == (b[name] / shared).read_bytes(), (name, shared)
    # keyword: the very same index_data.json (same chunk ids, term frequencies, dfs, lengths)
    kw_a, kw_b = (
        (a["corpus-keyword"] / "index_data.json").read_bytes(),
        (b["corpus-keyword"] / "index_data.json").read_bytes(),
    )
    assert kw_a == kw_b
    assert "zebrafish" in json.loads(kw_a)["terms"]
    cache_a, cache_b = (np.load(d["corpus-keyword"] / "agentpack-cache.npz") for d in (a, b))
    for array in ("vocab", "indptr", "post_doc", "post_tf", "doc_len"):
        assert np.array_equal(cache_a[array], cache_b[array]), array
    # sqlite: the same rows (chunk ids, token streams = term frequencies)
    assert _fts_rows(a["corpus-fts"]) == _fts_rows(b["corpus-fts"])
    # vector: the same vectors, row for row; the payload file itself is identical
    assert np.array_equal(_vectors(a["corpus-vector"], vectors_path), _vectors(b["corpus-vector"], vectors_path))
    assert (a["corpus-vector"] / vectors_path).read_bytes() == (b["corpus-vector"] / vectors_path).read_bytes()
    assert (a["corpus-vector"] / "index_data.json").read_bytes() == (
        b["corpus-vector"] / "index_data.json"
    ).read_bytes()


def test_incremental_indexes_answer_like_full_ones(example_pack: Path, tmp_path: Path) -> None:
    from agentpack_ecp.index.build import build_pack
    from agentpack_ecp.lifecycle.staging import staged_pack
    from agentpack_ecp.pack.manifest import load_pack
    from agentpack_ecp.query.response import query_pack
    from agentpack_ecp.query.retrieve import IndexCache

    clock = FixedClock("2026-02-01T00:00:00Z")
    build_pack(example_pack, rebuild=True, clock=clock)
    changed = _edit_corpus(example_pack)
    build_pack(example_pack, out_dir=example_pack / "inc", changed=changed, lock=False, clock=clock)
    build_pack(example_pack, out_dir=example_pack / "full", rebuild=True, lock=False, clock=clock)
    answers = {}
    for name in ("inc", "full"):
        staged, cache = staged_pack(load_pack(example_pack), name), IndexCache()
        answers[name] = [
            [
                c["chunk_id"]
                for c in query_pack(staged, {"question": q, "mode": mode}, clock=clock, cache=cache)["citations"]
            ]
            for q in ("zebrafish tides", "how are releases versioned")
            for mode in ("keyword", "fts", "vector")
        ]
    assert answers["inc"] == answers["full"]
    assert any(ids and "added-note.md" in ids[0] for ids in answers["inc"])


def test_stale_state_falls_back_to_a_full_build(example_pack: Path, tmp_path: Path) -> None:
    """A sidecar that no longer matches its files (e.g. an index rewritten by another tool) is not used."""
    from agentpack_ecp.index.build import build_pack

    build_pack(example_pack, rebuild=True)
    index = example_pack / "expert" / "context" / "indexes" / "corpus-keyword"
    with open(index / "texts.jsonl", "a") as handle:
        handle.write("\n")
    changed = _edit_corpus(example_pack)
    result = build_pack(example_pack, out_dir=tmp_path / "inc", changed=changed, lock=False)
    by_id = {i["index_id"]: i for i in result.indexes}
    assert "incremental" not in by_id["corpus-keyword"]
    assert "incremental" in by_id["corpus-fts"]


def test_unchanged_index_is_staged_as_hard_links(example_pack: Path, tmp_path: Path) -> None:
    from agentpack_ecp.index.build import build_pack

    build_pack(example_pack, rebuild=True)
    result = build_pack(example_pack, out_dir=tmp_path / "staged", lock=False)
    assert {i["status"] for i in result.indexes} == {"unchanged"}
    published = example_pack / "expert" / "context" / "indexes" / "corpus-fts" / "fts.sqlite"
    staged = tmp_path / "staged" / "expert" / "context" / "indexes" / "corpus-fts" / "fts.sqlite"
    assert staged.stat().st_ino == published.stat().st_ino
