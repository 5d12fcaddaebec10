"""An opt-in pytest plugin: a fixture that starts an agent and a marker that says which.

Enable it with ``-p agentpack_agent_rpc.pytest_plugin`` or, in a root
``conftest.py``, ``pytest_plugins = ["agentpack_agent_rpc.pytest_plugin"]``::

    @pytest.mark.agent_rpc(target="python agent.py", config={"tone": "formal"})
    def test_refund(rpc_agent):
        result = rpc_agent.step("I want a refund")
        assert "refund" in result.public_output

The target comes from the marker, else ``--agent-rpc-target``; without
either the test is skipped. The agent is initialized before the test and its
whole process group is stopped after it.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("agent-rpc")
    group.addoption("--agent-rpc-target", default=None, help="agent command or http(s) URL for the rpc_agent fixture")
    group.addoption("--agent-rpc-timeout", type=float, default=30.0, help="per-call timeout in seconds")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "agent_rpc(target=None, config=None, cwd=None, shell=False, timeout=None): "
        "the agent the rpc_agent fixture starts",
    )


class AgentHandle:
    """A started, initialized agent: ``step(text)``, ``reset()``, ``info``, ``stderr()``."""

    def __init__(self, session: Any, timeout: float) -> None:
        self._session = session
        self.timeout = timeout
        self.info: dict[str, Any] = session.info

    def step(self, text: str):
        return self._session.step(text, time.monotonic() + self.timeout)

    def reset(self) -> None:
        self._session.reset(time.monotonic() + self.timeout)

    def stderr(self) -> str:
        return self._session.transport.stderr.take()


@pytest.fixture
def rpc_agent(request: pytest.FixtureRequest) -> Iterator[AgentHandle]:
    """The agent of the test's ``agent_rpc`` marker, started and initialized; stopped (with all it started) after.

    An agent that does not answer ``agent/initialize`` fails the test with the
    last lines of its stderr in the message.
    """
    from .containment import Containment
    from .manifest.model import make_target
    from .session import Session

    marker = request.node.get_closest_marker("agent_rpc")
    options = dict(marker.kwargs) if marker else {}
    if marker and marker.args and "target" not in options:
        options["target"] = marker.args[0]
    target = options.get("target") or request.config.getoption("--agent-rpc-target")
    if not target:
        pytest.skip("no agent: use @pytest.mark.agent_rpc(target=...) or --agent-rpc-target")
    timeout = float(options.get("timeout") or request.config.getoption("--agent-rpc-timeout"))
    spec = make_target(target, shell=bool(options.get("shell")), cwd=options.get("cwd"))
    scope = Containment()
    try:
        session = Session.open(spec, options.get("config") or {}, timeout, scope=scope)
        try:
            yield AgentHandle(session, timeout)
        finally:
            session.close()
    finally:
        scope.close()
