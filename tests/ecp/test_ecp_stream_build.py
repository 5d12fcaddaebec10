"""Full builds stream: the same artifacts whatever the batch size (spilled runs, k-way merge), equal to the
artifacts of the whole-corpus build they replaced (golden digests), and no debris when killed between batches."""

from __future__ import annotations

import hashlib
import json
import os
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack.io.clock import FixedClock

CLOCK = "2026-02-01T00:00:00Z"
EXTRA_INDEXES = """\
      - id: docs-bin
        type: vector
        path: expert/context/indexes/docs-bin
        descriptor: expert/context/indexes/docs-bin/index.json
        chunking: {max_chars: 1200, overlap_chars: 120}
        embedding: {model: agentpack-hash-v1, dimensions: 64, provider: local}
        vector: {metric: cosine, vectors_path: vectors.bin}
      - id: docs-jsonl
        type: vector
        path: expert/context/indexes/docs-jsonl
        descriptor: expert/context/indexes/docs-jsonl/index.json
        chunking: {max_chars: 1200, overlap_chars: 120}
        embedding: {model: hash-embedding-v1, dimensions: 32, provider: local}
        vector: {metric: cosine, vectors_path: vectors.jsonl, vector_format: sparse-jsonl-v1}
      - id: small-keyword
        type: keyword
        path: expert/context/indexes/small-keyword
        descriptor: expert/context/indexes/small-keyword/index.json
        chunking: {max_chars: 300, overlap_chars: 40}
"""
PORTABLE = ("index.json", "index_data.json", "chunks.jsonl", "texts.jsonl", "file_manifest.json")
"""Files whose bytes are compared with the golden digests (the payloads and caches are compared between builds)."""
GOLDEN = {
    "docs-bin/chunks.jsonl": "dca522560cc7898617a543cdef3d877454fdb0dfca16dd6bd68bd72bba49b570",
    "docs-bin/file_manifest.json": "16a5b5719bdb99ffae73c837cc6c270c473d7d7695c05f5e6d9bd10b1e79fcde",
    "docs-bin/index.json": "54d08b0bbbc30f049ff24dca55d7ab279de847f4daab67665076158ac18646e8",
    "docs-bin/index_data.json": "ecc67cfa6c01a2d8b76ab8294973fb5722ce97efbcad5ac0047bc543f4175524",
    "docs-bin/texts.jsonl": "6e7afd6a8cf65a0e32e7b9acdb8531203f4c4cb68bdce754512067f9f7582990",
    "docs-fts/chunks.jsonl": "dca522560cc7898617a543cdef3d877454fdb0dfca16dd6bd68bd72bba49b570",
    "docs-fts/file_manifest.json": "16a5b5719bdb99ffae73c837cc6c270c473d7d7695c05f5e6d9bd10b1e79fcde",
    "docs-fts/fts rows": "fc5cdb43830626d60b736125b00b9030855ba69e5e543a1c2ca12b6fa216235c",
    "docs-fts/index.json": "7b9d36e2206f131d81b9f8828fba8f12536aa50152ecc81d1d3e2f75d58bbecc",
    "docs-fts/index_data.json": "4bd080b2d8ca4ded2c00fd48c14482ef49670c755b885d724be1c0d178aab016",
    "docs-fts/texts.jsonl": "6e7afd6a8cf65a0e32e7b9acdb8531203f4c4cb68bdce754512067f9f7582990",
    "docs-jsonl/chunks.jsonl": "dca522560cc7898617a543cdef3d877454fdb0dfca16dd6bd68bd72bba49b570",
    "docs-jsonl/file_manifest.json": "16a5b5719bdb99ffae73c837cc6c270c473d7d7695c05f5e6d9bd10b1e79fcde",
    "docs-jsonl/index.json": "6370305133648dcc4d0d05308ae0fe5216f5100ed768e89b1d256bc23e9ffabd",
    "docs-jsonl/index_data.json": "15584b351f9778045cb35537b77951df29ff8df845e33e6b035e3d1d254c6854",
    "docs-jsonl/texts.jsonl": "6e7afd6a8cf65a0e32e7b9acdb8531203f4c4cb68bdce754512067f9f7582990",
    "docs-keyword/chunks.jsonl": "dca522560cc7898617a543cdef3d877454fdb0dfca16dd6bd68bd72bba49b570",
    "docs-keyword/file_manifest.json": "16a5b5719bdb99ffae73c837cc6c270c473d7d7695c05f5e6d9bd10b1e79fcde",
    "docs-keyword/index.json": "b3547b82e484e231ff26046201fe292882dbc4a7e75e0e9ae79ac1243f589d09",
    "docs-keyword/index_data.json": "39467aa3377e50da7ab04c055e5b0374e38898222f337e69b1bf609ada1d9357",
    "docs-keyword/texts.jsonl": "6e7afd6a8cf65a0e32e7b9acdb8531203f4c4cb68bdce754512067f9f7582990",
    "docs-vector/chunks.jsonl": "dca522560cc7898617a543cdef3d877454fdb0dfca16dd6bd68bd72bba49b570",
    "docs-vector/file_manifest.json": "16a5b5719bdb99ffae73c837cc6c270c473d7d7695c05f5e6d9bd10b1e79fcde",
    "docs-vector/index.json": "6686e2ea2632fcf92209c54ac89eb1a40ebccf1bb472ff7868099cd579bdfb6c",
    "docs-vector/index_data.json": "41acb9e4faa85aedb02259bcc4982334b2f92bc45a9369847d26e8b9f3f376b6",
    "docs-vector/texts.jsonl": "6e7afd6a8cf65a0e32e7b9acdb8531203f4c4cb68bdce754512067f9f7582990",
    "small-keyword/chunks.jsonl": "bc16fd9c14607c206e74b0fb352d9a665020ff71513e397ee7addbbf5582298a",
    "small-keyword/file_manifest.json": "16a5b5719bdb99ffae73c837cc6c270c473d7d7695c05f5e6d9bd10b1e79fcde",
    "small-keyword/index.json": "bde9cf8153e49c3750214c5ab1c403e4dfbe8607c40de1b7d999ccc6653ed118",
    "small-keyword/index_data.json": "e4c17e95ca9500f44426651839037a4c2ad7374868b51507a6707dc090069fcc",
    "small-keyword/texts.jsonl": "dba55291d6026f81f1a9bc1236a850776a1e39b859202a8dbfabab4d1e0dc5d6",
}
"""Digests of a build before streaming (the same files; a term without postings, which made
``index_data.json`` invalid JSON, left out)."""


