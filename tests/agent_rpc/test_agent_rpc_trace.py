"""``rpc run --trace FILE`` (and ``-vvv``) writes the JSON-RPC wire traffic, one JSON line per message."""

from __future__ import annotations

import json

import pytest


@pytest.fixture
def starter(agentpack_cli, tmp_path):
    assert agentpack_cli("rpc", "init", tmp_path / "ev").exit_code == 0
    return tmp_path / "ev" / "manifest.yaml"


def test_trace_file_holds_every_request_and_its_answer(agentpack_cli, starter, tmp_path):
    trace = tmp_path / "wire.jsonl"
    result = agentpack_cli("rpc", "run", "-m", starter, "--no-record", "--trace", trace)
    assert result.exit_code == 0, result.stderr
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    sends = [line["message"] for line in lines if line["dir"] == "send"]
    answers = [line["message"] for line in lines if line["dir"] == "recv"]
    assert [m["method"] for m in sends][:2] == ["agent/initialize", "agent/step"]
    assert {"agent/step", "agent/reset"} <= {m["method"] for m in sends}
    assert [m["id"] for m in sends] == [m["id"] for m in answers]  # each request answered, in order
    assert all(m["jsonrpc"] == "2.0" for m in sends + answers)
    assert answers[0]["result"]["name"] == "starter-agent"
    times = [line["t"] for line in lines]
    assert times == sorted(times) and {line["session"] for line in lines} == {1}


def test_vvv_writes_the_wire_on_stderr(agentpack_cli, starter):
    result = agentpack_cli("-vvv", "rpc", "run", "-m", starter, "--no-record")
    assert result.exit_code == 0
    wire = [json.loads(line.removeprefix("wire ")) for line in result.stderr.splitlines() if line.startswith("wire ")]
    assert wire[0]["message"]["method"] == "agent/initialize"
    quiet = agentpack_cli("-vv", "rpc", "run", "-m", starter, "--no-record")
    assert "wire " not in quiet.stderr


def test_an_unreachable_agent_leaves_its_error_in_the_trace(agentpack_cli, tmp_path):
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(
        "manifest_version: v1\nname: silent\ntarget: python3 -c 'import time; time.sleep(30)'\n"
        "scenarios:\n  - name: a\n    steps:\n      - input: hi\n"
    )
    trace = tmp_path / "wire.jsonl"
    result = agentpack_cli("rpc", "run", "-m", manifest, "--no-record", "--trace", trace, "--timeout", "1")
    assert result.exit_code == 2
    lines = [json.loads(line) for line in trace.read_text().splitlines()]
    assert lines[0]["dir"] == "send" and lines[-1]["dir"] == "error"


def test_trace_goes_with_the_local_executor_and_a_writable_file(agentpack_cli, starter, tmp_path):
    result = agentpack_cli("rpc", "run", "-m", starter, "--executor", "ray", "--trace", tmp_path / "t.jsonl")
    assert result.exit_code == 2 and "--trace records the sessions of this process" in result.stderr
    result = agentpack_cli("rpc", "run", "-m", starter, "--no-record", "--trace", tmp_path / "no" / "t.jsonl")
    assert result.exit_code == 2 and "cannot write the trace" in result.stderr
