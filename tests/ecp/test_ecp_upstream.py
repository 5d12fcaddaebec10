"""Packs in the shapes of the reference repository (issue 15), offline: placeholder artifacts give
findings and failed cases (never exit 3), the ``hash-embedding-v1`` embedder builds and answers,
and no rule is stricter than the spec (the reference's own test packs validate).

The fixtures (``upstream`` in ``conftest.py``) are written for these tests in the reference's
shapes; ``test_ecp_interop.py`` checks the same packs against ``ecpctl`` itself.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from agentpack.testing import run_cli


def _findings(pack: Path, *extra: str) -> tuple[bool, dict[str, str]]:
    """``ok`` and the severity of each code (``error`` when a code has findings of both severities)."""
    result = run_cli(["validate", pack, "--json", *extra])
    assert result.exit_code in (0, 1), result.stderr
    report = result.json()
    codes: dict[str, str] = {}
    for f in (f for item in report["items"] for f in item["findings"]):
        codes[f["code"]] = "error" if "error" in (f["severity"], codes.get(f["code"])) else f["severity"]
    return report["ok"], codes


def test_placeholder_artifacts_are_findings_and_failed_cases(tmp_path: Path, upstream) -> None:
    pack = upstream.placeholder_hybrid(tmp_path)
    for strict in ((), ("--strict",)):
        ok, codes = _findings(pack, *strict)
        assert ok and codes["ECP136"] == "warning", codes  # a placeholder is "not built yet", as in ecpctl
    answer = run_cli(["query", pack, "How are passwords hashed?", "--json"])
    assert answer.exit_code == 0, answer.stderr
    status = {r["index_id"]: r for r in answer.json()["response"]["retrieval"]["indexes"]}
    assert status["vec-v1"]["status"] == "error" and "placeholder" in status["vec-v1"]["reason"]
    assert status["fts-v1"]["status"] == "error" and "placeholder" in status["fts-v1"]["reason"]
    evaluated = run_cli(["eval", pack, "--json", "--no-record"])
    assert evaluated.exit_code == 1, evaluated.stderr
    cases = [c for s in evaluated.json()["evaluations"][0]["suites"] for c in s["cases"]]
    assert [c["status"] for c in cases] == ["failed", "failed"], cases


def test_hash_embedding_v1_builds_and_answers_the_upstream_vector_shape(tmp_path: Path, upstream) -> None:
    commit = upstream.lockbox_repo(tmp_path / "Lockbox")
    pack = upstream.placeholder_hybrid(tmp_path, commit=commit)
    built = run_cli(["ecp", "build", pack, "--json"])
    assert built.exit_code == 0, built.stdout
    answer = run_cli(["query", pack, "How are passwords hashed?", "--mode", "vector", "--json"]).json()["response"]
    assert answer["chunks"][0]["path"] == "src/Crypto/Argon2/argon2.c", answer["retrieval"]
    descriptor = (pack / "expert/context/indexes/vec-v1/index.json").read_text()
    assert '"salt": "lockbox-hash-embed-v1"' in descriptor and '"char_ngram_weight": 0.5' in descriptor
    assert run_cli(["eval", pack, "--no-record"]).exit_code == 0
    ok, codes = _findings(pack, "--strict")
    assert ok and not codes, codes


def test_hash_embedding_v1_vectors() -> None:
    """Values computed by ecp-reference 1.0.0's ``hash_embed`` (the interop test compares many more)."""
    from agentpack_ecp.index.hashembed import ReferenceHashEmbedder

    a = 0.20851441405707477
    assert ReferenceHashEmbedder(16).sparse("How are passwords hashed?") == [
        (1, -a), (2, a), (3, a), (4, -2 * a), (5, a), (8, -2 * a), (9, -2 * a), (10, 2 * a), (11, -a), (13, a), (15, -a)
    ]  # fmt: skip
    b, c = 0.23904572186687872, 0.3585685828003181
    salted = ReferenceHashEmbedder(16, {"salt": "lockbox-hash-embed-v1"})
    assert salted.sparse("def hash_password(password): return argon2.hash(password)") == [
        (0, -b), (1, -b), (2, b), (4, b), (6, -0.47809144373375745), (7, b), (9, c), (10, c), (11, b), (12, -b),
        (14, b), (15, b),
    ]  # fmt: skip
    assert ReferenceHashEmbedder(16).sparse("the a of how") == []


