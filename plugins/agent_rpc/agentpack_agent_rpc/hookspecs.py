"""The agent-rpc plugin's own hooks, added with ``agentpack_add_hookspecs``. Any plugin may implement them."""

from __future__ import annotations

from collections.abc import Callable

import pluggy

hookspec = pluggy.HookspecMarker("agentpack")


@hookspec
def agentpack_agent_rpc_register_graders(register: Callable) -> None:
    """Register grader types: ``register(GraderType(name, factory, description, schema))``.

    ``factory(config)`` receives one manifest grader entry (a dict with
    ``type``) and returns an object with ``grade(result, context) -> Check``;
    it raises ``GraderConfigError`` for an entry that cannot work. ``schema``
    (a JSON Schema for the entry) lets ``validate`` point at the wrong field.
    """


@hookspec
def agentpack_agent_rpc_register_executors(register: Callable) -> None:
    """Register executors that decide where scenarios run: ``register(ExecutorInfo(name, factory))``."""
