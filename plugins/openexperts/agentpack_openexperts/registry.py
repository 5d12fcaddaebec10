"""What plugins register through the openexperts hooks, and how the runtime looks them up."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentpack.errors import AgentpackError


@dataclass(frozen=True)
class DriverSpec:
    name: str
    description: str
    factory: Callable[[dict[str, Any]], Any]
    """``factory(options)`` -> an object with ``run(session) -> AgentResult``."""
    plugin: str | None = None


@dataclass(frozen=True)
class BrokerSpec:
    name: str
    description: str
    factory: Callable[[dict[str, Any]], Any]
    """``factory(options)`` -> an object with ``notify(request, desk)``."""
    plugin: str | None = None


@dataclass(frozen=True)
class BinderSpec:
    name: str
    description: str
    factory: Callable[[dict[str, Any], Any], Any]
    """``factory(config, context)`` -> a ``ToolBinding`` (``call(operation, arguments)``, ``close()``)."""
    plugin: str | None = None


@dataclass(frozen=True)
class QueueSpec:
    name: str
    description: str
    factory: Callable[[dict[str, Any]], Any]
    plugin: str | None = None


@dataclass(frozen=True)
class PresetSpec:
    name: str
    description: str
    enrich: Callable[[Any], Any]
    """``enrich(payload)`` -> the normalised payload that keys and mappings are resolved against."""
    fields: tuple[str, ...] = ()
    """Paths the enriched payload always offers (documented for ``dedupe_key``/``concurrency_key``)."""
    plugin: str | None = None


@dataclass(frozen=True)
class ChannelSpec:
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


def collect(host: Any, hook_name: str) -> dict[str, Any]:
    """Everything registered through ``hook_name`` on ``host``, by name (cheap: not cached, so a plugin
    registered later, as tests do, is seen at once)."""
    from agentpack.plugins import collect_registrations

    kind = next((k for k, h in HOOKS.items() if h == hook_name), "item")
    return collect_registrations(host.pm, hook_name, kind)


def lookup(kind: str, name: str, host: Any = None) -> Any:
    """The spec of ``kind`` (driver, broker, binder, queue, preset, channel) named ``name``."""
    if host is None:
        from agentpack.plugins import get_host

        host = get_host()
    found = collect(host, HOOKS[kind])
    if name not in found:
        raise AgentpackError(f"unknown {kind} '{name}'; available: {', '.join(sorted(found)) or 'none'}")
    return found[name]