@pytest.mark.parametrize(
    ("profile", "strict_error"),
    [("docs", None), ("web", "ECP111"), ("mixed", None)],
)
def test_no_rule_stricter_than_the_spec(tmp_path: Path, upstream, profile: str, strict_error: str | None) -> None:
    """The reference's profile test packs: a heading-only summary and an ``index_data.json`` of ``{}``
    are warnings; a declared web snapshot that is absent is an error only under --strict."""
    pack = upstream.profile_pack(tmp_path, profile)
    ok, codes = _findings(pack)
    assert ok, codes
    if profile in ("docs", "mixed"):
        assert codes["ECP112"] == "warning"
    if profile in ("web", "mixed"):
        assert codes["ECP133"] == "warning"
    ok, codes = _findings(pack, "--strict")
    errors = {c for c, severity in codes.items() if severity == "error"}
    assert errors == ({strict_error} if strict_error else set()), codes
    assert ok is (strict_error is None)


def test_strict_requires_declared_indexes_to_be_built(tmp_path: Path, upstream) -> None:
    pack = upstream.placeholder_hybrid(tmp_path)
    shutil.rmtree(pack / "expert/context/indexes/vec-v1")
    assert _findings(pack)[1]["ECP136"] == "warning"
    ok, codes = _findings(pack, "--strict")
    assert not ok and codes["ECP136"] == "error"


def test_errors_of_upstream_shaped_packs_are_json_envelopes(tmp_path: Path, upstream) -> None:
    pack = upstream.placeholder_hybrid(tmp_path)  # its git source ../Lockbox is not there
    for argv in (["ecp", "build", pack, "--json"], ["ecp", "refresh", pack, "--json"]):
        result = run_cli(argv)
        assert result.exit_code == 2, result.stdout + result.stderr
        error = result.json()["error"]
        assert "repository not found" in error["message"] and error["file"] == "expert/EXPERT.yaml" and error["line"]


@pytest.mark.parametrize("shape", ["placeholder", "docs", "web", "mixed"])
def test_findings_of_upstream_shaped_packs_resolve_from_the_pack_root(tmp_path: Path, upstream, shape: str) -> None:
    """Every finding names a file relative to the pack root (reporters resolve it against the pack)."""
    pack = upstream.placeholder_hybrid(tmp_path) if shape == "placeholder" else upstream.profile_pack(tmp_path, shape)
    report = run_cli(["validate", pack, "--strict", "--json"]).json()
    findings = [f for item in report["items"] for f in item["findings"]]
    assert findings
    for f in findings:
        assert f["file"] and not Path(f["file"]).is_absolute(), f
        assert (pack / f["file"]).exists() or (pack / f["file"]).parent.is_dir(), f


@pytest.mark.parametrize("output", ["github", "sarif"])
def test_annotations_point_at_files_from_the_working_directory(
    tmp_path: Path, upstream, monkeypatch, output: str
) -> None:
    """SARIF and ``-o github`` name ECP findings as seen from where the command runs (issue 15)."""
    pack = upstream.placeholder_hybrid(tmp_path / "repo" / "packs")
    monkeypatch.chdir(tmp_path / "repo")
    result = run_cli(["validate", "packs/" + pack.name, "--strict", "-o", output])
    assert result.exit_code == 0, result.stderr
    if output == "github":
        files = re.findall(r"file=([^,:]+)", result.stdout)
    else:
        files = [
            loc["physicalLocation"]["artifactLocation"]["uri"]
            for run in result.json()["runs"]
            for found in run["results"]
            for loc in found["locations"]
        ]
    assert files and all(f.startswith(f"packs/{pack.name}/expert/") and Path(f).is_file() for f in files), files
