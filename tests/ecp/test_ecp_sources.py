"""Sources: revision recipes, gitignore scopes, git at a pinned commit, web snapshots, SQLite queries."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack.io.errors import AgentpackError
from agentpack_ecp.index.build import build_pack
from agentpack_ecp.pack.manifest import load_pack
from agentpack_ecp.pack.scaffold import scaffold
from agentpack_ecp.query.response import query_pack
from agentpack_ecp.sources.recipes import file_record, manifest_hash, resolve_location
from agentpack_ecp.sources.scope import Scope


def test_file_record_recipe_normalises_newlines() -> None:
    record, text = file_record(b"a\r\nb\rc\n", 7, 100)
    assert text == "a\nb\nc\n"
    assert record == {"sha256": hashlib.sha256(b"a\nb\nc\n").hexdigest(), "size": 7, "skipped": None}
    assert file_record(b"\x00\x01", 2, 100)[0]["skipped"] == "binary_or_non_utf8"
    assert file_record(b"x" * 10, 10, 5)[0] == {"sha256": None, "size": 10, "skipped": "too_large"}


def test_manifest_hash_is_the_sorted_default_separator_dump() -> None:
    manifest = {
        "b.md": {"sha256": "00", "size": 1, "skipped": None},
        "a/é.md": {"sha256": None, "size": 2, "skipped": "too_large"},
    }
    expected = hashlib.sha256(json.dumps(manifest, sort_keys=True).encode()).hexdigest()
    assert manifest_hash(manifest) == expected
    assert '"a/\\u00e9.md": {"sha256": null' in json.dumps(manifest, sort_keys=True)


def test_scope_has_gitignore_semantics() -> None:
    scope = Scope(["*.md", "src/"], ["**/draft-*", "src/vendor/"])
    assert scope.matches("README.md") and scope.matches("docs/deep/guide.md")
    assert scope.matches("src/app.py") and not scope.matches("src/vendor/lib.py")
    assert not scope.matches("docs/draft-1.md") and not scope.matches("setup.py")
    assert Scope(None, ["*.log"]).matches("any/file.txt")


@settings(max_examples=50, deadline=None)
@given(st.lists(st.text(alphabet="ab\r\n é\t", max_size=30), max_size=5))
def test_file_record_text_and_hash_agree(parts: list[str]) -> None:
    data = "".join(parts).encode("utf-8")
    record, text = file_record(data, len(data), 10_000)
    assert "\r" not in text
    assert record["sha256"] == hashlib.sha256(text.encode("utf-8")).hexdigest()


def test_remote_uris_are_refused(tmp_path: Path) -> None:
    with pytest.raises(AgentpackError, match="remote location"):
        resolve_location("https://example.com/repo.git", tmp_path)
    assert resolve_location("file:///abs/x", tmp_path) == Path("/abs/x")
    assert resolve_location("sub/dir", tmp_path) == (tmp_path / "sub/dir").resolve()


def _git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "GIT_AUTHOR_DATE": "2026-01-02T03:04:05Z",
        "GIT_COMMITTER_DATE": "2026-01-02T03:04:05Z",
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    return subprocess.run(
        ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True, env=env
    ).stdout.strip()


def _set_source(pack: Path, block: str) -> None:
    manifest = pack / "expert" / "EXPERT.yaml"
    text = manifest.read_text()
    start = text.index("sources:\n")
    end = text.index("context:\n")
    manifest.write_text(text[:start] + "sources:\n" + block + text[end:])


def test_git_source_reads_the_pinned_commit_not_the_work_tree(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    (repo / "notes.md").write_text("The launch code word is heron.\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    (repo / "notes.md").write_text("The launch code word is pelican.\n")
    _git(repo, "commit", "-q", "-am", "two")
    (repo / "notes.md").write_text("uncommitted work tree text: albatross\n")
    pack = tmp_path / "git-expert"
    scaffold(pack)
    _set_source(
        pack,
        f"""  - source_id: docs
    type: git
    uri: {repo.as_posix()}
    scope: {{include: ["*.md"]}}
    revision: {{commit: "{first}"}}
    refresh: {{strategy: incremental, incremental: {{method: git-diff}}}}
""",
    )
    result = build_pack(pack)
    revision = result.revisions["docs"]
    assert revision["commit"] == first and revision["timestamp"] == "2026-01-02T03:04:05Z"
    response = query_pack(load_pack(pack), {"question": "launch code word"})
    assert "heron" in response["chunks"][0]["snippet"]
    assert response["citations"][0]["revision"]["commit"] == first
    suite = pack / "expert" / "evals" / "conformance.yaml"
    suite.write_text(
        suite.read_text()
        .replace("How do I add a new source document to the expert?", "What is the launch code word?")
        .replace('must_cite: ["getting-started.md"]', 'must_cite: ["notes.md"]')
    )
    from agentpack_ecp.evals import run_suites

    report = run_suites(load_pack(pack))
    assert report.ok, report.model_dump_json(indent=1)
    _set_source(
        pack,
        f"""  - source_id: docs
    type: git
    uri: {repo.as_posix()}
    scope: {{include: ["*.md"]}}
    revision: {{commit: HEAD}}
    refresh: {{strategy: incremental, incremental: {{method: git-diff}}}}
