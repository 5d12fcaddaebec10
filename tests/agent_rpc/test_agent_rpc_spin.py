"""Busy-polling for quick answers: only for a serial run with a spare CPU, and only while the agent is quick."""

from __future__ import annotations

import sys
import time

import pytest

from agentpack_agent_rpc import runner as runner_module
from agentpack_agent_rpc import stdio
from agentpack_agent_rpc.api import run_manifest
from agentpack_agent_rpc.runner import RunOptions

# answers "fast" at once and "slow" after 0.3 s
AGENT = r"""
import json, sys, time
for line in sys.stdin:
    m = json.loads(line)
    if m["method"] == "agent/initialize":
        r = {"name": "timed", "protocol_version": "1.0", "capabilities": {}}
    else:
        if m["params"]["input"] == "slow":
            time.sleep(0.3)
        r = {"status": "done", "public_output": m["params"]["input"]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
"""


@pytest.fixture
def transport(tmp_path):
    (tmp_path / "agent.py").write_text(AGENT)
    t = stdio.StdioTransport([sys.executable, str(tmp_path / "agent.py")])
    t.spin = True
    yield t
    t.close()


def ask(t: stdio.StdioTransport, request_id: int, text: str) -> str:
    data = f'{{"jsonrpc":"2.0","id":{request_id},"method":"agent/step","params":{{"input":"{text}"}}}}'.encode()
    return t.call(data, request_id, time.monotonic() + 10)["result"]["public_output"]


def test_spinning_stops_after_a_slow_answer_and_resumes_after_a_quick_one(transport, monkeypatch):
    monkeypatch.setattr(stdio, "SPIN_S", 0.05)  # margins wide enough for a loaded machine: 0 vs 50 vs 300 ms
    spins = []
    original = stdio.StdioTransport._spin
    monkeypatch.setattr(stdio.StdioTransport, "_spin", lambda self: spins.append(1) or original(self))
    init = b'{"jsonrpc":"2.0","id":1,"method":"agent/initialize","params":{}}'
    transport.call(init, 1, time.monotonic() + 10)
    assert ask(transport, 2, "slow") == "slow" and not transport._quick
    spins.clear()
    texts = ["slow", "fast", "fast", "slow", "fast"]
    assert [ask(transport, i, text) for i, text in enumerate(texts, start=3)] == texts
    # slow: no spin (the last answer was slow); fast: no spin, but it was quick; fast: spins and gets it;
    # slow: spins in vain, then sleeps; fast: no spin
    assert len(spins) == 2 and transport._quick


def test_a_serial_run_spins_only_with_a_spare_cpu(write_manifest, monkeypatch):
    seen = []
    original = stdio.StdioTransport.receive
    monkeypatch.setattr(stdio.StdioTransport, "receive", lambda self, d: seen.append(self.spin) or original(self, d))
    path = write_manifest([{"name": "a", "steps": [{"input": "hi"}]}, {"name": "b", "steps": [{"input": "hi"}]}])
    for cpus, jobs, expected in ((2, 1, True), (1, 1, False), (4, 2, False)):
        seen.clear()
        monkeypatch.setattr(runner_module, "_cpus", lambda cpus=cpus: cpus)
        assert run_manifest(path, RunOptions(jobs=jobs))["ok"]
        assert set(seen[1:]) == {expected}, (cpus, jobs)  # the first receive is initialize, before the run sets it
