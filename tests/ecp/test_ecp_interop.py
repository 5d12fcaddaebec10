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
    answer = run_cli(["query", str(pack), "How is the prediction cache invalidated?", "--mode", "vector", "--json"])
    response = answer.json()["response"]  # the reference's hash-embedding-v1, embedded here too
    (vector,) = [r for r in response["retrieval"]["indexes"] if r["format"] == "vector-index-v1"]
    assert vector["status"] == "ok" and response["chunks"][0]["path"] == "docs/caching.md"
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


TEXTS = [
    "How are passwords hashed?",
    "def hash_password(password):\n    return argon2.hash(password)\n",
    "XMLHttpRequest parseHTTP2Response snake_case_name CamelCaseName __init__ a_b_c",
    "",
    "the a of how where",
    "Ünïcödé naïve café 123 4567 x_y_z",
    "Lockbox uses PBKDF2-HMAC-SHA512 and Argon2id for header key derivation",
]
PARAMS = [
    (256, {}),
    (64, {"salt": "lockbox-hash-embed-v1", "char_ngram": 4, "char_ngram_weight": 0.3}),
    (1024, {"include_char_ngrams": False}),
    (7, {"char_ngram": 0}),
]


def test_hash_embedding_v1_agrees_with_the_reference(ecpctl) -> None:
    from agentpack_ecp.index.hashembed import ReferenceHashEmbedder

    script = (
        "import json, sys; from ecp_reference.vectors import hash_embed; "
        "texts, params = json.loads(sys.argv[1]); "
        "print(json.dumps([[hash_embed(t, dims=d, **p) for d, p in params] for t in texts]))"
    )
    done = subprocess.run(
        [str(ecpctl.path.with_name("python")), "-c", script, json.dumps([TEXTS, PARAMS])],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    theirs = json.loads(done.stdout)
    for text, rows in zip(TEXTS, theirs, strict=True):
        for (dims, params), vector in zip(PARAMS, rows, strict=True):
            ours = ReferenceHashEmbedder(dims, params).sparse(text)
            assert ours == [tuple(pair) for pair in vector], (text, dims, params)  # bit for bit


def _lockbox(tmp_path: Path, upstream, name: str = "lockbox-expert-hybrid-vector") -> Path:
    commit = upstream.lockbox_repo(tmp_path / "Lockbox")
    return upstream.placeholder_hybrid(tmp_path, name=name, commit=commit)


@pytest.mark.parametrize("payload", ["vectors.jsonl", "vectors.npy"])
def test_reference_built_vector_pack_answers_here(ecpctl, agentpack_host, tmp_path: Path, upstream, payload) -> None:
    pack = _lockbox(tmp_path, upstream)
    if payload == "vectors.npy":
        manifest = pack / "expert" / "EXPERT.yaml"
        text = manifest.read_text().replace("vectors_path: vectors.jsonl", "vectors_path: vectors.npy")
        manifest.write_text(text.replace("vector_format: sparse-jsonl-v1", "vector_format: dense-npy-v1"))
    code, built = ecpctl("build", "--skill", str(pack), "--rebuild")
    assert code == 0 and built["eval_passed"], built
    assert (pack / "expert/context/indexes/vec-v1" / payload).is_file()
    answer = run_cli(["query", pack, "How are passwords hashed?", "--mode", "vector", "--json"])
    response = answer.json()["response"]
    (vector,) = [r for r in response["retrieval"]["indexes"] if r["index_id"] == "vec-v1"]
    assert vector["status"] == "ok" and response["chunks"][0]["path"] == "src/Crypto/Argon2/argon2.c", vector
    valid = run_cli(["validate", pack, "--strict", "--json"])
    assert valid.json()["ok"], valid.stdout
    assert run_cli(["eval", pack, "--no-record"]).exit_code == 0


def test_agentpack_built_vector_pack_answers_in_the_reference(ecpctl, tmp_path: Path, upstream) -> None:
    pack = _lockbox(tmp_path, upstream)
    assert run_cli(["ecp", "build", pack]).exit_code == 0
    code, report = ecpctl("validate", "--skill", str(pack), "--strict", "--with-artifacts", "--max-chunks", "0")
    assert code == 0 and report["ok"], report["errors"]
    code, answer = ecpctl("query", "--json", "--skill", str(pack), "How are passwords hashed?")
    assert code == 0 and answer["citations"][0]["artifact_path"] == "src/Crypto/Argon2/argon2.c", answer
    code, evals = ecpctl("run-evals", "--skill", str(pack))
    assert code == 0 and evals["passed"], evals


@pytest.mark.parametrize("shape", ["placeholder", "unbuilt", "docs", "web", "mixed"])
def test_upstream_shaped_packs_get_the_reference_verdict(
    ecpctl, agentpack_host, tmp_path: Path, upstream, shape
) -> None:
    """The same verdict as ``ecpctl validate`` with and without --strict: placeholders, heading-only
    summaries and ``{}`` payloads are valid; a declared snapshot that is absent, or a declared index
    that was never built, fails --strict."""
    if shape in ("placeholder", "unbuilt"):
        pack = upstream.placeholder_hybrid(tmp_path)
        if shape == "unbuilt":
            shutil.rmtree(pack / "expert/context/indexes/vec-v1")
    else:
        pack = upstream.profile_pack(tmp_path, shape)
    for strict in ([], ["--strict"]):
        _, theirs = ecpctl("validate", "--skill", str(pack), *strict)
        ours = run_cli(["validate", pack, "--json", *strict]).json()
        assert ours["ok"] == theirs["ok"], (strict, theirs["errors"], ours["items"][0]["findings"])
