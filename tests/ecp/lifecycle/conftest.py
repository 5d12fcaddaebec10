"""Fixtures for the ECP lifecycle tests: small packs written from scratch."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

EXPERT_YAML = """\
# The demo expert. Comments and layout must survive a refresh.
ecp_version: "1.0"
id: {name}
display_name: Demo Expert   # shown to people
skill:
  name: {name}
security:
  classification: public
  contains_secrets: {secrets}
  allow_remote_llm: {remote}
  allowed_remote_llm_providers: {providers}
sources:
{sources}
context:
  strategy: retrieval
  artifacts:
    indexes:
{indexes}
maintenance:
  policy_path: expert/maintenance/policy.json
evals:
  suites:
    - suite_id: smoke
      path: expert/evals/smoke.yaml
{logs}"""

FS_SOURCE = """\
  - source_id: docs
    type: filesystem
    uri: expert/sources/docs   # bundled corpus
    scope:
      include: ["**/*.md"]
    revision:
      hash: "0000"
      timestamp: "2026-01-01T00:00:00Z"
    refresh:
      strategy: incremental
      incremental:
        method: file-manifest"""

GIT_SOURCE = """\
  - source_id: docs
    type: git
    uri: {uri}
    scope:
      include: ["**/*.md"]
    revision:
      commit: {commit}
      branch: main
      timestamp: "2026-01-01T00:00:00Z"
    refresh:
      strategy: incremental
      incremental:
        method: git-diff"""

INDEX_ENTRY = """\
      - id: {id}
        type: {type}
        path: expert/context/indexes/{id}
        descriptor: expert/context/indexes/{id}/index.json
"""
ALL_FORMATS = (("kw", "keyword"), ("fts", "keyword", "sqlite-fts"), ("vec", "vector"))

POLICY = {
    "policy_version": "1.0",
    "budgets": {"max_update_duration_seconds": 600, "max_changed_files": 500},
    "refresh_triggers": [{"type": "manual", "spec": "on-demand"}],
    "update_strategy": {
        "default": "incremental",
        "incremental": {"method": "file-manifest"},
        "rebuild": {"method": "full-scan"},
        "rebuild_thresholds": {"changed_files_gt": 100, "changed_lines_gt": 100000, "days_since_full_rebuild_gt": 30},
    },
    "validation": {"eval_suites": ["smoke"], "fail_action": "block"},
    "publishing": {"on_pass": "auto_publish", "rollback_on_fail": True},
    "retention": {"max_backups_per_index": 3, "max_backup_age_days": 30},
}

SMOKE = """\
suite_id: smoke
suite_version: "1.0"
cases:
  - case_id: rotation
    mode: ephemeral
    question: How are signing keys rotated?
    assertions:
      must_cite: ["keys.md"]
      min_citations: 1
      answer_must_include: ["ninety"]
"""

DOCS = {
    "keys.md": (
        "# Keys\n\nSigning keys are rotated every ninety days by the rotation job.\nOld keys stay valid for a week.\n"
    ),
    "tokens.md": "# Tokens\n\nAccess tokens expire after one hour.\nRefresh tokens are single use.\n",
    "guide/setup.md": "# Setup\n\nInstall the service, then run the bootstrap command.\n",
}


def write_pack(
    root: Path,
    *,
    name: str = "demo-expert",
    secrets: bool = False,
    remote: bool = False,
    providers: list[str] | None = None,
    indexes: tuple[tuple[str, ...], ...] = (("kw", "keyword"),),
    policy: dict | None = None,
    logs: dict | None = None,
    sources: str = FS_SOURCE,
) -> Path:
    """Write a pack at ``root / name`` and return its path."""
    pack = root / name
    (pack / "expert" / "maintenance").mkdir(parents=True, exist_ok=True)
    (pack / "expert" / "evals").mkdir(parents=True, exist_ok=True)
    (pack / "SKILL.md").write_text(
        f"---\nname: {name}\ndescription: Answers questions about the demo service.\n"
        "---\n\n# Demo expert\n\nUse expert_query.\n"
    )
    logs_yaml = ""
    if logs is not None:
        logs_yaml = "logs:\n" + "".join(f"  {k}: {json.dumps(v)}\n" for k, v in logs.items())
    (pack / "expert" / "EXPERT.yaml").write_text(
        EXPERT_YAML.format(
            name=name,
            sources=sources,
            secrets=str(secrets).lower(),
            remote=str(remote).lower(),
            providers=json.dumps(providers or []),
            indexes="".join(
                INDEX_ENTRY.format(id=e[0], type=e[1]) + (f"        backend: {e[2]}\n" if len(e) > 2 else "")
                for e in indexes
            ).rstrip("\n"),
            logs=logs_yaml,
        )
    )
    (pack / "expert" / "maintenance" / "policy.json").write_text(json.dumps(policy or POLICY, indent=2))
    (pack / "expert" / "evals" / "smoke.yaml").write_text(SMOKE)
    for rel, text in DOCS.items():
        path = pack / "expert" / "sources" / "docs" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return pack


def git(repo: Path, *args: str) -> str:
    import subprocess

    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
        "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
        "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
        "PATH": __import__("os").environ["PATH"],
        "HOME": str(repo),
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def make_git_repo(path: Path) -> str:
    """A git repository holding DOCS on branch main; returns the commit."""
    path.mkdir(parents=True)
    git(path, "init", "-q", "-b", "main")
    for rel, text in DOCS.items():
        (path / rel).parent.mkdir(parents=True, exist_ok=True)
        (path / rel).write_text(text)
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", "docs")
    return git(path, "rev-parse", "HEAD")


@pytest.fixture
def make_pack():
    """``make_pack(root, **options)`` writes a pack (see ``write_pack``)."""
    return write_pack


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return write_pack(tmp_path / "packs")


class FakeChatServer:
    """An OpenAI-compatible /chat/completions endpoint on 127.0.0.1 that records what it receives."""

    def __init__(self) -> None:
        import http.server
        import threading

        self.requests: list[dict] = []
        self.reply = "Keys rotate every ninety days [1]."
        self.status = 200
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append(
                    {"path": self.path, "body": body, "authorization": self.headers.get("Authorization")}
                )
                payload = json.dumps(
                    {
                        "choices": [
                            {"message": {"role": "assistant", "content": server.reply}, "finish_reason": "stop"}
                        ],
                        "usage": {"prompt_tokens": 50, "completion_tokens": 10, "total_tokens": 60},
                    }
                )
                self.send_response(server.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload.encode())

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def chat_server():
    server = FakeChatServer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def kit():
    """The helpers of this conftest (test modules cannot import it in importlib mode)."""
    import types

    return types.SimpleNamespace(
        write_pack=write_pack,
        ALL_FORMATS=ALL_FORMATS,
        GIT_SOURCE=GIT_SOURCE,
        git=git,
        make_git_repo=make_git_repo,
        DOCS=DOCS,
        POLICY=POLICY,
    )
