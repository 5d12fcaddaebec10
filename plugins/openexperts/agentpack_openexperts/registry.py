"""What plugins register through the openexperts hooks, and how the runtime looks them up.

Registration values are named tuples, as the core's are; ``plugin`` is filled in
by ``agentpack.kernel.host.collect_registrations`` with the registering plugin.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple

from agentpack.io.errors import AgentpackError
from agentpack.kernel.host import collect_registrations

if TYPE_CHECKING:
    from agentpack.kernel.host import Host


class DriverSpec(NamedTuple):
    """An agent driver: what runs a process's agentic loop."""

    name: str
    description: str
    factory: Callable[[dict[str, Any]], Any]
    """``factory(options)`` -> an object with ``run(session) -> AgentResult``."""
    plugin: str | None = None


class BrokerSpec(NamedTuple):
    """An approval broker: who decides ``confirm``-tier operations."""

    name: str
    description: str
    factory: Callable[[dict[str, Any]], Any]
    """``factory(options)`` -> an object with ``notify(request, desk)``."""
    plugin: str | None = None


class BinderSpec(NamedTuple):
    """A tool binder: how an abstract tool reaches a concrete implementation."""

    name: str
    description: str
    factory: Callable[[dict[str, Any], Any], Any]
    """``factory(config, context)`` -> a ``ToolBinding`` (``call(operation, arguments)``, ``close()``)."""
    plugin: str | None = None


class QueueSpec(NamedTuple):
    """An invocation queue (``start(handler)``, ``submit(job, lane)``, ``join(timeout)``, ``stop()``)."""

    name: str
    description: str
    factory: Callable[[dict[str, Any]], Any]
    """``factory(options)`` -> the queue; ``options["workers"]`` is the worker count."""
    plugin: str | None = None


class PresetSpec(NamedTuple):
    """A trigger preset that normalises and enriches event payloads."""

    name: str
    description: str
    enrich: Callable[[Any], Any]
    """``enrich(payload)`` -> the normalised payload that keys and mappings are resolved against."""
    fields: tuple[str, ...] = ()
    """Paths the enriched payload always offers (documented for ``dedupe_key``/``concurrency_key``)."""
    plugin: str | None = None


class ChannelSpec(NamedTuple):
    """A delivery channel besides ``main``."""

    name: str
    description: str
    factory: Callable[[Any], Any]
    """``factory(runtime)`` -> an object with ``send(message: dict)``."""
    plugin: str | None = None


HOOKS = {
    "driver": "agentpack_openexperts_register_drivers",
    "broker": "agentpack_openexperts_register_brokers",
    "binder": "agentpack_openexperts_register_binders",
    "queue": "agentpack_openexperts_register_queues",
    "preset": "agentpack_openexperts_register_presets",
    "channel": "agentpack_openexperts_register_channels",
}
"""The registration hook of each kind (defined in ``hookspecs.py``)."""


def registered(host: Host, kind: str) -> dict[str, Any]:
    """Everything of ``kind`` (driver, broker, binder, queue, preset, channel) registered on ``host``, by name.

    Not cached, so a plugin registered later (as tests do) is seen at once.
    """
    return collect_registrations(host.pm, HOOKS[kind], kind)


def lookup(host: Host, kind: str, name: str) -> Any:
    """The spec of ``kind`` named ``name``; an ``AgentpackError`` naming the available ones otherwise."""
    found = registered(host, kind)
    if name not in found:
        raise AgentpackError(f"unknown {kind} '{name}'; available: {', '.join(sorted(found)) or 'none'}")
    return found[name]
