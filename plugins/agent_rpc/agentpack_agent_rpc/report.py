"""Turn a run into the native JSON report (schema ``report``) and into the core's ``EvalReport``."""

from __future__ import annotations

import json
import platform
import sys
from datetime import datetime
from typing import TYPE_CHECKING, Any

from agentpack.cli.clikit import envelope

from . import __version__
from .manifest.model import Manifest, display_path

if TYPE_CHECKING:  # pydantic loads only when an evaluation report is made
    from agentpack.kernel.models import EvalReport


def latency_summary(durations: list[float]) -> dict[str, Any]:
    if not durations:
        return {"count": 0, "total_ms": 0.0, "mean_ms": 0.0, "p50_ms": 0.0, "p95_ms": 0.0, "max_ms": 0.0}
    ordered = sorted(durations)

    def rank(p: int) -> float:  # nearest-rank percentile
        return ordered[max(1, -(-p * len(ordered) // 100)) - 1]

    return {
        "count": len(ordered),
        "total_ms": round(sum(ordered), 3),
        "mean_ms": round(sum(ordered) / len(ordered), 3),
        "p50_ms": round(rank(50), 3),
        "p95_ms": round(rank(95), 3),
        "max_ms": round(ordered[-1], 3),
    }


def merge_usage(records: list[Any]) -> dict[str, int] | None:
    totals: dict[str, int] = {}
    for usage in records:
        if isinstance(usage, dict):
            for key in ("input_tokens", "output_tokens", "total_tokens"):
                value = usage.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    totals[key] = totals.get(key, 0) + value
    return totals or None


def dumps(report: dict[str, Any]) -> str:
    """The report as JSON text: the envelope indented, then one line per scenario record.

    Same data as ``json.dumps(report, indent=2)``, but the bulk (the
    scenarios) goes through the C encoder, which ``indent`` would bypass:
    about 8 times faster for a 200-step report, and grep-friendly.
    """
    head = dict(report)
    scenarios = head.pop("scenarios")
    text = json.dumps(head, indent=2, ensure_ascii=False)
    if not scenarios:
        return text[:-2] + ',\n  "scenarios": []\n}\n'
    body = ",\n    ".join(json.dumps(s, ensure_ascii=False, separators=(",", ":")) for s in scenarios)
    return f'{text[:-2]},\n  "scenarios": [\n    {body}\n  ]\n}}\n'


def words(report: dict[str, Any]) -> dict[str, str]:
    """The run in the core's status words (``agentpack.results.status``): ``verdict``, ``headline``, ``counts``,
    ``rate``; an interrupted run is ``interrupted`` and shows no pass rate."""
    from agentpack.results.status import said

    t = report["totals"]
    status = "interrupted" if report["run"]["interrupted"] else ("passed" if report["ok"] else "failed")
    counts = {k: t[k] for k in ("passed", "failed", "errors", "skipped")}
    return said(status, **counts, total=t["scenarios"])


def build_report(manifest: Manifest, run: dict[str, Any], *, filters: list[str] | None = None) -> dict[str, Any]:
    scenarios = run["scenarios"]
    steps = [step for s in scenarios for r in s["runs"] for step in r["steps"]]
    checks = [c for step in steps for c in step["checks"]]
    executed = [step for step in steps if step["status"] == "ok"]
    count = {k: sum(1 for s in scenarios if s["status"] == k) for k in ("passed", "failed", "error", "skipped")}
    ran = len(scenarios) - count["skipped"]
    totals = {
        "scenarios": len(scenarios),
        "passed": count["passed"],
        "failed": count["failed"],
        "errors": count["error"],
        "skipped": count["skipped"],
        "flaky": sum(1 for s in scenarios if s["flaky"]),
        "pass_rate": round(count["passed"] / ran, 4) if ran else 0.0,
        "runs": sum(len(s["runs"]) for s in scenarios),
        "steps_planned": len(steps),
        "steps_executed": len(executed),
        "steps_failed": sum(1 for step in steps if step["status"] == "failed"),
        "steps_skipped": sum(1 for step in steps if step["status"] == "skipped"),
        "checks_total": len(checks),
        "checks_passed": sum(1 for c in checks if c["passed"]),
        "checks_failed": sum(1 for c in checks if not c["passed"] and not c["error"]),
        "checks_errored": sum(1 for c in checks if c["error"]),
    }
    reasons = [s["exit_reason"] for s in scenarios if s["exit_reason"] not in ("ok", "skipped")]
    exit_reason = "interrupted" if run["interrupted"] else (reasons[0] if reasons else "ok")
    ok = count["failed"] == 0 and count["error"] == 0 and not run["interrupted"] and exit_reason == "ok"
    return envelope(
        "rpc run",
        ok,
        exit_reason=exit_reason,
        manifest={
            "path": str(manifest.path),
            "name": manifest.name,
            "digest": manifest.digest,
            "target": manifest.target.describe(),
            "transport": manifest.target.kind,
        },
        runtime={
            "name": "agentpack-agent-rpc",
            "version": __version__,
            "python": platform.python_version(),
            "platform": sys.platform,
        },
        agent=run["agent"] or None,
        run={
            "started_at": run["started_at"],
            "finished_at": run["finished_at"],
            "duration_ms": run["duration_ms"],
            "jobs": run["jobs"],
            "isolation": run["isolation"],
            "filters": list(filters or []),
            "interrupted": run["interrupted"],
            "scenarios_selected": run["selected"],
            "scenarios_in_manifest": run["total_scenarios"],
        },
        totals=totals,
        latency=latency_summary([step["duration_ms"] for step in executed]),
        usage=merge_usage([step["usage"] for step in executed]),
        warnings=run["warnings"],
        scenarios=scenarios,
    )


def _assertion_name(step: dict[str, Any], check: dict[str, Any], prefix: str) -> str:
    label = f" {check['name']}" if check.get("name") else ""
    return f"{prefix}step {step['index']}: {check['type']}{label} on {check['field']}"


def to_eval_report(report: dict[str, Any]) -> EvalReport:
    """The core's ``EvalReport``: one suite (the manifest), one case per scenario, one assertion per check.

    Locations are shown from the working directory (``display_path``), as SARIF and GitHub annotations need.
    """
    from agentpack.kernel.models import AssertionResult, CaseResult, EvalReport, Finding, SuiteResult

    where = display_path(report["manifest"]["path"])
    cases = []
    for scenario in report["scenarios"]:
        assertions = []
        many = len(scenario["runs"]) > 1
        for run in scenario["runs"]:
            prefix = f"run {run['repetition']}: " if many else ""
            for step in run["steps"]:
                for check in step["checks"]:
                    assertions.append(
                        AssertionResult(
                            name=_assertion_name(step, check, prefix),
                            passed=check["passed"],
                            expected=check["expected"],
                            actual=check["actual"],
                            message=check["reason"],
                        )
                    )
        details = {
            "tags": scenario["tags"],
            "exit_reason": scenario["exit_reason"],
            "pass_rate": scenario["pass_rate"],
            "flaky": scenario["flaky"],
            "runs": [
                {
                    "status": r["status"],
                    "exit_reason": r["exit_reason"],
                    "attempt": r["attempt"],
                    "stderr": r["stderr"],
                    "steps": [
                        {
                            k: s[k]
                            for k in (
                                "index",
                                "input",
                                "agent_status",
                                "public_output",
                                "evaluation_context",
                                "tool_calls",
                                "duration_ms",
                                "stderr",
                                "error",
                            )
                        }
                        for s in r["steps"]
                    ],
                }
                for r in scenario["runs"]
            ],
        }
        cases.append(
            CaseResult(
                id=scenario["id"],
                name=scenario["name"],
                status=scenario["status"],
                duration_s=scenario["duration_ms"] / 1000,
                message=scenario["message"],
                file=where,
                line=scenario["line"],
                assertions=assertions,
                details=details,
            )
        )
    manifest = report["manifest"]
    started = report["run"]["started_at"]
    return EvalReport(
        name=manifest["name"],
        format="agent-rpc",
        path=where,
        started_at=datetime.fromisoformat(started.replace("Z", "+00:00")) if started else None,
        duration_s=report["run"]["duration_ms"] / 1000,
        suites=[
            SuiteResult(
                id=manifest["name"],
                name=manifest["name"],
                file=where,
                duration_s=report["run"]["duration_ms"] / 1000,
                cases=cases,
            )
        ],
        metadata={
            "manifest": manifest,
            "agent": report["agent"],
            "exit_reason": report["exit_reason"],
            "totals": report["totals"],
            "latency": report["latency"],
            "usage": report["usage"],
            "runtime": report["runtime"],
        },
        findings=[Finding.warning("ARP300", w, file=where) for w in report["warnings"]]
        + (
            [Finding.error("ARP301", f"run ended early: {report['exit_reason']}", file=where)]
            if report["run"]["interrupted"]
            else []
        ),
        aborted=unreachable(report),
    )


def unreachable(report: dict[str, Any]) -> str | None:
    """Why the agent could not be started or reached (with its stderr tail), or None when it could."""
    for scenario in report["scenarios"]:
        if scenario["exit_reason"] == "agent_unreachable":
            return f"scenario '{scenario['name']}': {scenario['message']}"
    return None


def junit_xml(report: dict[str, Any]) -> str:
    from agentpack.kernel.models import Report
    from agentpack.results.reporters import junit

    return junit.render(Report(command="rpc run", evaluations=[to_eval_report(report)]))
