"""The openexperts plugin's own hooks, added through ``agentpack_add_hookspecs``.

Each is a registration hook on the core's marker: implementations call
``register(spec)`` with one of the named tuples in ``agentpack_openexperts.registry``;
the runtime collects them with ``agentpack.kernel.host.collect_registrations``, so a
duplicate name is an error that names both plugins.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentpack.kernel.hookspecs import hookspec

if TYPE_CHECKING:  # annotations only: this module is imported by every command
    from .registry import BinderSpec, BrokerSpec, ChannelSpec, DriverSpec, PresetSpec, QueueSpec


@hookspec
def agentpack_openexperts_register_drivers(register: Callable[[DriverSpec], None]) -> None:
    """Register agent drivers, which run a process's agentic loop.

    ``DriverSpec(name, description, factory)``: ``factory(options)`` returns an
    object with ``run(session: AgentSession) -> AgentResult``. ``--driver NAME`` and
    ``ExpertRuntime(driver=NAME)`` pick one.
    """


@hookspec
def agentpack_openexperts_register_brokers(register: Callable[[BrokerSpec], None]) -> None:
    """Register approval brokers, which decide ``confirm``-tier operations.

    ``BrokerSpec(name, description, factory)``: ``factory(options)`` returns an
    object with ``notify(request, desk)`` that decides now or later through
    ``desk.decide``. ``--approve NAME`` picks one.
    """


@hookspec
def agentpack_openexperts_register_binders(register: Callable[[BinderSpec], None]) -> None:
    """Register tool binders, the kinds of binding a bindings file may name.

    ``BinderSpec(name, description, factory)``: ``factory(config, context)``
    returns a ``ToolBinding`` (``call(operation, arguments)``, ``close()``);
    ``context`` is a ``BindContext`` (``base`` folder and ``runtime``).
    """


@hookspec
def agentpack_openexperts_register_queues(register: Callable[[QueueSpec], None]) -> None:
    """Register invocation queues; ``memory`` (in-process lanes) is the default.

    ``QueueSpec(name, description, factory)``: ``factory(options)`` returns a queue
    with ``start(handler)``, ``submit(job, lane)``, ``join(timeout)`` and ``stop()``.
    """


@hookspec
def agentpack_openexperts_register_presets(register: Callable[[PresetSpec], None]) -> None:
    """Register trigger presets, which normalise and enrich event payloads.

    ``PresetSpec(name, description, enrich, fields)``: ``enrich(payload)`` returns
    the payload keys and mappings are resolved against; ``fields`` lists the paths
    it always offers.
    """


@hookspec
def agentpack_openexperts_register_channels(register: Callable[[ChannelSpec], None]) -> None:
    """Register delivery channels besides ``main``.

    ``ChannelSpec(name, description, factory)``: ``factory(runtime)`` returns an
    object with ``send(message: dict)``. Validation accepts the names registered
    here in ``delivery.channel`` and ``policy.escalation.channel``.
    """
