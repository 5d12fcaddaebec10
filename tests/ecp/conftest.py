"""Shared fixtures of the ECP tests: fresh packs built from the scaffold or the conformance example."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "ecp" / "conformance-pack"


def copy_example(tmp_path: Path) -> Path:
    target = tmp_path / "conformance-pack"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns(".staging-*", ".lifecycle", "logs"))
    return target


@pytest.fixture
def example_pack(tmp_path: Path) -> Path:
    """A private copy of the conformance pack (indexes as committed)."""
    return copy_example(tmp_path)


@pytest.fixture
def new_pack(tmp_path: Path) -> Path:
    """A freshly scaffolded and built pack."""
    from agentpack_ecp.index.build import build_pack
    from agentpack_ecp.pack.scaffold import scaffold

    root = tmp_path / "my-expert"
    scaffold(root)
    build_pack(root)
    return root


class Ecpctl:
    """The reference runtime's CLI: ``ecpctl("validate", ...)`` returns ``(exit code, JSON output)``."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __call__(self, *args: str) -> tuple[int, dict]:
        proc = subprocess.run(
            [str(self.path), "--json", *args], check=False, capture_output=True, text=True, timeout=300
        )
        try:
            return proc.returncode, json.loads(proc.stdout)
        except ValueError:
            raise AssertionError(f"ecpctl {args[0]} printed no JSON: {proc.stdout[:300]} {proc.stderr[:300]}") from None


@pytest.fixture(scope="module")
def ecpctl() -> Ecpctl:
    """``ecp-reference==1.0.0`` in a throwaway venv (interop tests only; skips without a registry)."""
    from agentpack.testing import reference_venv

    return Ecpctl(reference_venv("ecp-reference-1.0.0", "ecp-reference==1.0.0") / "bin" / "ecpctl")


# --- packs in the shapes the reference implementation's repository uses (written for these tests) ---

LOCKBOX_FILES = {
    "README.md": "# Lockbox\n\nLockbox encrypts volumes. See src/ for the code and License.txt for the terms.\n",
    "License.txt": "Lockbox License\n\nYou may redistribute Lockbox under the terms below.\n",
    "src/Crypto/Argon2/argon2.c": (
        "/* Argon2id password hashing: the header key is derived from the password and salt. */\n"
        "int hash_password(const char *password, const unsigned char *salt, unsigned char *key)\n"
        "{\n    return argon2id_hash_raw(3, 65536, 4, password, salt, key);\n}\n"
    ),
    "src/Crypto/Pbkdf2.c": "/* PBKDF2-HMAC-SHA512 key derivation for legacy volumes. */\nint derive_key(void);\n",
    "src/Driver/lockbox.Inf": "; Installs lockbox.sys, the volume driver.\n[Driver]\nServiceBinary=lockbox.sys\n",
    "src/Mount/mount.c": "/* Mounting a volume: open the container, read the header, start the driver. */\n",
}
HYBRID_EXPERT = """\
ecp_version: '1.0'
id: {name}
display_name: 'Lockbox Expert (Hybrid: Vector + SQLite FTS)'
description: Repository-aware expert for Lockbox with hybrid retrieval.
profile: codebase
skill:
  name: {name}
security:
  classification: public
  contains_secrets: false
  allow_remote_llm: true
  allowed_remote_llm_providers:
  - openrouter
sources:
- source_id: repo
  type: git
  uri: ../Lockbox
  scope:
    include:
    - src/**/*
    - README.md
    - License.txt
    exclude:
    - '**/.git/**'
    - '**/build/**'
  revision:
    commit: {commit}
    branch: master
    timestamp: '2026-01-15T12:44:50Z'
  refresh:
    strategy: incremental
    incremental:
      method: git-diff
    rebuild:
      method: full-scan
context:
  strategy: hybrid
  artifacts:
    indexes:
    - id: vec-v1
      type: vector
      path: expert/context/indexes/vec-v1
      descriptor: expert/context/indexes/vec-v1/index.json
      chunking:
        method: line-window
        max_chars: 2000
        overlap_chars: 200
      embedding:
        model: hash-embedding-v1
        provider: local
        dimensions: 256
        params:
          salt: lockbox-hash-embed-v1
          include_char_ngrams: true
          char_ngram: 3
          char_ngram_weight: 0.5
      vector:
        metric: cosine
        vectors_path: vectors.jsonl
        vector_format: sparse-jsonl-v1
    - id: fts-v1
      type: keyword
      backend: sqlite-fts
      path: expert/context/indexes/fts-v1
      descriptor: expert/context/indexes/fts-v1/index.json
      chunking:
        method: line-window
        max_chars: 2000
        overlap_chars: 200
    summaries:
    - id: repo-overview
      type: overview
      path: expert/context/summaries/repo-overview.md
maintenance:
  policy_path: expert/maintenance/policy.json
evals:
  suites:
  - suite_id: smoke
    path: expert/evals/smoke.yaml
"""
HYBRID_SMOKE = """\
suite_id: smoke
suite_version: '1.0'
description: Smoke checks for a Lockbox checkout.
cases:
  - case_id: license
    mode: ephemeral
    question: Where are the license terms located?
    filters:
      source_id: repo
    assertions:
      min_citations: 1
      must_cite_source_ids: [repo]
      must_cite: [License.txt]
  - case_id: passwords
    mode: ephemeral
    question: How are passwords hashed?
    assertions:
      min_citations: 1
      must_cite: [src/Crypto/Argon2]
"""
PLACEHOLDER_COMMIT = "97a715e8d748d3ad32afa59921d569a127da97a5"
POLICY_JSON = {
    "policy_version": "1.0",
    "budgets": {"max_update_duration_seconds": 600},
    "refresh_triggers": [{"type": "manual", "spec": "on-demand"}],
    "update_strategy": {
        "default": "incremental",
        "incremental": {"method": "git-diff"},
        "rebuild": {"method": "full-scan"},
        "rebuild_thresholds": {},
    },
    "validation": {"eval_suites": ["smoke"], "fail_action": "block"},
    "publishing": {"on_pass": "auto_publish", "rollback_on_fail": True},
}


