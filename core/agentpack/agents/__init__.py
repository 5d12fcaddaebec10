"""Write an agent for the agent evaluation protocol and serve it over stdio or Streamable HTTP.

The one agent SDK: agent_rpc's users write agents with it and ``agentpack ecp agent`` serves a
pack with it. Standard library only (``json``; ``typing`` through ``agentpack``), so
``import agentpack.agents`` stays well under 30 ms::

    from agentpack.agents import Agent, Result

    agent = Agent("support-bot", capabilities={"tool_calls": {}})

    @agent.step
    def step(text):
        return Result(public_output=f"You said: {text}")

    if __name__ == "__main__":
        agent.main()          # stdio; ``--http [--port N]`` serves http://127.0.0.1:N/ecp

The module-level ``initialize``, ``step``, ``reset`` and ``serve`` act on a
default agent, for one-agent scripts. Layers: ``wire`` (constants, encoding)
under ``agent`` (dispatch, stdio) under ``http`` (loaded only to serve HTTP).
"""

from __future__ import annotations

from .agent import Agent, Result, RpcError
from .wire import (
    AGENT_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    PROTOCOL_VERSION,
    VERSION_UNSUPPORTED,
)

TYPE_CHECKING = False  # no ``typing`` import: annotations stay strings, keeping ``import sdk`` cheap
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

default_agent = Agent()
"""The agent the module-level decorators and ``serve`` act on."""


def initialize(func: Callable[[dict[str, Any]], Any]) -> Callable[[dict[str, Any]], Any]:
    return default_agent.initialize(func)


def step(func: Callable[[str], Any]) -> Callable[[str], Any]:
    return default_agent.step(func)


def reset(func: Callable[[], Any]) -> Callable[[], Any]:
    return default_agent.reset(func)


def serve(
    name: str | None = None, *, capabilities: dict[str, Any] | None = None, argv: list[str] | None = None
) -> None:
    """Serve the default agent (see ``Agent.main``); ``name``/``capabilities`` set its identity."""
    if name is not None:
        default_agent.name = name
    if capabilities is not None:
        default_agent.capabilities = dict(capabilities)
    default_agent.main(argv)


__all__ = [
    "AGENT_ERROR",
    "INVALID_PARAMS",
    "INVALID_REQUEST",
    "METHOD_NOT_FOUND",
    "PARSE_ERROR",
    "PROTOCOL_VERSION",
    "VERSION_UNSUPPORTED",
    "Agent",
    "Result",
    "RpcError",
    "default_agent",
    "initialize",
    "reset",
    "serve",
    "step",
]
