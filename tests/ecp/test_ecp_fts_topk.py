"""The FTS5 top-k (``index/ftstopk.py``) returns exactly FTS5's ``ORDER BY bm25(), rowid LIMIT k``.

Seeded generated corpora (Zipf-like term frequencies, duplicated chunks so that scores tie, chunks of
very different lengths), built with the real writer (``fts.write`` + ``fts.add_bounds``), then patched
in place as a refresh does (``fts.patch``): every question's top k, rowids and scores, must equal what
FTS5 itself ranks, with and without source and path filters.
"""

from __future__ import annotations

import itertools
import json
import random
import sqlite3
from pathlib import Path

import pytest

from agentpack_ecp.index import fts, ftstopk
from agentpack_ecp.index.chunkstore import Chunk
from agentpack_ecp.index.termmatrix import TermMatrix

VOCAB = [f"w{i}" for i in range(60)] + ["parse", "line", "self", "data", "zebra_fish", "x2"]


def _chunks(rng: random.Random, n: int, start: int = 0) -> list[Chunk]:
    out: list[Chunk] = []
    for i in range(start, start + n):
        if out and rng.random() < 0.15:  # a duplicate body: equal scores, ordered by rowid
            text = out[rng.randrange(len(out))].text or ""
        else:
            length = rng.choice([3, 8, 20, 60, 200])
            text = " ".join(VOCAB[min(int(rng.paretovariate(0.8)) - 1, len(VOCAB) - 1)] for _ in range(length))
        path = f"{rng.choice(['src', 'docs', 'Src'])}/f{i % 17}.txt"
        out.append(Chunk(f"c{i}", rng.choice(["a", "b"]), path, 1, 2, text, f"h{i}", f"f{i}"))
    return out


def _matrix(chunks: list[Chunk]) -> tuple[list[Chunk], TermMatrix]:
    kept, matrix = TermMatrix.from_texts((c.text or "", c.path) for c in chunks)
    return [chunks[i] for i in kept], matrix


def _expected(con: sqlite3.Connection, terms: list[str], k: int, sources, prefixes) -> list[tuple[int, float]]:
    match = " OR ".join(f'"{t}"' for t in terms)
    rows = con.execute(
        "SELECT rowid, -bm25(chunks) AS s, source_id, path FROM chunks WHERE chunks MATCH ? ORDER BY s DESC, rowid",
        [match],
    ).fetchall()
    rows = [
        (r, s)
        for r, s, source, path in rows
        if (not sources or source in sources) and (not prefixes or path.startswith(tuple(prefixes)))
    ]
    return rows[:k]


def _index(directory: Path, rows: int) -> fts.FtsIndex:
    head = {"format": fts.FORMAT, "sqlite": {"path": fts.DB_NAME, "table": fts.TABLE}, "stats": {"chunks": rows}}
    (directory / "texts.jsonl").write_text("")
    return fts.FtsIndex(directory, head)


def _check_questions(index: fts.FtsIndex, db: Path, rng: random.Random) -> int:
    con = sqlite3.connect(db)
    checked = 0
    try:
        for _ in range(40):
            terms = list(dict.fromkeys(rng.sample(VOCAB, rng.randint(1, 6))))
            k = rng.choice([1, 3, 5, 20, 100])
            sources = rng.choice([None, None, ["a"]])
            prefixes = rng.choice([None, None, ["src/"], ["docs/f1"]])
            df = index._df(terms)
            kept = fts.informative(terms, df, index.rows)
            got = index._postings.top_k(terms, k, fts.informative, _filter(index, sources, prefixes))
            assert got is not None, "the side tables were not used"
            want = _expected(con, kept, k, sources, prefixes) if kept else []
            assert got == want, (terms, k, sources, prefixes)
            hits = index.search(terms, k, sources, prefixes)
            assert [(h["chunk_id"], s) for h, s in hits] == [
                (con.execute("SELECT chunk_id FROM chunks WHERE rowid = ?", [r]).fetchone()[0], s) for r, s in want
            ]
            checked += bool(want)
    finally:
        con.close()
    return checked


