"""The ``summary`` of a report (paths checked, findings by severity), shared by ``Report`` and ``LazyReport``."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol


class _Graded(Protocol):  # a Finding; named structurally so that this module imports no pydantic model
    @property
    def severity(self) -> str: ...


def summarize(findings: Iterable[_Graded], paths: int) -> dict[str, Any]:
    """Paths checked and findings by severity."""
    count = {"error": 0, "warning": 0, "info": 0}
    for finding in findings:
        count[finding.severity] += 1
    return {"paths": paths, "errors": count["error"], "warnings": count["warning"], "infos": count["info"]}