def _words(rng: random.Random, n: int) -> str:
    vocab = [
        "parse_args",
        "HTTPServer",
        "json",
        "decode",
        "utf8Codec",
        "x",
        "the",
        "ZIP64",
        "über",
        "naïve",
        "rowid",
        "a1b2",
        "__init__",
        'Quoted"Name',
        "tab\there",
        "café",
    ] + [f"term{i}" for i in range(200)]
    return " ".join(rng.choice(vocab) for _ in range(n))


def make_corpus(root: Path, files: int = 90) -> None:
    """Deterministic files: code-like and prose lines, long lines, a file without terms, paths whose chunk ids
    interleave (``a`` and ``a#L1``), spaces and non-ASCII in paths."""
    rng = random.Random(28)
    names = [f"pkg/mod_{i:03d}.py" for i in range(files)] + [
        "a",
        "a#L1",
        "a#L1-x",
        "docs/read me.md",
        "docs/ünïcode.txt",
        "empty-terms.txt",
        "one-long-line.txt",
    ]
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if name == "empty-terms.txt":
            text = "-- ++ ::\n" * 5
        elif name == "one-long-line.txt":
            text = _words(rng, 900) + "\n"
        else:
            text = "\n".join(_words(rng, rng.randint(0, 25)) for _ in range(rng.randint(1, 160))) + "\n"
        path.write_text(text, encoding="utf-8")


