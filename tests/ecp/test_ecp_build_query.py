"""Builds (formats, payload variants, atomicity, reuse) and the query contract of spec 6.3."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack.io.clock import FixedClock
from agentpack.io.errors import AgentpackError
from agentpack_ecp.index.build import build_pack
from agentpack_ecp.index.chunking import chunk_id, line_windows, parse_chunk_id, split_lines
from agentpack_ecp.index.tokenize import term_counts, tokenize
from agentpack_ecp.pack.manifest import load_pack
from agentpack_ecp.query.response import query_pack

INDEXES = Path("expert/context/indexes")


def _status(response: dict, index_id: str) -> str:
    return next(r["status"] for r in response["retrieval"]["indexes"] if r["index_id"] == index_id)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet="abc \n", min_size=0, max_size=40), max_size=30), st.integers(1, 60), st.integers(0, 70)
)
def test_line_windows_cover_every_line_and_advance(parts: list[str], max_chars: int, overlap: int) -> None:
    lines = split_lines("".join(parts))
    overlap = min(overlap, max_chars - 1)
    windows = line_windows(lines, max_chars, overlap)
    assert [w.text for w in windows] == ["".join(lines[w.start_line - 1 : w.end_line]) for w in windows]
    covered = {n for w in windows for n in range(w.start_line, w.end_line + 1)}
    assert covered == set(range(1, len(lines) + 1))
    assert all(b.end_line > a.end_line and b.start_line > a.start_line for a, b in itertools.pairwise(windows))


def _windows_by_definition(lines: list[str], max_chars: int, overlap: int) -> list[tuple[int, int]]:
    """The windows as the chunking rule states them, one line at a time: the longest run of whole lines
    from the start within ``max_chars`` (at least one line); the next starts at the earliest line after
    that start whose tail lines fit ``min(overlap, max_chars - the next new line's length)``."""
    out, i, n = [], 0, len(lines)
    while i < n:
        j, size = i + 1, len(lines[i])
        while j < n and size + len(lines[j]) <= max_chars:
            size, j = size + len(lines[j]), j + 1
        out.append((i + 1, j))
        if j >= n:
            break
        k, tail = j, 0
        while k - 1 > i and tail + len(lines[k - 1]) <= min(overlap, max_chars - len(lines[j])):
            k, tail = k - 1, tail + len(lines[k - 1])
        i = k
    return out


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(1, 9), max_size=40), st.integers(1, 24), st.integers(0, 24))
def test_line_windows_are_the_rule_one_line_at_a_time(lengths: list[int], max_chars: int, overlap: int) -> None:
    """The bisecting ``line_windows`` cuts exactly the windows of the rule (chunk ids depend on them),
    lines longer than a window and overlaps as long as a window included."""
    lines = ["x" * (n - 1) + "\n" for n in lengths]
    overlap = min(overlap, max_chars - 1)
    windows = line_windows(lines, max_chars, overlap)
    assert [(w.start_line, w.end_line) for w in windows] == _windows_by_definition(lines, max_chars, overlap)


@given(
    st.from_regex(r"[a-z_]{1,8}", fullmatch=True),
    st.from_regex(r"[a-z0-9/._-]{1,20}", fullmatch=True),
    st.integers(1, 999),
    st.integers(1, 999),
)
def test_chunk_ids_round_trip(source: str, path: str, a: int, b: int) -> None:
    assert parse_chunk_id(chunk_id(source, path, a, b)) == (source, path, a, b)


def test_tokenizer_keeps_whole_tokens_and_true_frequencies() -> None:
    assert tokenize("The parseHTTPResponse of read_file_v2") == [
        "parsehttpresponse",
        "parse",
        "http",
        "response",
        "read_file_v2",
        "read",
        "file",
    ]
    counts = term_counts("cache cache cacheDir the a")
    assert counts["cache"] == 3 and counts["cachedir"] == 1 and "the" not in counts


TEXTS = st.text(alphabet=st.sampled_from(list("aZ_9 .\n\tébQ\udcff-xyCamel")), max_size=40)


