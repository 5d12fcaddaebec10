"""An ``rpc run`` as a run of agentpack's run store (``agentpack runs``, ``agentpack view``), and its HTML page.

The run is built once: ``--report x.html`` writes it as the viewer's run page, then it is recorded, so the
file and the viewer show the same numbers.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentpack.kernel.registry import Recording
    from agentpack.results.runs import Run


def cases(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One case per scenario: its runs and steps (with their checks) as details."""
    suite = report["manifest"]["name"]
    return [
        {
            "suite": suite,
            "id": s["id"],
            "name": s["name"],
            "status": s["status"],
            "duration_s": s["duration_ms"] / 1000,
            "message": s["message"],
            "details": {
                "tags": s["tags"],
                "exit_reason": s["exit_reason"],
                "flaky": s["flaky"],
                "pass_rate": s["pass_rate"],
                "runs": s["runs"],
            },
        }
        for s in report["scenarios"]
    ]


def build(report: dict[str, Any], manifest: Path, settings: dict[str, Any]) -> Run:
    """The run (not yet stored): the cases, the agent, token usage and timings; an unreachable agent's
    message (with its stderr tail) is the run's message."""
    from agentpack.results.runs import build_run

    from .report import unreachable

    problem = unreachable(report)
    status = "interrupted" if report["run"]["interrupted"] else ("error" if problem else None)
    reason = report["exit_reason"]
    agent = report["agent"] or {}
    return build_run(
        report,
        command="rpc run",
        input=manifest,
        format="agent-rpc",
        name=report["manifest"]["name"],
        cases=cases(report),
        status=status,
        message=problem or (None if reason == "ok" else f"exit reason: {reason}"),
        started_at=report["run"]["started_at"],
        duration_s=report["run"]["duration_ms"] / 1000,
        agent={k: agent.get(k) for k in ("name", "version", "protocol_version", "capabilities") if k in agent} or None,
        settings={**settings, "target": report["manifest"]["target"], "isolation": report["run"]["isolation"]},
        usage=report["usage"],
        input_digest=report["manifest"]["digest"],
    )


def page(run: Run) -> str:
    """The run's self-contained HTML page: the viewer's run page with every registered run view."""
    from agentpack.cli.clikit import host
    from agentpack.results.viewer.standalone import run_document

    return run_document(run, list(host().run_views().values()))


def save(run: Run, recording: Recording) -> None:
    from agentpack.results.runs import save_run

    save_run(run, recording=recording)