""",
    )
    head = build_pack(pack).revisions["docs"]
    assert head["commit"] == _git(repo, "rev-parse", "HEAD") and head["branch"] == "main"
    assert "pelican" in query_pack(load_pack(pack), {"question": "launch code word"})["chunks"][0]["snippet"]


def test_web_source_indexes_its_snapshot_directory(tmp_path: Path) -> None:
    pack = tmp_path / "web-expert"
    scaffold(pack)
    snap = pack / "expert" / "context" / "snapshots" / "site"
    snap.mkdir(parents=True)
    (snap / "faq.html.md").write_text("# FAQ\nRefunds are processed within five business days.\n")
    _set_source(
        pack,
        """  - source_id: site
    type: web
    uri: https://docs.example.com/
    scope: {include: ["**/*.md"]}
    revision: {retrieved_at: "2026-02-03T04:05:06Z", etag: "W/1"}
    refresh: {strategy: rebuild, rebuild: {method: crawl}}
""",
    )
    manifest = pack / "expert" / "EXPERT.yaml"
    manifest.write_text(
        manifest.read_text().replace(
            "  artifacts:\n",
            """  artifacts:
    snapshots:
      - id: site-snapshot
        path: expert/context/snapshots/site
        format: directory
        as_of: {source_id: site, revision_ref: "2026-02-03"}
""",
            1,
        )
    )
    revision = build_pack(pack).revisions["site"]
    assert revision["retrieved_at"] == "2026-02-03T04:05:06Z" and revision["etag"] == "W/1" and revision["hash"]
    response = query_pack(load_pack(pack), {"question": "how long do refunds take"})
    assert response["citations"][0]["artifact_path"] == "faq.html.md"
    assert response["citations"][0]["source_type"] == "web"


def test_database_source_reads_a_declared_query(tmp_path: Path) -> None:
    pack = tmp_path / "db-expert"
    scaffold(pack)
    db = pack / "expert" / "sources" / "shop.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE products (id INTEGER PRIMARY KEY, name TEXT, note TEXT)")
    con.executemany(
        "INSERT INTO products VALUES (?,?,?)",
        [(1, "kettle", "boils water in two minutes"), (2, "toaster", "browns bread evenly")],
    )
    con.commit()
    con.close()
    _set_source(
        pack,
        """  - source_id: shop
    type: database
    uri: sqlite:///expert/sources/shop.db
    scope: {include: ["products"]}
    revision: {timestamp: "2026-01-01T00:00:00Z"}
    refresh: {strategy: rebuild, rebuild: {method: sql-export, query: "SELECT id, name, note FROM products ORDER BY id"}}
""",  # noqa: E501  (one flow mapping of the EXPERT.yaml under test)
    )
    revision = build_pack(pack).revisions["shop"]
    assert revision["row_count"] == 2 and revision["query_hash"].startswith("sha256:")
    response = query_pack(load_pack(pack), {"question": "which product boils water"})
    citation = response["citations"][0]
    assert citation["artifact_path"] == "products/1" and "kettle" in response["chunks"][0]["snippet"]
    from agentpack_ecp.evals import CitationChecker

    checker = CitationChecker(load_pack(pack))
    assert checker.check(citation, response["chunks"][0]["snippet"], resolve=True, snippets=True, hashes=True) == []
    manifest = pack / "expert" / "EXPERT.yaml"
    manifest.write_text(
        manifest.read_text().replace("SELECT id, name, note FROM products ORDER BY id", "DELETE FROM products")
    )
    with pytest.raises(AgentpackError, match="read-only SELECT"):
        build_pack(pack, rebuild=True)


def test_unsupported_sources_are_clear_errors(tmp_path: Path) -> None:
    pack = tmp_path / "bad-expert"
    scaffold(pack)
    _set_source(
        pack,
        """  - source_id: warehouse
    type: database
    uri: postgres://user@host:5432/db
    scope: {include: ["public.*"]}
    revision: {timestamp: "2026-01-01T00:00:00Z"}
    refresh: {strategy: rebuild, rebuild: {method: sql-export, query: "SELECT 1"}}
""",
    )
    with pytest.raises(AgentpackError, match="only SQLite"):
        build_pack(pack)
    _set_source(
        pack,
        """  - source_id: site
    type: web
    uri: https://example.com/
    scope: {include: ["**"]}
    revision: {retrieved_at: "2026-01-01T00:00:00Z"}
    refresh: {strategy: none}
""",
    )
    with pytest.raises(AgentpackError, match="no local snapshot directory"):
        build_pack(pack)


def test_directory_scan_order_symlinks_and_skipped_dirs(tmp_path: Path) -> None:
    """A directory's files come before its subdirectories', each sorted by name (os.walk's order, which
    file manifests keep); a symlinked file counts when it stays inside the source, a symlinked directory
    is not entered, a broken link is skipped, and an internal directory is skipped by identity even when
    its path is given through a symlink."""
    from agentpack_ecp.sources.snapshot import scan_directory

    root, outside = tmp_path / "root", tmp_path / "outside"
    for folder in (root / "b" / "deep", root / "a", root / "internal", outside):
        folder.mkdir(parents=True)
    for rel in ("z.txt", "b/deep/x.txt", "b/y.txt", "a/w.txt", "internal/i.txt"):
        (root / rel).write_text(rel)
    (outside / "o.txt").write_text("o")
    (root / "in.txt").symlink_to("z.txt")
    (root / "out.txt").symlink_to(outside / "o.txt")
    (root / "linked").symlink_to(outside, target_is_directory=True)
    (root / "broken.txt").symlink_to("nowhere")
    (tmp_path / "alias").symlink_to(root / "internal", target_is_directory=True)
    manifest, texts = scan_directory(root, Scope(["**/*"], []), 1 << 20, {str(tmp_path / "alias")})
    assert list(manifest) == ["in.txt", "z.txt", "a/w.txt", "b/y.txt", "b/deep/x.txt"]
    assert texts["in.txt"] == "z.txt"
