"""Never a traceback, never a wrong verdict: bad input in every file of a pack is a located finding or
a clear error (exit 1 or 2), through the real CLI (issue 13).

Each case damages one file of a private copy of the conformance pack, then runs ``validate``,
``validate --strict``, ``query`` and ``eval``; none may exit 3, ``validate`` must name the expected
code, and a damaged index must not break the query (its index is reported, the others answer).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from agentpack.testing import run_cli

POLICY = "expert/maintenance/policy.json"
SUITE = "expert/evals/conformance.yaml"
KW = "expert/context/indexes/corpus-keyword"
FTS = "expert/context/indexes/corpus-fts"
VEC = "expert/context/indexes/corpus-vector"
SUMMARY = "expert/context/summaries/overview.md"
QUESTION = "How is the prediction cache invalidated?"


def _write(pack: Path, rel: str, data: str | bytes) -> None:
    path = pack / rel
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()
    path.write_bytes(data if isinstance(data, bytes) else data.encode())


def _folder(pack: Path, rel: str) -> None:
    (pack / rel).unlink()
    (pack / rel).mkdir()


def _dangling(pack: Path, rel: str) -> None:
    (pack / rel).unlink()
    (pack / rel).symlink_to("nowhere")


def _loop(pack: Path, rel: str) -> None:
    (pack / rel).unlink()
    (pack / rel).symlink_to((pack / rel).name)


def _fifo(pack: Path, rel: str) -> None:
    """A FIFO in the file's place: a reader that opened it would wait for a writer forever."""
    (pack / rel).unlink()
    os.mkfifo(pack / rel)


def _sub(pack: Path, rel: str, old: str, new: str) -> None:
    text = (pack / rel).read_text()
    assert old in text, (rel, old)
    (pack / rel).write_text(text.replace(old, new, 1))


def _no_table(pack: Path) -> None:
    _write(pack, f"{FTS}/fts.sqlite", b"")
    con = sqlite3.connect(pack / FTS / "fts.sqlite")
    con.execute("CREATE TABLE other (a)")
    con.commit()
    con.close()


