"""Revision edits, logs, policy plans, backups and the publish journal (no index build needed)."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack.io.clock import FixedClock
from agentpack.io.errors import AgentpackError
from agentpack_ecp.lifecycle import backups, publish, state
from agentpack_ecp.lifecycle.policy import Budget, BudgetExceeded, Policy, plan_refresh
from agentpack_ecp.pack import journal, layout, logs, revisions
from agentpack_ecp.pack.schemas import schema_store

NOW = datetime(2026, 3, 1, tzinfo=UTC)


# -- EXPERT.yaml revision edits ----------------------------------------------------------------
def test_revision_update_keeps_comments_and_layout(pack: Path) -> None:
    path = pack / "expert" / "EXPERT.yaml"
    before = path.read_text()
    changed = revisions.update_manifest(pack, {"docs": {"hash": "abc123", "timestamp": "2026-02-02T00:00:00Z"}})
    after = path.read_text()
    assert changed
    assert yaml.safe_load(after)["sources"][0]["revision"] == {"hash": "abc123", "timestamp": "2026-02-02T00:00:00Z"}
    diff = [(a, b) for a, b in zip(before.splitlines(), after.splitlines(), strict=False) if a != b]
    assert diff == [
        ('      hash: "0000"', '      hash: "abc123"'),
        ('      timestamp: "2026-01-01T00:00:00Z"', '      timestamp: "2026-02-02T00:00:00Z"'),
    ]
    assert "# bundled corpus" in after and "# The demo expert" in after
    assert not revisions.update_manifest(pack, {"docs": {"hash": "abc123"}})


GOLDEN_IN = """\
sources:
  - source_id: a   # first
    revision:
      hash: '0000'   # old
    refresh: {strategy: none}

  - {source_id: flow}
  - source_id: b
    revision: {commit: abc}
  - source_id: c
    uri: x
# end
"""
GOLDEN_OUT = """\
sources:
  - source_id: a   # first
    revision:
      hash: 'ffff'   # old
      timestamp: "2026-01-01T00:00:00Z"
    refresh: {strategy: none}

  - {source_id: flow}
  - source_id: b
    revision: {commit: "0123", branch: "main"}
  - source_id: c
    uri: x
    revision: {retrieved_at: "2026-01-01T00:00:00Z"}
