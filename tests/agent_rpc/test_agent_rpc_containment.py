"""No agent process outlives ``rpc run``: not a daemon it double-forks into a new session, not when the runner is
killed (SIGTERM or SIGKILL), and with ``pid_namespace`` not even one that also drops its environment."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentpack_agent_rpc.api import run_manifest

AGENTPACK = str(Path(sys.executable).with_name("agentpack"))
FORKING = Path(__file__).parent / "agents" / "forking_agent.py"


def marked(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line holds ``marker``."""
    found = []
    needle = marker.encode()
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                if needle not in handle.read():
                    continue
            with open(f"/proc/{entry}/stat", "rb") as handle:
                if handle.read().rpartition(b")")[2].split()[0] == b"Z":
                    continue
        except OSError:
            continue
        found.append(int(entry))
    return found


def wait_for(condition, timeout: float = 10.0) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.02)
    return condition()


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique word in the command lines of the test's agent and daemon; survivors are killed after the test."""
    word = f"agentpack-test-daemon-{uuid.uuid4().hex}"
    yield word
    for pid in marked(word):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def manifest(tmp_path: Path, marker: str, *, clean: bool = False, wait: bool = False, **top) -> Path:
    target = [sys.executable, str(FORKING), marker] + (["clean"] if clean else [])
    data = {
        "name": "forking",
        "target": target,
        **top,
        "scenarios": [
            {"name": "a", "steps": [{"input": "hello"}]},
            {"name": "b", "steps": [{"input": "wait" if wait else "again", "timeout": 120}]},
        ],
    }
    path = tmp_path / "manifest.yaml"
    path.write_text(json.dumps(data))
    return path


def bwrap_works() -> bool:
    if shutil.which("bwrap") is None:
        return False
    probe = ["bwrap", "--dev-bind", "/", "/", "--unshare-pid", "--proc", "/proc", "--die-with-parent", "true"]
    return subprocess.run(probe, capture_output=True, timeout=30, check=False).returncode == 0


needs_bwrap = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap cannot make a PID namespace here")


@pytest.mark.parametrize("clean", [False, True], ids=["inherited-env", "clean-env"])
def test_rpc_run_leaves_no_daemon_behind(tmp_path, marker, clean):
    result = subprocess.run(
        [AGENTPACK, "rpc", "run", "-m", str(manifest(tmp_path, marker, clean=clean))],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert marked(marker) == []  # at once: the run waits for its cleanup


def test_run_manifest_in_process_leaves_no_daemon_behind(tmp_path, marker):
    report = run_manifest(manifest(tmp_path, marker))
    assert report["ok"]
    assert marked(marker) == []


def start_and_kill(tmp_path: Path, marker: str, sig: int, **top) -> subprocess.Popen:
    path = manifest(tmp_path, marker, wait=True, **top)
    proc = subprocess.Popen(
        [AGENTPACK, "rpc", "run", "-m", str(path), "--json-out", str(tmp_path / "r.json")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # the agent, its daemon (started at initialize) and, waiting in scenario b, the same agent: 2 processes
    assert wait_for(lambda: len(marked(marker)) >= 2), proc.stderr
    time.sleep(0.3)  # into the waiting step
    proc.send_signal(sig)
    proc.communicate(timeout=30)
    return proc


def test_sigterm_to_rpc_run_leaves_no_agent_process(tmp_path, marker):
    proc = start_and_kill(tmp_path, marker, signal.SIGTERM)
    assert proc.returncode == 130
    assert marked(marker) == []
    assert json.loads((tmp_path / "r.json").read_text())["run"]["interrupted"]


def test_sigkill_to_rpc_run_leaves_no_agent_process(tmp_path, marker):
    proc = start_and_kill(tmp_path, marker, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    assert wait_for(lambda: marked(marker) == [], timeout=5), "the guard did not end the run's processes"


@needs_bwrap
def test_sigkill_with_a_pid_namespace_ends_even_a_daemon_without_the_marker(tmp_path, marker):
    start_and_kill(tmp_path, marker, signal.SIGKILL, pid_namespace=True)
    assert wait_for(lambda: marked(marker) == [], timeout=5)


@needs_bwrap
def test_the_environment_can_ask_for_a_pid_namespace(tmp_path, marker, monkeypatch):
    monkeypatch.setenv("AGENTPACK_AGENT_RPC_PID_NAMESPACE", "1")
    report = run_manifest(manifest(tmp_path, marker, clean=True))
    assert report["ok"]
    assert marked(marker) == []


def test_a_pid_namespace_without_bubblewrap_is_unreachable(tmp_path, marker, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no bwrap there; the agent's interpreter is an absolute path
    report = run_manifest(manifest(tmp_path, marker, pid_namespace=True))
    scenario = report["scenarios"][0]
    assert scenario["exit_reason"] == "agent_unreachable" and "needs bubblewrap" in scenario["message"]
