"""What ecp-runtime's users rely on: a starter (``rpc init``), a doctor, and ``validate --portable``."""

from __future__ import annotations

import json
import os
import re
import sys
import textwrap
from pathlib import Path

import pytest

from agentpack_agent_rpc.api import validate_manifest

EXAMPLE = Path(__file__).parents[2] / "examples" / "agent_rpc" / "manifest.yaml"


def features(path: Path) -> dict[str, set[str]]:
    """``{"rejects": {...}, "ignores": {...}}`` from ``--portable``'s findings."""
    _, found = validate_manifest(path, portable=True)
    named: dict[str, set[str]] = {"rejects": set(), "ignores": set()}
    for finding in found:
        if finding.code in ("ARP401", "ARP402"):
            kind = "rejects" if finding.code == "ARP401" else "ignores"
            named[kind].add(re.search(r"'([^']+)'", finding.message).group(1))
    return named


def test_the_example_manifest_names_the_features_it_uses():
    header = EXAMPLE.read_text().split("manifest_version")[0]
    listed: dict[str, set[str]] = {}
    kind = None
    for line in header.splitlines():
        match = re.match(r"#\s+(rejects|ignores):(.*)", line)
        if match:
            kind = match.group(1)
            listed[kind] = set()
        if kind and line.startswith("#   "):
            text = match.group(2) if match else line[1:]
            listed[kind] |= {word.strip() for word in text.split(",") if word.strip()}
    assert listed == features(EXAMPLE)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "manifest.yaml"
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def test_portable_findings_name_the_feature_with_its_line_and_pointer(agentpack_cli, tmp_path):
    path = write(
        tmp_path,
        """
        name: ours
        target: [python, agent.py]
        scenarios:
          - name: a
            tags: [x]
            steps:
              - input: hi
                name: greeting
                graders:
                  - {type: text_match, condition: not_equals, value: ""}
          - name: rows
            dataset: {type: csv, source: rows.csv, condition: contains}
        """,
    )
    (tmp_path / "rows.csv").write_text("input,output\nq,a\n")
    result = agentpack_cli("rpc", "validate", path, "--portable", "--json")
    assert result.exit_code == 1
    got = [(f["code"], f["line"], f["pointer"]) for f in result.json()["items"][0]["findings"]]
    assert got == [
        ("ARP401", 1, None),  # no manifest_version: the document
        ("ARP401", 2, "/target"),
        ("ARP402", 5, "/scenarios/0/tags"),
        ("ARP401", 8, "/scenarios/0/steps/0/name"),
        ("ARP401", 10, "/scenarios/0/steps/0/graders/0/condition"),
        ("ARP402", 12, "/scenarios/1/dataset/condition"),
    ]
    assert agentpack_cli("rpc", "validate", path).exit_code == 0  # all of it runs here


def test_only_ignored_features_keep_the_exit_status_0(agentpack_cli, tmp_path):
    path = write(
        tmp_path,
        """
        manifest_version: v1
        name: nearly portable
        target: python agent.py
        scenarios: [{name: a, tags: [smoke], repeat: 3, steps: [{input: hi}]}]
        """,
    )
    result = agentpack_cli("rpc", "validate", path, "--portable")
    assert result.exit_code == 0 and "ignores 'repeat'" in result.stdout


def test_a_portable_error_does_not_make_the_manifest_invalid_here(tmp_path):
    path = write(tmp_path, "name: x\ntarget: python a.py\ncwd: .\nscenarios: [{name: a, steps: [{input: x}]}]\n")
    manifest, found = validate_manifest(path, portable=True)
    assert manifest is not None and [f.code for f in found] == ["ARP401", "ARP401"]


@pytest.fixture
def venv_python_on_path(monkeypatch):
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