def _write_files(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())


def _skill_md(name: str) -> str:
    return f"---\nname: {name}\ndescription: test skill for {name}\n---\n\n# {name}\n\nUse expert_query.\n"


def write_placeholder_hybrid(
    parent: Path, name: str = "lockbox-expert-hybrid-vector", commit: str = PLACEHOLDER_COMMIT
) -> Path:
    """A pack in the shape of the reference's VeraCrypt templates: a git source beside the pack
    (``../Lockbox``, not created here), a hash-embedding-v1 vector index and an sqlite-fts index whose
    artifacts are placeholders (``documents: {}``, empty ``chunks.jsonl``, a 1-byte ``fts.sqlite``).
    ``commit`` is the recorded ``revision.commit`` (the one of ``make_lockbox_repo`` to build it)."""
    root = parent / name
    created = "2026-01-19T00:00:00Z"
    source = {
        "source_id": "repo",
        "source_type": "git",
        "uri": "../Lockbox",
        "classification": "public",
        "revision": {"commit": commit, "branch": "master", "timestamp": "2026-01-15T12:44:50Z"},
    }
    chunking = {"method": "line-window", "max_chars": 2000, "overlap_chars": 200, "language_hints": []}
    embedding = {
        "model": "hash-embedding-v1",
        "provider": "local",
        "dimensions": 256,
        "params": {
            "salt": "lockbox-hash-embed-v1",
            "include_char_ngrams": True,
            "char_ngram": 3,
            "char_ngram_weight": 0.5,
        },
    }

    def descriptor(index_id: str, kind: str, extra: dict) -> str:
        body = {
            "index_id": index_id,
            "type": kind,
            "created_at": created,
            "built_at": created,
            "chunking": chunking,
            **extra,
            "retrieval_defaults": {"top_k": 8, "filters_supported": ["path_prefix", "source_id"]},
            "provenance": {"index_data_path": "index_data.json", "chunks_path": "chunks.jsonl"},
        }
        return json.dumps(body, indent=2)

    vec = {
        "format": "vector-index-v1",
        "index_id": "vec-v1",
        "created_at": created,
        "built_at": created,
        "sources": [source],
        "config": {
            "chunking": chunking,
            "embedding": embedding,
            "vector": {"metric": "cosine", "vectors_path": "vectors.jsonl", "vector_format": "sparse-jsonl-v1"},
        },
        "documents": {},
    }
    fts = {
        "format": "sqlite-fts-index-v1",
        "index_id": "fts-v1",
        "created_at": created,
        "built_at": created,
        "sources": [source],
        "config": {"tokenizer": "regex[A-Za-z0-9_]+;lower;stopwords;len>=2", "chunking": chunking},
        "sqlite": {"path": "fts.sqlite", "table": "chunks", "fts5": True},
    }
    indexes = "expert/context/indexes"
    _write_files(
        root,
        {
            "SKILL.md": _skill_md(name),
            "expert/EXPERT.yaml": HYBRID_EXPERT.format(name=name, commit=commit),
            "expert/maintenance/policy.json": json.dumps(POLICY_JSON, indent=2),
            "expert/evals/smoke.yaml": HYBRID_SMOKE,
            "expert/context/summaries/repo-overview.md": (
                "# Lockbox Expert (placeholder summary)\n\nThis file lets the pack layout validate before "
                "anything is built.\nBuild the indexes to populate the context.\n"
            ),
            f"{indexes}/vec-v1/index.json": descriptor("vec-v1", "vector", {"embedding": embedding}),
            f"{indexes}/vec-v1/index_data.json": json.dumps(vec, indent=2),
            f"{indexes}/vec-v1/chunks.jsonl": "",
            f"{indexes}/fts-v1/index.json": descriptor("fts-v1", "keyword", {}),
            f"{indexes}/fts-v1/index_data.json": json.dumps(fts, indent=2),
            f"{indexes}/fts-v1/chunks.jsonl": "",
            f"{indexes}/fts-v1/fts.sqlite": b"\n",
        },
    )
    return root


