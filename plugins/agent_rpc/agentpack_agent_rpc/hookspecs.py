"""The agent-rpc plugin's own hooks, added with ``agentpack_add_hookspecs``; any plugin may implement them.

Both are registration hooks, like the core's: ``register`` takes one named
tuple, and two plugins registering one name is an error naming both.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentpack.kernel.hookspecs import hookspec

if TYPE_CHECKING:  # for annotations only: the registration types load when the hooks are called
    from .executors import ExecutorInfo
    from .graders.base import GraderType


@hookspec
def agentpack_agent_rpc_register_graders(register: Callable[[GraderType], None]) -> None:
    """Register grader types: ``register(GraderType(name, factory, description, schema))``.

    ``factory(config)`` receives one manifest grader entry (a dict with
    ``type``) and returns an object with ``grade(result, context) -> Check``;
    it raises ``GraderConfigError`` for an entry that cannot work. ``schema``
    (a JSON Schema for the entry) lets ``validate`` point at the wrong field.
    """


@hookspec
def agentpack_agent_rpc_register_executors(register: Callable[[ExecutorInfo], None]) -> None:
    """Register executors that decide where scenarios run: ``register(ExecutorInfo(name, factory, description))``.

    ``factory()`` returns an object with ``run(scenarios, make_worker, jobs,
    on_result, cancel)`` (see ``executors.Executor``); ``rpc run --executor
    NAME`` and ``agentpack eval --option executor=NAME`` pick it.
    """
