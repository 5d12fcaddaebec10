"""The opt-in pytest plugin, exercised by running pytest on a small test file in a subprocess."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

AGENT = Path(__file__).parent / "agents" / "sdk_agent.py"


def test_fixture_and_marker(tmp_path):
    pgids = tmp_path / "pgids"
    (tmp_path / "test_agent.py").write_text(f"""
import os, pytest, sys

AGENT = [sys.executable, {str(AGENT)!r}]

@pytest.mark.agent_rpc(target=AGENT, config={{"mode": "x"}})
def test_talks(rpc_agent):
    assert rpc_agent.info["name"] == "test-sdk-agent"
    assert rpc_agent.step("hello").public_output == "Echo: hello"
    assert rpc_agent.step("count").public_output == "2"
    rpc_agent.reset()
    assert rpc_agent.step("count").public_output == "1"
    assert rpc_agent.step("config").public_output == "[('mode', 'x')]"
    with open({str(pgids)!r}, "a") as f:
        f.write(str(rpc_agent._session.transport.pgid) + "\\n")

@pytest.mark.agent_rpc({str(sys.executable + " " + str(AGENT))!r})
def test_string_target(rpc_agent):
    assert rpc_agent.step("ask").status == "paused"

def test_without_target_is_skipped(rpc_agent):
    pass
""")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "agentpack_agent_rpc.pytest_plugin",
            "-p",
            "no:cacheprovider",
            "-rs",
            str(tmp_path / "test_agent.py"),
        ],
        check=False,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=60,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed, 1 skipped" in result.stdout and "no agent: use @pytest.mark.agent_rpc" in result.stdout
    import os

    for pgid in {int(x) for x in pgids.read_text().split()}:
        try:
            os.killpg(pgid, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        assert not alive