def make_lockbox_repo(path: Path) -> str:
    """The git repository the placeholder pack names (``../Lockbox``) on branch master; returns the commit."""
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_AUTHOR_DATE": "2026-01-15T12:44:50Z",
        "GIT_COMMITTER_DATE": "2026-01-15T12:44:50Z",
        "PATH": os.environ["PATH"],
        "HOME": str(path),
    }

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(path), *args], check=True, capture_output=True, text=True, env=env
        ).stdout.strip()

    path.mkdir(parents=True)
    git("init", "-q", "-b", "master")
    _write_files(path, dict(LOCKBOX_FILES))
    git("add", "-A")
    git("commit", "-q", "-m", "lockbox")
    return git("rev-parse", "HEAD")


PROFILE_EXPERT = """\
ecp_version: '1.0'
id: {name}
profile: {profile}
skill:
  name: {name}
security:
  allow_remote_llm: false
sources:
{sources}
context:
  strategy: {strategy}
  artifacts:
{artifacts}
maintenance:
  policy_path: expert/maintenance/policy.json
evals:
  suites:
    - suite_id: smoke
      path: expert/evals/smoke.yaml
"""
FS_REPO_SOURCE = """\
  - source_id: repo
    type: filesystem
    uri: expert/sources/repo
    scope:
      include: ['**/*']
    revision:
      hash: deadbeef
      timestamp: '2026-01-01T00:00:00Z'
    refresh:
      strategy: none"""
WEB_SOURCE = """\
  - source_id: web
    type: web
    uri: https://example.com
    scope:
      include: ['**/*']
    revision:
      retrieved_at: '2026-01-01T00:00:00Z'
    refresh:
      strategy: none"""
KW_INDEX = """\
    indexes:
      - id: kw-v2
        type: keyword
        path: expert/context/indexes/kw-v2
        descriptor: expert/context/indexes/kw-v2/index.json"""
