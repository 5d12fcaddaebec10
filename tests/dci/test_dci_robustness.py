"""Unusable workspace files are errors that say so, never a silent fallback, a traceback or a hang."""

from __future__ import annotations

import json

import pytest
from dci_helpers import write_skill

from agentpack.testing import break_file, run_cli


@pytest.fixture
def workspace(tmp_path):
    write_skill(tmp_path / "skills", "web-search", contract="DCI/1 P(web-search)")
    write_skill(tmp_path / "skills", "condenser", contract="DCI/1 P(condense)")
    (tmp_path / ".dci").mkdir()
    aliases = {"schema_version": "1", "alias_table_version": "t1", "aliases": {"summarization": ["condense"]}}
    (tmp_path / ".dci" / "aliases.v1.json").write_text(json.dumps(aliases))
    (tmp_path / ".dci" / "config.v1.json").write_text('{"schema_version": "1"}')
    return tmp_path


@pytest.mark.parametrize("how", ["folder", "dangling", "loop", "fifo", "deep"])
@pytest.mark.parametrize("name", ["aliases.v1.json", "config.v1.json"])
def test_an_unusable_workspace_file_is_an_error_not_the_builtin_tables(workspace, name, how):
    assert run_cli(["dci", "resolve", "-w", workspace, "-r", "web-search"]).exit_code == 0
    break_file(workspace / ".dci" / name, how)
    for command in ("resolve", "explain"):
        result = run_cli(["dci", command, "-w", workspace, "-r", "web-search"])
        assert result.exit_code == 2, result.stdout + result.stderr
        assert f".dci/{name}" in result.stderr and "Traceback" not in result.stderr


def test_a_consumer_without_a_contract_is_a_clear_error(workspace):
    consumer = write_skill(workspace / "consumers", "brief")
    result = run_cli(["dci", "resolve", "-w", workspace, "--consumer", consumer])
    assert result.exit_code == 2 and "no metadata.contract string" in result.stderr and "SKILL.md:" in result.stderr


@pytest.mark.parametrize("how", ["folder", "dangling", "fifo"])
def test_a_skill_md_that_is_not_a_file_is_reported_by_lint(workspace, how):
    break_file(workspace / "skills" / "condenser" / "SKILL.md", how)
    result = run_cli(["dci", "lint", workspace, "--json"])
    assert result.exit_code == 1, result.stdout
    messages = [f["message"] for item in result.json()["items"] for f in item["findings"]]
    assert any("condenser" in m or "expected a Markdown file" in m for m in messages), messages


@pytest.mark.parametrize("text", ["[" * 3000 + "]" * 3000, '{"report": NaN}', "{"])
def test_explain_from_a_broken_saved_report_is_an_error(workspace, text):
    (workspace / "run.json").write_text(text)
    result = run_cli(["dci", "explain", "-w", workspace, "--from-report", workspace / "run.json"])
    assert result.exit_code == 2 and "run.json" in result.stderr and "Traceback" not in result.stderr


def test_workspace_files_must_be_strict_json(workspace):
    """The .dci/ files are JSON: NaN (or anything else only YAML accepts) is an error, not a string 'NaN'."""
    aliases = workspace / ".dci" / "aliases.v1.json"
    aliases.write_text('{"schema_version": "1", "alias_table_version": "t1", "aliases": {"summarization": [NaN]}}')
    lint = run_cli(["dci", "lint", workspace, "--json"])
    assert lint.exit_code == 1 and "DCI101" in lint.stdout and "not a JSON number" in lint.stdout
    resolve = run_cli(["dci", "resolve", "-w", workspace, "-r", "web-search"])
    assert resolve.exit_code == 2 and "not a JSON number" in resolve.stderr


def test_lint_rejects_timestamps_that_are_not_rfc3339(workspace):
    state = workspace / ".dci" / "state"
    state.mkdir()
    entry = {"outcomes_last_20": [1], "success_rate_last_20": 1.0, "sample_size": 1, "last_used_at": "yesterday"}
    candidates = {"web-search::skills/web-search": entry}
    data = {"schema_version": "1", "updated_at": "2026-01-02T03:04:05Z", "candidates": candidates}
    (state / "reliability.v1.json").write_text(json.dumps(data))
    lint = run_cli(["dci", "lint", workspace, "--json"])
    assert lint.exit_code == 1 and "DCI103" in lint.stdout and "date-time" in lint.stdout
    record = run_cli(["dci", "record", "web-search", "--success", "-w", workspace])
    assert record.exit_code == 2 and "reliability" in record.stderr


def test_record_removes_what_a_killed_record_left(workspace):
    import subprocess
    import sys

    gone = int(subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True).stdout)
    state = workspace / ".dci" / "state"
    state.mkdir()
    debris = state / f".reliability.v1.json.{gone}.123.tmp"
    debris.write_text("{half a wri")
    result = run_cli(["dci", "record", "web-search", "--success", "-w", workspace])
    assert result.exit_code == 0, result.stderr
    assert not debris.exists() and json.loads((state / "reliability.v1.json").read_text())["candidates"]