def make_pack(root: Path) -> Path:
    from agentpack_ecp.pack.scaffold import scaffold

    scaffold(root)
    corpus = root / "expert" / "sources" / "docs"
    for path in sorted(corpus.rglob("*"), reverse=True):
        path.unlink() if path.is_file() else path.rmdir()
    make_corpus(corpus)
    manifest = root / "expert" / "EXPERT.yaml"
    text = manifest.read_text().replace('include: ["**/*.md", "**/*.txt"]', 'include: ["**"]')
    at = text.index("maintenance:\n")
    manifest.write_text(text[:at] + EXTRA_INDEXES + text[at:])
    return root


def _digests(index: Path) -> dict[str, str]:
    out = {
        name: hashlib.sha256((index / name).read_bytes()).hexdigest() for name in PORTABLE if (index / name).exists()
    }
    if (index / "fts.sqlite").exists():
        con = sqlite3.connect(index / "fts.sqlite")
        try:
            rows = con.execute("SELECT rowid, * FROM chunks ORDER BY rowid").fetchall()
        finally:
            con.close()
        out["fts rows"] = hashlib.sha256(json.dumps(rows).encode()).hexdigest()
    return out


def build_all(root: Path, out: Path, batch: str | None, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    from agentpack_ecp.index.build import build_pack

    if batch is None:
        monkeypatch.delenv("AGENTPACK_ECP_BUILD_BATCH_CHARS", raising=False)
    else:
        monkeypatch.setenv("AGENTPACK_ECP_BUILD_BATCH_CHARS", batch)
    build_pack(root, out_dir=out, rebuild=True, lock=False, clock=FixedClock(CLOCK))
    return {p.name: p for p in (out / "expert" / "context" / "indexes").iterdir()}


def test_streamed_build_equals_the_golden_digests(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built = build_all(make_pack(tmp_path / "pack"), tmp_path / "out", None, monkeypatch)
    found = {f"{name}/{f}": d for name in sorted(built) for f, d in sorted(_digests(built[name]).items())}
    assert found == GOLDEN
    for index in built.values():
        json.loads((index / "index_data.json").read_text())  # valid JSON


def _npz(path: Path) -> dict:
    import numpy as np

    with np.load(path) as data:
        return {name: data[name].tolist() for name in data.files}


def test_small_batches_spill_and_merge_to_the_same_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One chunk per batch (a run per file) and a fan-in of 4 (intermediate merges) give every file of a
    one-batch build, byte for byte (the caches: the same arrays)."""
    from agentpack_ecp.index import spill

    pack = make_pack(tmp_path / "pack")
    whole = build_all(pack, tmp_path / "whole", None, monkeypatch)
    merged: list[int] = []
    real = spill.merge_runs

    def counting(runs, folder):
        merged.append(len(runs))
        return real(runs, folder)

    monkeypatch.setattr(spill, "FAN_IN", 4)
    monkeypatch.setattr("agentpack_ecp.index.stream.merge_runs", counting)
    small = build_all(pack, tmp_path / "small", "1", monkeypatch)
    assert max(merged) > 4  # the intermediate merge ran
    assert sorted(whole) == sorted(small)
    for name, index in whole.items():
        files = sorted(p.name for p in index.iterdir())
        assert files == sorted(p.name for p in small[name].iterdir())
        for file in files:
            a, b = index / file, small[name] / file
            if file.endswith(".npz"):
                assert _npz(a) == _npz(b), (name, file)
            elif file == "build_info.json":
                info_a, info_b = json.loads(a.read_text()), json.loads(b.read_text())
                for info in (info_a, info_b):
                    info["artifacts"] = {k: v for k, v in info["artifacts"].items() if not k.endswith(".npz")}
                assert info_a == info_b, name
            else:
                assert a.read_bytes() == b.read_bytes(), (name, file)
    assert not list((tmp_path / "small").glob(".spill-*"))


def test_the_fts5_merges_held_off_during_a_build_are_back_at_their_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A build fills the table with FTS5's merges held off (``fts.BULK``); the database it leaves merges as
    FTS5 does by default when a refresh patches it."""
    built = build_all(make_pack(tmp_path / "pack"), tmp_path / "out", "2000", monkeypatch)
    con = sqlite3.connect(built["docs-fts"] / "fts.sqlite")
    try:
        config = dict(con.execute("SELECT k, v FROM chunks_config WHERE k IN ('automerge', 'crisismerge')"))
    finally:
        con.close()
    assert config == {"automerge": 4, "crisismerge": 16}


def test_a_bad_batch_setting_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from agentpack.io.errors import AgentpackError

    with pytest.raises(AgentpackError, match="AGENTPACK_ECP_BUILD_BATCH_CHARS must be a positive"):
        build_all(make_pack(tmp_path / "pack"), tmp_path / "out", "lots", monkeypatch)


def test_a_build_killed_between_batches_keeps_the_last_good_state(tmp_path: Path) -> None:
    """SIGKILL after a batch: the published indexes are untouched, the spill files are inside the killed
    build's staging folder only, and the next build removes it."""
    from agentpack_ecp.index.build import build_pack
    from agentpack_ecp.pack import layout
    from agentpack_ecp.pack.manifest import load_pack
    from agentpack_ecp.query.response import query_pack

    pack = make_pack(tmp_path / "pack")
    build_pack(pack)
    indexes = pack / "expert" / "context" / "indexes"
    before = {p.relative_to(indexes): p.read_bytes() for p in indexes.rglob("*") if p.is_file()}
    env = {
        **os.environ,
        "AGENTPACK_ECP_BUILD_BATCH_CHARS": "20000",
        "AGENTPACK_ECP_CRASH_AT": "*",
        "AGENTPACK_ECP_CRASH_SKIP": "3",
    }
    code = f"from agentpack_ecp.index.build import build_pack; build_pack({str(pack)!r}, rebuild=True)"
    proc = subprocess.run([sys.executable, "-c", code], env=env, check=False, capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr
    after = {p.relative_to(indexes): p.read_bytes() for p in indexes.rglob("*") if p.is_file()}
    assert after == before
    staging = layout.staging_root(pack)
    runs = list(staging.glob("*/.spill-*/**/*.run"))
    assert runs and all(staging in p.parents for p in runs)
    assert query_pack(load_pack(pack), {"question": "parse_args json", "mode": "keyword"})["chunks"]
    build_pack(pack, rebuild=True)
    assert not staging.exists() or not list(staging.iterdir())


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.dictionaries(st.text("abcxyz_09", min_size=1, max_size=4), st.integers(1, 3), max_size=12), max_size=9),
    st.integers(2, 4),
)
def test_merged_runs_equal_the_runs_concatenated_by_term(
    tmp_path_factory: pytest.TempPathFactory, runs: list[dict[str, int]], fan_in: int
) -> None:
    """Any runs (sorted terms, each with ``n`` postings of the run's doc ids), any fan-in: every term once, in
    order, with its postings from every run in run order."""
    import struct

    from agentpack_ecp.index import spill

    folder = tmp_path_factory.mktemp("runs")
    paths, expected = [], {}
    for r, run in enumerate(runs):
        records = []
        for term in sorted(run):
            docs = struct.pack(f"<{run[term]}i", *[r] * run[term])
            tfs = struct.pack(f"<{run[term]}i", *range(1, run[term] + 1))
            body = ",".join(f"[{r},{tf}]" for tf in range(1, run[term] + 1)).encode()
            records.append((term.encode(), docs, tfs, body))
            docs_so_far, tfs_so_far, bodies = expected.get(term.encode(), (b"", b"", []))
            expected[term.encode()] = (docs_so_far + docs, tfs_so_far + tfs, [*bodies, body])
        paths.append(spill.write_run(folder / f"{r}.run", records))
    old = spill.FAN_IN
    spill.FAN_IN = fan_in
    try:
        merged = [spill.joined(term, parts) for term, parts in spill.merge_runs(paths, folder)]
    finally:
        spill.FAN_IN = old
    assert [m[0] for m in merged] == sorted(expected)
    assert {m[0]: (m[1], m[2], m[3]) for m in merged} == {t: (d, f, b",".join(b)) for t, (d, f, b) in expected.items()}


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.dictionaries(st.text("abcxyz_09", min_size=1, max_size=4), st.integers(1, 4), max_size=14), max_size=9),
    st.integers(2, 4),
    st.integers(1, 5),
    st.integers(1, 6),
    st.integers(1, 12),
)
def test_merged_pages_equal_the_runs_concatenated_by_term(
    tmp_path_factory: pytest.TempPathFactory,
    runs: list[dict[str, int]],
    fan_in: int,
    page_terms: int,
    page_postings: int,
    merge_postings: int,
) -> None:
    """The FTS5 spill's numpy pages (``write_pages``: each run's doc ids offset by its base), any page size,
    any fan-in, any block size: blocks of ascending terms, every term once, with its postings from every
    run in run order."""
    from agentpack_ecp.index import spill

    patched = {
        "FAN_IN": fan_in,
        "PAGE_TERMS": page_terms,
        "PAGE_POSTINGS": page_postings,
        "MERGE_POSTINGS": merge_postings,
    }
    old = {name: getattr(spill, name) for name in patched}
    for name, value in patched.items():
        setattr(spill, name, value)
    try:
        expected, found, order = _merge_pages(spill, tmp_path_factory.mktemp("pages"), runs)
    finally:
        for name, value in old.items():
            setattr(spill, name, value)
    assert order == sorted(expected)
    assert found == expected


