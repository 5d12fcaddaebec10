"""``agentpack ecp ...``: the click group; the commands live in one module per area."""

from __future__ import annotations

from agentpack.cli.clikit import group

from . import agent, build, lifecycle, packaging


@group()
def ecp() -> None:
    """Build, query, evaluate, refresh and ship Expert Context Packs."""


for _command in (*build.COMMANDS, *lifecycle.COMMANDS, *packaging.COMMANDS, *agent.COMMANDS):
    ecp.add_command(_command)
