"""Fixtures for the agent-rpc tests: test agents, manifests, an HTTP agent, a fake judge, process checks."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

AGENTS = Path(__file__).parent / "agents"
PY = sys.executable


@pytest.fixture
def agents() -> Path:
    return AGENTS


def sdk_target() -> list[str]:
    return [PY, str(AGENTS / "sdk_agent.py")]


def bad_target(mode: str) -> list[str]:
    return [PY, str(AGENTS / "bad_agent.py"), mode]


@pytest.fixture
def write_manifest(tmp_path: Path) -> Callable[..., Path]:
    """``write_manifest(scenarios, **top)`` writes manifest.yaml (the SDK agent is the default target)."""

    def write(scenarios: list[dict[str, Any]], name: str = "manifest.yaml", **top: Any) -> Path:
        data = {
            "manifest_version": "v1",
            "name": top.pop("title", "test run"),
            "target": sdk_target(),
            **top,
            "scenarios": scenarios,
        }
        path = tmp_path / name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path

    return write


def _live_members(pgid: int) -> list[int]:
    """Processes of group ``pgid`` that are not zombies (read from /proc; psutil-free)."""
    live = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            live.append(int(entry.name))
    return live


def group_gone(pgid: int) -> bool:
    """True when no live process of the group is left.

    ``os.killpg(pgid, 0)`` first; a group that still answers may hold only
    zombies (orphans waiting for init to reap them), which count as gone.
    """
    deadline = time.monotonic() + 3.0
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        if Path("/proc").is_dir() and not _live_members(pgid):
            return True
        time.sleep(0.02)
    return False


def run_pids(report: dict[str, Any]) -> list[int]:
    return [run["pid"] for s in report["scenarios"] for run in s["runs"] if run.get("pid")]


@pytest.fixture
def http_agent() -> Iterator[Callable[..., str]]:
    """Start ``sdk_agent.py --http --port 0 [args]`` and return its URL; killed (group) afterwards."""
    from agentpack.io.proc import kill_group, spawn

    started: list[subprocess.Popen] = []

    def start(*args: str, script: str = "sdk_agent.py") -> str:
        proc = spawn(
            [PY, str(AGENTS / script), "--http", "--port", "0", *args],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            text=True,
        )
        started.append(proc)
        line = proc.stderr.readline()
        match = re.search(r"(http://\S+)", line)
        assert match, f"agent did not announce its URL: {line!r}"
        return match.group(1)

    yield start
    for proc in started:
        kill_group(proc, grace=0.5)
        proc.stderr.close()


class FakeJudge:
    """An OpenAI-compatible /chat/completions server on 127.0.0.1 that passes texts containing 'refund'."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.status = 200
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                body["_auth"] = self.headers.get("Authorization")
                body["_path"] = self.path
                judge.requests.append(body)
                text = body["messages"][-1]["content"].split("[CRITERIA]")[0]
                verdict = "RESULT: PASS" if "refund" in text.lower() else "RESULT: FAIL"
                content = f"The reply {'mentions' if 'PASS' in verdict else 'lacks'} the refund.\n{verdict}"
                payload = json.dumps(
                    {
                        "choices": [{"message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
                        "usage": {"total_tokens": 10},
                    }
                ).encode()
                self.send_response(judge.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_judge() -> Iterator[FakeJudge]:
    judge = FakeJudge()
    yield judge
    judge.close()


@pytest.fixture
def helpers():
    """Module-level helpers for test files (importlib mode cannot import conftest directly)."""
    return sys.modules[__name__]