@given(st.lists(st.tuples(TEXTS, st.sampled_from(["a.py", "b/cache_dir.md", "x"])), max_size=8))
@settings(max_examples=150, deadline=None)
def test_the_corpus_term_matrix_counts_as_term_counts(docs: list[tuple[str, str]]) -> None:
    """The whole-corpus matrix (raw tokens split as bytes, sums in numpy) = per-chunk term_counts plus the path."""
    from agentpack_ecp.index.termmatrix import TermMatrix

    kept, matrix = TermMatrix.from_texts(docs)
    expected = []
    for i, (text, path) in enumerate(docs):
        counts = term_counts(text)
        if counts:
            counts.update(tokenize(path))
            expected.append((i, dict(counts)))
    assert kept == [i for i, _ in expected]
    got: list[dict[str, int]] = [{} for _ in kept]
    for t, term in enumerate(matrix.terms):
        for at in range(matrix.indptr[t], matrix.indptr[t + 1]):
            got[matrix.doc[at]][term] = int(matrix.tf[at])
    assert got == [counts for _, counts in expected]
    assert matrix.terms == sorted(matrix.terms)
    assert matrix.doc_len.tolist() == [sum(c.values()) for _, c in expected]


def test_all_three_formats_and_no_absolute_paths(example_pack: Path) -> None:
    result = build_pack(example_pack, rebuild=True, clock=FixedClock("2026-03-01T00:00:00Z"))
    assert {i["format"] for i in result.indexes} == {"keyword-index-v2", "sqlite-fts-index-v1", "vector-index-v1"}
    for name in ("corpus-keyword", "corpus-fts", "corpus-vector"):
        folder = example_pack / INDEXES / name
        for artifact in folder.iterdir():
            if artifact.suffix in (".json", ".jsonl"):
                assert str(example_pack) not in artifact.read_text(), artifact
        info = json.loads((folder / "build_info.json").read_text())
        assert info["built_at"] == "2026-03-01T00:00:00Z"
    data = json.loads((example_pack / INDEXES / "corpus-keyword" / "index_data.json").read_text())
    assert data["config"]["bm25"] == {"k1": 1.2, "b": 0.75}
    postings = data["terms"]["cache"]["postings"]
    caching = [tf for cid, tf in postings if cid.startswith("corpus::docs/caching.md")]
    assert caching and caching[0] >= 3
    matrix = np.load(example_pack / INDEXES / "corpus-vector" / "vectors.npy")
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0, atol=1e-5)


@pytest.mark.parametrize("payload", ["vectors.jsonl", "dense.jsonl", "vectors.bin", "big.npy"])
def test_vector_payload_variants_answer_alike(example_pack: Path, payload: str) -> None:
    manifest = example_pack / "expert" / "EXPERT.yaml"
    spec = {
        "vectors.jsonl": "{metric: cosine, vectors_path: vectors.jsonl}",
        "dense.jsonl": "{metric: cosine, vectors_path: dense.jsonl, vector_format: dense-jsonl-v1}",
        "vectors.bin": "{metric: cosine, vectors_path: vectors.bin, dtype: float64, endianness: big}",
        "big.npy": "{metric: cosine, vectors_path: big.npy, endianness: big}",
    }[payload]
    manifest.write_text(manifest.read_text().replace("{metric: cosine, vectors_path: vectors.npy}", spec))
    build_pack(example_pack, index_ids=["corpus-vector"])
    os.remove(example_pack / INDEXES / "corpus-vector" / "agentpack-cache.npz")
    response = query_pack(load_pack(example_pack), {"question": "prediction cache fingerprint", "mode": "vector"})
    assert _status(response, "corpus-vector") == "ok"
    assert response["chunks"][0]["path"] in ("docs/caching.md", "src/tidewater/station.py")


