"""Hostile manifests and agents, round 3 (issue 24): a pathological grader regex, protocol strings meant for
the terminal, and invalid manifests that must not run."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

pytestmark = pytest.mark.timeout(120)  # the regex case hung past every deadline before the fix

EVIL = "(a|aa)+$"  # Python's re backtracks on it for hours (``regex`` itself short-cuts ``(a+)+$``)


def test_a_backtracking_regex_grader_ends_as_an_error_naming_the_grader(agentpack_cli, write_manifest, tmp_path):
    """``(a|aa)+$`` on 40 ``a``s and a ``!`` backtracks for minutes in ``re``: the match stops at the step's
    deadline and the case is an error naming the grader; the next scenario still runs."""
    grader = {"type": "text_match", "name": "evil-regex", "condition": "regex", "pattern": EVIL}
    path = write_manifest(
        [
            {"name": "evil", "step_timeout": 1, "steps": [{"input": "a" * 40 + "!", "graders": [grader]}]},
            {"name": "after", "steps": [{"input": "hello", "graders": [{**grader, "pattern": "hel+o"}]}]},
        ]
    )
    out = tmp_path / "r.json"
    result = agentpack_cli("rpc", "run", "-m", path, "--json-out", out)
    assert result.exit_code == 1, result.stdout + result.stderr
    by_name = {s["name"]: s for s in json.loads(out.read_text())["scenarios"]}
    evil = by_name["evil"]
    assert evil["status"] == "error" and evil["exit_reason"] == "grader_error", evil
    check = evil["runs"][0]["steps"][0]["checks"][0]
    assert check["error"] is True and "grader 'evil-regex'" in check["reason"] and "deadline" in check["reason"]
    assert by_name["after"]["status"] == "passed"


OSC_TITLE = "\x1b]0;owned\x07"
OSC_CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"


class ProtocolStringAgent:
    """An HTTP agent whose name, output and failure reasons carry terminal escape sequences."""

    def __init__(self) -> None:
        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if message["method"] == "agent/initialize":
                    result: dict[str, Any] = {"name": f"agent{OSC_TITLE}", "protocol_version": "1.0"}
                else:
                    result = {"status": "done", "public_output": f"answer{OSC_CLIPBOARD}\x9b2J"}
                data = json.dumps({"jsonrpc": "2.0", "id": message.get("id"), "result": result}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/rpc"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def protocol_string_agent() -> Iterator[ProtocolStringAgent]:
    agent = ProtocolStringAgent()
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


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"target": "ftp://example.org/agent"}, "ARP106"),
        ({"scenarios": [{"name": "empty", "steps": []}]}, "should be non-empty"),
    ],
    ids=["ftp-target", "empty-steps"],
)
def test_manifests_that_cannot_run_are_invalid(agentpack_cli, write_manifest, change, expected):
    """An ftp:// target is no command and no HTTP agent; ``steps: []`` is a scenario that tests nothing."""
    scenarios = change.pop("scenarios", [{"name": "a", "steps": [{"input": "hi"}]}])
    path = write_manifest(scenarios, **change)
    for command in (["rpc", "validate", path], ["validate", path]):
        result = agentpack_cli(*command)
        assert result.exit_code == 1, result.stdout + result.stderr
        assert expected in result.stdout, result.stdout
