"""Hostile JSON both ways: replies nested thousands deep or holding NaN are step errors, requests the SDK refuses."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from agentpack.agents import Agent, Result
from agentpack_agent_rpc.schema_store import REPORT, store

DEEP = "[" * 10_000 + "]" * 10_000


def run_with_reports(agentpack_cli, path, tmp_path) -> tuple[Any, dict[str, Any]]:
    out = tmp_path / "out"
    result = agentpack_cli(
        "rpc",
        "run",
        "-m",
        path,
        "--json-out",
        out / "r.json",
        "--report",
        out / "r.html",
        "--junit",
        out / "r.xml",
    )
    report = json.loads((out / "r.json").read_text())
    assert store().validate(REPORT, report) == []
    assert (out / "r.html").read_text().startswith("<!doctype html>") and "<testsuites" in (out / "r.xml").read_text()
    return result, report


def test_unusable_replies_over_stdio_are_step_errors_and_the_run_writes_its_reports(
    agentpack_cli, write_manifest, agents, tmp_path
):
    kinds = ["deep", "nan", "infinity", "truncated"]
    path = write_manifest(
        [{"name": kind, "steps": [{"input": kind}, {"input": "after"}]} for kind in kinds]
        + [{"name": "fine", "steps": [{"input": "nested_ok"}, {"input": "after"}]}],
        target=[sys.executable, str(agents / "hostile_agent.py")],
    )
    result, report = run_with_reports(agentpack_cli, path, tmp_path)
    assert result.exit_code == 1, result.stdout + result.stderr
    by_name = {s["name"]: s for s in report["scenarios"]}
    expected = {
        "deep": "JSON nests deeper than 256 levels",
        "nan": "NaN is not a JSON number",
        "infinity": "-Infinity is not a JSON number",
        "truncated": "not valid JSON",
    }
    pids = set()
    for kind, text in expected.items():
        run = by_name[kind]["runs"][0]
        steps = run["steps"]
        assert by_name[kind]["exit_reason"] == "protocol_error"
        assert steps[0]["exit_reason"] == "protocol_error" and text in steps[0]["error"], steps[0]["error"]
        assert steps[0]["error"].startswith("the agent's reply is not usable JSON")
        assert steps[1]["status"] == "skipped"
        pids.add(run["pid"])
    assert len(pids) == len(expected), "a session that refused a reply is not reused"
    assert by_name["fine"]["status"] == "passed"
    assert by_name["fine"]["runs"][0]["steps"][0]["tool_calls"][0]["name"] == "deep"


class HostileHttp:
    """An HTTP agent answering agent/step with a body the runtime must refuse, as JSON or as an SSE event,
    under the name ``name``."""

    def __init__(self, body: str, sse: bool, name: str = "h") -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if message["method"] == "agent/initialize":
                    text = json.dumps(
                        {"jsonrpc": "2.0", "id": message["id"], "result": {"name": name, "protocol_version": "1.0"}}
                    )
                    ctype = "application/json"
                else:
                    text = f'{{"jsonrpc": "2.0", "id": {message["id"]}, "result": {body}}}'
                    ctype = "text/event-stream" if sse else "application/json"
                    if sse:
                        text = f"event: message\ndata: {text}\n\n"
                data = text.encode()
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/ecp"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(
    ("body", "text"),
    [(DEEP, "nests deeper than 256"), ('{"status": "done", "public_output": NaN}', "NaN is not a JSON number")],
    ids=["deep", "nan"],
)
def test_unusable_replies_over_http_are_step_errors(agentpack_cli, write_manifest, tmp_path, body, text, sse):
    server = HostileHttp(body, sse)
    try:
        path = write_manifest([{"name": "a", "steps": [{"input": "x"}]}], target=server.url)
        result, report = run_with_reports(agentpack_cli, path, tmp_path)
    finally:
        server.close()
    assert result.exit_code == 1, result.stdout + result.stderr
    step = report["scenarios"][0]["runs"][0]["steps"][0]
    assert step["exit_reason"] == "protocol_error" and text in step["error"], step["error"]


@pytest.fixture
def sdk_http() -> Iterator[str]:
    agent = Agent("hostile-input", capabilities={})

    @agent.step
    def step(text: str) -> Result:
        if text == "nan":
            return Result(public_output="x", usage={"input_tokens": float("nan")})  # type: ignore[dict-item]
        return Result(public_output=text)

    from agentpack.agents.http import make_server

    server = make_server(agent.handle, "127.0.0.1", 0, "/ecp")
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/ecp"
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    "body",
    [
        '{"jsonrpc": "2.0", "id": 1, "method": "agent/step", "params": {"input": ' + DEEP + "}}",
        '{"jsonrpc": "2.0", "id": 1, "method": "agent/step", "params": {"input": "x", "n": NaN}}',
        "[" * 300 + "]" * 300,
    ],
    ids=["deep-params", "nan", "deep-batch"],
)
def test_the_sdk_http_server_answers_400_to_a_body_it_cannot_accept(sdk_http, body):
    response = httpx.post(sdk_http, content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.json()["error"]["code"] == -32700
    ok = httpx.post(sdk_http, json={"jsonrpc": "2.0", "id": 2, "method": "agent/step", "params": {"input": "hi"}})
    assert ok.json()["result"]["public_output"] == "hi"  # still serving


def test_the_sdk_never_sends_what_json_cannot_carry(sdk_http):
    payload = {"jsonrpc": "2.0", "id": 3, "method": "agent/step", "params": {"input": "nan"}}
    response = httpx.post(sdk_http, json=payload)
    assert response.status_code == 200
    error = json.loads(response.text)["error"]  # strict JSON (no NaN token)
    assert error["code"] == -32000 and "not JSON" in error["message"]


def test_the_sdk_over_stdio_answers_a_deep_request_with_a_parse_error_and_keeps_serving(agents):
    lines = [
        '{"jsonrpc": "2.0", "id": 1, "method": "agent/step", "params": {"input": ' + DEEP + "}}",
        '{"jsonrpc": "2.0", "id": 2, "method": "agent/step", "params": {"input": NaN}}',
        '{"jsonrpc": "2.0", "id": 3, "method": "agent/step", "params": {"input": "hello"}}',
    ]
    proc = subprocess.run(
        [sys.executable, str(agents / "sdk_agent.py")],
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    answers = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [a.get("error", {}).get("code") for a in answers[:2]] == [-32700, -32700], proc.stderr
    assert answers[2]["result"]["public_output"] == "Echo: hello" and proc.returncode == 0


NUMERIC_FIELDS = [
    ("timeout", "timeout: {}"),
    ("scenario_timeout", "scenario_timeout: {}"),
    ("pass_threshold", "pass_threshold: {}"),
    ("judge temperature", "judge: {{temperature: {}}}"),
    ("step timeout", "scenarios_step_timeout"),
]


def _non_finite_manifest(tmp_path, field: str, value: str):
    lines = ["name: numbers", "target: [python, agent.py]"]
    step = "{input: x}"
    if field == "scenarios_step_timeout":
        step = f"{{input: x, timeout: {value}}}"
    else:
        lines.append(field.format(value))
    lines += ["scenarios:", "  - name: a", f"    steps: [{step}]"]
    path = tmp_path / "manifest.yaml"
    path.write_text("\n".join(lines) + "\n")
    line = next(i for i, text in enumerate(lines, 1) if value in text)
    return path, line


@pytest.mark.parametrize("value", [".nan", ".inf", "-.inf"])
@pytest.mark.parametrize(("name", "field"), NUMERIC_FIELDS, ids=[n for n, _ in NUMERIC_FIELDS])
def test_non_finite_numbers_are_findings_with_file_and_line(agentpack_cli, tmp_path, name, field, value):
    path, line = _non_finite_manifest(tmp_path, field, value)
    where = f"{path}:{line}:"
    result = agentpack_cli("rpc", "validate", path, "--json")
    assert result.exit_code == 1, result.stdout + result.stderr
    (finding,) = result.json()["items"][0]["findings"]
    assert finding["code"] == "ARP001" and finding["line"] == line and "not a finite number" in finding["message"]
    for command in (["rpc", "run", "-m", path], ["eval", path], ["validate", path]):
        result = agentpack_cli(*command)
        assert result.exit_code in (1, 2) and "Traceback" not in result.stderr, (command, result.stderr)
        assert where in result.stderr + result.stdout and "not a finite number" in result.stderr + result.stdout


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0", "1e9", "soon"])
def test_cli_seconds_must_be_finite_positive_and_at_most_a_week(agentpack_cli, write_manifest, value):
    path = write_manifest([{"name": "a", "steps": [{"input": "x"}]}])
    for option in ("--timeout", "--max-duration"):
        result = agentpack_cli("rpc", "run", "-m", path, option, value)
        assert result.exit_code == 2 and "positive number of seconds" in result.stderr, result.stderr
    result = agentpack_cli("rpc", "conformance", "python agent.py", "--timeout", value)
    assert result.exit_code == 2 and "positive number of seconds" in result.stderr


def test_a_timeout_too_large_for_the_clock_is_a_finding(write_manifest):
    from agentpack_agent_rpc.api import validate_manifest

    path = write_manifest([{"name": "a", "steps": [{"input": "x", "timeout": 10**400}]}], timeout=1e300)
    manifest, findings = validate_manifest(path)
    assert manifest is None
    assert sorted(f.pointer for f in findings) == ["/scenarios/0/steps/0/timeout", "/timeout"]
    assert all("604800" in f.message for f in findings)


def test_values_json_cannot_carry_are_findings(write_manifest):
    import datetime

    from agentpack_agent_rpc.api import validate_manifest

    grader = {"type": "tool_usage", "tool_name": "t", "arguments": {"day": datetime.date(2024, 1, 2)}}
    path = write_manifest(
        [{"name": "a", "steps": [{"input": "x", "graders": [grader]}]}],
        config={"when": datetime.datetime(2024, 1, 2, 3, 4), "blob": b"\x00\x01"},
    )
    manifest, findings = validate_manifest(path)
    assert manifest is None
    assert [(f.code, f.pointer) for f in findings] == [
        ("ARP108", "/config/when"),
        ("ARP108", "/config/blob"),
        ("ARP108", "/scenarios/0/steps/0/graders/0/arguments/day"),
    ]
    assert "YAML timestamp is not a JSON value; quote it" in findings[0].message


OSC_TITLE = "\x1b]0;owned\x07"
OSC_CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"


@pytest.fixture
def protocol_string_agent() -> Iterator[HostileHttp]:
    """An HTTP agent whose name and output carry terminal escape sequences."""
    output = json.dumps({"status": "done", "public_output": f"answer{OSC_CLIPBOARD}\x9b2J"})
    agent = HostileHttp(output, sse=False, name=f"agent{OSC_TITLE}")
    yield agent
    agent.close()


def test_protocol_strings_reach_the_terminal_escaped(agentpack_cli, write_manifest, protocol_string_agent):
    """OSC title and clipboard sequences and an 8-bit CSI from an agent are printed as visible escapes."""
    grader = {"type": "text_match", "condition": "equals", "value": "answer"}
    path = write_manifest(
        [{"name": f"case{OSC_TITLE}", "steps": [{"input": "hi", "graders": [grader]}]}],
        target=protocol_string_agent.url,
    )
    result = agentpack_cli("rpc", "run", "-m", path)
    printed = result.stdout + result.stderr
    assert result.exit_code in (0, 1), printed
    assert not any(c in printed for c in "\x1b\x07\x9b"), printed
    assert "\\u001b]0;owned\\u0007" in printed, printed
