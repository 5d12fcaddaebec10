"""Hook implementations of the agent-rpc plugin (kept light: heavy imports happen inside hooks)."""

from __future__ import annotations

from agentpack import hookimpl
from agentpack.registry import FormatInfo

FORMAT = "agent-rpc"


@hookimpl
def agentpack_register_formats(register):
    register(FormatInfo(name=FORMAT, title="agent-rpc", extra="agent-rpc"))
