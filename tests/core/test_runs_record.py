"""record_run: what a recorded run holds (cases, totals, status, tokens, git state, digest, settings)."""

import os
import shutil
import subprocess

import pytest

from agentpack.kernel.models import AssertionResult, CaseResult, EvalReport, Report, SuiteResult
from agentpack.kernel.registry import Recording
from agentpack.results.runs import open_store, record_run
from agentpack.results.runs.provenance import git_state, input_digest


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return tmp_path / "runs.sqlite"


def test_a_core_report_gives_cases_totals_status_and_usage(store, tmp_path):
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.txt").write_text("x")
    evaluation = EvalReport(
        name="demo",
        format="sample-todo",
        duration_s=1.5,
        suites=[
            SuiteResult(
                id="s",
                cases=[
                    CaseResult(id="one", status="passed", duration_s=0.1),
                    CaseResult(
                        id="two",
                        status="failed",
                        message="nope",
                        assertions=[AssertionResult(name="x", passed=False, expected=1, actual=2)],
                        details={"usage": {"input_tokens": 7, "output_tokens": 3}},
                    ),
                    CaseResult(id="three", status="skipped"),
                ],
            )
        ],
        metadata={"usage": {"input_tokens": 70, "output_tokens": 30}},
    )
    run = record_run(Report(command="eval", evaluations=[evaluation]), command="eval", input=pack, store=store)
    with open_store(store) as opened:
        back = opened.get(run.id)
    assert (back.status, back.format, back.name, back.input) == ("failed", "sample-todo", "demo", "pack")
    assert (back.total, back.passed, back.failed, back.skipped, back.pass_rate) == (3, 1, 1, 1, 0.5)
    assert (back.input_tokens, back.output_tokens, back.total_tokens) == (70, 30, 100)
    assert back.duration_s == 1.5
    assert back.input_digest == input_digest(pack) and back.input_digest.startswith("sha256:")
    two = back.case_map()["s/two"]
    assert two.total_tokens == 10 and two.message == "nope"
    assert two.detail["assertions"][0]["expected"] == 1
    assert back.report["command"] == "eval" and back.report["tool"]["version"]


def test_a_plugin_report_with_its_own_cases(store):
    native = {"schema_version": 1, "ok": True, "scenarios": [{"id": "greet"}]}
    run = record_run(
        native,
        command="rpc run",
        input="manifest.yaml",
        format="agent-rpc",
        name="support",
        cases=[
            {"suite": "support", "id": "greet", "status": "passed", "total_tokens": 12, "details": {"x": 1}},
            {"suite": "support", "id": "refund", "status": "error", "total_tokens": 5},
        ],
        agent={"name": "SupportAgent", "capabilities": ["tool_calls"]},
        duration_s=2.0,
        started_at="2026-03-01T10:00:00+02:00",
        store=store,
    )
    with open_store(store) as opened:
        back = opened.get(run.id)
    assert back.status == "failed" and back.errors == 1 and back.total_tokens == 17
    assert back.started_at == "2026-03-01T08:00:00.000Z"
    assert back.agent["capabilities"] == ["tool_calls"] and back.report == native
    assert back.cases[0].detail == {"details": {"x": 1}}


def test_status_rules(store):
    aborted = {"evaluations": [{"name": "n", "format": "f", "suites": [], "aborted": "agent unreachable"}]}
    run = record_run(aborted, command="eval", input="x", store=store)
    assert (run.status, run.message) == ("error", "agent unreachable")
    assert record_run({"ok": False}, command="dci resolve", input="x", cases=[], store=store).status == "failed"
    assert (
        record_run({}, command="eval", input="x", cases=[], status="interrupted", store=store).status == "interrupted"
    )
    with pytest.raises(ValueError, match="run status"):
        record_run({}, command="eval", input="x", cases=[], status="great", store=store)
    with pytest.raises(ValueError, match="case status"):
        record_run({}, command="eval", input="x", cases=[{"id": "a", "status": "ok"}], store=store)


def test_no_record_and_tags_from_the_command_line(store, tmp_path):
    assert record_run({}, command="eval", input="x", cases=[], recording=Recording(enabled=False)) is None
    assert not store.exists()
    other = tmp_path / "other.sqlite"
    run = record_run({}, command="eval", input="x", cases=[], tags=["a"], recording=Recording(other, True, ("b",)))
    with open_store(other) as opened:
        assert opened.get(run.id).tags == ["a", "b"]


def test_settings_keep_models_and_drop_secrets(store, monkeypatch):
    monkeypatch.setenv("ECP_LLM_JUDGE_MODEL", "judge-1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("AGENTPACK_OPENEXPERTS_MODEL", "m-2")
    settings = {"model": "gpt-x", "api_key": "sk-secret", "judge": {"model": "j", "token": "t"}, "max_tokens": 5}
    run = record_run({}, command="eval", input="x", cases=[], settings=settings, store=store)
    assert run.settings["model"] == "gpt-x" and run.settings["max_tokens"] == 5
    assert run.settings["judge"] == {"model": "j"} and "api_key" not in run.settings
    assert run.settings["environment"] == {"AGENTPACK_OPENEXPERTS_MODEL": "m-2", "ECP_LLM_JUDGE_MODEL": "judge-1"}
    assert "sk-secret" not in str(run.to_json())


def test_recording_says_where_the_run_went(store, capsys):
    record_run({}, command="eval", input="x", cases=[], store=store)
    assert "run #1 recorded in runs.sqlite" in capsys.readouterr().err


def test_the_digest_follows_content_and_skips_tool_folders(tmp_path):
    root = tmp_path / "pack"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.txt").write_text("one")
    first = input_digest(root)
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert input_digest(root) == first
    (root / "sub" / "a.txt").write_text("two")
    assert input_digest(root) != first
    assert input_digest(root / "sub" / "a.txt") != input_digest(root)
    assert input_digest(tmp_path / "missing") is None


def test_the_digest_never_opens_a_fifo(tmp_path):
    """A FIFO in the input (a reader would wait for a writer forever) is not part of the digest."""
    root = tmp_path / "pack"
    root.mkdir()
    (root / "a.txt").write_text("one")
    first = input_digest(root)
    os.mkfifo(root / "SKILL.md")
    assert input_digest(root) == first


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
def test_git_commit_and_dirty_state(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    assert git_state(repo) == {"commit": None, "branch": None, "dirty": None}  # not a work tree (tmp has no .git)

    def git(*args):
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args],
            cwd=repo,
            check=True,
            capture_output=True,
            text=True,
        ).stdout.strip()

    git("init", "-q", "-b", "main")
    (repo / "pack.txt").write_text("v1")
    git("add", ".")
    git("commit", "-q", "-m", "one")
    state = git_state(repo / "pack.txt")
    assert state == {"commit": git("rev-parse", "HEAD"), "branch": "main", "dirty": False}
    (repo / "pack.txt").write_text("v2")
    assert git_state(repo)["dirty"] is True
