"""Hook implementations of the ecp plugin (kept light: heavy imports happen inside hooks)."""

from __future__ import annotations

from agentpack import hookimpl
from agentpack.registry import FormatInfo

FORMAT = "ecp"


@hookimpl
def agentpack_register_formats(register):
    register(FormatInfo(name=FORMAT, title="ecp", extra="ecp"))
