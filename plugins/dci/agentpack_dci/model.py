"""What one resolution asks and decides: the request, the on-missing-required outcome, the resolution.

The resolver (``resolve``) fills these in and the report (``report``) reads
them; both import this module, neither imports the other's caller.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .aliases import AliasResolver
from .discovery import Discovery
from .grammar import Contract
from .index import Corpus
from .policy import EffectivePolicy
from .probes import ProbeRunner
from .reliability import ReliabilityStore
from .scoring import Query, ScoreTable
from .selection import Selection, Selector


@dataclass
class ResolveRequest:
    required: list[str] = field(default_factory=list)
    optional: list[str] = field(default_factory=list)
    query: str | None = None
    mode: str | None = None
    runtime: str = "cli"
    consumer: Contract | None = None
    policy: dict[str, str] = field(default_factory=dict)
    """Runtime/user overrides, as written (``{"selection-mode": "cover"}``)."""
    decision: str | None = None
    listing: str = "relevant"


@dataclass
class Outcome:
    policy: str
    outcome: str
    user_decision: str | None = None
    decision_source: str | None = None
    emulated: list[str] = field(default_factory=list)

    @property
    def degraded(self) -> bool:
        return self.outcome in ("emulated", "continued-partial")

    @property
    def status(self) -> str:
        return {"not-needed": "resolved", "failed": "failed", "aborted": "aborted"}.get(self.outcome, "degraded")


@dataclass
class Resolution:
    """Everything one run decided; ``report.build_report`` renders it as the capability_resolution_report."""

    request: ResolveRequest
    query: Query
    policy: EffectivePolicy
    discovery: Discovery
    corpus: Corpus
    table: ScoreTable
    selector: Selector
    selection: Selection
    outcome: Outcome
    selected: list[int]
    probes: ProbeRunner
    history: ReliabilityStore
    aliases: AliasResolver
    run_id: str
    generated_at: str
    query_source: str

    @property
    def ok(self) -> bool:
        return self.outcome.status in ("resolved", "degraded")
