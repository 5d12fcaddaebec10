"""The dci plugin's own hooks (added to the manager through ``agentpack_add_hookspecs``).

* ``agentpack_dci_skill_roots`` -- runtime-installed skill roots (gathered);
* ``agentpack_dci_register_probes`` -- capability probes (none by default);
* ``agentpack_dci_emulation_decision`` -- the ``offer-emulation`` decision callback (first answer wins).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentpack.hookspecs import hookspec

if TYPE_CHECKING:
    from pathlib import Path

    from .probes import EmulationRequest, Probe


@hookspec
def agentpack_dci_skill_roots(workspace: Path) -> list[str | Path] | None:
    """Skill roots a runtime installed (registry or extension managed), scanned after the workspace.

    Relative paths are taken relative to ``workspace``.
    """


@hookspec
def agentpack_dci_register_probes(register: Callable[[Probe], None]) -> None:
    """Register capability probes (``Probe(capability, name, run)``); ``run(target) -> bool``."""


@hookspec(firstresult=True)
def agentpack_dci_emulation_decision(request: EmulationRequest) -> str | None:
    """Answer an ``offer-emulation`` pause: ``emulate``, ``continue-with-partial`` or ``abort``.

    Return ``None`` to leave the decision to the next implementation (or the CLI prompt).
    """
