"""Refresh, publish, rollback, prune and status through the real CLI, on real builds."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from agentpack.io.fsutil import file_lock
from agentpack.testing import run_cli
from agentpack_ecp.index.build import build_pack
from agentpack_ecp.pack import layout

DOCS = Path("expert/sources/docs")


def refresh(pack: Path, *args: str):
    result = run_cli(["ecp", "refresh", pack, "--json", *args])
    assert result.exit_code in (0, 1), result.stderr + result.stdout
    return result


def ask(pack: Path, question: str) -> dict:
    result = run_cli(["query", pack, question, "--json"])
    assert result.exit_code == 0, result.stderr
    return result.json()["response"]


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def set_policy(pack: Path, **sections) -> None:
    path = pack / "expert/maintenance/policy.json"
    policy = json.loads(path.read_text())
    for key, value in sections.items():
        policy[key] = {**policy.get(key, {}), **value}
    path.write_text(json.dumps(policy))


@pytest.fixture
def built(tmp_path: Path, make_pack) -> Path:
    pack = make_pack(tmp_path, logs={"enabled": True})
    build_pack(pack)
    return pack


def test_dry_run_reports_and_writes_nothing(built: Path) -> None:
    before = tree(built)
    result = refresh(built, "--dry-run")
    assert result.exit_code == 0 and result.json()["strategy"] == "up-to-date"
    (built / DOCS / "tokens.md").write_text("# Tokens\n\nTokens now last two hours.\n")
    (built / DOCS / "new.md").write_text("# New\n")
    (built / DOCS / "guide/setup.md").unlink()
    before = tree(built)
    data = refresh(built, "--dry-run").json()
    assert data["ok"] and data["strategy"] == "incremental" and data["decision"] == "dry-run"
    [change] = data["changes"]
    assert (change["added"], change["modified"], change["deleted"]) == (["new.md"], ["tokens.md"], ["guide/setup.md"])
    assert change["method"] == "file-manifest" and change["changed_lines"] > 0
    assert tree(built) == before
    assert refresh(built, "--dry-run", "--rebuild").json()["strategy"] == "rebuild"


def test_incremental_refresh_publishes_and_keeps_manifest_formatting(built: Path) -> None:
    manifest = built / "expert/EXPERT.yaml"
    before = manifest.read_text()
    (built / DOCS / "tokens.md").write_text("# Tokens\n\nAccess tokens expire after two hours.\n")
    result = refresh(built)
    data = result.json()
    assert result.exit_code == 0 and data["decision"] == "published" and data["strategy"] == "incremental"
    assert data["evals"]["passed"] and data["evals"]["total"] == 1
    after = manifest.read_text()
    new_hash = data["revisions"]["docs"]["hash"]
    assert yaml.safe_load(after)["sources"][0]["revision"]["hash"] == new_hash
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=False) if a != b]
    assert 1 <= len(changed) <= 2 and all("hash:" in a or "timestamp:" in a for a, _ in changed)
    assert "# bundled corpus" in after and "# shown to people" in after
    assert "two hours" in ask(built, "how long do access tokens last")["chunks"][0]["snippet"]
    assert not list((built / layout.STAGING).iterdir())
    backups = list((built / "expert/context/indexes/.backup/kw").iterdir())
    assert [b.name for b in backups] == [data["run_id"]]
    status = run_cli(["ecp", "status", built, "--json"]).json()
    assert status["stale"] is False and status["last_refresh"]["decision"] == "published"
    assert status["last_evals"]["passed"] is True and status["indexes"][0]["backups"] == 1
    assert refresh(built).json()["decision"] == "up-to-date"
    log = (built / "expert/logs/updates").glob("*.jsonl")
    records = [json.loads(line) for f in log for line in f.read_text().splitlines()]
    assert [r["decision"] for r in records] == ["published", "up-to-date"]


def test_a_refresh_without_evals_imports_no_query_module(built: Path) -> None:
    """Without the eval gate nothing is queried: the query path's modules (and their index cache, which a
    publish would otherwise have to clear) are not imported."""
    (built / DOCS / "tokens.md").write_text("# Tokens\n\nAccess tokens expire after two hours.\n")
    argv = [sys.executable, "-X", "importtime", "-m", "agentpack", "ecp", "refresh", str(built), "--no-evals", "--json"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert json.loads(proc.stdout)["decision"] == "published"
    modules = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert "agentpack_ecp.lifecycle.refresh" in modules
    assert not {m for m in modules if m.startswith("agentpack_ecp.query")}


def test_a_publish_drops_the_packs_opened_indexes_from_the_query_cache(built: Path) -> None:
    """The query path's shared index cache registers with the publish journal when imported: a refresh,
    publish or rollback (``journal.published``) drops the pack's opened indexes, other packs' stay."""
    from agentpack_ecp.pack import journal
    from agentpack_ecp.pack.manifest import load_pack
    from agentpack_ecp.query.retrieve import SHARED

    pack = load_pack(built)
    opened = SHARED.loaded(pack)
    assert SHARED.loaded(pack) is opened  # kept while nothing is published
    journal.published(built / "expert" / "..")  # any spelling of the root
    assert SHARED.loaded(pack) is not opened


def test_all_index_formats_refresh(tmp_path: Path, kit) -> None:
    pack = kit.write_pack(tmp_path, indexes=kit.ALL_FORMATS)
    build_pack(pack)
    (pack / DOCS / "tokens.md").write_text("# Tokens\n\nAccess tokens expire after two hours.\n")
    data = refresh(pack).json()
    assert data["decision"] == "published" and data["strategy"] == "incremental"
    assert sorted(i["index_id"] for i in data["build"]["indexes"]) == ["fts", "kw", "vec"]
    for mode in ("keyword", "fts", "vector"):
        response = run_cli(["query", pack, "access tokens expire", "--mode", mode, "--json"]).json()["response"]
        assert "two hours" in response["chunks"][0]["snippet"], mode
    for index in ("kw", "fts", "vec"):
        assert [b.name for b in (pack / "expert/context/indexes/.backup" / index).iterdir()] == [data["run_id"]]


def test_failed_evals_roll_back(built: Path) -> None:
    (built / DOCS / "keys.md").write_text("# Keys\n\nKeys are managed elsewhere.\n")
    before = tree(built / "expert/context/indexes/kw")
    result = refresh(built)
    data = result.json()
    assert result.exit_code == 1 and data["ok"] is False and data["decision"] == "rolled_back"
    assert not data["evals"]["passed"] and data["evals"]["suites"][0]["failed"] == ["rotation"]
    assert tree(built / "expert/context/indexes/kw") == before
    assert "ninety" in ask(built, "how are signing keys rotated")["answer"]
    assert (
        yaml.safe_load((built / "expert/EXPERT.yaml").read_text())["sources"][0]["revision"]["hash"]
        != data["revisions"]["docs"]["hash"]
    )
    assert run_cli(["ecp", "status", built, "--json"]).json()["last_evals"]["passed"] is False


def test_failed_evals_block_then_force_publish(built: Path) -> None:
    set_policy(built, publishing={"rollback_on_fail": False})
    (built / DOCS / "keys.md").write_text("# Keys\n\nKeys are managed elsewhere.\n")
    data = refresh(built).json()
    assert data["decision"] == "blocked" and data["exit_status"] == 1
    assert "ninety" in ask(built, "signing keys rotated")["answer"]
    refused = run_cli(["ecp", "publish", built])
    assert refused.exit_code == 2 and "blocked" in refused.stderr and "--force" in refused.stderr
    forced = run_cli(["ecp", "publish", built, "--force", "--json"])
    assert forced.exit_code == 0 and forced.json()["forced"] is True
    assert "elsewhere" in ask(built, "signing keys rotated")["answer"]
    assert run_cli(["ecp", "publish", built]).exit_code == 2  # nothing pending any more


def test_failed_evals_warn_publishes_but_exits_1(built: Path) -> None:
    set_policy(built, validation={"fail_action": "warn"}, publishing={"rollback_on_fail": False})
    (built / DOCS / "keys.md").write_text("# Keys\n\nKeys are managed elsewhere.\n")
    result = refresh(built)
    assert result.exit_code == 1 and result.json()["decision"] == "published"
    assert "elsewhere" in ask(built, "signing keys rotated")["answer"]


def test_require_approval_then_publish_and_rollback(built: Path) -> None:
    set_policy(built, publishing={"on_pass": "require_approval"})
    (built / DOCS / "tokens.md").write_text("# Tokens\n\nAccess tokens expire after two hours.\n")
    data = refresh(built).json()
    assert data["decision"] == "pending_approval" and data["ok"]
    assert "one hour" in ask(built, "access tokens expire")["answer"]
    status = run_cli(["ecp", "status", built, "--json"]).json()
    assert status["pending"]["status"] == "awaiting_approval"
    published = run_cli(["ecp", "publish", built, "--json"])
    assert published.exit_code == 0, published.stderr
    assert "two hours" in ask(built, "access tokens expire")["answer"]
    rolled = run_cli(["ecp", "rollback", built, "--json"])
    assert rolled.exit_code == 0 and rolled.json()["rolled_back"] == data["run_id"]
    assert "one hour" in ask(built, "access tokens expire")["answer"]
    assert (
        yaml.safe_load((built / "expert/EXPERT.yaml").read_text())["sources"][0]["revision"]
        == data["changes"][0]["from"]
    )
    again = run_cli(["ecp", "rollback", built])
    assert again.exit_code == 2 and "nothing to roll back" in again.stderr


def test_stale_pending_is_refused(built: Path) -> None:
    set_policy(built, publishing={"on_pass": "require_approval"})
    (built / DOCS / "tokens.md").write_text("# Tokens\n\nv2\n")
    refresh(built)
    pending = json.loads(layout.pending_path(built).read_text())
    pending["previous_revisions"] = {"docs": {"hash": "other"}}
    layout.pending_path(built).write_text(json.dumps(pending))
    result = run_cli(["ecp", "publish", built])
    assert result.exit_code == 2 and "another published state" in result.stderr


def test_budget_refuses_too_many_changed_files(built: Path) -> None:
    set_policy(built, budgets={"max_changed_files": 1})
    for i in range(3):
        (built / DOCS / f"extra{i}.md").write_text(f"extra {i}\n")
    before = tree(built / "expert/context/indexes")
    result = refresh(built)
    assert result.exit_code == 1 and result.json()["decision"] == "refused"
    assert "max_changed_files" in result.json()["messages"][0]
    assert tree(built / "expert/context/indexes") == before
    assert refresh(built, "--dry-run").exit_code == 1
    set_policy(built, budgets={"max_changed_files_action": "rebuild"})
    data = refresh(built).json()
    assert data["decision"] == "published" and data["strategy"] == "rebuild"


def test_threshold_switches_to_rebuild(built: Path) -> None:
    set_policy(built, update_strategy={"rebuild_thresholds": {"changed_files_gt": 1}})
    for i in range(2):
        (built / DOCS / f"extra{i}.md").write_text(f"extra {i}\n")
    data = refresh(built).json()
    assert data["strategy"] == "rebuild" and "changed_files_gt" in data["plan"]["reasons"][0]
    assert run_cli(["ecp", "status", built, "--json"]).json()["last_full_rebuild_at"]


def test_lock_stops_a_second_refresh(built: Path) -> None:
    with file_lock(layout.lock_path(built)):
        result = run_cli(["ecp", "refresh", built])
    assert result.exit_code == 2 and "locked by another process" in result.stderr


def test_no_evals_skips_the_gate(built: Path) -> None:
    (built / DOCS / "keys.md").write_text("# Keys\n\nKeys are managed elsewhere.\n")
    data = refresh(built, "--no-evals").json()
    assert data["decision"] == "published" and "evals" not in data and data["ok"]


def test_prune_applies_retention(built: Path) -> None:
    set_policy(built, retention={"max_backups_per_index": 1})
    for n in range(3):
        (built / DOCS / "tokens.md").write_text(f"# Tokens\n\nversion {n}\n")
        assert refresh(built).json()["decision"] == "published"
    old = built / "expert/logs/queries/2000-01-01.jsonl"
    old.parent.mkdir(parents=True, exist_ok=True)
    old.write_text("{}\n")
    (built / "expert/EXPERT.yaml").write_text(
        (built / "expert/EXPERT.yaml")
        .read_text()
        .replace("classification: public", "classification: public\n  retention_days: 30")
    )
    dry = run_cli(["ecp", "prune", built, "--dry-run", "--json"]).json()
    assert len(dry["deleted_backups"]) == 2 and dry["deleted_logs"] == ["expert/logs/queries/2000-01-01.jsonl"]
    assert old.exists()
    done = run_cli(["ecp", "prune", built, "--json"]).json()
    assert done["deleted_backups"] == dry["deleted_backups"] and not old.exists()
    assert len(list((built / "expert/context/indexes/.backup/kw").iterdir())) == 1


def test_git_source_incremental(tmp_path: Path, kit) -> None:
    repo = tmp_path / "repo"
    first = kit.make_git_repo(repo)
    pack = kit.write_pack(tmp_path / "packs", sources=kit.GIT_SOURCE.format(uri=repo.as_uri(), commit=first))
    build_pack(pack)
    assert refresh(pack, "--dry-run").json()["strategy"] == "up-to-date"
    (repo / "tokens.md").write_text("# Tokens\n\nAccess tokens expire after two hours.\nRotate them.\n")
    (repo / "notes.txt").write_text("out of scope\n")
    (repo / "extra.md").write_text("# Extra\n")
    (repo / "guide/setup.md").write_text("# Setup (work tree only, not committed)\n")
    kit.git(repo, "add", "tokens.md", "notes.txt", "extra.md")
    kit.git(repo, "commit", "-q", "-m", "two hours")
    second = kit.git(repo, "rev-parse", "HEAD")
    data = refresh(pack, "--dry-run").json()
    [change] = data["changes"]
    assert change["method"] == "git-diff" and change["to"]["commit"] == second
    assert (change["added"], change["modified"], change["deleted"]) == (["extra.md"], ["tokens.md"], [])
    assert change["changed_lines"] == 4 + 1  # numstat: tokens.md 3 added 1 deleted, extra.md 1 added
    data = refresh(pack).json()
    assert data["decision"] == "published", data
    revision = yaml.safe_load((pack / "expert/EXPERT.yaml").read_text())["sources"][0]["revision"]
    assert revision["commit"] == second and revision["branch"] == "main"
    response = ask(pack, "access tokens expire")
    assert "two hours" in response["chunks"][0]["snippet"]
    assert response["citations"][0]["revision"]["commit"] == second
    assert "work tree only" not in json.dumps(ask(pack, "setup work tree"))
