"""A validation report of plain records that builds the pydantic ``Report`` only when it is asked for.

``agentpack validate`` on valid packs is what pre-commit runs on every commit, and importing pydantic
was most of its cost. ``LazyReport`` holds what validation found (the findings themselves are
``Finding`` models, imported only where there is one); the text reporter reads it as it is (the
attributes it reads are the same on both shapes), and ``model()`` gives the pydantic ``Report`` to
every other reporter, a ``--report`` file and the JSON envelope.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentpack.kernel.records import Record
from agentpack.kernel.summary import summarize

if TYPE_CHECKING:
    from agentpack.kernel.models import Finding, Report


class LazyItem(Record):
    """One validated path, as ``ValidationItem`` without pydantic."""

    __slots__ = ("path", "format", "findings")

    path: str
    format: str | None
    findings: list[Finding]

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)


class LazyReport(Record):
    """A ``validate`` report; ``model()`` is the pydantic ``Report`` of the same content."""

    __slots__ = ("command", "generated_at", "items")

    command: str
    generated_at: datetime | None
    items: list[LazyItem]

    evaluations: tuple[()] = ()

    @property
    def ok(self) -> bool:
        return all(item.ok for item in self.items)

    @property
    def summary(self) -> dict[str, Any]:
        return summarize((f for item in self.items for f in item.findings), len(self.items))

    def model(self) -> Report:
        from agentpack.kernel.models import Report, ValidationItem

        items = [ValidationItem(path=i.path, format=i.format, findings=i.findings) for i in self.items]
        return Report(command=self.command, generated_at=self.generated_at, items=items)


__all__ = ["LazyItem", "LazyReport"]
