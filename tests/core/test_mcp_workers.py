"""``agentpack mcp serve --workers N``: N real worker processes on one socket, supervised by the parent."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import anyio
import pytest

pytest.importorskip("mcp")
pytest.importorskip("uvicorn")

ARGV = [sys.executable, "-m", "agentpack", "mcp", "serve", "--transport", "streamable-http", "--port", "0"]


def _children(pid: int, count: int) -> list[int]:
    """The worker pids once ``count`` are forked (the server prints its address just before forking)."""
    path = Path(f"/proc/{pid}/task/{pid}/children")
    if not path.exists():
        pytest.skip("needs /proc/PID/task/PID/children (Linux) to see the workers")
    for _ in range(600):
        found = [int(p) for p in path.read_text().split()]
        if len(found) >= count:
            return found
        time.sleep(0.05)
    return found


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _start(workers: int) -> tuple[subprocess.Popen[str], str]:
    proc = subprocess.Popen([*ARGV, "--workers", str(workers)], stderr=subprocess.PIPE, text=True, env={**os.environ})
    line = proc.stderr.readline() if proc.stderr else ""
    assert line.startswith("agentpack mcp: serving on http://127.0.0.1:"), line
    return proc, line.split("serving on ", 1)[1].strip()


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.terminate()
    proc.wait(timeout=30)
    if proc.stderr:
        proc.stderr.close()


async def _list_tools(url: str) -> list[str]:
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with Client(streamable_http_client(url)) as client:
        return [t.name for t in (await client.list_tools()).tools]


def test_workers_serve_concurrent_clients_and_stop_together_on_sigterm():
    proc, url = _start(2)
    port = int(url.rsplit(":", 1)[1].split("/")[0])
    try:
        workers = _children(proc.pid, 2)
        assert len(workers) == 2

        async def many() -> list[list[str]]:
            found: list[list[str]] = []

            async def one() -> None:
                found.append(await _list_tools(url))

            async with anyio.create_task_group() as tasks:
                for _ in range(6):
                    tasks.start_soon(one)
            return found

        answers = anyio.run(many)
        assert len(answers) == 6 and all(a == answers[0] for a in answers)  # every worker offers the same tools
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=30) == 0
        assert not any(_alive(pid) for pid in workers)
    finally:
        _stop(proc)
    with socket.socket() as probe:  # nothing was left listening
        assert probe.connect_ex(("127.0.0.1", port)) != 0


def test_a_worker_that_dies_stops_the_others_and_the_server_fails():
    proc, _ = _start(2)
    try:
        first, second = _children(proc.pid, 2)
        os.kill(first, signal.SIGKILL)
        assert proc.wait(timeout=30) == 1
        err = proc.stderr.read() if proc.stderr else ""
        assert f"worker {first} stopped (killed by SIGKILL); stopping the others" in err
        assert "Traceback" not in err
        assert not _alive(second)
    finally:
        _stop(proc)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--workers", "2"], "--workers applies to --transport streamable-http only"),
        (["--transport", "streamable-http", "--workers", "0"], "0 is not in the range x>=1"),
    ],
)
def test_workers_are_checked(extra, message):
    argv = [sys.executable, "-m", "agentpack", "mcp", "serve", *extra]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=60, env={**os.environ}, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 2 and message in done.stderr and "Traceback" not in done.stderr
