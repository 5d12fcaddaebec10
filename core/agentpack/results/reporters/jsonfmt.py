"""The versioned JSON envelope (``schema_version`` 1)."""

from __future__ import annotations

from agentpack.kernel.models import Report


def render(report: Report) -> str:
    return report.model_dump_json(indent=2, exclude_none=False) + "\n"
