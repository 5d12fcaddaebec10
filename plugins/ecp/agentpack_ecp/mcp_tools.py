"""The ECP-MCP tools (spec section 10): expert.query, expert.refresh, expert.run_evals, expert.status."""

from __future__ import annotations


def register_tools(register, context) -> None:
    """Register the ECP tools for every ECP pack in ``context.packs``."""