@pytest.mark.parametrize("on_path", [True, False], ids=["python-on-path", "interpreter-path"])
def test_rpc_init_writes_a_starter_that_passes_from_anywhere(agentpack_cli, tmp_path, monkeypatch, on_path):
    if on_path:
        monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    else:
        monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.chdir(tmp_path)
    result = agentpack_cli("rpc", "init", "evals/starter")
    assert result.exit_code == 0 and "created evals/starter/manifest.yaml" in result.stdout
    text = Path("evals/starter/manifest.yaml").read_text()
    assert ("target: python agent.py" in text) == on_path
    assert agentpack_cli("rpc", "validate", "evals/starter", "--strict").exit_code == 0
    portable = agentpack_cli("rpc", "validate", "evals/starter/manifest.yaml", "--portable").stdout
    assert "rejects 'cwd'" in portable and portable.count("ARP40") == 1
    monkeypatch.chdir(tmp_path / "evals")
    result = agentpack_cli("rpc", "run", "-m", "starter/manifest.yaml", "--json-out", "r.json")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert json.loads(Path("r.json").read_text())["totals"]["checks_passed"] == 5


def test_rpc_init_keeps_existing_files_unless_forced(agentpack_cli, tmp_path):
    assert agentpack_cli("rpc", "init", tmp_path / "s").exit_code == 0
    (tmp_path / "s" / "agent.py").write_text("# mine\n")
    result = agentpack_cli("rpc", "init", tmp_path / "s")
    assert result.exit_code == 2 and "already exist" in result.stderr and "--force" in result.stderr
    assert (tmp_path / "s" / "agent.py").read_text() == "# mine\n"
    assert agentpack_cli("rpc", "init", tmp_path / "s", "--force").exit_code == 0
    assert "agentpack.agents" in (tmp_path / "s" / "agent.py").read_text()


def test_doctor_checks_the_environment(agentpack_cli, monkeypatch):
    monkeypatch.delenv("AGENTPACK_AGENT_RPC_TIMEOUT", raising=False)
    monkeypatch.delenv("ECP_RPC_TIMEOUT", raising=False)
    result = agentpack_cli("rpc", "doctor", "--json")
    assert result.exit_code == 0, result.stdout
    names = [check["name"] for check in result.json()["checks"]]
    for name in ("agentpack", "working directory", "python on PATH", "process containment", "llm_judge"):
        assert name in names
    monkeypatch.setenv("AGENTPACK_AGENT_RPC_TIMEOUT", "nan")
    result = agentpack_cli("rpc", "doctor")
    assert result.exit_code == 1 and "FAIL timeout" in result.stdout


def test_doctor_starts_the_agent_of_a_good_manifest(agentpack_cli, tmp_path):
    agentpack_cli("rpc", "init", tmp_path / "s")
    result = agentpack_cli("rpc", "doctor", tmp_path / "s" / "manifest.yaml")
    assert result.exit_code == 0, result.stdout
    assert "OK   agent answers: agent/initialize: 'starter-agent'" in result.stdout
    assert "WARN portable: ecp-runtime 0.10 would not run it as is: cwd" in result.stdout


def test_doctor_says_why_an_agent_would_not_start(agentpack_cli, tmp_path, monkeypatch, venv_python_on_path):
    (tmp_path / "ecp_eval").mkdir()
    (tmp_path / "ecp_eval" / "agent.py").write_text("import no_such_module_for_agentpack_tests\n")
    manifest = tmp_path / "ecp_eval" / "manifest.yaml"
    manifest.write_text(
        "manifest_version: v1\nname: s\ntarget: python ecp_eval/agent.py\nscenarios: [{name: a, steps: [{input: x}]}]\n"
    )
    monkeypatch.chdir(tmp_path / "ecp_eval")
    result = agentpack_cli("rpc", "doctor", "manifest.yaml")
    assert result.exit_code == 1
    assert f"FAIL agent command: 'ecp_eval/agent.py' is not in {tmp_path / 'ecp_eval'}" in result.stdout
    assert "FAIL agent answers" in result.stdout and f"run from {tmp_path}" in result.stdout
    monkeypatch.chdir(tmp_path)
    result = agentpack_cli("rpc", "doctor", "ecp_eval/manifest.yaml", "--json")
    answers = {c["name"]: c for c in result.json()["checks"]}["agent answers"]
    assert answers["status"] == "fail" and "ModuleNotFoundError" in answers["detail"]
    assert agentpack_cli("rpc", "doctor", "ecp_eval/manifest.yaml", "--no-start").exit_code == 0