def test_query_vector_must_match_the_index_embedding(example_pack: Path) -> None:
    vec = [0.0] * 256
    vec[3] = 1.0
    bad = query_pack(
        load_pack(example_pack),
        {
            "question": "x",
            "mode": "vector",
            "query_vector": vec,
            "query_embedding": {"model": "other", "dimensions": 256},
        },
    )
    assert _status(bad, "corpus-vector") == "skipped" and "does not match" in bad["limitations"]
    ok = query_pack(
        load_pack(example_pack),
        {
            "question": "x",
            "mode": "vector",
            "query_vector": [[3, 2.0]],
            "query_embedding": {"model": "agentpack-hash-v1", "dimensions": 256},
        },
    )
    assert _status(ok, "corpus-vector") == "ok"


def test_response_contract(example_pack: Path) -> None:
    response = query_pack(
        load_pack(example_pack),
        {"question": "Which settings does tidewater.toml accept?", "top_k": 3},
        clock=FixedClock("2026-04-01T00:00:00Z"),
    )
    assert {"answer", "as_of", "citations", "chunks", "synthesis"} <= set(response)
    assert response["as_of"]["source_id"] == "corpus" and response["as_of"]["revision"]["hash"]
    assert response["synthesis"]["provider"] == "local"
    assert len(response["chunks"]) == 3 and response["retrieval"]["fusion"] == "rrf"
    for chunk in response["chunks"]:
        c = chunk["citation"]
        assert {
            "source_id",
            "source_type",
            "uri",
            "revision",
            "artifact_path",
            "chunk_id",
            "retrieved_at",
            "loc",
            "chunk_hash",
        } <= set(c)
        assert c["retrieved_at"] == "2026-04-01T00:00:00Z" and chunk["snippet"]
        assert parse_chunk_id(c["chunk_id"])[1] == c["artifact_path"] == chunk["path"]
    assert "[1]" in response["answer"]


def test_filters_and_modes(example_pack: Path) -> None:
    code = query_pack(load_pack(example_pack), {"question": "station constituents", "filters": {"path_prefix": "src/"}})
    assert code["chunks"] and all(c["path"].startswith("src/") for c in code["chunks"])
    none = query_pack(load_pack(example_pack), {"question": "station constituents", "filters": {"source_id": "nope"}})
    assert none["citations"] == []
    for mode, fmt in (("keyword", "keyword-index-v2"), ("fts", "sqlite-fts-index-v1")):
        response = query_pack(load_pack(example_pack), {"question": "cache", "mode": mode})
        used = [r for r in response["retrieval"]["indexes"] if r["status"] == "ok"]
        assert [r["format"] for r in used] == [fmt]
    with pytest.raises(AgentpackError, match="unknown mode"):
        query_pack(load_pack(example_pack), {"question": "x", "mode": "psychic"})


def test_snippets_come_from_the_index_after_sources_change(example_pack: Path) -> None:
    before = query_pack(load_pack(example_pack), {"question": "storm surge weather", "top_k": 1})["chunks"][0]
    (example_pack / "expert/sources/corpus/docs/accuracy.md").write_text("rewritten\n")
    after = query_pack(load_pack(example_pack), {"question": "storm surge weather", "top_k": 1})["chunks"][0]
    assert after["snippet"] == before["snippet"] and "storm surge" in after["snippet"]


def test_missing_index_is_reported_not_dropped(example_pack: Path) -> None:
    import shutil

    shutil.rmtree(example_pack / INDEXES / "corpus-fts")
    response = query_pack(load_pack(example_pack), {"question": "cache"})
    fts = next(r for r in response["retrieval"]["indexes"] if r["index_id"] == "corpus-fts")
    assert fts["status"] == "error" and "not built" in fts["reason"]
    assert "corpus-fts" in response["limitations"]


