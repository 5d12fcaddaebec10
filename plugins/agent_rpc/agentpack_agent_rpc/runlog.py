"""Record an ``rpc run`` in agentpack's run store (``agentpack runs``, ``agentpack view``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def record(report: dict[str, Any], manifest: Path, recording: Any, settings: dict[str, Any]) -> None:
    """One case per scenario (its runs and steps as details), the agent, token usage and timings."""
    from agentpack.runs import record_run

    suite = report["manifest"]["name"]
    cases = [
        {
            "suite": suite,
            "id": s["id"],
            "name": s["name"],
            "status": s["status"],
            "duration_s": s["duration_ms"] / 1000,
            "message": s["message"],
            "details": {"tags": s["tags"], "exit_reason": s["exit_reason"], "flaky": s["flaky"], "runs": s["runs"]},
        }
        for s in report["scenarios"]
    ]
    unreachable = any(s["exit_reason"] == "agent_unreachable" for s in report["scenarios"])
    status = "interrupted" if report["run"]["interrupted"] else ("error" if unreachable else None)
    agent = report["agent"] or {}
    record_run(
        report,
        command="rpc run",
        input=manifest,
        format="agent-rpc",
        name=suite,
        cases=cases,
        status=status,
        message=None if report["exit_reason"] == "ok" else f"exit reason: {report['exit_reason']}",
        started_at=report["run"]["started_at"],
        duration_s=report["run"]["duration_ms"] / 1000,
        agent={k: agent.get(k) for k in ("name", "version", "protocol_version", "capabilities") if k in agent} or None,
        settings={**settings, "target": report["manifest"]["target"], "isolation": report["run"]["isolation"]},
        usage=report["usage"],
        input_digest=report["manifest"]["digest"],
        recording=recording,
    )
