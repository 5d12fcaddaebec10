"""Hook implementations of the skillctl plugin (kept light: heavy imports happen inside hooks)."""

from __future__ import annotations

from agentpack import hookimpl
from agentpack.registry import FormatInfo

FORMAT = "skillctl"


@hookimpl
def agentpack_register_formats(register):
    register(FormatInfo(name=FORMAT, title="skillctl", extra="skillctl"))
