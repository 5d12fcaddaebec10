"""The openexperts plugin's own hooks, added through ``agentpack_add_hookspecs``.

Each is a registration hook: implementations call ``register(spec)`` with one of
the dataclasses in ``agentpack_openexperts.registry``. A duplicate name is an
error that names both plugins.
"""

from __future__ import annotations

from collections.abc import Callable

import pluggy

hookspec = pluggy.HookspecMarker("agentpack")


@hookspec
def agentpack_openexperts_register_drivers(register: Callable) -> None:
    """Register agent drivers (``DriverSpec``): what runs a process's agentic loop."""


@hookspec
def agentpack_openexperts_register_brokers(register: Callable) -> None:
    """Register approval brokers (``BrokerSpec``): who decides ``confirm``-tier operations."""


@hookspec
def agentpack_openexperts_register_binders(register: Callable) -> None:
    """Register tool binders (``BinderSpec``): how an abstract tool reaches a concrete implementation."""


@hookspec
def agentpack_openexperts_register_queues(register: Callable) -> None:
    """Register invocation queues (``QueueSpec``); the default is in-process."""


@hookspec
def agentpack_openexperts_register_presets(register: Callable) -> None:
    """Register trigger presets (``PresetSpec``) that normalise and enrich event payloads."""


@hookspec
def agentpack_openexperts_register_channels(register: Callable) -> None:
    """Register delivery channels (``ChannelSpec``) besides ``main``."""
