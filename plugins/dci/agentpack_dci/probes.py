"""Capability probes and the offer-emulation decision: the values the dci hooks exchange.

Named tuples, as the core's registration values are.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from agentpack.kernel.records import Record

if TYPE_CHECKING:
    from .discovery import SkillRecord

DECISIONS = ("emulate", "continue-with-partial", "abort")


class ProbeTarget(NamedTuple):
    """What a probe is asked to check: can ``candidate_id`` really provide ``capability``?"""

    candidate_id: str
    name: str
    directory: Path
    capability: str


class Probe(NamedTuple):
    """A capability probe, registered through ``agentpack_dci_register_probes``: ``run(target) -> passed``."""

    capability: str
    name: str
    run: Callable[[ProbeTarget], bool]


class ProbeRun(NamedTuple):
    """One probe run, as the report lists it."""

    candidate_id: str
    capability: str
    probe: str
    passed: bool
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "candidate": self.candidate_id,
            "capability": self.capability,
            "probe": self.probe,
            "passed": self.passed,
            **({"detail": self.detail} if self.detail else {}),
        }


class EmulationRequest(NamedTuple):
    """The pause of ``offer-emulation``: which capabilities are missing and who was selected."""

    unresolved: tuple[str, ...]
    selected: tuple[str, ...]
    options: tuple[str, ...] = DECISIONS


class ProbeRunner(Record):
    """Runs registered probes at most once per (candidate, capability) and keeps the record."""

    __slots__ = ("probes", "runs", "_done")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"probes": dict, "runs": list, "_done": dict}
    probes: dict[str, list[Probe]]
    runs: list[ProbeRun]
    _done: dict[tuple[str, str], bool]

    @classmethod
    def from_list(cls, probes: list[Probe]) -> ProbeRunner:
        by_capability: dict[str, list[Probe]] = {}
        for probe in probes:
            by_capability.setdefault(probe.capability, []).append(probe)
        return cls(by_capability)

    def available(self, capabilities: Iterable[str]) -> list[str]:
        return [c for c in capabilities if c in self.probes]

    def check(self, record: SkillRecord, capabilities: Iterable[str]) -> bool | None:
        """``None`` when no probe exists for any of ``capabilities``; else whether every probe passed."""
        wanted = self.available(capabilities)
        if not wanted:
            return None
        ok = True
        for capability in wanted:
            key = (record.id, capability)
            if key not in self._done:
                self._done[key] = self._run(record, capability)
            ok = ok and self._done[key]
        return ok

    def _run(self, record: SkillRecord, capability: str) -> bool:
        if record.path.startswith("mcp:"):  # served over MCP: nothing of it runs here without approval
            self.runs.append(ProbeRun(record.id, capability, "-", False, "served over MCP: not probed"))
            return False
        target = ProbeTarget(record.id, record.name, record.directory, capability)
        passed = True
        for probe in self.probes[capability]:
            try:
                result, detail = bool(probe.run(target)), ""
            except Exception as exc:  # a crashing probe fails its check, and says why
                result, detail = False, f"probe raised {exc!r}"
            self.runs.append(ProbeRun(record.id, capability, probe.name, result, detail))
            passed = passed and result
        return passed
