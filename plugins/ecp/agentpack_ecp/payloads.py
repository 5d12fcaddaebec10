"""The JSON of the ECP commands that are also MCP tools, built here once for both.

``ecp refresh --json`` and ``expert_refresh``, ``ecp status --json`` and
``expert_status`` return the same envelope; ``expert_run_evals`` returns what
``agentpack eval --json`` prints (the versioned report of one evaluation).
``expert_query`` answers through ``query.answer.answer``, as ``agentpack query`` does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentpack.cli.clikit import envelope
from agentpack.io.clock import SYSTEM_CLOCK

from .lifecycle.refresh import refresh
from .lifecycle.status import pack_status
from .pack.manifest import load_pack


def refresh_payload(root: str | Path, **options: Any) -> dict[str, Any]:
    """Run ``lifecycle.refresh.refresh(root, **options)``; ``ok`` when its exit status is 0.

    ``on_evals`` (an option) receives the eval gate's outcome, for recording it."""
    result = refresh(root, **options)
    return envelope("ecp refresh", result["exit_status"] == 0, **result)


def status_payload(root: str | Path, *, check_sources: bool = True) -> dict[str, Any]:
    return envelope("ecp status", True, **pack_status(root, check_sources=check_sources))


def eval_payload(root: str | Path, suite_ids: list[str] | None = None) -> dict[str, Any]:
    """The pack's suites (or ``suite_ids``) as the report ``agentpack eval --json`` prints."""
    from agentpack.kernel.models import Report  # pydantic: only for the report, not for importing this module

    from .evals import run_suites

    started = SYSTEM_CLOCK.now()
    report = run_suites(load_pack(root), suite_ids=suite_ids)
    return Report(command="eval", generated_at=started, evaluations=[report]).model_dump(mode="json")
