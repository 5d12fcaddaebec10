"""``agentpack rpc run``: reports in every format, exit codes, and a real subprocess end to end."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from agentpack_agent_rpc.schema_store import REPORT, store

AGENTPACK = str(Path(sys.executable).with_name("agentpack"))


def scenarios():
    return [
        {
            "name": "passes",
            "tags": ["smoke"],
            "steps": [
                {
                    "input": "lookup A-1",
                    "graders": [
                        {"type": "tool_usage", "tool_name": "lookup_order", "arguments": {"order_id": "A-1"}},
                        {"type": "text_match", "condition": "contains", "value": "shipped"},
                    ],
                }
            ],
        },
        {
            "name": "fails",
            "steps": [
                {"input": "hello", "graders": [{"type": "text_match", "condition": "equals", "value": "<b>bye</b>"}]}
            ],
        },
    ]


def test_run_writes_every_report_and_exits_1_on_failed_checks(agentpack_cli, write_manifest, tmp_path):
    path = write_manifest(scenarios())
    out = tmp_path / "reports" / "nested"
    result = agentpack_cli(
        "rpc", "run", "-m", path, "--report", out / "r.html", "--json-out", out / "r.json", "--junit", out / "r.xml"
    )
    assert result.exit_code == 1, result.stderr
    assert "FAILED  1/2 scenarios passed (50.0%)" in result.stdout
    assert "FAIL  fails: 1 of 1 checks failed: expected public_output to equal '<b>bye</b>'" in result.stdout
    report = json.loads((out / "r.json").read_text())
    assert store().validate(REPORT, report) == [] and report["ok"] is False
    html = (out / "r.html").read_text()
    assert html.index("fails") < html.index("passes"), "failures first"
    assert "&lt;b&gt;bye&lt;/b&gt;" in html and "<b>bye</b>" not in html
    assert "lookup_order" in html and 'id="case-filter"' in html and 'id="failures-only"' in html
    suites = ET.fromstring((out / "r.xml").read_text())
    assert suites.get("tests") == "2" and suites.get("failures") == "1"


def test_run_json_on_stdout_and_exit_0(agentpack_cli, write_manifest):
    path = write_manifest(scenarios())
    result = agentpack_cli("rpc", "run", str(path), "--filter", "smoke", "--json")
    assert result.exit_code == 0, result.stdout
    report = result.json()
    assert report["schema_version"] == 1 and report["command"] == "rpc run" and report["ok"] is True
    assert [s["id"] for s in report["scenarios"]] == ["passes"]


def test_bad_manifest_exits_2_with_a_location(agentpack_cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(
        "name: x\ntarget: y\nscenarios:\n  - name: a\n    steps:\n      - input: x\n        graders:\n"
        "          - {type: text_match, condition: sounds_like, value: x}\n"
    )
    result = agentpack_cli("rpc", "run", "-m", path)
    assert result.exit_code == 2
    assert result.stderr.startswith(
        f"error: {path}:8: invalid manifest: /scenarios/0/steps/0/graders/0/condition: 'sounds_like' is not one of"
    )


def test_run_needs_a_manifest(agentpack_cli):
    result = agentpack_cli("rpc", "run")
    assert result.exit_code == 2 and "give the manifest" in result.stderr


def test_real_subprocess_with_jobs_and_process_isolation(write_manifest, tmp_path):
    path = write_manifest(
        [
            {
                "name": f"s{i}",
                "steps": [{"input": "count", "graders": [{"type": "text_match", "condition": "equals", "value": "1"}]}],
            }
            for i in range(4)
        ]
    )
    proc = subprocess.run(
        [
            AGENTPACK,
            "rpc",
            "run",
            "-m",
            str(path),
            "-j",
            "2",
            "--isolation",
            "process",
            "--json-out",
            str(tmp_path / "r.json"),
        ],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["run"]["isolation"] == "process" and report["run"]["jobs"] == 2
    assert len({run["pid"] for s in report["scenarios"] for run in s["runs"]}) == 4


def test_help_has_examples(agentpack_cli):
    for command in ("run", "validate", "conformance"):
        result = agentpack_cli("rpc", command, "-h")
        assert result.exit_code == 0 and "agentpack rpc " + command in result.stdout


def test_report_format_follows_the_suffix(agentpack_cli, write_manifest, tmp_path):
    path = write_manifest(scenarios())
    out = tmp_path / "out"
    reports = [out / name for name in ("r.html", "r.json", "r.xml", "r.sarif")]
    for report in reports:
        result = agentpack_cli("rpc", "run", "-m", path, "--report", report, "-o", "json")
        assert result.exit_code == 1, result.stderr
    assert 'data-view="agent-rpc"' in reports[0].read_text(), "the run's page with the agent protocol's view"
    native = json.loads(reports[1].read_text())
    assert native["command"] == "rpc run" and store().validate(REPORT, native) == []
    assert ET.fromstring(reports[2].read_text()).get("tests") == "2"
    assert json.loads(reports[3].read_text())["version"] == "2.1.0"
    assert result.json()["command"] == "rpc run" and result.json()["ok"] is False


def test_a_bad_manifest_with_json_output_is_an_error_envelope(agentpack_cli, tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text("name: x\ntarget: y\nscenarios:\n  - name: a\n    steps: [{inptu: x}]\n")
    result = agentpack_cli("rpc", "run", "-m", path, "--json")
    assert result.exit_code == 2
    error = result.json()
    assert (error["schema_version"], error["command"], error["ok"]) == (1, "rpc run", False)
    assert error["error"]["file"] == str(path) and "missing required key 'input'" in error["error"]["message"]


def test_conformance_json_is_the_versioned_envelope(agentpack_cli, agents, tmp_path):
    target = f"{sys.executable} {agents / 'sdk_agent.py'}"
    result = agentpack_cli("rpc", "conformance", target, "-o", "json", "--json-out", tmp_path / "c.json")
    assert result.exit_code == 0, result.stderr
    report = result.json()
    assert (report["schema_version"], report["command"], report["ok"]) == (1, "rpc conformance", True)
    assert report["conformant"] and json.loads((tmp_path / "c.json").read_text()) == report
