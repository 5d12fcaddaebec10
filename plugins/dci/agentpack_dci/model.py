"""What one resolution asks and decides: the request, the on-missing-required outcome, the resolution.

The resolver (``resolve``) fills these in and the report (``report``) reads
them; both import this module, neither imports the other's caller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from agentpack.kernel.records import Record, constant

from .aliases import AliasResolver
from .discovery import Discovery
from .grammar import Contract
from .index import Corpus
from .policy import EffectivePolicy
from .probes import ProbeRunner
from .reliability import ReliabilityStore
from .scoring import Query, ScoreTable
from .selection import Selection, Selector


class ResolveRequest(Record):
    __slots__ = ("required", "optional", "query", "mode", "runtime", "consumer", "policy", "decision", "listing")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "required": list,
        "optional": list,
        "query": constant(None),
        "mode": constant(None),
        "runtime": constant("cli"),
        "consumer": constant(None),
        "policy": dict,
        "decision": constant(None),
        "listing": constant("relevant"),
    }
    required: list[str]
    optional: list[str]
    query: str | None
    mode: str | None
    runtime: str
    consumer: Contract | None
    policy: dict[str, str]
    """Runtime/user overrides, as written (``{"selection-mode": "cover"}``)."""
    decision: str | None
    listing: str


class Outcome(Record):
    __slots__ = ("policy", "outcome", "user_decision", "decision_source", "emulated")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "user_decision": constant(None),
        "decision_source": constant(None),
        "emulated": list,
    }
    policy: str
    outcome: str
    user_decision: str | None
    decision_source: str | None
    emulated: list[str]

    @property
    def degraded(self) -> bool:
        return self.outcome in ("emulated", "continued-partial")

    @property
    def status(self) -> str:
        return {"not-needed": "resolved", "failed": "failed", "aborted": "aborted"}.get(self.outcome, "degraded")


class Resolution(Record):
    """Everything one run decided; ``report.build_report`` renders it as the capability_resolution_report."""

    __slots__ = (
        "request",
        "query",
        "policy",
        "discovery",
        "corpus",
        "table",
        "selector",
        "selection",
        "outcome",
        "selected",
        "probes",
        "history",
        "aliases",
        "run_id",
        "generated_at",
        "query_source",
    )
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
