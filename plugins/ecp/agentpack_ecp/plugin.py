"""Hook implementations of the ECP plugin (kept light: heavy imports happen inside hooks)."""

from __future__ import annotations

from agentpack import hookimpl
from agentpack.registry import CommandSpec, FormatInfo

FORMAT = "ecp"


@hookimpl
def agentpack_register_formats(register):
    register(FormatInfo(name=FORMAT, title="Expert Context Pack",
                        description="an Agent Skill with an expert/ directory (ECP v1.0)", extra="ecp"))


@hookimpl
def agentpack_register_commands(register):
    register(CommandSpec(name="ecp", target="agentpack_ecp.cli:ecp",
                         help="Build, query, evaluate, refresh and ship Expert Context Packs."))


@hookimpl
def agentpack_register_mcp_tools(register, context):
    from .mcp_tools import register_tools

    register_tools(register, context)
