"""Every assertion of spec 8.2 with the semantics of 8.3, pass and fail, against real responses."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from agentpack.testing import run_cli
from agentpack_ecp.evals import check_assertions, run_suites
from agentpack_ecp.pack.manifest import load_pack
from agentpack_ecp.query.response import query_pack


@pytest.fixture
def answered(example_pack: Path):
    pack = load_pack(example_pack)
    response = query_pack(pack, {"question": "How is the prediction cache invalidated?", "top_k": 3})
    return pack, response


def _check(pack, response, **assertions) -> dict[str, bool]:
    return {r.name: r.passed for r in check_assertions(pack, {"assertions": assertions}, response)}


def test_passing_assertions(answered) -> None:
    pack, response = answered
    results = _check(
        pack,
        response,
        must_cite=["docs/caching.md"],
        must_not_cite=["nothing-like-this"],
        must_cite_source_ids=["corpus"],
        min_citations=1,
        max_citations=3,
        answer_must_include=["CACHE"],
        answer_must_not_include=["banana"],
        answer_must_match=[r"\[1\]"],
        response_must_include_fields=["answer", "as_of", "chunks"],
        as_of_must_include_source_ids=["corpus"],
        citations_must_resolve=True,
        citations_must_match_snippets=True,
        citations_must_match_hashes=True,
        my_custom_key=True,
    )
    assert results and all(results.values()), results
    assert "my_custom_key" not in results


def test_failing_assertions(answered) -> None:
    pack, response = answered
    results = _check(
        pack,
        response,
        must_cite=["missing.md"],
        must_not_cite=["docs/"],
        must_cite_source_ids=["x"],
        min_citations=9,
        max_citations=0,
        answer_must_include=["zebra"],
        answer_must_not_include=["cache"],
        answer_must_match=["^nope$", "(bad"],
        response_must_include_fields=["confidence"],
        as_of_must_include_source_ids=["other"],
    )
    assert results and not any(results.values()), results


def test_integrity_failures(answered) -> None:
    pack, response = answered
    tampered = copy.deepcopy(response)
    tampered["chunks"][0]["snippet"] += "extra"
    assert _check(pack, tampered, citations_must_match_snippets=True, citations_must_match_hashes=True) == {
        "citations_must_match_snippets": False,
        "citations_must_match_hashes": False,
    }
    no_hash = copy.deepcopy(response)
    del no_hash["chunks"][0]["citation"]["chunk_hash"]
    assert _check(pack, no_hash, citations_must_match_hashes=True) == {"citations_must_match_hashes": False}
    escape = copy.deepcopy(response)
    escape["chunks"][0]["citation"]["artifact_path"] = "../../../etc/passwd"
    assert _check(pack, escape, citations_must_resolve=True) == {"citations_must_resolve": False}
    scope = copy.deepcopy(response)
    scope["chunks"][0]["citation"]["artifact_path"] = "notes.txt"
    (pack.root / "expert/sources/corpus/notes.txt").write_text("out of scope\n")
    results = check_assertions(pack, {"assertions": {"citations_must_resolve": True}}, scope)
    assert not results[0].passed and "outside the scope" in results[0].message
    lines = copy.deepcopy(response)
    lines["chunks"][0]["citation"]["loc"] = {"start_line": 1, "end_line": 9999}
    assert _check(pack, lines, citations_must_resolve=True) == {"citations_must_resolve": False}
    empty = dict(response, chunks=[], citations=[])
    assert _check(pack, empty, citations_must_resolve=True) == {"citations_must_resolve": False}
    timestamp_only = dict(response, as_of={"timestamp": "2026-01-01T00:00:00Z"})
    assert _check(pack, timestamp_only, as_of_must_include_source_ids=[]) == {"as_of_must_include_source_ids": False}


def test_run_suites_report_and_cli_outputs(example_pack: Path, agentpack_host, tmp_path: Path) -> None:
    report = run_suites(load_pack(example_pack), "retrieval", case_filter="datum")
    assert [c.id for s in report.suites for c in s.cases] == ["datum-setting"]
    case = report.suites[0].cases[0]
    assert case.status == "passed" and case.file == "expert/evals/retrieval.yaml" and case.line == 5
    html = tmp_path / "report.html"
    result = run_cli(["eval", str(example_pack), "--suite", "conformance", "-o", "junit", "--report", str(html)])
    assert result.exit_code == 0 and "<testsuite" in result.stdout and html.read_text().startswith("<!")
    unknown = run_cli(["eval", str(example_pack), "--suite", "nope"])
    assert unknown.exit_code == 2 and "no eval suite 'nope'" in unknown.stderr
