"""What detecting, loading and querying a pack pass around: plain records, no pydantic.

``agentpack query`` detects (every plugin answers), loads and queries a pack; with these records it
imports no pydantic unless the answer carries a ``Finding``. ``agentpack.kernel.models`` re-exports them;
a plugin's ``agentpack_detect``, ``agentpack_load`` and ``agentpack_query`` import them from here.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from agentpack.kernel.records import Record, constant

if TYPE_CHECKING:
    from agentpack.kernel.models import Finding


class Detection(Record):
    """A plugin's claim that a path is a pack of its format (``confidence`` in (0, 1]).

    ``data``: what the plugin read to decide (a file's bytes, a parsed document), handed to its
    ``agentpack_load`` as ``detection`` so the file is not read twice.
    """

    __slots__ = ("format", "confidence", "reason", "data")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"reason": constant(""), "data": constant(None)}
    format: str
    confidence: float
    reason: str
    data: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not 0 < self.confidence <= 1:
            raise ValueError(f"a detection's confidence must be in (0, 1], got {self.confidence!r}")


class Pack(Record):
    """A loaded pack: where it is, which format, and the plugin's own loaded object (``data``)."""

    __slots__ = ("path", "root", "format", "name", "version", "data")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "name": constant(None),
        "version": constant(None),
        "data": constant(None),
    }
    path: Path
    root: Path
    format: str
    name: str | None
    version: str | None
    data: Any

    def __repr__(self) -> str:
        return f"Pack(path={self.path!r}, format={self.format!r}, name={self.name!r})"


class QueryRequest(Record):
    """A question to a pack (``top_k`` at least 1)."""

    __slots__ = ("question", "top_k", "filters", "mode", "options")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "top_k": constant(5),
        "filters": dict,
        "mode": constant(None),
        "options": dict,
    }
    question: str
    top_k: int
    filters: dict[str, str]
    mode: str | None
    options: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not isinstance(self.top_k, int) or self.top_k < 1:
            raise ValueError(f"top_k must be an integer of at least 1, got {self.top_k!r}")


class Citation(Record):
    """The display form of one citation; the format's full citation is in the payload."""

    __slots__ = ("label", "source_id", "path", "line_start", "line_end", "snippet")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {name: constant(None) for name in __slots__[1:]}
    label: str
    source_id: str | None
    path: str | None
    line_start: int | None
    line_end: int | None
    snippet: str | None


class QueryResponse(Record):
    """An answer: its text, citations, the format's native response (``payload``) and findings."""

    __slots__ = ("format", "answer", "citations", "payload", "findings")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "answer": constant(None),
        "citations": list,
        "payload": dict,
        "findings": list,
    }
    format: str
    answer: str | None
    citations: list[Citation]
    payload: dict[str, Any]
    findings: list[Finding]

    def as_json(self) -> dict[str, Any]:
        """The response as JSON values (citations and findings as objects)."""
        return dict(
            self.as_dict(),
            citations=[c.as_dict() for c in self.citations],
            findings=[f.model_dump(mode="json") for f in self.findings],
        )


__all__ = ["Citation", "Detection", "Pack", "QueryRequest", "QueryResponse"]
