"""``agentpack skill ...`` and ``skillctl``: every command, its JSON, its exit codes and error paths."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from skillctl_testkit import EXAMPLES, manifest, write_skill

BIN = Path(sys.executable).parent
pytestmark = pytest.mark.timeout(120)


@pytest.fixture(autouse=True)
def _private_workspace(tmp_path, monkeypatch):
    """Runs default to the current folder as workspace: make it one nothing else writes to."""
    monkeypatch.chdir(tmp_path)


def test_list_and_describe(agentpack_cli):
    listed = agentpack_cli("skill", "--root", EXAMPLES, "list", "--json")
    assert listed.exit_code == 0
    ids = [s["id"] for s in listed.json()["skills"]]
    assert ids == [
        "fs.hash_tree",
        "schema.validate_json",
        "security.scan_secrets",
        "skill.validate_manifest",
        "workflow.create_revision_snapshot",
    ]
    text = agentpack_cli("skill", "--root", EXAMPLES, "list")
    assert "fs.hash_tree  1.0.0" in text.stdout
    described = agentpack_cli("skill", "--root", EXAMPLES, "describe", "schema.validate_json", "--json").json()
    assert described["skill"]["inputSchema"]["required"] == ["schema", "instance"]
    plain = agentpack_cli("skill", "--root", EXAMPLES, "describe", "fs.hash_tree")
    assert "command: python3 impl/run.py" in plain.stdout and "input: exclude, includeFiles, path" in plain.stdout


@pytest.mark.parametrize("name", ["AGENTPACK_SKILLCTL_ROOT", "SKILLCTL_ROOT"])
def test_root_from_the_environment(agentpack_cli, monkeypatch, name):
    from agentpack_skillctl.script import parse_fast_run

    monkeypatch.setenv(name, str(EXAMPLES))
    listed = agentpack_cli("skill", "list", "--json")
    assert listed.exit_code == 0 and listed.json()["root"] == str(EXAMPLES)
    assert parse_fast_run(["run", "fs.hash_tree", "-i", "-"])["root"] == str(EXAMPLES)


def test_unknown_skill_is_a_usage_error(agentpack_cli):
    result = agentpack_cli("skill", "--root", EXAMPLES, "describe", "no.such_skill")
    assert result.exit_code == 2 and "no skill with id 'no.such_skill'" in result.stderr


def test_validate_all_and_single(agentpack_cli, tmp_path):
    ok = agentpack_cli("skill", "--root", EXAMPLES, "validate", "--all", "--strict", "--json")
    assert ok.exit_code == 0 and ok.json()["ok"] is True
    bad = write_skill(tmp_path / "skills", "bad", data=manifest(version="x"))
    result = agentpack_cli("skill", "validate", str(bad), "-o", "json")
    finding = next(f for f in result.json()["items"][0]["findings"] if f["severity"] == "error")
    assert result.exit_code == 1 and (finding["code"], finding["line"], finding["pointer"]) == ("SKC100", 5, "/version")
    assert agentpack_cli("skill", "validate").exit_code == 2


def test_run_writes_output_and_report(agentpack_cli, tmp_path, report_validator):
    request = tmp_path / "in.json"
    request.write_text(json.dumps({"schema": {"type": "integer"}, "instance": "3"}))
    out, rep = tmp_path / "out.json", tmp_path / "report.json"
    result = agentpack_cli(
        "skill",
        "--root",
        EXAMPLES,
        "run",
        "schema.validate_json",
        "--input",
        request,
        "--output",
        out,
        "--report",
        rep,
        "--quiet-logs",
    )
    assert result.exit_code == 0 and result.stdout == ""
    assert json.loads(out.read_text())["valid"] is False
    report = json.loads(rep.read_text())
    assert report["status"] == "ok" and not list(report_validator.iter_errors(report))


@pytest.mark.parametrize("fast", [False, True], ids=["agentpack skill run", "skillctl run (fast path)"])
def test_run_report_format_follows_the_suffix(agentpack_cli, tmp_path, report_validator, fast):
    """--report FILE as everywhere: .json the spec's run report, .html the run's page, .xml JUnit, .sarif SARIF."""
    import re
    import xml.etree.ElementTree as ET

    from agentpack_skillctl.script import main

    request = tmp_path / "in.json"
    request.write_text('{"schema": {}}')  # invalid input: the run fails, with a reason
    files = {suffix: tmp_path / f"r{suffix}" for suffix in (".json", ".html", ".xml", ".sarif", ".log")}
    for path in files.values():
        args = ["--root", str(EXAMPLES), "run", "schema.validate_json", "-i", str(request), "--report", str(path)]
        code = main(args) if fast else agentpack_cli("skill", *args).exit_code
        assert code == 1
    for spec_json in (files[".json"], files[".log"]):  # a suffix no reporter writes: the spec's report
        report = json.loads(spec_json.read_text())
        assert report["status"] == "invalid_input" and not list(report_validator.iter_errors(report))
    page = files[".html"].read_text()
    assert page.startswith("<!doctype html>") and 'class="chart chart-passrate"' in page
    assert "invalid_input: /: &#x27;instance&#x27; is a required property" in page
    assert 'data-case="schema.validate_json/run"' in page and not re.search(r"https?://", page)
    suite = ET.parse(files[".xml"]).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures")) == ("1", "1") and "schema.validate_json" in suite.get("name")
    sarif = json.loads(files[".sarif"].read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"][0]["level"] == "error"


def test_run_from_stdin_and_json_envelope(agentpack_cli):
    result = agentpack_cli(
        "skill",
        "--root",
        EXAMPLES,
        "run",
        "schema.validate_json",
        "-i",
        "-",
        "--json",
        "--workspace",
        EXAMPLES / "schema-validate-json",
        input='{"schema": true, "instance": 1}',
    )
    envelope = result.json()
    assert result.exit_code == 0 and envelope["command"] == "skill run" and envelope["output"]["valid"] is True
    assert envelope["report"]["enforcement"]["env"]["level"] == "reduced"


def test_run_failures_exit_1_with_a_structured_error(agentpack_cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": {}}')
    result = agentpack_cli("skill", "--root", EXAMPLES, "run", "schema.validate_json", "-i", bad)
    assert result.exit_code == 1
    assert "error: schema.validate_json: invalid_input: /: 'instance' is a required property" in result.stderr
    missing = agentpack_cli("skill", "--root", EXAMPLES, "run", "schema.validate_json", "-i", tmp_path / "nope")
    assert missing.exit_code == 2 and "cannot read the input" in missing.stderr
    broken = write_skill(tmp_path / "skills", "broken", data=manifest(runtime__command=["/bin/sh"]))
    refused = agentpack_cli("skill", "run", str(broken), "-i", bad)
    assert refused.exit_code == 2 and "skill.yaml:" in refused.stderr and "SKC100" in refused.stderr


def test_run_passes_logs_through(agentpack_cli, tmp_path):
    skill = write_skill(tmp_path / "skills", "echo")
    result = agentpack_cli("skill", "run", str(skill), "-i", "-", input='{"value": 2}')
    assert result.exit_code == 0 and json.loads(result.stdout) == {"echo": 2}
    assert '"event": "echo"' in result.stderr


def test_run_check_determinism_and_cache(agentpack_cli, tmp_path):
    skill = write_skill(tmp_path / "skills", "echo")
    args = ["skill", "run", str(skill), "-i", "-", "--json", "--cache", "--cache-dir", tmp_path / "c"]
    first = agentpack_cli(*args, "--check-determinism", input='{"value": 2}').json()
    assert first["report"]["determinismCheck"]["identical"] is True
    assert agentpack_cli(*args, input='{"value": 2}').json()["report"]["cache"]["hit"] is True


def test_skill_test_command_and_junit(agentpack_cli, tmp_path):
    tree = tmp_path / "skills"
    write_skill(
        tree,
        "echo",
        fixtures={
            "good": ({"value": 1}, {"echo": 1}),
            "wrong": ({"value": 1}, {"echo": 2}),
            "rejected": ({"value": 1}, None),
        },
    )
    (tree / "echo" / "fixtures" / "rejected.status").write_text("invalid_input\n")
    result = agentpack_cli("skill", "--root", tree, "test", "--json")
    cases = {c["id"]: c for c in result.json()["evaluations"][0]["suites"][0]["cases"]}
    assert result.exit_code == 1
    assert cases["fixture:good"]["status"] == "passed" and cases["fixture:wrong"]["status"] == "failed"
    assert cases["fixture:rejected"]["status"] == "failed" and "expected" in cases["fixture:rejected"]["message"]
    junit = agentpack_cli("skill", "--root", tree, "test", "--filter", "fixture:good", "-o", "junit")
    assert junit.exit_code == 0 and "<testsuite" in junit.stdout


def test_new_scaffold_validates_and_passes_its_own_tests(agentpack_cli, tmp_path):
    tree = tmp_path / "skills"
    created = agentpack_cli("skill", "--root", tree, "new", "text.word_count", "word-count", "--spec-id", "SPEC-3")
    assert created.exit_code == 0, created.stderr
    assert agentpack_cli("validate", tree / "word-count", "--strict").exit_code == 1  # no access manifest yet
    valid = agentpack_cli("validate", tree / "word-count", "-o", "json").json()
    assert valid["ok"] is True
    tested = agentpack_cli("skill", "--root", tree, "test", "text.word_count", "--json").json()
    cases = tested["evaluations"][0]["suites"][0]["cases"]
    assert sorted(c["id"] for c in cases) == ["fixture:example", "test:test_smoke.sh"]
    assert all(c["status"] == "passed" for c in cases), cases
    again = agentpack_cli("skill", "--root", tree, "new", "text.word_count", "word-count")
    assert again.exit_code == 2 and "already exists" in again.stderr
    assert agentpack_cli("skill", "--root", tree, "new", "Bad", "x").exit_code == 2
    assert agentpack_cli("skill", "--root", tree, "new", "a.b", "Not_Kebab").exit_code == 2


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@e", *args], check=True, capture_output=True
    )


def test_audit_commits_one_skill_per_commit(agentpack_cli, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    write_skill(repo / "skills", "one", data=manifest("demo.one"))
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "add one")
    write_skill(repo / "skills", "two", data=manifest("demo.two"))
    (repo / "skills" / "one" / "README.md").write_text("# changed\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "two at once")
    (repo / "skills" / "two" / "README.md").write_text("# two\n")
    (repo / "tooling.txt").write_text("shared\n")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "one skill plus shared files")
    result = agentpack_cli("skill", "audit-commits", "--repo", repo, "--json")
    data = result.json()
    assert result.exit_code == 1 and data["commits"] == 3
    assert [(v["subject"], v["skills"]) for v in data["violations"]] == [("two at once", ["skills/one", "skills/two"])]
    clean = agentpack_cli("skill", "audit-commits", "HEAD~1..HEAD", "--repo", repo)
    assert clean.exit_code == 0 and "1 commits checked, 0 touch more than one skill" in clean.stdout
    bad = agentpack_cli("skill", "audit-commits", "nope..HEAD", "--repo", repo)
    assert bad.exit_code == 2


def test_core_commands_on_skills(agentpack_cli):
    detect = agentpack_cli("detect", EXAMPLES / "fs-hash-tree", "--json").json()
    assert detect["format"] == "skillctl" and detect["candidates"][0]["confidence"] == 0.9
    tree = agentpack_cli("detect", EXAMPLES, "--json").json()
    assert tree["format"] == "skillctl" and tree["candidates"][0]["confidence"] == 0.6
    skill = write_skill(
        Path.cwd() / "skills", "echo", fixtures={"a": ({"value": 1}, {"echo": 1}), "b": ({"value": 2}, {"echo": 2})}
    )
    evaluated = agentpack_cli("eval", skill, "--json")
    assert evaluated.exit_code == 0 and evaluated.json()["summary"]["cases"]["passed"] == 2


def test_real_subprocesses_of_both_scripts(tmp_path):
    listed = subprocess.run([BIN / "skillctl", "--root", EXAMPLES, "list"], capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0 and "security.scan_secrets" in listed.stdout
    run = subprocess.run(
        [
            BIN / "agentpack",
            "skill",
            "--root",
            EXAMPLES,
            "run",
            "fs.hash_tree",
            "-i",
            "-",
            "--workspace",
            EXAMPLES / "fs-hash-tree" / "fixtures" / "workspace",
            "--quiet-logs",
        ],
        input='{"path": "src"}',
        capture_output=True,
        text=True,
        timeout=60,
    )
    expected = json.loads((EXAMPLES / "fs-hash-tree" / "fixtures" / "basic.expected.json").read_text())
    assert run.returncode == 0 and json.loads(run.stdout) == expected
    helped = subprocess.run([BIN / "skillctl", "run", "-h"], capture_output=True, text=True, timeout=60)
    assert helped.returncode == 0 and "Examples:" in helped.stdout
    bad = subprocess.run(
        [BIN / "skillctl", "--root", EXAMPLES, "run", "x.y", "-i", "-"],
        input="{}",
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: ") and "Traceback" not in bad.stderr


def test_fast_path_parser_falls_back_to_click_for_anything_unusual(tmp_path):
    from agentpack_skillctl.script import parse_fast_run

    fast = parse_fast_run(["--root", "r", "run", "a.b", "-i", "-", "--timeout-ms", "5", "--json"])
    assert fast == {"root": "r", "ref": "a.b", "input_file": "-", "timeout_ms": 5, "as_json": True}
    for argv in (
        ["run", "a.b"],
        ["run", "-h", "-i", "x"],
        ["run", "a.b", "-i", "x", "--timeout-ms", "0"],
        ["list"],
        ["run", "a.b", "-i"],
        ["run", "a.b", "-i", "x", "--workspace", str(tmp_path / "no")],
    ):
        assert parse_fast_run(argv) is None, argv


def test_fast_path_and_click_give_the_same_output(tmp_path, capsys):
    from agentpack_skillctl.script import main

    request = tmp_path / "in.json"
    request.write_text('{"schema": {"type": "string"}, "instance": 1}')
    common = ["--workspace", str(tmp_path), "--quiet-logs"]
    code = main(["--root", str(EXAMPLES), "run", "schema.validate_json", "-i", str(request), *common])
    fast_out = capsys.readouterr().out
    slow = main(["--root", str(EXAMPLES), "run", "schema.validate_json", "--input=" + str(request), *common])
    assert code == slow == 0 and fast_out == capsys.readouterr().out and json.loads(fast_out)["valid"] is False
    assert main(["--root", str(EXAMPLES), "run", "no.such", "-i", str(request)]) == 2
