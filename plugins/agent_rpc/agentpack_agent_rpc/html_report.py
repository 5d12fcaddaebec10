"""The agent protocol's section of a run's page (``agentpack view`` and ``rpc run --report x.html``).

The page itself is the core's (``agentpack.results.viewer.standalone.run_document``): the summary, an
unreachable agent's stderr at the top, the pass-rate, per-suite and latency charts, then the
scenarios failures first (flaky ones first among passes), each run and step with its checks, tool
calls as JSON and stderr. This section adds what only an agent run has: the agent and its protocol,
the totals of scenarios, checks and steps, the step latencies (numbers and a histogram), the
warnings (counted apart from infos) and the run's metadata.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

EXIT_REASON_OK = "ok"


def native_report(run: Any) -> Mapping[str, Any] | None:
    """The native report's summary fields: the report of ``rpc run``, or the evaluation's metadata of ``eval``."""
    report = run.report if isinstance(run.report, Mapping) else {}
    if report.get("command") == "rpc run":
        return report
    evaluations = report.get("evaluations") or []
    meta = evaluations[0].get("metadata") if len(evaluations) == 1 and isinstance(evaluations[0], Mapping) else None
    return meta if isinstance(meta, Mapping) and isinstance(meta.get("totals"), Mapping) else None


def _executed(step: Any) -> bool:
    """A step that ran to an answer (the report's ``latency`` counts these): status ``ok``; the evaluation
    report of ``agentpack eval`` keeps no step status, and there a step with an agent status ran."""
    if not isinstance(step, Mapping):
        return False
    return step["status"] == "ok" if "status" in step else step.get("agent_status") is not None


def step_latencies(run: Any) -> list[float]:
    """The duration (ms) of every executed step of the run's scenarios, as the report's ``latency`` counts them."""
    found = []
    for case in run.cases:
        details = case.detail.get("details")
        attempts = details.get("runs") or [] if isinstance(details, Mapping) else []
        for attempt in attempts:
            steps = attempt.get("steps") or [] if isinstance(attempt, Mapping) else []
            found += [
                float(s["duration_ms"]) for s in steps if _executed(s) and isinstance(s.get("duration_ms"), int | float)
            ]
    return found


def _flaky(run: Any) -> list[tuple[str, Any]]:
    rows = []
    for case in run.cases:
        details = case.detail.get("details")
        if isinstance(details, Mapping) and details.get("flaky"):
            rate = details.get("pass_rate")
            runs = len(details.get("runs") or [])
            rows.append((case.id, f"passed {rate:.0%} of {runs} runs" if isinstance(rate, int | float) else ""))
    return rows


def _outcome(native: Mapping[str, Any], run: Any) -> str:
    """How the run ended, in words: an exit reason only when it is not ``ok`` (a failed run never says "ok")."""
    reason = native.get("exit_reason")
    if reason and reason != EXIT_REASON_OK:
        return f"exit reason: {reason}"
    if run.failed or run.errors:
        return f"every scenario ran to its end; {run.failed + run.errors} did not pass"
    return "every scenario ran to its end and passed"


def view(run: Any) -> str:
    """The section's HTML, or ``""`` for a run without an agent protocol report."""
    native = native_report(run)
    if native is None:
        return ""
    from agentpack.results import charts
    from agentpack.results.status import of_run
    from agentpack.results.viewer.fragments import severity_counts
    from agentpack.results.viewer.html import Html, facts, join, json_block, tag

    t = native["totals"]
    lat = native.get("latency") or {}
    agent = native.get("agent") or {}
    manifest = native.get("manifest") or {}
    about = native.get("run") or {}
    warnings = [str(w) for w in native.get("warnings") or []]
    ms = "{:.2f} ms".format
    said = of_run(run)  # the run's words as the core says them (an interrupted run shows no pass rate)
    totals = join(
        tag("span", text, class_=css)
        for text, css in (
            (f"{t['scenarios']} scenarios", None),
            (f"{t['passed']} passed", "pass"),
            (f"{t['failed']} failed", "fail"),
            (f"{t['errors']} errors", "error"),
            (f"{t['skipped']} not run", "muted"),
            (f"{t['flaky']} flaky", "warn"),
            (f"pass rate {said['rate']}" if said["rate"] else said["verdict"], None),
            (f"checks {t['checks_passed']}/{t['checks_total']}", None),
            (f"steps {t['steps_executed']}/{t['steps_planned']}", None),
        )
    )
    latency = (
        f"{lat['count']} steps: mean {ms(lat['mean_ms'])}, p50 {ms(lat['p50_ms'])}, p95 {ms(lat['p95_ms'])}, "
        f"max {ms(lat['max_ms'])}"
        if lat.get("count")
        else ""
    )
    protocol = agent.get("protocol_version")
    info = facts(
        [
            ("outcome", _outcome(native, run)),
            (
                "agent",
                " ".join(
                    filter(
                        None, [agent.get("name"), agent.get("version"), f"(protocol {protocol})" if protocol else ""]
                    )
                ),
            ),
            ("target", " ".join(filter(None, [manifest.get("target"), f"({manifest.get('transport')})"]))),
            ("step latency", latency),
            ("checks", f"{t['checks_failed']} failed, {t['checks_errored']} errored" if t["checks_total"] else ""),
            ("jobs", about.get("jobs")),
            ("isolation", about.get("isolation")),
            ("flaky", join(tag("div", f"{name}: {how}") for name, how in _flaky(run))),
        ]
    )
    steps = step_latencies(run)
    chart = (
        tag(
            "div",
            tag(
                "figure",
                Html(Html(charts.histogram(steps, title="latency per step")) + tag("figcaption", "latency per step")),
            ),
            class_="charts",
        )
        if steps
        else ""
    )
    notes = (
        join(
            [
                tag("p", severity_counts(["warning"] * len(warnings)), class_="totals"),
                tag("ul", join(tag("li", w, class_="warn") for w in warnings), class_="warnings"),
            ]
        )
        if warnings
        else ""
    )
    meta = {k: native.get(k) for k in ("manifest", "agent", "run", "runtime", "usage") if native.get(k)}
    if native.get("exit_reason") not in (None, EXIT_REASON_OK):
        meta["exit_reason"] = native["exit_reason"]
    return join(
        [
            tag("p", totals, class_="totals"),
            info,
            chart,
            notes,
            tag("details", join([tag("summary", "run metadata"), json_block(meta)])),
        ]
    )
