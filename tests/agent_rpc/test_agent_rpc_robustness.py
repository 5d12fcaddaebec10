"""Misbehaving agents: every run ends with a complete report and no agent process left behind."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentpack_agent_rpc.api import run_manifest
from agentpack_agent_rpc.runner import RunOptions
from agentpack_agent_rpc.schema_store import REPORT, store

AGENTPACK = str(Path(sys.executable).with_name("agentpack"))


def run_bad(write_manifest, helpers, tmp_path, mode: str, scenarios=None, **top):
    pgids = tmp_path / "pgids"
    scenarios = scenarios or [
        {"name": f"s{i}", "step_timeout": 1.0, "steps": [{"input": "one"}, {"input": "two"}, {"input": "three"}]}
        for i in range(2)
    ]
    path = write_manifest(scenarios, target=helpers.bad_target(mode), env={"PGID_FILE": str(pgids)}, **top)
    report = run_manifest(path, RunOptions())
    assert store().validate(REPORT, report) == []
    groups = {int(line) for line in pgids.read_text().split()} if pgids.exists() else set()
    groups |= set(helpers.run_pids(report))
    assert groups, "the agent never started"
    for pgid in groups:
        assert helpers.group_gone(pgid), f"process group {pgid} outlived the run"
    return report


def test_crash_mid_run(write_manifest, helpers, tmp_path):
    report = run_bad(write_manifest, helpers, tmp_path, "crash")
    for scenario in report["scenarios"]:
        run = scenario["runs"][0]
        assert scenario["exit_reason"] == "transport_error"
        assert [s["status"] for s in run["steps"]] == ["ok", "failed", "skipped"]
        assert "exited with status 3" in run["steps"][1]["error"]
        assert "fatal: crashing now" in run["steps"][1]["stderr"]


def test_hang_is_killed_with_its_grandchildren(write_manifest, helpers, tmp_path):
    report = run_bad(write_manifest, helpers, tmp_path, "hang")
    assert [s["exit_reason"] for s in report["scenarios"]] == ["timeout", "timeout"]


def test_a_megabyte_of_stderr_per_step(write_manifest, helpers, tmp_path):
    report = run_bad(write_manifest, helpers, tmp_path, "stderr", limits={"stderr_bytes": 4096})
    assert report["ok"]
    step = report["scenarios"][0]["runs"][0]["steps"][2]
    assert step["stderr"].startswith("[... ") and "bytes of stderr dropped" in step["stderr"]
    assert len(step["stderr"]) < 4096 + 100


def test_non_json_stdout_lines_are_skipped_with_a_warning(write_manifest, helpers, tmp_path):
    report = run_bad(write_manifest, helpers, tmp_path, "invalid_json")
    assert report["ok"]
    assert report["scenarios"][0]["runs"][0]["warnings"] == [
        "skipped non-JSON stdout line: 'this is not json'",
        "skipped non-JSON stdout line: '{broken'",
    ]


def test_wrong_response_id(write_manifest, helpers, tmp_path):
    report = run_bad(write_manifest, helpers, tmp_path, "wrong_id")
    step = report["scenarios"][0]["runs"][0]["steps"][1]
    assert step["exit_reason"] == "protocol_error"
    assert step["error"] == "response id mismatch: expected 3, got 'not-my-id'"
    assert report["scenarios"][1]["runs"][0]["pid"] != report["scenarios"][0]["runs"][0]["pid"]


def test_huge_output_is_graded_in_full_and_clipped_in_the_report(write_manifest, helpers, tmp_path):
    scenarios = [
        {
            "name": "big",
            "steps": [
                {"input": "one"},
                {"input": "two", "graders": [{"type": "text_match", "condition": "regex", "pattern": "y{4194304}"}]},
            ],
        }
    ]
    report = run_bad(write_manifest, helpers, tmp_path, "huge", scenarios, limits={"report_text_chars": 1000})
    assert report["ok"]
    output = report["scenarios"][0]["runs"][0]["steps"][1]["public_output"]
    assert output.startswith("y" * 1000) and output.endswith("more characters not shown]")


def test_output_over_the_message_limit_is_a_protocol_error(write_manifest, helpers, tmp_path):
    scenarios = [{"name": "big", "steps": [{"input": "one"}, {"input": "two"}, {"input": "three"}]}]
    report = run_bad(write_manifest, helpers, tmp_path, "huge", scenarios, limits={"max_message_bytes": 1 << 20})
    step = report["scenarios"][0]["runs"][0]["steps"][1]
    assert step["exit_reason"] == "protocol_error" and "larger than 1048576 bytes" in step["error"]


def test_agent_error_response(write_manifest, helpers, tmp_path):
    report = run_bad(write_manifest, helpers, tmp_path, "error")
    assert report["scenarios"][0]["runs"][0]["steps"][1]["error"] == "agent/step: agent returned error -32000: nope"


def test_crash_during_initialize_is_unreachable_and_shows_stderr(write_manifest, helpers, tmp_path):
    report = run_bad(write_manifest, helpers, tmp_path, "init_crash")
    run = report["scenarios"][0]["runs"][0]
    assert report["scenarios"][0]["exit_reason"] == "agent_unreachable"
    assert "Traceback: cannot import the model" in run["stderr"]
    assert [s["status"] for s in run["steps"]] == ["skipped"] * 3


def test_missing_program_is_unreachable_and_exits_2(agentpack_cli, write_manifest, tmp_path):
    path = write_manifest([{"name": "a", "steps": [{"input": "x"}]}], target="no-such-agent-program --flag")
    result = agentpack_cli("rpc", "run", "-m", path, "--json-out", tmp_path / "deep" / "dir" / "r.json")
    assert result.exit_code == 2, result.stdout + result.stderr
    report = json.loads((tmp_path / "deep" / "dir" / "r.json").read_text())
    assert report["exit_reason"] == "agent_unreachable"
    assert "cannot start agent 'no-such-agent-program --flag'" in report["scenarios"][0]["message"]


@pytest.mark.parametrize("sig,jobs", [(signal.SIGINT, 1), (signal.SIGTERM, 1), (signal.SIGINT, 2)])
def test_interrupted_run_still_writes_every_report(write_manifest, helpers, tmp_path, sig, jobs):
    pgids = tmp_path / "pgids"
    path = write_manifest(
        [{"name": f"s{i}", "steps": [{"input": "a"}, {"input": "b"}]} for i in range(3)],
        target=helpers.bad_target("hang"),
        env={"PGID_FILE": str(pgids)},
        timeout=60,
    )
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            AGENTPACK,
            "rpc",
            "run",
            "-m",
            str(path),
            "-j",
            str(jobs),
            "--json-out",
            str(out / "r.json"),
            "--report",
            str(out / "r.html"),
            "--junit",
            str(out / "r.xml"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 20
    while not pgids.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=20)
    assert proc.returncode == 130, stdout + stderr
    report = json.loads((out / "r.json").read_text())
    assert report["run"]["interrupted"] and report["exit_reason"] == "interrupted" and not report["ok"]
    assert [s["exit_reason"] for s in report["scenarios"]] == ["interrupted"] * 3
    summary = next(line for line in stdout.splitlines() if "scenarios passed" in line)
    assert ": INTERRUPTED " in summary and "%" not in summary and "FAILED" not in summary  # no pass rate stands for it
    assert (out / "r.html").read_text().startswith("<!doctype html>")
    assert "<testsuites" in (out / "r.xml").read_text()
    for pgid in {int(x) for x in pgids.read_text().split()}:
        assert helpers.group_gone(pgid)
