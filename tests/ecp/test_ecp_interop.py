"""Interoperability with the reference runtime ``ecp-reference==1.0.0`` (``ecpctl``), in a throwaway venv.

Marked ``interop``: CI runs them; they skip with a reason when the package cannot be installed.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from agentpack.testing import run_cli

pytestmark = pytest.mark.interop


def test_reference_validates_and_evaluates_our_pack(ecpctl, example_pack: Path, agentpack_host) -> None:
    pack = example_pack
    run_cli(["ecp", "build", str(pack), "--rebuild"])
    code, report = ecpctl("validate", "--skill", str(pack), "--strict", "--with-artifacts", "--max-chunks", "0")
    assert code == 0 and report["ok"], report["errors"]
    assert report["artifacts"]["ok"] is True
    code, evals = ecpctl("run-evals", "--skill", str(pack))
    failures = [(c["case_id"], c["failures"]) for s in evals["suites"] for c in s["cases"] if not c["passed"]]
    assert code == 0 and evals["passed"], failures


def _reference_variant(pack: Path, tmp_path: Path) -> Path:
    """The example pack renamed, its vector index switched to the reference's own hashing model."""
    target = tmp_path / "reference-built"
    pack.rename(target)
    shutil.rmtree(target / "expert" / "context" / "indexes")
    manifest = target / "expert" / "EXPERT.yaml"
    text = manifest.read_text().replace("conformance-pack", "reference-built")
    text = text.replace("model: agentpack-hash-v1", "model: hash-embedding-v1").replace("vectors.npy", "vectors.jsonl")
    manifest.write_text(text)
    skill = target / "SKILL.md"
    skill.write_text(skill.read_text().replace("name: conformance-pack", "name: reference-built"))
    return target


def test_reference_built_indexes_load_and_answer(ecpctl, agentpack_host, example_pack: Path, tmp_path: Path) -> None:
    from agentpack_ecp.pack.manifest import load_pack
    from agentpack_ecp.sources.recipes import manifest_hash
    from agentpack_ecp.sources.scope import Scope
    from agentpack_ecp.sources.snapshot import scan_directory

    pack = _reference_variant(example_pack, tmp_path)
    code, built = ecpctl("build", "--skill", str(pack))
    assert code == 0 and built["eval_passed"], built.get("message")
    expert = load_pack(pack)
    source = expert.source("corpus")
    files, _ = scan_directory(pack / source.uri, Scope(source.include, source.exclude), 512_000)
    assert built["as_of"]["corpus"]["hash"] == manifest_hash(files), "revision.hash recipes differ"
    valid = run_cli(["validate", str(pack), "--strict", "--json"])
    assert valid.json()["ok"], valid.stdout
    for mode in ("keyword", "fts"):
        answer = run_cli(["query", str(pack), "How is the prediction cache invalidated?", "--mode", mode, "--json"])
        response = answer.json()["response"]
        assert any(c["artifact_path"] == "docs/caching.md" for c in response["citations"]), (mode, response)
        assert all(c["chunk_hash"] for c in response["citations"])
    skipped = run_cli(["query", str(pack), "cache invalidation", "--mode", "vector", "--json"]).json()
    assert any(
        r["index_id"] == "corpus-vector" and r["status"] == "skipped"
        for r in skipped["response"]["retrieval"]["indexes"]
    )
    assert skipped["findings"] and skipped["findings"][0]["code"] == "ECP301"
    embed = subprocess.run(
        [
            str(ecpctl.path.with_name("python")),
            "-c",
            "import json,sys; from ecp_reference.vectors import hash_embed; "
            "print(json.dumps([[i, v] for i, v in hash_embed(sys.argv[1], dims=256)]))",
            "prediction cache invalidated constituents change",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    vector_file = tmp_path / "qv.json"
    vector_file.write_text(
        json.dumps(
            {
                "query_vector": json.loads(embed.stdout),
                "query_embedding": {"model": "hash-embedding-v1", "dimensions": 256},
            }
        )
    )
    answer = run_cli(
        [
            "query",
            str(pack),
            "prediction cache invalidated constituents change",
            "--mode",
            "vector",
            "--query-vector-file",
            str(vector_file),
            "--json",
        ]
    ).json()
    assert answer["response"]["chunks"][0]["path"] == "docs/caching.md"
    evaluated = run_cli(["eval", str(pack), "--json"])
    assert evaluated.exit_code == 0, evaluated.stdout
