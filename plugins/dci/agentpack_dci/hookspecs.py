"""The dci plugin's own hooks, added to the manager through ``agentpack_add_hookspecs``.

Any plugin may implement them (with ``agentpack.hookimpl``); the resolver asks
them through the host it was given (``Resolver(..., host=...)``; the CLI
passes its own):

* ``agentpack_dci_skill_roots`` -- runtime-installed skill roots (gathered from every plugin);
* ``agentpack_dci_register_probes`` -- capability probes (gathered; none by default);
* ``agentpack_dci_emulation_decision`` -- the ``offer-emulation`` decision (the first answer wins).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentpack.kernel.hookspecs import hookspec

if TYPE_CHECKING:
    from pathlib import Path

    from .probes import EmulationRequest, Probe


@hookspec
def agentpack_dci_skill_roots(workspace: Path) -> list[str | Path] | None:
    """Skill roots a runtime installed (registry or extension managed), scanned after the workspace's own.

    Called once per ``Resolver``. Relative paths are taken relative to
    ``workspace``; the roots of every plugin are scanned in registration order.
    """


@hookspec
def agentpack_dci_register_probes(register: Callable[[Probe], None]) -> None:
    """Register capability probes: ``register(Probe(capability, name, run))``.

    ``run(target: ProbeTarget) -> bool`` checks that a candidate really
    provides ``capability``; selection runs it (at most once per candidate and
    capability) before it trusts a claim. A probe that raises fails, and the
    report says why.
    """


@hookspec(firstresult=True)
def agentpack_dci_emulation_decision(request: EmulationRequest) -> str | None:
    """Answer an ``offer-emulation`` pause: ``emulate``, ``continue-with-partial`` or ``abort``.

    ``request`` names the unresolved capabilities and the selected candidates.
    Return ``None`` to leave the decision to the next implementation (or the
    CLI prompt); any other answer is an error.
    """