def _filter(index: fts.FtsIndex, sources, prefixes):
    if not sources and not prefixes:
        return None
    return lambda rowids: index._kept(set(sources or ()), tuple(prefixes or ()), rowids)


@pytest.mark.parametrize("seed", range(8))
def test_top_k_equals_fts5_ranking_after_build_and_patch(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    chunks, matrix = _matrix(_chunks(rng, rng.choice([30, 150, 400])))
    fts.write(tmp_path, chunks, matrix)
    fts.add_bounds(tmp_path / fts.DB_NAME, *ftstopk.one_block(matrix))
    index = _index(tmp_path, len(chunks))
    try:
        assert _check_questions(index, tmp_path / fts.DB_NAME, rng) > 10
    finally:
        index.close()
    # a refresh: some rows deleted, new ones inserted (longer rows move the mean length past the bounds' slack)
    removed = rng.sample(range(1, len(chunks) + 1), min(len(chunks) // 3, 40))
    added, added_matrix = _matrix(_chunks(rng, 25, start=10_000))
    for chunk in added[:5]:
        chunk.text = " ".join([chunk.text or ""] * 40)
    added, added_matrix = _matrix(added)
    fts.patch(tmp_path / fts.DB_NAME, removed, added, added_matrix)
    index = _index(tmp_path, len(chunks) - len(removed) + len(added))
    try:
        assert _check_questions(index, tmp_path / fts.DB_NAME, rng) > 10
    finally:
        index.close()


def test_side_tables_agree_with_a_full_build_after_patch(tmp_path: Path) -> None:
    """A patched database's stored postings equal those a build of the same rows writes."""
    rng = random.Random(99)
    chunks, matrix = _matrix(_chunks(rng, 120))
    fts.write(tmp_path, chunks, matrix)
    fts.add_bounds(tmp_path / fts.DB_NAME, *ftstopk.one_block(matrix))
    added, added_matrix = _matrix(_chunks(rng, 10, start=500))
    fts.patch(tmp_path / fts.DB_NAME, [2, 5, 7], added, added_matrix)
    con = sqlite3.connect(tmp_path / fts.DB_NAME)
    try:
        got = {
            t: (bytes(r), bytes(f), df) for t, r, f, df in con.execute("SELECT term, rows, tfs, df FROM ecp_postings")
        }
        want: dict[str, tuple[bytes, bytes, int]] = {}
        for rowid, tokens in con.execute("SELECT rowid, tokens FROM chunks ORDER BY rowid"):
            for term in dict.fromkeys(tokens.split()):
                r, f, df = want.get(term, (b"", b"", 0))
                want[term] = (
                    r + rowid.to_bytes(4, "little"),
                    f + tokens.split().count(term).to_bytes(4, "little"),
                    df + 1,
                )
    finally:
        con.close()
    assert got and all(want[t] == v for t, v in got.items())  # every stored term is exact
    # terms in more than RARE_DF rows are stored (the 10 added chunks may lift a rare term past it: FTS5
    # answers for that one until the next build)
    assert {t for t, v in want.items() if v[2] > ftstopk.RARE_DF + 10} <= set(got)
    assert not {t for t, v in got.items() if v[2] <= ftstopk.RARE_DF - 3}, "rare terms are not stored"


def test_stale_or_missing_side_tables_fall_back_to_fts5(tmp_path: Path) -> None:
    """Another writer (the reference runtime) adding a row makes the side tables stale: FTS5 answers."""
    rng = random.Random(5)
    chunks, matrix = _matrix(_chunks(rng, 80))
    fts.write(tmp_path, chunks, matrix)
    index = _index(tmp_path, len(chunks))
    try:
        assert index._postings.top_k(["w1"], 5, fts.informative, None) is None  # no side tables
        assert index.search(["w1"], 5, None, None)
    finally:
        index.close()
    fts.add_bounds(tmp_path / fts.DB_NAME, *ftstopk.one_block(matrix))
    con = sqlite3.connect(tmp_path / fts.DB_NAME)
    with con:
        con.execute(
            "INSERT INTO chunks(chunk_id, source_id, path, start_line, end_line, tokens) "
            "VALUES ('x', 'a', 'p', 1, 1, 'w1 w1 w1')"
        )
    con.close()
    index = _index(tmp_path, len(chunks) + 1)
    try:
        assert index._postings.top_k(["w1"], 5, fts.informative, None) is None
        assert "x" in [h["chunk_id"] for h, _ in index.search(["w1"], 3, None, None)]
    finally:
        index.close()


def test_averages_record_decodes_sqlite_varints() -> None:
    assert ftstopk._varints(bytes([0x05, 0x81, 0x00, 0xFF, 0x7F])) == [5, 128, 16383]
    nine = bytes([0xFF] * 8 + [0x01])
    assert ftstopk._varints(nine) == [((1 << 56) - 1) << 8 | 1]  # a 9th byte carries 8 bits


def test_built_pack_answers_fts_queries_through_the_side_tables(example_pack: Path) -> None:
    """A real build writes the side tables; a query of the built pack reads them (and gives hits)."""
    from agentpack_ecp.index.build import build_pack

    build_pack(example_pack, rebuild=True)
    for descriptor in (example_pack / "expert" / "context" / "indexes").glob("*/index_data.json"):
        head = json.loads(descriptor.read_text())
        if head.get("format") != fts.FORMAT:
            continue
        con = sqlite3.connect(descriptor.parent / fts.DB_NAME)
        try:
            assert ftstopk.has_tables(con)
        finally:
            con.close()
        index = fts.FtsIndex(descriptor.parent, head)
        try:
            terms = [index._con.execute("SELECT term FROM ecp_postings ORDER BY df DESC LIMIT 1").fetchone()[0]]
            assert index._postings.top_k(terms, 3, fts.informative, None)
        finally:
            index.close()
        return
    pytest.fail("the example pack has no FTS index")


def test_a_refreshed_pack_answers_exactly_from_patched_side_tables(example_pack: Path) -> None:
    """A real build, a source file edited and another added, a real refresh (staged copy patched,
    published): the side tables are current and the top k equals FTS5's ranking for every term of the
    corpus asked alone and in pairs."""
    from agentpack_ecp.index.build import build_pack
    from agentpack_ecp.lifecycle.refresh import refresh

    build_pack(example_pack, rebuild=True)
    docs = example_pack / "expert" / "sources" / "corpus" / "docs"
    edited = next(docs.glob("*.md"))
    edited.write_text(edited.read_text() + "\nCaching tides: the cache keeps tide tables warm.\n")
    (docs / "added.md").write_text("# Added\n\nA cache of tide tables, kept warm by the cache.\n")
    result = refresh(example_pack, no_evals=True)
    assert result["decision"] == "published" and result["strategy"] == "incremental", result
    folder = next(
        d.parent
        for d in (example_pack / "expert" / "context" / "indexes").glob("*/index_data.json")
        if json.loads(d.read_text()).get("format") == fts.FORMAT
    )
    index = fts.FtsIndex(folder, json.loads((folder / "index_data.json").read_text()))
    try:
        terms = [t for (t,) in index._con.execute("SELECT term FROM ecp_postings ORDER BY df DESC LIMIT 12")]
        terms += ["tide", "warm", "added"]
        questions = [[t] for t in terms] + [list(pair) for pair in itertools.pairwise(terms)]
        for question in questions:
            got = index._postings.top_k(question, 5, fts.informative, None)
            assert got is not None
            assert got == index._ranked(question, 5, None, None), question
    finally:
        index.close()