# end
"""


def test_revision_update_golden() -> None:
    out = revisions.update_text(
        GOLDEN_IN,
        {
            "a": {"hash": "ffff", "timestamp": "2026-01-01T00:00:00Z"},
            "b": {"commit": "0123", "branch": "main"},
            "c": {"retrieved_at": "2026-01-01T00:00:00Z"},
        },
    )
    assert out == GOLDEN_OUT


def test_revision_update_errors() -> None:
    with pytest.raises(AgentpackError, match="no source with source_id zz"):
        revisions.update_text(GOLDEN_IN, {"zz": {"hash": "1"}})
    with pytest.raises(AgentpackError, match="flow mapping"):
        revisions.update_text(GOLDEN_IN, {"flow": {"hash": "1"}})
    with pytest.raises(AgentpackError, match="no sources"):
        revisions.update_text("a: 1\n", {"a": {}})


_values = st.one_of(
    st.text(max_size=20),
    st.integers(),
    st.booleans(),
    st.none(),
    st.sampled_from(["0123", "yes", "a: b", "#x", "'q'", "-", "2026-01-01", "null", "1e3"]),
)


@settings(max_examples=60, deadline=None)
@given(
    st.dictionaries(st.sampled_from(["hash", "commit", "timestamp", "branch", "new_key"]), _values, min_size=1),
    st.sampled_from(["'", '"', ""]),
)
def test_revision_update_property(new: dict, quote: str) -> None:
    text = (
        "# c\nsources:\n  - source_id: s  # x\n    revision:\n"
        f"      hash: {quote}0000{quote}  # h\n      timestamp: {quote}t{quote}\n    type: filesystem\n"
    )
    out = revisions.update_text(text, {"s": new})
    data = yaml.safe_load(out)
    assert data["sources"][0]["revision"] == {**yaml.safe_load(text)["sources"][0]["revision"], **new}
    assert data["sources"][0]["type"] == "filesystem" and out.startswith("# c\n") and "# x" in out


# -- logs --------------------------------------------------------------------------------------
def _manifest(**logs_cfg) -> dict:
    return {"logs": {"enabled": True, **logs_cfg}, "security": {"contains_secrets": False}}


def test_query_log_hashes_by_default(tmp_path: Path) -> None:
    clock = FixedClock("2026-03-01T10:00:00Z")
    logger = logs.logger_for(tmp_path, _manifest(), clock=clock)
    path = logger.query(
        "secret question?",
        {"answer": "secret answer", "citations": [{"chunk_id": "d::a#L1-L2"}], "synthesis": {"provider": "local"}},
        request={"top_k": 3},
    )
    assert path == tmp_path / "expert/logs/queries/2026-03-01.jsonl"
    record = json.loads(path.read_text())
    assert "secret" not in path.read_text()
    assert record["inputs"]["question_sha256"] == __import__("hashlib").sha256(b"secret question?").hexdigest()
    assert record["outputs"]["citations"] == ["d::a#L1-L2"] and record["operation"] == "query"
    assert record["timestamp"] == "2026-03-01T10:00:00Z" and record["actor"].startswith("user:")


def test_query_log_raw_only_when_allowed_and_no_secrets(tmp_path: Path) -> None:
    allowed = logs.logger_for(tmp_path / "a", _manifest(store_question=True, store_answer=True))
    text = allowed.query("q1", {"answer": "a1"}).read_text()
    assert '"question": "q1"' in text and '"answer": "a1"' in text
    secret = _manifest(store_question=True, store_answer=True)
    secret["security"]["contains_secrets"] = True
    text = logs.logger_for(tmp_path / "b", secret).query("where-is-q2", {"answer": "the-a2"}).read_text()
    assert "where-is-q2" not in text and "the-a2" not in text and "question_sha256" in text


def test_logging_disabled_writes_nothing(tmp_path: Path) -> None:
    logger = logs.logger_for(tmp_path, {"logs": {"enabled": False}})
    assert logger.query("q", {"answer": "a"}) is None and logger.update("refresh") is None
    assert not (tmp_path / "expert").exists()


def test_actor_from_the_environment_with_the_old_name_as_alias(monkeypatch) -> None:
    monkeypatch.delenv("AGENTPACK_ECP_ACTOR", raising=False)
    monkeypatch.delenv("AGENTPACK_ACTOR", raising=False)
    monkeypatch.setenv("USER", "ada")
    assert logs.actor() == "user:ada" and logs.actor("service:mcp") == "service:mcp"
    monkeypatch.setenv("AGENTPACK_ACTOR", "ci:alias")
    assert logs.actor("service:mcp") == "ci:alias"
    monkeypatch.setenv("AGENTPACK_ECP_ACTOR", "ci:build-7")
    assert logs.actor() == "ci:build-7"


def test_retention_days_is_the_shortest_promise() -> None:
    assert logs.retention_days({}) is None
    assert logs.retention_days({"security": {"retention_days": 90}}) == 90
    assert logs.retention_days({"logs": {"retention_days": 30}, "security": {"retention_days": 90}}) == 30
    assert logs.retention_days({"logs": {"retention_days": 30}}, {"retention": {"prune_logs_after_days": 7}}) == 7


def test_prune_logs(tmp_path: Path) -> None:
    for kind in logs.KINDS:
        folder = tmp_path / "expert/logs" / kind
        folder.mkdir(parents=True)
        for day in ("2026-01-01", "2026-02-20", "2026-03-01"):
            (folder / f"{day}.jsonl").write_text("{}\n")
        (folder / "notes.txt").write_text("keep")
    removed = logs.prune_logs(tmp_path, 10, now=NOW, dry_run=True)
    assert len(removed) == 2 and (tmp_path / "expert/logs/queries/2026-01-01.jsonl").exists()
    assert logs.prune_logs(tmp_path, 10, now=NOW) == removed
    left = sorted(p.name for p in (tmp_path / "expert/logs/queries").iterdir())
    assert left == ["2026-02-20.jsonl", "2026-03-01.jsonl", "notes.txt"]
    assert logs.prune_logs(tmp_path, None, now=NOW) == []


def test_log_records_match_schemas(tmp_path: Path) -> None:
    store = schema_store()
    logger = logs.logger_for(tmp_path, _manifest())
    q = json.loads(logger.query("q", {"answer": "a"}).read_text())
    u = json.loads(logger.update("refresh", run_id="r1", decision="published", inputs={}, outputs={}).read_text())
    assert store.validate("https://agentpack.dev/schemas/ecp/log-query.schema.json", q) == []
    assert store.validate("https://agentpack.dev/schemas/ecp/log-update.schema.json", u) == []


# -- policy ------------------------------------------------------------------------------------
def _policy(**over) -> Policy:
    raw = {
        "budgets": {"max_changed_files": 10},
        "update_strategy": {
            "default": "incremental",
            "rebuild_thresholds": {"changed_files_gt": 5, "changed_lines_gt": 100, "days_since_full_rebuild_gt": 30},
        },
    }
    for key, value in over.items():
        raw[key] = {**raw.get(key, {}), **value}
    return Policy(raw)


def plan(policy: Policy, files: int = 1, lines: int = 1, rebuild: bool = False, needs=(), last=NOW):
    return plan_refresh(
        policy,
        changed_files=files,
        changed_lines=lines,
        force_rebuild=rebuild,
        needs_rebuild=list(needs),
        last_full_rebuild=last,
        now=NOW,
    )


def test_plan_strategies() -> None:
    p = _policy()
    assert plan(p, files=0).strategy == "up-to-date"
    assert plan(p, files=0, needs=["no published index"]).strategy == "rebuild"
    assert plan(p).strategy == "incremental"
    assert plan(p, rebuild=True).strategy == "rebuild"
    assert "changed_files_gt" in plan(p, files=6).reasons[0]
    assert "changed_lines_gt" in plan(p, lines=101).reasons[0]
    old = plan(p, last=datetime(2026, 1, 1, tzinfo=UTC))
    assert old.strategy == "rebuild" and "days_since_full_rebuild_gt" in old.reasons[0]
    assert plan(_policy(update_strategy={"default": "rebuild"})).strategy == "rebuild"
    assert plan(_policy(update_strategy={"default": "rebuild"}), files=0).strategy == "up-to-date"


def test_plan_max_changed_files_refuses_or_rebuilds() -> None:
    with pytest.raises(BudgetExceeded, match="max_changed_files"):
        plan(_policy(), files=11)
    assert plan(_policy(), files=11, rebuild=True).strategy == "rebuild"
    p = _policy(budgets={"max_changed_files_action": "rebuild"})
    assert plan(p, files=11).strategy == "rebuild"


def test_budget_tokens_cost_time() -> None:
    ticks = iter([0.0, 5.0, 20.0])
    budget = Budget(
        Policy({"budgets": {"max_tokens": 100, "max_update_cost_usd": 0.5, "max_update_duration_seconds": 10}}),
        started=0.0,
        clock_monotonic=lambda: next(ticks),
    )
    budget.check_time("diff")  # 0 s
    budget.check_time("build")  # 5 s
    with pytest.raises(BudgetExceeded, match="max_update_duration_seconds"):
        budget.check_time("evals")  # 20 s
    budget.charge(60, 0.1)
    with pytest.raises(BudgetExceeded, match="max_tokens"):
        budget.charge(60)
    with pytest.raises(BudgetExceeded, match="max_update_cost_usd"):
        Budget(Policy({"budgets": {"max_update_cost_usd": 0.5}}), started=0, clock_monotonic=lambda: 0).charge(1, 1)
    assert not Budget(Policy({"budgets": {"max_tokens": 0}}), started=0, clock_monotonic=lambda: 0).allows_llm()


# -- backups and the publish journal ------------------------------------------------------------
def _index(root: Path, rel: str, marker: str) -> None:
    folder = root / rel
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.json").write_text(json.dumps({"marker": marker}))


def _marker(root: Path, rel: str = "expert/context/indexes/kw") -> str:
    return json.loads((root / rel / "index.json").read_text())["marker"]


def _publish(root: Path, run: str, marker: str, when: str, rev: str) -> dict:
    _index(root, f"{layout.STAGING}/{run}/expert/context/indexes/kw", marker)
    return publish.publish_staged(
        root,
        run_id=run,
        indexes={"kw": "expert/context/indexes/kw"},
        staged_dir=f"{layout.STAGING}/{run}",
        revisions={"docs": {"hash": rev}},
        previous_revisions=revisions.current_revisions(yaml.safe_load((root / "expert/EXPERT.yaml").read_text())),
        strategy="incremental",
        clock=FixedClock(when),
    )


def test_publish_and_rollback_generations(pack: Path) -> None:
    _index(pack, "expert/context/indexes/kw", "v0")
    _publish(pack, "r1", "v1", "2026-02-01T00:00:00Z", "h1")
    assert _marker(pack) == "v1"
    assert not (pack / layout.STAGING / "r1").exists() and not layout.journal_path(pack).exists()
    _publish(pack, "r2", "v2", "2026-02-02T00:00:00Z", "h2")
    assert _marker(pack) == "v2"
    assert yaml.safe_load((pack / "expert/EXPERT.yaml").read_text())["sources"][0]["revision"]["hash"] == "h2"
    names = [b["name"] for b in backups.list_backups(pack, "expert/context/indexes/kw")]
    assert names == ["20260201T000000Z-r1", "20260202T000000Z-r2"]
    done = publish.rollback(pack, clock=FixedClock("2026-02-03T00:00:00Z"))
    assert done["rolled_back"] == "r2" and _marker(pack) == "v1"
    assert yaml.safe_load((pack / "expert/EXPERT.yaml").read_text())["sources"][0]["revision"]["hash"] == "h1"
    publish.rollback(pack, clock=FixedClock("2026-02-04T00:00:00Z"))
    assert _marker(pack) == "v0"
    assert yaml.safe_load((pack / "expert/EXPERT.yaml").read_text())["sources"][0]["revision"]["hash"] == "0000"
    with pytest.raises(AgentpackError, match="nothing to roll back"):
        publish.rollback(pack)
    assert [g["rolled_back"] for g in state.load(pack)["generations"]] == [True, True]


def test_first_publish_has_no_backup_and_cannot_roll_back(pack: Path) -> None:
    _publish(pack, "r1", "v1", "2026-02-01T00:00:00Z", "h1")
    assert _marker(pack) == "v1"
    with pytest.raises(AgentpackError, match="no backup is left"):
        publish.rollback(pack)


@pytest.mark.parametrize("exchange", [True, False])
def test_recover_finishes_every_interrupted_step(pack: Path, monkeypatch, exchange: bool) -> None:
    """Simulate a crash after each possible move; ``recover`` reaches the same end state."""
    if not exchange:
        monkeypatch.setattr(journal, "exchange", lambda a, b: False)
    target = pack / "expert/context/indexes/kw"
    for stop in range(3):
        _index(pack, "expert/context/indexes/kw", "old")
        staged = f"{layout.STAGING}/r{stop}/indexes/kw"
        _index(pack, staged, "new")
        backup = f"expert/context/indexes/.backup/kw/x{stop}"
        step = journal.plan_step(pack, "expert/context/indexes/kw", staged, backup)
        record = {
            "action": "publish",
            "run_id": f"r{stop}",
            "started_at": "t",
            "steps": [step],
            "revisions": {},
            "state": None,
            "cleanup": f"{layout.STAGING}/r{stop}",
        }
        layout.journal_path(pack).parent.mkdir(parents=True, exist_ok=True)
        layout.journal_path(pack).write_text(json.dumps(record))
        if stop >= 1:  # first move done
            if exchange:
                assert journal.exchange(pack / staged, target)
            else:
                os.replace(target, pack / backup) if (pack / backup).parent.exists() else (
                    (pack / backup).parent.mkdir(parents=True),
                    os.replace(target, pack / backup),
                )
        if stop >= 2 and exchange:
            (pack / backup).parent.mkdir(parents=True, exist_ok=True)
            os.replace(pack / staged, pack / backup)
        if stop >= 2 and not exchange:
            os.replace(pack / staged, target)
        assert journal.recover(pack)["run_id"] == f"r{stop}"
        assert _marker(pack) == "new"
        assert json.loads((pack / backup / "index.json").read_text())["marker"] == "old"
        assert not layout.journal_path(pack).exists() and not (pack / staged).exists()
        assert journal.recover(pack) is None


def test_prune_backups(pack: Path) -> None:
    for name in ("20260101T000000Z-a", "20260201T000000Z-b", "20260220T000000Z-c", "20260228T000000Z-d"):
        _index(pack, f"expert/context/indexes/.backup/kw/{name}", name)
    gone = backups.prune_backups(
        pack, ["expert/context/indexes/kw"], max_per_index=3, max_age_days=None, now=NOW, dry_run=True
    )
    assert gone == ["expert/context/indexes/.backup/kw/20260101T000000Z-a"]
    gone = backups.prune_backups(pack, ["expert/context/indexes/kw"], max_per_index=3, max_age_days=20, now=NOW)
    assert [g.rsplit("/", 1)[1] for g in gone] == ["20260101T000000Z-a", "20260201T000000Z-b"]
    assert [b["name"] for b in backups.list_backups(pack, "expert/context/indexes/kw")] == [
        "20260220T000000Z-c",
        "20260228T000000Z-d",
    ]