DEEP = "[" * 5000 + "]" * 5000
BINARY = b"\x00\xff\xfe" * 100
# name -> (damage, the code validate must report)
CASES: dict[str, tuple[Callable[[Path], None], str]] = {
    "policy nested 5000 deep": (lambda p: _write(p, POLICY, DEEP), "ECP140"),
    "policy NaN": (lambda p: _sub(p, POLICY, '"max_update_duration_seconds": 120', '"x": NaN'), "ECP140"),
    "policy 1e999": (lambda p: _sub(p, POLICY, '"max_update_duration_seconds": 120', '"x": 1e999'), "ECP140"),
    "policy is a folder": (lambda p: _folder(p, POLICY), "ECP140"),
    "policy dangling link": (lambda p: _dangling(p, POLICY), "ECP111"),
    "policy looping link": (lambda p: _loop(p, POLICY), "ECP111"),
    "policy binary": (lambda p: _write(p, POLICY, BINARY), "ECP140"),
    "suite nested 5000 deep": (lambda p: _write(p, SUITE, "a: " + DEEP), "ECP150"),
    "suite .nan": (lambda p: _sub(p, SUITE, "min_citations: 1", "min_citations: .nan"), "ECP150"),
    "suite .inf": (lambda p: _sub(p, SUITE, "min_citations: 1", "min_citations: .inf"), "ECP150"),
    "suite description a list": (
        lambda p: _sub(p, SUITE, "suite_version:", "description: [1, 2]\nsuite_version:"),
        "ECP150",
    ),
    "suite is a folder": (lambda p: _folder(p, SUITE), "ECP150"),
    "suite dangling link": (lambda p: _dangling(p, SUITE), "ECP111"),
    "suite binary": (lambda p: _write(p, SUITE, BINARY), "ECP150"),
    "chunks.jsonl is a folder": (lambda p: _folder(p, f"{KW}/chunks.jsonl"), "ECP134"),
    "chunks.jsonl binary": (lambda p: _write(p, f"{KW}/chunks.jsonl", BINARY), "ECP137"),
    "chunks.jsonl empty": (lambda p: _write(p, f"{KW}/chunks.jsonl", ""), "ECP180"),
    "chunks.jsonl NaN": (lambda p: _sub(p, f"{KW}/chunks.jsonl", '"start_line":1', '"start_line":NaN'), "ECP137"),
    "SKILL.md missing": (lambda p: (p / "SKILL.md").unlink(), "ECP103"),
    "SKILL.md is a folder": (lambda p: _folder(p, "SKILL.md"), "ECP103"),
    "SKILL.md dangling link": (lambda p: _dangling(p, "SKILL.md"), "ECP103"),
    "fts.sqlite empty": (lambda p: _write(p, f"{FTS}/fts.sqlite", b""), "ECP180"),
    "fts.sqlite 1 byte": (lambda p: _write(p, f"{FTS}/fts.sqlite", b"\n"), "ECP180"),
    "fts.sqlite truncated": (
        lambda p: _write(p, f"{FTS}/fts.sqlite", (p / FTS / "fts.sqlite").read_bytes()[:5000]),
        "ECP180",
    ),
    "fts.sqlite corrupt": (lambda p: _write(p, f"{FTS}/fts.sqlite", b"SQLite format 3\x00" + b"\xff" * 8000), "ECP180"),
    "fts.sqlite without its table": (_no_table, "ECP180"),
    "vectors.npy empty": (lambda p: _write(p, f"{VEC}/vectors.npy", b""), "ECP180"),
    "vectors.npy truncated": (
        lambda p: _write(p, f"{VEC}/vectors.npy", (p / VEC / "vectors.npy").read_bytes()[:3000]),
        "ECP180",
    ),
    "vectors.npy garbage": (lambda p: _write(p, f"{VEC}/vectors.npy", b"\x93NUMPY" + b"\xff" * 100), "ECP180"),
    "vectors.npy wrong shape": (lambda p: np.save(p / VEC / "vectors.npy", np.zeros((3, 7), dtype="<f4")), "ECP180"),
    "embedding.dimensions absurd": (
        lambda p: _sub(p, "expert/EXPERT.yaml", "dimensions: 256", "dimensions: 1000000000000"),
        "ECP129",
    ),
    "payload dimensions absurd": (
        lambda p: _sub(p, f"{VEC}/index_data.json", '"dimensions": 256', '"dimensions": 1000000000000'),
        "ECP129",
    ),
    "timestamp not RFC 3339": (
        lambda p: _sub(p, "expert/EXPERT.yaml", '"2026-11-22T11:35:35Z"', '"yesterday"'),
        "ECP124",
    ),
    "payload NaN": (lambda p: _sub(p, f"{KW}/index_data.json", '"k1": 1.2', '"k1": NaN'), "ECP133"),
    "payload nested 5000 deep": (lambda p: _write(p, f"{KW}/index_data.json", DEEP), "ECP133"),
    "descriptor nested 5000 deep": (lambda p: _write(p, f"{KW}/index.json", DEEP), "ECP131"),
    "descriptor is a folder": (lambda p: _folder(p, f"{KW}/index.json"), "ECP131"),
    "payload is a folder": (lambda p: _folder(p, f"{KW}/index_data.json"), "ECP133"),
    "EXPERT.yaml missing": (lambda p: (p / "expert/EXPERT.yaml").unlink(), "PACK"),
    "EXPERT.yaml is a folder": (lambda p: _folder(p, "expert/EXPERT.yaml"), "PACK"),
    "EXPERT.yaml dangling link": (lambda p: _dangling(p, "expert/EXPERT.yaml"), "PACK"),
    "EXPERT.yaml nested 5000 deep": (lambda p: _write(p, "expert/EXPERT.yaml", "a: " + DEEP), "PACK"),
    "EXPERT.yaml .nan": (lambda p: _sub(p, "expert/EXPERT.yaml", "dimensions: 256", "dimensions: .nan"), "PACK"),
    "SKILL.md binary": (lambda p: _write(p, "SKILL.md", BINARY), "SKL002"),
    "summary is a folder": (lambda p: _folder(p, SUMMARY), "ECP111"),
    "summary binary": (lambda p: _write(p, SUMMARY, BINARY), "ECP111"),
    "playbook is a folder": (lambda p: _folder(p, "expert/maintenance/PLAYBOOK.md"), "ECP111"),
    "chunks.jsonl looping link": (lambda p: _loop(p, f"{KW}/chunks.jsonl"), "ECP134"),
    "chunks.jsonl nested 5000 deep": (lambda p: _write(p, f"{KW}/chunks.jsonl", DEEP + "\n"), "ECP137"),
    "chunks.jsonl truncated": (
        lambda p: _write(p, f"{KW}/chunks.jsonl", (p / KW / "chunks.jsonl").read_bytes()[:700]),
        "ECP137",
    ),
    "fts.sqlite is a folder": (lambda p: _folder(p, f"{FTS}/fts.sqlite"), "ECP180"),
    "vectors.npy is a folder": (lambda p: _folder(p, f"{VEC}/vectors.npy"), "ECP180"),
    "vectors.npy dangling link": (lambda p: _dangling(p, f"{VEC}/vectors.npy"), "ECP180"),
    "index folder is a file": (lambda p: (shutil.rmtree(p / KW), (p / KW).write_text("x")), "ECP134"),
    "EXPERT.yaml is a FIFO": (lambda p: _fifo(p, "expert/EXPERT.yaml"), "PACK"),
    "SKILL.md is a FIFO": (lambda p: _fifo(p, "SKILL.md"), "ECP103"),
    "policy is a FIFO": (lambda p: _fifo(p, POLICY), "ECP140"),
    "suite is a FIFO": (lambda p: _fifo(p, SUITE), "ECP150"),
    "summary is a FIFO": (lambda p: _fifo(p, SUMMARY), "ECP111"),
    "descriptor is a FIFO": (lambda p: _fifo(p, f"{KW}/index.json"), "ECP131"),
    "payload is a FIFO": (lambda p: _fifo(p, f"{KW}/index_data.json"), "ECP133"),
    "chunks.jsonl is a FIFO": (lambda p: _fifo(p, f"{KW}/chunks.jsonl"), "ECP134"),
    "fts.sqlite is a FIFO": (lambda p: _fifo(p, f"{FTS}/fts.sqlite"), "ECP180"),
    "vectors.npy is a FIFO": (lambda p: _fifo(p, f"{VEC}/vectors.npy"), "ECP180"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_damaged_file_is_a_finding_never_a_crash(example_pack: Path, name: str) -> None:
    damage, code = CASES[name]
    damage(example_pack)
    for strict in ([], ["--strict"]):
        result = run_cli(["validate", example_pack, "--json", *strict])
        assert result.exit_code == 1, (name, result.stdout, result.stderr)
        findings = [f for item in result.json()["items"] for f in item["findings"]]
        assert code in {f["code"] for f in findings if f["severity"] == "error"}, (name, findings)
        for f in findings:  # relative to the pack root, so reporters can resolve them (SARIF, -o github)
            if f["code"].startswith("ECP"):  # the core's SKL findings name their file as it was read
                assert f["file"] and not Path(f["file"]).is_absolute() and ".." not in Path(f["file"]).parts, f
            assert (example_pack / f["file"]).parent.is_dir(), f
    answer = run_cli(["query", example_pack, QUESTION, "--json"])
    assert answer.exit_code in (0, 1, 2) and "internal error" not in answer.stderr, (name, answer.stderr)
    if answer.exit_code == 0:
        assert answer.json()["response"]["citations"], name
    evaluated = run_cli(["eval", example_pack, "--json", "--no-record"])
    assert evaluated.exit_code in (0, 1, 2) and "internal error" not in evaluated.stderr, (name, evaluated.stderr)
    json.loads(evaluated.stdout)


def test_a_skill_with_an_unrelated_expert_folder_stays_a_skill(tmp_path: Path) -> None:
    """Only ECP's own parts under expert/ (EXPERT.yaml, maintenance/policy.json, evals/, context/) make
    a skill folder an expert pack; a pack that lost its EXPERT.yaml is invalid, not a plain skill."""
    skill = tmp_path / "notes-skill"
    (skill / "expert").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: notes-skill\ndescription: Notes by an expert.\n---\n\n# Notes\n")
    (skill / "expert" / "notes.md").write_text("# Notes\n")
    result = run_cli(["validate", skill, "--json"])
    assert result.exit_code == 0 and result.json()["items"][0]["format"] == "agent-skill", result.stdout
    (skill / "expert" / "evals").mkdir()
    result = run_cli(["validate", skill, "--json"])
    assert result.exit_code == 1, result.stdout
    (finding,) = result.json()["items"][0]["findings"]
    assert finding["code"] == "PACK" and "EXPERT.yaml not found" in finding["message"]


@pytest.mark.parametrize(
    ("damage", "reason"),
    [
        (lambda raw: raw[:1000], "holds 1000 bytes"),
        (lambda raw: b"", "holds 0 bytes"),
        (lambda raw: raw * 2, "expected"),
    ],
    ids=["truncated", "empty", "too long"],
)
def test_damaged_bin_vectors_are_a_finding(example_pack: Path, damage, reason: str) -> None:
    """A raw ``.bin`` payload (``dense-bin-v1``) is checked against its declared shape from its size."""
    _sub(example_pack, "expert/EXPERT.yaml", "vectors_path: vectors.npy", "vectors_path: vectors.bin")
    built = run_cli(["ecp", "build", example_pack, "--rebuild", "--index", "corpus-vector", "--json"])
    assert built.exit_code == 0, built.stdout
    payload = example_pack / VEC / "vectors.bin"
    payload.write_bytes(damage(payload.read_bytes()))
    (example_pack / VEC / "agentpack-cache.npz").unlink()
    result = run_cli(["validate", example_pack, "--json"])
    assert result.exit_code == 1, result.stdout
    (finding,) = [f for item in result.json()["items"] for f in item["findings"]]
    assert finding["code"] == "ECP180" and reason in finding["message"] and finding["pointer"] == "/config/vector"
    response = run_cli(["query", example_pack, QUESTION, "--mode", "vector", "--json"]).json()["response"]
    (status,) = [r for r in response["retrieval"]["indexes"] if r["index_id"] == "corpus-vector"]
    assert status["status"] == "error" and reason in status["reason"], status


@pytest.mark.parametrize(
    "rel",
    [f"{KW}/texts.jsonl", f"{FTS}/texts.jsonl", f"{KW}/agentpack-cache.npz", f"{KW}/build_info.json",
     f"{KW}/file_manifest.json", "expert/context/.lifecycle/state.json"],
)  # fmt: skip
def test_a_fifo_for_a_private_file_never_blocks(example_pack: Path, rel: str) -> None:
    """agentpack's own files in a pack (sidecars, build records, lifecycle state) are read without
    blocking: a FIFO in their place is a damaged file, so every command answers (an unreadable
    lifecycle state stops the lifecycle commands with an error naming it)."""
    (example_pack / rel).parent.mkdir(parents=True, exist_ok=True)
    (example_pack / rel).unlink(missing_ok=True)
    os.mkfifo(example_pack / rel)
    for argv in (
        ["validate", example_pack, "--json"],
        ["query", example_pack, QUESTION, "--json"],
        ["eval", example_pack, "--json", "--no-record"],
        ["ecp", "status", example_pack, "--json"],
        ["ecp", "refresh", example_pack, "--dry-run", "--json"],
    ):
        result = run_cli(argv)
        lifecycle = argv[0] == "ecp" and "state.json" in rel
        assert result.exit_code in ((2,) if lifecycle else (0, 1)), (argv, result.stdout, result.stderr)
        assert "state.json" in result.json()["error"]["file"] if lifecycle else result.json()["ok"] is not None
    packaged = run_cli(["ecp", "package", example_pack, "-o", example_pack.parent / "p.zip", "--format", "json"])
    if rel.startswith("expert/context/.lifecycle/"):
        assert packaged.exit_code == 0, packaged.stdout  # never packaged
    else:
        assert packaged.exit_code == 2 and "special file" in packaged.json()["error"]["message"], packaged.stdout
        assert not (example_pack.parent / "p.zip").exists()


@pytest.mark.parametrize("k1", ["Infinity", "NaN", "1e999", '"abc"', "-1", "1e300"])
def test_unusable_bm25_parameters_are_refused(example_pack: Path, k1: str) -> None:
    """The keyword payload is read as strict JSON and its BM25 parameters checked, also when the
    runtime's cache is stale: the index is reported, never ranked with NaN scores."""
    _sub(example_pack, f"{KW}/index_data.json", '"k1": 1.2', f'"k1": {k1}')
    (example_pack / KW / "agentpack-cache.npz").unlink()
    result = run_cli(["validate", example_pack, "--json"])
    assert result.exit_code == 1 and {f["code"] for f in result.json()["items"][0]["findings"]} == {"ECP133"}
    response = run_cli(["query", example_pack, QUESTION, "--json"]).json()["response"]
    (status,) = [r for r in response["retrieval"]["indexes"] if r["index_id"] == "corpus-keyword"]
    assert status["status"] == "error" and ("k1" in status["reason"] or "JSON" in status["reason"]), status
    assert response["citations"]  # the other indexes answer


def test_damaged_index_is_reported_and_the_others_answer(example_pack: Path) -> None:
    _write(example_pack, f"{FTS}/fts.sqlite", b"\n")
    response = run_cli(["query", example_pack, QUESTION, "--json"]).json()["response"]
    status = {r["index_id"]: r for r in response["retrieval"]["indexes"]}
    assert status["corpus-fts"]["status"] == "error" and "not an SQLite database" in status["corpus-fts"]["reason"]
    assert status["corpus-keyword"]["status"] == "ok" and response["citations"]
    assert "corpus-fts" in response["limitations"]
    sarif = run_cli(["query", example_pack, QUESTION, "-o", "sarif"])
    assert sarif.exit_code == 0, sarif.stderr
    uris = [
        loc["physicalLocation"]["artifactLocation"]["uri"]
        for run in sarif.json()["runs"]
        for result in run["results"]
        for loc in result["locations"]
    ]
    assert uris and all(Path(uri.removeprefix("file://")).is_file() for uri in uris), uris  # resolve from the cwd


def test_wrong_types_in_a_suite_are_findings_with_pointers(example_pack: Path) -> None:
    (example_pack / SUITE).write_text(
        "suite_id: conformance\nsuite_version: '1.0'\ndescription: [1, 2]\ncases:\n"
        "  - {case_id: [1], mode: ephemeral, question: {a: 1}}\n"
        "  - {case_id: b, mode: ephemeral, question: cache, top_k: abc, assertions: {min_citations: x}}\n"
        "  - 17\n"
        "  - {case_id: d, mode: ephemeral, question: cache invalidated, top_k: 1000000000000000000000000000000,"
        " assertions: {min_citations: 1}}\n"
    )
    result = run_cli(["eval", example_pack, "--json", "--no-record"])
    assert result.exit_code == 1, result.stderr
    evaluation = result.json()["evaluations"][0]
    pointers = {f["pointer"] for f in evaluation["findings"] if f["code"] == "ECP150"}
    assert {
        "/description",
        "/cases/0/case_id",
        "/cases/1/top_k",
        "/cases/1/assertions/min_citations",
        "/cases/2",
    } <= pointers
    assert all(f["line"] for f in evaluation["findings"] if f["code"] == "ECP150")
    cases = {c["id"]: c for s in evaluation["suites"] for c in s["cases"]}
    assert cases["b"]["status"] == "error" and "top_k" in cases["b"]["message"]
    assert cases["d"]["status"] == "passed"  # a huge top_k is valid and answers
    suite = next(s for s in evaluation["suites"] if s["id"] == "conformance")
    assert suite["name"] == "conformance"
    validated = run_cli(["validate", example_pack, "--json"])
    assert validated.exit_code == 1
    assert "/cases/0/question" in {f["pointer"] for f in validated.json()["items"][0]["findings"]}


def test_eval_of_a_pack_with_an_invalid_manifest_fails(example_pack: Path) -> None:
    _sub(example_pack, "expert/EXPERT.yaml", 'ecp_version: "1.0"', 'ecp_version: "9.9"')
    result = run_cli(["eval", example_pack, "--json", "--no-record"])
    assert result.exit_code == 1, result.stdout
    findings = result.json()["evaluations"][0]["findings"]
    assert any(f["code"] == "ECP100" and f["pointer"] == "/ecp_version" and f["line"] for f in findings), findings


def test_absurd_dimensions_are_refused_before_allocating(example_pack: Path) -> None:
    _sub(example_pack, "expert/EXPERT.yaml", "dimensions: 256", "dimensions: 1000000000000")
    built = run_cli(["ecp", "build", example_pack, "--rebuild", "--index", "corpus-vector", "--json"])
    assert built.exit_code == 2 and "65536" in built.json()["error"]["message"], built.stdout
    _sub(example_pack, "expert/EXPERT.yaml", "dimensions: 1000000000000", "dimensions: 256")
    _sub(example_pack, f"{VEC}/index_data.json", '"dimensions": 256', '"dimensions": 1000000000000')
    (example_pack / VEC / "agentpack-cache.npz").unlink()
    response = run_cli(["query", example_pack, QUESTION, "--mode", "vector", "--json"]).json()["response"]
    (status,) = [r for r in response["retrieval"]["indexes"] if r["index_id"] == "corpus-vector"]
    assert status["status"] == "error" and "65536" in status["reason"]
