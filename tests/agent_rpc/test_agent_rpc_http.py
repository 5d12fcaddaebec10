"""Streamable HTTP: the SDK server's status rules, the runtime over JSON and SSE answers, keep-alive, slow SSE."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

from agentpack_agent_rpc.api import run_manifest
from agentpack_agent_rpc.conformance import run_conformance
from agentpack_agent_rpc.manifest.model import make_target
from agentpack_agent_rpc.runner import RunOptions
from agentpack_agent_rpc.schema_store import REPORT, store


class ScriptedServer:
    """A hand-written HTTP agent: answers JSON (keep-alive) or SSE in pieces, or drips SSE comments forever."""

    def __init__(self, mode: str) -> None:
        self.mode = mode
        self.ports: list[int] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                server.ports.append(self.client_address[1])
                message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                method = message["method"]
                result: Any = True
                if method == "agent/initialize":
                    result = {"name": f"scripted-{server.mode}", "protocol_version": "1.0", "capabilities": {}}
                elif method == "agent/step":
                    result = {"status": "done", "public_output": f"Echo: {message['params']['input']}"}
                body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
                if server.mode == "json" or method != "agent/step":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                    return
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Connection", "close")
                self.end_headers()
                if server.mode == "sse_drip":
                    for _ in range(200):
                        try:
                            self.wfile.write(b": still thinking\n\n")
                            self.wfile.flush()
                        except OSError:
                            return
                        time.sleep(0.05)
                    return
                note = json.dumps({"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}).encode()
                pieces = [
                    b": hello\r\n\r\n",
                    b"event: message\r\ndata: " + note + b"\r\n\r\n",
                    b"id: 1\ndata: ",
                    body[:10],
                    body[10:] + b"\r",
                    b"\n\r\n",
                ]
                for piece in pieces:
                    self.wfile.write(piece)
                    self.wfile.flush()
                    time.sleep(0.01)
                self.close_connection = True

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/ecp"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def scripted():
    servers: list[ScriptedServer] = []

    def start(mode: str) -> ScriptedServer:
        servers.append(ScriptedServer(mode))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def echo_manifest(write_manifest, url: str, n: int = 3, **top) -> Any:
    steps = [
        {"input": f"m{i}", "graders": [{"type": "text_match", "condition": "equals", "value": f"Echo: m{i}"}]}
        for i in range(n)
    ]
    return write_manifest([{"name": "http", "steps": steps}], target=url, **top)


def test_runtime_over_sdk_http_agent(write_manifest, http_agent):
    url = http_agent()
    path = write_manifest(
        [
            {
                "name": "turns",
                "steps": [
                    {
                        "input": "lookup A-7",
                        "graders": [
                            {"type": "tool_usage", "tool_name": "lookup_order", "arguments": {"order_id": "A-7"}}
                        ],
                    },
                    {"input": "count", "graders": [{"type": "text_match", "condition": "equals", "value": "2"}]},
                ],
            },
            {
                "name": "after reset",
                "steps": [{"input": "count", "graders": [{"type": "text_match", "condition": "equals", "value": "1"}]}],
            },
        ],
        target=url,
    )
    report = run_manifest(path, RunOptions(jobs=4))
    assert store().validate(REPORT, report) == []
    assert report["ok"], [s["message"] for s in report["scenarios"]]
    assert report["manifest"]["transport"] == "http" and report["run"]["jobs"] == 1
    assert any("--jobs ignored" in w for w in report["warnings"])


def test_sdk_http_agent_answers_sse_when_asked(write_manifest, http_agent):
    report = run_manifest(echo_manifest(write_manifest, http_agent("--sse")), RunOptions())
    assert report["ok"]


def test_json_answers_reuse_one_keep_alive_connection(write_manifest, scripted):
    server = scripted("json")
    report = run_manifest(echo_manifest(write_manifest, server.url, n=5), RunOptions())
    assert report["ok"] and len(server.ports) == 6
    assert len(set(server.ports)) == 1, f"one connection expected, saw ports {server.ports}"


def test_sse_answer_split_across_chunks_and_crlf(write_manifest, scripted):
    report = run_manifest(echo_manifest(write_manifest, scripted("sse_pieces").url), RunOptions())
    assert report["ok"], report["scenarios"][0]["message"]


def test_slow_sse_stream_times_out_with_a_report(write_manifest, scripted):
    path = echo_manifest(write_manifest, scripted("sse_drip").url, n=2, timeout=0.5)
    report = run_manifest(path, RunOptions())  # bench/agent_rpc_http.py times how soon the run gives up
    steps = report["scenarios"][0]["runs"][0]["steps"]
    assert [s["exit_reason"] for s in steps] == ["timeout", "skipped"]
    assert steps[0]["error"] == "agent did not answer agent/step within the step timeout (0.5 s)"


def test_unreachable_http_agent(write_manifest):
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    manifest = echo_manifest(write_manifest, f"http://127.0.0.1:{port}/ecp")
    report = run_manifest(manifest, RunOptions())
    assert report["exit_reason"] == "agent_unreachable"
    from agentpack.testing import run_cli

    result = run_cli(["eval", str(manifest), "--report", str(manifest.parent / "out" / "r.html")])
    assert result.exit_code == 2 and "agent unreachable" in result.stderr  # as 'rpc run' does, with a report
    assert (manifest.parent / "out" / "r.html").is_file()


def test_sdk_http_status_rules(http_agent):
    url = http_agent()
    with httpx.Client() as client:
        call = {"jsonrpc": "2.0", "id": 1, "method": "agent/reset"}
        ok = client.post(url, json=call, headers={"Accept": "application/json, text/event-stream"})
        assert ok.status_code == 200 and ok.json()["result"] is True
        assert client.post(url, json={"jsonrpc": "2.0", "method": "x"}).status_code == 202
        get = client.get(url)
        assert get.status_code == 405 and get.headers["allow"] == "POST"
        assert client.post(url, json=call, headers={"Accept": "text/plain"}).status_code == 406
        assert client.post(url, content=b"x", headers={"Content-Type": "text/plain"}).status_code == 415
        assert client.post(url, json=call, headers={"Origin": "http://evil.example"}).status_code == 403
        assert client.post(url, json=call, headers={"Origin": url.rsplit("/", 1)[0]}).status_code == 200
        bad = client.post(url, content=b"{nope", headers={"Content-Type": "application/json"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == -32700
        assert client.post(url.replace("/ecp", "/other"), json=call).status_code == 404
        sse = client.post(url, json=call, headers={"Accept": "text/event-stream"})
        assert sse.headers["content-type"] == "text/event-stream" and sse.text.startswith("event: message\ndata: ")


def test_conformance_over_http(http_agent):
    report = run_conformance(make_target(http_agent()), timeout=5)
    assert report["conformant"], report["checks"]
    names = {c["name"]: c["passed"] for c in report["checks"]}
    assert names["GET is 405 or an SSE stream"] and names["notification gets 202 Accepted"]
    assert names["foreign Origin gets 403"] and names["malformed JSON gets HTTP 400"]
