"""``agentpack dci ...`` commands, in process and (a few) as real subprocesses; plus the cross-cutting lint."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dci_helpers import FileReads, write_skill

from agentpack_dci import schemas_store
from agentpack_dci.report import join_report

AGENTPACK = Path(sys.executable).parent / "agentpack"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    write_skill(
        tmp_path,
        "skills/web-search",
        description="Search the web and return ranked results.",
        contract="DCI/1^strict P(web-search) E(query-text)",
        compatibility="cli, copilot",
    )
    write_skill(
        tmp_path,
        "skills/summarizer",
        description="Summarize long documents into short briefs.",
        contract="DCI/1 P(summarize)",
    )
    return tmp_path


def test_parse_prints_canonical_form_and_json(agentpack_cli):
    result = agentpack_cli("dci", "parse", "DCI/1 Provides( web-search ) Pol(max-candidates=2)")
    assert result.exit_code == 0 and result.stdout == "DCI/1^best-effort P(web-search) Pol(max-candidates=2)\n"
    assert "long clause name 'Provides'" in result.stderr
    data = agentpack_cli("dci", "parse", "DCI/1 P(Web)", "--json").json()
    assert data["ok"] and data["contract"]["provides"][0] == {
        "value": "Web",
        "valid": False,
        "problem": "contains characters outside lowercase a-z, 0-9 and '-': 'W'",
    }


def test_parse_error_points_at_the_column(agentpack_cli):
    result = agentpack_cli("dci", "parse", "DCI/1 P(a) A(k=a b)")
    assert result.exit_code == 1
    assert "column 17" in result.stderr and "\n" + " " * 18 + "^\n" in result.stderr
    data = agentpack_cli("dci", "parse", "DCI/1 P(a", "--json")
    assert data.exit_code == 1 and data.json()["error"]["column"] == 7


def test_lint_skill_dirs_and_workspace(agentpack_cli, tmp_path):
    bad = write_skill(tmp_path, "skills/bad", description="x", contract="DCI/1^strict P(Web) Pol(colour=red) p(x)")
    broken = write_skill(tmp_path, "skills/broken", description="x", contract="DCI/1 P(a")
    result = agentpack_cli("dci", "lint", str(bad), str(broken), "--json")
    assert result.exit_code == 1
    codes = {f["code"]: f for item in result.json()["items"] for f in item["findings"]}
    assert codes["DCI010"]["severity"] == "error" and codes["DCI010"]["line"] == 5
    assert codes["DCI030"]["severity"] == "error" and codes["DCI001"]["message"].endswith("(column 7)")
    assert "did you mean 'P'" in codes["DCI020"]["hint"]
    sarif = agentpack_cli("dci", "lint", str(tmp_path), "-o", "sarif")
    assert sarif.exit_code == 1 and json.loads(sarif.stdout)["runs"]
    ok = write_skill(tmp_path / "other", "skills/fine", description="x", contract="DCI/1 P(a) P(b)")
    assert agentpack_cli("dci", "lint", str(ok)).exit_code == 0
    assert agentpack_cli("dci", "lint", "--strict", str(ok)).exit_code == 1  # DCI022 warning -> error


def test_core_validate_lints_contracts_of_any_skill(agentpack_cli, tmp_path):
    skill = write_skill(tmp_path, "my-skill", description="x", contract="DCI/1 P(ok) A(k=v w)")
    result = agentpack_cli("validate", str(skill), "-o", "json")
    assert result.exit_code == 1
    findings = result.json()["items"][0]["findings"]
    assert [f["code"] for f in findings] == ["DCI001"] and result.json()["items"][0]["format"] == "agent-skill"


def test_resolve_text_json_and_report_file(agentpack_cli, ws, tmp_path):
    text = agentpack_cli("dci", "resolve", "-w", str(ws), "-r", "web-search", "--no-history")
    assert text.exit_code == 0 and "selected: web-search::skills/web-search" in text.stdout
    out = tmp_path / "run.json"
    result = agentpack_cli(
        "dci",
        "resolve",
        "-w",
        str(ws),
        "--require",
        "web-search,summarize",
        "--selection",
        "cover",
        "--mode",
        "strict",
        "--json",
        "--report",
        str(out),
        "--run-id",
        "r1",
        "--at",
        "2026-02-03T04:05:06Z",
    )
    envelope = result.json()
    assert result.exit_code == 0 and envelope["ok"] and envelope["command"] == "dci resolve"
    report, extensions = envelope["report"], envelope["extensions"]
    assert report["run_id"] == "r1" and report["generated_at"] == "2026-02-03T04:05:06Z"
    assert "status" not in report and extensions["status"] == "resolved"
    assert [c["id"] for c in extensions["candidates"]] == [c["id"] for c in report["candidates"]]
    assert schemas_store.store().validate(schemas_store.REPORT, report) == []
    assert json.loads(out.read_text()) == report  # --report FILE: the origin's fields only
    refused = agentpack_cli("dci", "explain", "--from-report", str(out))
    assert refused.exit_code == 2 and "--report-extensions" in refused.stderr
    saved = tmp_path / "envelope.json"
    saved.write_text(result.stdout)
    full = tmp_path / "full.json"
    rerun = agentpack_cli(
        "dci", "resolve", "-w", str(ws), "-r", "web-search,summarize", "--selection", "cover", "--mode", "strict",
        "--run-id", "r1", "--at", "2026-02-03T04:05:06Z", "--report", str(full), "--report-extensions",
    )  # fmt: skip
    assert rerun.exit_code == 0 and json.loads(full.read_text()) == join_report(report, extensions)
    for path in (saved, full):
        explained = agentpack_cli("dci", "explain", "--from-report", str(path), "--candidate", "summarizer")
        assert explained.exit_code == 0 and "summarizer::skills/summarizer" in explained.stdout
        assert "S_total" in explained.stdout and "web-search::" not in explained.stdout.split("\n\n", 2)[-1]


def test_resolve_failures_and_decisions(agentpack_cli, ws):
    failed = agentpack_cli("dci", "resolve", "-w", str(ws), "-r", "translation", "--mode", "strict", "--json")
    assert failed.exit_code == 1 and failed.json()["extensions"]["status"] == "failed"
    emulated = agentpack_cli("dci", "resolve", "-w", str(ws), "-r", "translation", "--decision", "emulate", "--json")
    assert emulated.exit_code == 0 and emulated.json()["report"]["emulated_capabilities"] == ["translation"]
    prompted = agentpack_cli(
        "dci", "resolve", "-w", str(ws), "-r", "translation", "--prompt", input="continue-with-partial\n"
    )
    assert prompted.exit_code == 0 and "continued-partial" in prompted.stdout
    assert "(prompt)" in prompted.stdout
    bad = agentpack_cli("dci", "resolve", "-w", str(ws), "-r", "Not Valid")
    assert bad.exit_code == 2 and "Not Valid" in bad.stderr
    bad_policy = agentpack_cli("dci", "resolve", "-w", str(ws), "-r", "web-search", "--policy", "max-candidates=0")
    assert bad_policy.exit_code == 2 and "max-candidates" in bad_policy.stderr


def test_a_unicode_capability_id_gets_a_hint_that_is_true(agentpack_cli, ws, tmp_path):
    """Agent Skills names allow Unicode lowercase letters (a skill named 中文-写作 is valid); DCI/1 capability
    ids (the grammar's name-token, the origin's schemas) are ASCII: the hint says so, not "the name rules"."""
    skill = write_skill(
        ws, "skills/中文-写作", description="Writes Chinese prose.", contract="DCI/1 P(chinese-writing)"
    )
    assert agentpack_cli("validate", str(skill)).exit_code == 0
    bad = agentpack_cli("dci", "resolve", "-w", str(ws), "-r", "中文-写作", "--json")
    assert bad.exit_code == 2
    error = bad.json()["error"]
    assert "中文-写作" in error["message"]
    assert "ASCII only" in error["hint"] and "Agent Skills names, which also allow Unicode" in error["hint"]
    upper = agentpack_cli("dci", "resolve", "-w", str(ws), "-r", "Web_Search", "--json").json()["error"]
    assert upper["hint"].endswith("did you mean 'web-search'?")
    good = agentpack_cli("dci", "resolve", "-w", str(ws), "-r", "chinese-writing", "--no-history", "--json")
    assert good.exit_code == 0 and good.json()["report"]["selected_candidates"] == ["中文-写作::skills/中文-写作"]


def test_resolve_with_consumer_skill(agentpack_cli, ws):
    consumer = write_skill(
        ws,
        "consumers/brief",
        description="Writes briefs.",
        contract="DCI/1^strict R(web-search) Pol(on-missing-required=hard-fail)",
    )
    result = agentpack_cli("dci", "resolve", "-w", str(ws), "--consumer", str(consumer), "--json")
    assert result.exit_code == 0 and result.json()["report"]["mode"] == "strict"
    broken = write_skill(ws, "consumers/broken", description="x", contract="DCI/1 R(a")
    result = agentpack_cli("dci", "resolve", "-w", str(ws), "--consumer", str(broken))
    assert result.exit_code == 2 and "consumer contract" in result.stderr and "SKILL.md:5" in result.stderr


def test_record_then_explain_shows_history(agentpack_cli, ws):
    result = agentpack_cli(
        "dci", "record", "web-search", "--failure", "-w", str(ws), "--json", "--at", "2026-01-01T00:00:00Z"
    )
    assert result.exit_code == 0 and result.json()["entry"]["outcomes_last_20"] == [0]
    assert agentpack_cli("dci", "record", "nope", "--success", "-w", str(ws)).exit_code == 2
    explained = agentpack_cli("dci", "explain", "-w", str(ws), "-r", "web-search")
    assert "success 0.0 over 1 runs" in explained.stdout and "* 0.7" in explained.stdout


def test_explain_json_and_lint_report_file(agentpack_cli, ws, tmp_path):
    result = agentpack_cli(
        "dci", "explain", "-w", str(ws), "-r", "web-search", "--no-history", "--json", "--limit", "1"
    )
    data = result.json()
    assert result.exit_code == 0 and data["command"] == "dci explain" and data["ok"]
    assert [c["id"] for c in data["candidates"]] == ["web-search::skills/web-search"]
    assert "inflation" in data["statistics"]
    sarif = tmp_path / "dci.sarif"
    lint = agentpack_cli("dci", "lint", str(ws), "--report", str(sarif))
    assert lint.exit_code == 0 and json.loads(sarif.read_text())["runs"]


def test_each_skill_md_is_read_and_parsed_once(agentpack_cli, ws, monkeypatch):
    consumer = write_skill(ws, "consumers/brief", description="Writes briefs.", contract="DCI/1 R(web-search)")
    providers = sorted(ws.glob("skills/*/SKILL.md"))
    reads = FileReads(monkeypatch)
    # --no-record: recording the run hashes the workspace's bytes for its digest, a read that parses nothing
    resolve = ("dci", "resolve", "-w", str(ws), "--consumer", str(consumer), "--no-history", "--json", "--no-record")
    result = agentpack_cli(*resolve)
    assert result.exit_code == 0 and reads.each_once([*providers, consumer / "SKILL.md"])
    # --format: detection alone peeks at the head of SKILL.md files to find a contract
    for command in (("dci", "lint", str(ws)), ("validate", "--format", "dci", str(ws))):
        reads = FileReads(monkeypatch)
        result = agentpack_cli(*command)
        # the consumer beside skills/ is linted too (issue 24: a broken one fails the lint)
        expected = [*providers, consumer / "SKILL.md"]
        assert result.exit_code == 0 and reads.each_once(expected), (command, reads.opened, reads.parsed)


def test_real_subprocesses(ws):
    help_text = subprocess.run([str(AGENTPACK), "dci", "resolve", "-h"], capture_output=True, text=True, check=True)
    assert "--require" in help_text.stdout and "Examples:" in help_text.stdout
    run = subprocess.run(
        [str(AGENTPACK), "dci", "resolve", "-r", "web-search", "--json", "--no-history"],
        cwd=ws,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["report"]["selected_candidates"] == ["web-search::skills/web-search"]
    record = subprocess.run(
        [str(AGENTPACK), "dci", "record", "web-search::skills/web-search", "--success"],
        cwd=ws,
        capture_output=True,
        text=True,
    )
    assert record.returncode == 0 and (ws / ".dci" / "state" / "reliability.v1.json").is_file()


def test_resolve_logs_its_steps_with_v_only(ws):
    """Without -v the command skips its logger (and the import of logging); with it the INFO lines show."""

    def stderr(*flags: str) -> str:
        argv = [str(AGENTPACK), "dci", "resolve", "-r", "web-search", "--no-history", "--no-record", *flags]
        done = subprocess.run(argv, cwd=ws, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return done.stderr

    assert "INFO agentpack_dci.cli: dci resolve: resolved, " in stderr("-v")
    assert "INFO" not in stderr()


def test_example_workspace(agentpack_cli):
    example = Path(__file__).resolve().parents[2] / "examples" / "dci" / "workspace"
    result = agentpack_cli(
        "dci",
        "resolve",
        "-w",
        str(example),
        "--consumer",
        str(example / "consumers" / "research-brief"),
        "--no-history",
        "--json",
    )
    report = result.json()["report"]
    assert result.exit_code == 0 and report["selected_candidates"] == [
        "web-search::skills/research/web-search",
        "summarizer::skills/writing/summarizer",
    ]
    everything = next(c for c in result.json()["extensions"]["candidates"] if c["name"] == "everything")
    assert "contract-inflated" in everything["flags"] and "overclaim" in everything["flags"]
    lint = agentpack_cli("dci", "lint", str(example), "--json")
    assert lint.exit_code == 0 and {f["code"] for f in lint.json()["items"][0]["findings"]} >= {"DCI050", "DCI010"}


def test_annotations_name_files_from_the_working_directory(agentpack_cli, monkeypatch):
    """DCI findings are relative to the workspace; SARIF and GitHub annotations show them from the cwd."""
    import re

    repo = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(repo)
    monkeypatch.delenv("GITHUB_WORKSPACE", raising=False)
    for command in (("validate", "examples/dci/workspace"), ("dci", "lint", "examples/dci/workspace")):
        annotations = agentpack_cli(*command, "-o", "github").stdout
        files = re.findall(r"file=([^,]*)", annotations)
        assert files and all(f.startswith("examples/dci/workspace/") and Path(f).is_file() for f in files), files
        sarif = json.loads(agentpack_cli(*command, "-o", "sarif").stdout)
        uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in sarif["runs"][0]["results"]]
        assert uris == files