OVERVIEW = """\
    summaries:
      - id: overview
        type: overview
        path: expert/context/summaries/overview.md"""
WEB_SNAPSHOT = """\
    snapshots:
      - id: web-snapshot
        path: expert/context/snapshots/web.tar
        format: tar"""
REPO_CHUNK = {
    "chunk_id": "repo::auth.py#L1-L1",
    "source_id": "repo",
    "uri": "expert/sources/repo",
    "artifact_path": "auth.py",
    "revision": {"hash": "deadbeef", "timestamp": "2026-01-01T00:00:00Z"},
    "loc": {"start_line": 1, "end_line": 1},
    "chunk_hash": "deadbeef",
}
WEB_CHUNK = {
    "chunk_id": "web::page.html#L1-L1",
    "source_id": "web",
    "uri": "https://example.com/page",
    "artifact_path": "page.html",
    "revision": {"retrieved_at": "2026-01-01T00:00:00Z"},
    "loc": {"start_line": 1, "end_line": 1},
    "chunk_hash": "deadbeef",
}


def write_profile_pack(parent: Path, profile: str) -> Path:
    """A pack in the shape of the reference's profile-constraint tests: a heading-only summary, an
    ``index_data.json`` that is ``{}``, hand-written provenance records, a web snapshot that is
    declared but absent (``docs``, ``web`` or ``mixed``)."""
    name = f"{profile}-skill"
    root = parent / name
    sources, artifacts, files = FS_REPO_SOURCE, "", {}
    chunks: list[dict] = []
    if profile == "docs":
        artifacts = OVERVIEW
    elif profile == "web":
        sources, artifacts, chunks = WEB_SOURCE, WEB_SNAPSHOT + "\n" + KW_INDEX, [WEB_CHUNK]
    elif profile == "mixed":
        sources, artifacts, chunks = (
            FS_REPO_SOURCE + "\n" + WEB_SOURCE,
            KW_INDEX + "\n" + OVERVIEW,
            [REPO_CHUNK, WEB_CHUNK],
        )
    if "summaries" in artifacts:
        files["expert/context/summaries/overview.md"] = "# Overview\n"
    if "indexes" in artifacts:
        index = "expert/context/indexes/kw-v2"
        files[f"{index}/index.json"] = json.dumps(
            {
                "index_id": "kw-v2",
                "type": "keyword",
                "created_at": "2026-01-01T00:00:00Z",
                "retrieval_defaults": {"top_k": 8},
                "chunking": {"method": "line-window", "max_chars": 2000, "overlap_chars": 200},
                "provenance": {"index_data_path": "index_data.json", "chunks_path": "chunks.jsonl"},
            },
            indent=2,
            sort_keys=True,
        )
        files[f"{index}/index_data.json"] = "{}"
        files[f"{index}/chunks.jsonl"] = "".join(json.dumps(r) + "\n" for r in chunks)
    policy = dict(POLICY_JSON, publishing={"on_pass": "require_approval", "rollback_on_fail": True})
    files.update(
        {
            "SKILL.md": _skill_md(name),
            "expert/EXPERT.yaml": PROFILE_EXPERT.format(
                name=name,
                profile=profile,
                sources=sources,
                strategy="hybrid" if "indexes" in artifacts and "summaries" in artifacts else "snapshot",
                artifacts=artifacts,
            ),
            "expert/maintenance/policy.json": json.dumps(policy, indent=2, sort_keys=True),
            "expert/evals/smoke.yaml": "suite_id: smoke\nsuite_version: '1.0'\ncases:\n"
            "  - case_id: noop\n    mode: ephemeral\n    question: hi\n",
        }
    )
    _write_files(root, files)
    return root


@pytest.fixture
def upstream():
    """Writers of packs in the reference repository's shapes: ``placeholder_hybrid(parent)``,
    ``lockbox_repo(path)`` and ``profile_pack(parent, profile)``."""
    from types import SimpleNamespace

    return SimpleNamespace(
        placeholder_hybrid=write_placeholder_hybrid, lockbox_repo=make_lockbox_repo, profile_pack=write_profile_pack
    )
