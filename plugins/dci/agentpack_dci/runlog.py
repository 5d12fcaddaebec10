"""A ``dci resolve`` as a run: recorded in agentpack's run store (``agentpack runs``, ``agentpack view``) and
written as ``--report FILE`` (``.html``: the run page with the candidates view below)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def cases(report: dict[str, Any]) -> list[dict[str, Any]]:
    """A case per queried capability: a required one passes when resolved (or emulated), an optional one
    when a selected provider matches it (else it is skipped). Details name the providers."""
    query = report.get("query") or {}
    selected = {c["id"]: c for c in report.get("candidates") or [] if c["id"] in report.get("selected_candidates", [])}
    unresolved = set(report.get("unresolved_required_capabilities") or [])
    emulated = set(report.get("emulated_capabilities") or [])
    rows = []
    for cap in query.get("required") or []:
        providers = [c["id"] for c in selected.values() if cap in (c.get("resolved_required") or [])]
        status = "failed" if cap in unresolved and cap not in emulated else "passed"
        message = "emulated" if cap in emulated else ("no provider selected" if status == "failed" else "")
        rows.append(
            {"suite": "required", "id": cap, "status": status, "message": message, "details": {"providers": providers}}
        )
    for cap in query.get("optional") or []:
        providers = [
            c["id"]
            for c in selected.values()
            if any(m.get("capability") == cap and m.get("kind") != "none" for m in c.get("optional_matches") or [])
        ]
        rows.append(
            {
                "suite": "optional",
                "id": cap,
                "status": "passed" if providers else "skipped",
                "message": "" if providers else "no selected provider offers it",
                "details": {"providers": providers},
            }
        )
    return rows


RECORDED_CANDIDATES = 100
"""How many candidates a recorded run keeps (best first, and every selected one): the run page's table and
chart, without holding a report of every candidate of a large workspace (``--report FILE`` writes them all)."""


def recorded(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with its best ``RECORDED_CANDIDATES`` candidates, every selected one, and ``candidates_total``
    when some were left out. ``candidates`` may be a streamed ``Listing``: only the kept entries are made."""
    listing = report.get("candidates") or []
    kept = listing[:RECORDED_CANDIDATES]  # a list: a Listing's slice makes only these entries
    total = len(listing)
    if total <= RECORDED_CANDIDATES:
        return {**report, "candidates": kept}
    missing = set(report.get("selected_candidates") or []) - {c["id"] for c in kept}
    if missing:
        kept += [c for c in listing if c["id"] in missing]
    return {**report, "candidates": kept, "candidates_total": total}


def build(report: dict[str, Any], ok: bool, workspace: Path) -> Any:
    """The resolution as an ``agentpack.results.runs.Run``: a case per queried capability, the policy as settings."""
    from agentpack.results.runs import build_run

    return build_run(
        report,
        command="dci resolve",
        input=workspace,
        format="dci",
        cases=cases(report),
        status="passed" if ok else "failed",
        message=None if ok else f"resolution {report.get('status')}",
        started_at=report.get("generated_at"),
        settings={
            "mode": report.get("mode"),
            "query": report.get("query"),
            "policy": (report.get("policy") or {}).get("effective"),
            "decision": report.get("decision"),
        },
    )


def view(run: Any) -> str:
    """The run page's DCI section: the outcome, a chart of the candidates' weighted scores, then each
    candidate's score breakdown and deciding tie-break."""
    from agentpack.results.charts import breakdown
    from agentpack.results.viewer.html import Html, badge, facts, join, table, tag

    from .scoring import W_CONTRACT, W_DESC, W_NAMEPATH, W_RUNTIME
    from .selection import TIE_BREAKERS

    report = run.report if isinstance(run.report, dict) else {}
    if "candidates" not in report:
        return ""
    outcome = facts(
        [
            ("status", report.get("status")),
            ("mode", report.get("mode")),
            ("selected", ", ".join(report.get("selected_candidates") or []) or "none"),
            ("unresolved required", ", ".join(report.get("unresolved_required_capabilities") or [])),
            ("emulated", ", ".join(report.get("emulated_capabilities") or [])),
            ("on missing required", (report.get("on_missing_required_action") or {}).get("outcome")),
        ]
    )
    rows = []
    for c in report["candidates"]:
        s, p, tie = c["scores"], c["penalties"], c["tie_break"]
        decided = ""
        if tie.get("applied"):
            step = tie["applied_step"]
            decided = f"step {step}: {TIE_BREAKERS[step - 1]}" + (
                f" (sha256 {tie['hash_hex'][:12]}…)" if step == 6 else ""
            )
        rows.append(
            [
                join([tag("code", c["id"]), " ", badge("passed") if c.get("selected") else ""]),
                c["ranking"].get("rank") or "",
                s["s_contract"],
                s["s_desc"],
                s["s_namepath"],
                s["s_runtime"],
                s["s_total"],
                p["total_penalty"],
                s["history_multiplier"],
                tag("b", s["s_total_final"]),
                f"{c['coverage']['required_resolved']}/{c['coverage']['required_total']}",
                decided,
                "; ".join(c.get("rejection_reasons") or []),
            ]
        )
    headers = [
        "candidate",
        "rank",
        "S_contract",
        "S_desc",
        "S_namepath",
        "S_runtime",
        "S_total",
        "penalty",
        "history",
        "final",
        "coverage",
        "tie-break",
        "rejected",
    ]
    weights = {"contract": W_CONTRACT, "desc": W_DESC, "namepath": W_NAMEPATH, "runtime": W_RUNTIME}
    bars = [
        (c["id"], [w * c["scores"][f"s_{n}"] for n, w in weights.items()], c["scores"]["s_total_final"])
        for c in report["candidates"]
    ]
    parts = [f"{w:.2f} S_{n}" for n, w in weights.items()]
    chart = tag(
        "figure",
        join(
            [
                Html(breakdown(bars, parts, title="weighted scores; the line marks S_total_final")),
                tag("figcaption", "weighted scores of each candidate; the line and number: S_total_final"),
            ]
        ),
        class_="dci-scores",
    )
    total = report.get("candidates_total")
    note = (
        tag("p", f"The best {len(report['candidates'])} of {total} candidates (a --report FILE lists them all).")
        if total
        else ""
    )
    return join([outcome, note, tag("div", chart, class_="charts"), table(headers, rows, class_="dci-candidates")])