def test_interrupted_build_keeps_the_previous_index(example_pack: Path, tmp_path: Path) -> None:
    target = example_pack / INDEXES / "corpus-keyword" / "index_data.json"
    before = target.read_bytes()
    code = (  # stopped when every batch is spilled, before the merge: the spill files go with the staging folder
        "import sys, agentpack_ecp.index.stream as s\n"
        "def boom(*a, **kw): raise SystemExit(9)\n"
        "s.merge_runs = boom\n"
        "from agentpack_ecp.index.build import build_pack\n"
        f"build_pack({str(example_pack)!r}, rebuild=True)\n"
    )
    env = {**os.environ, "AGENTPACK_ECP_BUILD_BATCH_CHARS": "500"}
    proc = subprocess.run(
        [sys.executable, "-c", code], env=env, check=False, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 9
    assert not (example_pack / "expert" / "context" / ".staging").exists() or not list(
        (example_pack / "expert" / "context" / ".staging").iterdir()
    )
    assert target.read_bytes() == before
    assert not [p for p in (example_pack / INDEXES).iterdir() if p.name.startswith(".staging")]
    assert query_pack(load_pack(example_pack), {"question": "cache", "mode": "keyword"})["chunks"]


def test_unchanged_files_reuse_chunks_and_out_dir_stages(example_pack: Path, tmp_path: Path) -> None:
    (example_pack / "expert/sources/corpus/docs/new.md").write_text("# Tide tables\nPrinted tide tables.\n")
    result = build_pack(example_pack, index_ids=["corpus-keyword"], out_dir=tmp_path / "stage")
    staged = tmp_path / "stage" / INDEXES / "corpus-keyword"
    assert (staged / "index_data.json").is_file() and result.indexes[0]["status"] == "built"
    live = json.loads((example_pack / INDEXES / "corpus-keyword" / "build_info.json").read_text())
    assert live["stats"]["files"] == 8
    manifest_before = (example_pack / "expert" / "EXPERT.yaml").read_text()
    assert "new.md" not in manifest_before
    built = build_pack(example_pack, index_ids=["corpus-keyword"])
    assert built.indexes[0]["files"] == 9
    assert build_pack(example_pack, index_ids=["corpus-keyword"]).indexes[0]["status"] == "up-to-date"


def test_build_errors_are_located(example_pack: Path) -> None:
    manifest = example_pack / "expert" / "EXPERT.yaml"
    with pytest.raises(AgentpackError, match="no index with id"):
        build_pack(example_pack, index_ids=["nope"])
    manifest.write_text(manifest.read_text().replace("type: vector", "type: graph"))
    with pytest.raises(AgentpackError) as err:
        build_pack(example_pack)
    assert err.value.file == "expert/EXPERT.yaml" and err.value.line


@settings(max_examples=80, deadline=None)
@given(st.lists(st.sampled_from([*list("aZ_9 xY\n-é"), "The ", "getUser", "HTTP2", "a_b"]), max_size=30))
def test_query_tokens_are_the_indexed_terms(parts: list[str]) -> None:
    text = "".join(parts)
    assert set(tokenize(text)) == set(term_counts(text))


def test_term_matrix_of_texts() -> None:
    from agentpack_ecp.index.termmatrix import TermMatrix

    kept, m = TermMatrix.from_texts([("bb bb aa", "x"), ("", "x"), ("aa aa aa cc", "x")])
    assert kept == [0, 2]  # a text without terms is left out; a one-letter path adds no term
    assert m.terms == ["aa", "bb", "cc"] and m.indptr.tolist() == [0, 2, 3, 4]
    assert m.doc.tolist() == [0, 1, 0, 1] and m.tf.tolist() == [1, 3, 2, 1] and m.doc_len.tolist() == [3, 4]
    indptr, terms, tfs = m.by_doc()
    assert indptr.tolist() == [0, 2, 4] and terms.tolist() == [0, 1, 0, 2] and tfs.tolist() == [1, 2, 3, 1]


def test_vectorised_embedding_equals_the_per_chunk_one() -> None:
    from agentpack_ecp.index.embed import HashEmbedder
    from agentpack_ecp.index.termmatrix import TermMatrix

    texts = ["parse the HTTP response headers twice twice", "heap queue push pop", "zz"]
    embedder = HashEmbedder(64)
    _, matrix = TermMatrix.from_texts([(text, "x") for text in texts])
    for row, text in zip(embedder.embed_matrix(matrix), texts, strict=True):
        assert np.allclose(row, embedder.embed_counts(term_counts(text)), atol=1e-6)


def test_real_embedding_model_needs_its_extra(example_pack: Path, agentpack_host) -> None:
    pytest.importorskip("numpy")
    if __import__("importlib").util.find_spec("sentence_transformers") is not None:
        pytest.skip("sentence-transformers is installed here")
    manifest = example_pack / "expert" / "EXPERT.yaml"
    manifest.write_text(
        manifest.read_text().replace(
            "{model: agentpack-hash-v1, dimensions: 256, provider: local}",
            "{model: all-MiniLM-L6-v2, dimensions: 384, provider: sentence-transformers}",
        )
    )
    from agentpack.testing import run_cli

    result = run_cli(["ecp", "build", str(example_pack), "--index", "corpus-vector"])
    assert result.exit_code == 2
    assert "sentence_transformers" in result.stderr
    # the hint installs the extra's requirement with the tool that installed agentpack (pip, uv, pipx)
    hint = result.stderr.split("hint:", 1)[1]
    assert " install " in hint and "'sentence-transformers>=2.2'" in hint


def test_a_source_with_nothing_to_index_is_an_error(new_pack: Path) -> None:
    (new_pack / "expert/sources/docs/getting-started.md").unlink()
    (new_pack / "expert/sources/docs/logo.txt").write_bytes(b"\x00\x01binary")
    with pytest.raises(AgentpackError, match="no text file to index") as err:
        build_pack(new_pack, rebuild=True)
    assert err.value.file == "expert/EXPERT.yaml" and err.value.line


def test_fts_snippets_come_from_texts_jsonl(example_pack: Path) -> None:
    """Our FTS databases hold no second copy of the text: snippets are looked up in texts.jsonl by chunk id
    (the committed example still has an older database with a text column, read as before)."""
    import sqlite3

    from agentpack_ecp.index.build import build_pack

    build_pack(example_pack, rebuild=True, index_ids=["corpus-fts"])
    con = sqlite3.connect(example_pack / INDEXES / "corpus-fts" / "fts.sqlite")
    try:
        assert "text" not in {row[1] for row in con.execute("PRAGMA table_info(chunks)")}
    finally:
        con.close()
    texts = {
        json.loads(line)["chunk_id"]: json.loads(line)["text"]
        for line in (example_pack / INDEXES / "corpus-fts" / "texts.jsonl").read_text().splitlines()
    }
    before = query_pack(load_pack(example_pack), {"question": "storm surge weather", "mode": "fts", "top_k": 3})
    assert before["chunks"] and all(c["snippet"] == texts[c["citation"]["chunk_id"]] for c in before["chunks"])
    (example_pack / "expert/sources/corpus/docs/accuracy.md").write_text("rewritten\n")
    after = query_pack(load_pack(example_pack), {"question": "storm surge weather", "mode": "fts", "top_k": 3})
    assert [c["snippet"] for c in after["chunks"]] == [c["snippet"] for c in before["chunks"]]
    assert "limitations" not in after


def test_documents_template_writes_what_the_json_encoder_writes() -> None:
    from agentpack_ecp.index.chunkstore import COMPACT, Chunk
    from agentpack_ecp.index.keyword import documents

    chunks = [
        Chunk('src:a "quoted"\\path#1', "src", 'a "quoted"\\path', 1, 9, None, "c" * 64, "f" * 64),
        Chunk("src:é/ü\u2028.md#2", "sr\tc", "é/ü\u2028.md", 10, 20, None, "0" * 64, "1" * 64),
    ]
    expected = {
        c.chunk_id: {
            "source_id": c.source_id,
            "path": c.path,
            "start_line": c.start_line,
            "end_line": c.end_line,
            "file_sha256": c.file_sha256,
            "chunk_sha256": c.chunk_sha256,
            "length": n,
        }
        for c, n in zip(chunks, [7, 0], strict=True)
    }
    assert documents(chunks, [7, 0]) == COMPACT(expected)[1:-1]
