"""Hostile packs, round 3 (issue 24): an index path SQLite would decode, links out of the pack, a damaged
cache sidecar. Each test drives the real CLI on a private copy of the conformance pack."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from agentpack.testing import run_cli

FTS = "expert/context/indexes/corpus-fts"
QUESTION = "How is the prediction cache invalidated?"


def _point_sqlite_path(pack: Path, rel: str) -> None:
    data_file = pack / FTS / "index_data.json"
    data = json.loads(data_file.read_text())
    data["sqlite"]["path"] = rel
    data_file.write_text(json.dumps(data, indent=2))


def test_a_percent_encoded_sqlite_path_never_opens_another_database(example_pack: Path, tmp_path: Path) -> None:
    """``%2e%2e`` passes a literal path check, then SQLite's URI parser decodes it to ``..``: the path is
    refused and the other pack's database is never read."""
    victim = tmp_path / "victim.sqlite"
    shutil.copy(example_pack / FTS / "fts.sqlite", victim)
    con = sqlite3.connect(victim)
    with con:
        con.execute("UPDATE chunks SET text = text || ' VICTIMSECRET'")
    con.close()
    rel = "/".join(["%2e%2e"] * 5) + "/victim.sqlite"  # from corpus-fts up to tmp_path, once decoded
    decoy = (example_pack / FTS).joinpath(*rel.split("/"))
    decoy.parent.mkdir(parents=True)
    shutil.copy(example_pack / FTS / "fts.sqlite", decoy)  # the literal path exists, so a path check passes
    _point_sqlite_path(example_pack, rel)

    checked = run_cli(["validate", example_pack, "--json"])
    assert checked.exit_code == 1
    assert "ECP110" in checked.stdout and "may not hold % ? or #" in checked.stdout
    answer = run_cli(["query", example_pack, QUESTION, "--mode", "fts", "--json"])
    assert "VICTIMSECRET" not in answer.stdout + answer.stderr  # the index is reported, the others answer
    assert "may not hold % ? or #" in answer.stdout


@pytest.mark.parametrize("rel", ["fts.sqlite?mode=rw", "fts.sqlite#x", "fts%2Esqlite"])
def test_uri_characters_in_an_index_path_are_refused(example_pack: Path, rel: str) -> None:
    _point_sqlite_path(example_pack, rel)
    checked = run_cli(["validate", example_pack, "--json"])
    assert checked.exit_code == 1
    assert "ECP110" in checked.stdout, checked.stdout


def test_a_database_is_opened_by_its_real_path_and_read_only(tmp_path: Path) -> None:
    """A file whose name SQLite would read as URI syntax is opened as itself, and never written."""
    from agentpack_ecp.pack.files import connect_readonly

    db = tmp_path / "a%2e%2e?mode=rw#frag.sqlite"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE t (a)")
    con.commit()
    con.close()
    ro = connect_readonly(db)
    try:
        assert ro.execute("SELECT name FROM sqlite_master").fetchall() == [("t",)]
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            ro.execute("INSERT INTO t VALUES (1)")
    finally:
        ro.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == [db.name]


KW = "expert/context/indexes/corpus-keyword"


def _damage_header(pack: Path, array: str, old: bytes, new: bytes) -> None:
    """Rewrite one array's ``.npy`` header in the sidecar, keeping every length (the zip stays readable)."""
    path = pack / KW / "agentpack-cache.npz"
    data = path.read_bytes()
    start = data.index(array.encode() + b".npy")
    at = data.index(old, data.index(b"\x93NUMPY", start))
    assert len(old) == len(new)
    path.write_bytes(data[:at] + new + data[at + len(old) :])


@pytest.mark.parametrize(
    ("array", "old", "new"),
    [
        ("doc_source", b"'shape': (10,)", b"'shape': (5,2)"),  # two dimensions where one is indexed
        ("doc_source", b"'descr': '<i4'", b"'descr': '<f4'"),  # floats where indexes are read
        ("chunk_offsets", b"'shape': (11,)", b"'shape': (99,)"),  # more items than bytes stored
        ("doc_source", b"'shape': (10,)", b"'shape': (-1,)"),
    ],
    ids=["two-dimensions", "floats", "truncated", "negative"],
)
def test_a_damaged_cache_sidecar_is_ignored(example_pack: Path, array: str, old: bytes, new: bytes) -> None:
    """The docs promise a damaged ``agentpack-cache.npz`` is ignored: the query answers from the portable files."""
    _damage_header(example_pack, array, old, new)
    answer = run_cli(["query", example_pack, QUESTION, "--mode", "keyword", "--json"])
    assert answer.exit_code == 0, answer.stdout + answer.stderr
    assert answer.json()["response"]["citations"]
    assert run_cli(["validate", example_pack]).exit_code == 0


def test_eval_names_an_unusable_index_and_its_file(example_pack: Path, tmp_path: Path) -> None:
    """A pack whose only index is a 1-byte ``fts.sqlite``: every case fails, and the output and the report
    say which index and which file (as ``query`` does), not only "0 citations"."""
    manifest = example_pack / "expert" / "EXPERT.yaml"
    text = manifest.read_text()
    start, end = text.index("      - id: corpus-keyword"), text.index("      - id: corpus-fts")
    vector, summaries = text.index("      - id: corpus-vector"), text.index("    summaries:")
    manifest.write_text(text[:start] + text[end:vector] + text[summaries:])
    (example_pack / FTS / "fts.sqlite").write_bytes(b"x")
    report = tmp_path / "report.json"
    result = run_cli(["eval", example_pack, "--no-record", "--report", report])
    assert result.exit_code == 1, result.stdout + result.stderr
    named = "index 'corpus-fts' error: fts.sqlite is not an SQLite database"
    assert named in result.stdout, result.stdout
    failed = [line for line in result.stdout.splitlines() if line.strip().startswith("FAIL ")]  # not the headline
    assert failed and all(named in line for line in failed), failed
    evaluation = json.loads(report.read_text())["evaluations"][0]
    assert any(named in f["message"] and f["code"] == "ECP302" for f in evaluation["findings"])