def _merge_pages(spill, folder: Path, runs: list[dict[str, int]]):
    """(expected postings by term, merged postings by term, merged terms in order) of ``runs``, each
    run's docs ``base, base + 1, ...`` (bases 10 apart) with tf = its rank + 1."""
    import numpy as np

    paths, expected, base = [], {}, 0
    for r, run in enumerate(runs):
        terms = sorted(run)
        indptr = np.cumsum([0] + [run[t] for t in terms])
        doc = np.concatenate([np.arange(run[t]) for t in terms]) if terms else np.zeros(0, int)
        tf = np.concatenate([np.full(run[t], r + 1) for t in terms]) if terms else np.zeros(0, int)
        for t in terms:
            old_docs, old_tfs = expected.get(t, ([], []))
            expected[t] = (old_docs + [base + d for d in range(run[t])], old_tfs + [r + 1] * run[t])
        paths.append(spill.write_pages(folder / f"{r}.run", [(terms, indptr, doc, tf)], base))
        base += 10
    found: dict[str, tuple[list[int], list[int]]] = {}
    order: list[str] = []
    for terms, indptr, doc, tf in spill.merge_pages(paths, folder):
        for t, term in enumerate(terms):
            order.append(term)
            found[term] = (doc[indptr[t] : indptr[t + 1]].tolist(), tf[indptr[t] : indptr[t + 1]].tolist())
    return expected, found, order


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="counts threads in /proc (Linux)")
@pytest.mark.parametrize(("preset", "expected"), [(None, "1"), ("3", "3")])
def test_numpy_gets_one_openblas_thread_unless_the_user_set_it(preset: str | None, expected: str) -> None:
    """The index package sets ``OPENBLAS_NUM_THREADS`` before numpy is imported (OpenBLAS's idle worker
    threads spin), so importing numpy through it starts no other thread; a value the user chose is kept."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if preset is not None:
        env["OPENBLAS_NUM_THREADS"] = preset
    code = (
        "import os\n"
        "import agentpack_ecp.index.build\n"
        "import numpy\n"
        "print(os.environ.get('OPENBLAS_NUM_THREADS'), len(os.listdir('/proc/self/task')))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60, check=True)
    value, threads = proc.stdout.split()
    assert value == expected
    if preset is None:
        assert threads == "1"
