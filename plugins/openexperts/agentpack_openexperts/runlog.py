"""An ``experts dry-run`` as a run: recorded in agentpack's run store, written as ``--report FILE``, shown
by ``agentpack view`` with the plan and its approvals (``view``).

Cases: a suite of the checklist steps (passed when the plan reached the step) and a suite of the
operations it planned, each with its approval tier: passed when it ran (an ``auto`` operation with a
binding), skipped when it was only described (unbound, ``confirm`` or ``manual``), with the reason.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import ExpertPackage

WHAT_HAPPENS = {
    "auto": "runs without asking",
    "confirm": "waits for a person's approval, then runs",
    "manual": "is drafted for a person to do; the expert never runs it",
}
"""What a real run does with an operation of each approval tier."""


def not_executed_because(call: dict[str, Any]) -> str:
    """Why a planned operation did not run, in plain words (with the runtime's note)."""
    tier, note = call.get("tier"), str(call.get("note") or "")
    note = note.removeprefix("not executed in a dry run").lstrip("; ")
    if tier == "confirm":
        why = "a real run asks for approval first; a dry run never asks"
    elif tier == "manual":
        why = "a person does this; a real run drafts it for them"
    else:
        why, note = note.partition("; ")[0] or "not bound", note.partition("; ")[2]
    return why + (f" ({note})" if note else "")


def cases(outcome: dict[str, Any], tiers_from: dict[str, str]) -> list[dict[str, Any]]:
    """The run's cases: one per checklist step, one per planned operation (see the module docstring)."""
    process = outcome["process"]
    rows: list[dict[str, Any]] = []
    width = len(str(len(outcome.get("steps") or [])))
    failed = outcome["status"] != "succeeded"
    for step in outcome.get("steps") or []:
        reached = bool(step.get("completed"))
        rows.append(
            {
                "suite": f"{process} steps",
                "id": f"{step['step']:0{width}d}",
                "name": step["text"],
                "status": "passed" if reached else ("failed" if failed else "skipped"),
                "message": "" if reached else "not reached",
            }
        )
    seen: dict[str, int] = {}
    for call in outcome.get("plan") or []:
        name = call["operation"]
        seen[name] = seen.get(name, 0) + 1
        rows.append(
            {
                "suite": f"{process} operations",
                "id": name if seen[name] == 1 else f"{name} ({seen[name]})",
                "name": f"[{call['tier']}] {call.get('description') or ''}".strip(),
                "status": "passed" if call.get("executed") else "skipped",
                "message": "executed" if call.get("executed") else f"not executed: {not_executed_because(call)}",
                "details": {
                    "tier": call["tier"],
                    "tier_from": tiers_from.get(name),
                    "in_a_real_run": WHAT_HAPPENS.get(call["tier"], ""),
                    "arguments": call.get("arguments"),
                    "executed": bool(call.get("executed")),
                    "note": call.get("note"),
                },
            }
        )
    return rows


def package_digest(package: ExpertPackage) -> str:
    """``sha256:`` over the package as loaded (each component's path with its text, or its YAML data, and the
    manifest): the run's input digest, without reading the package's files a second time."""
    from agentpack.io.hashing import sha256_json

    contents: dict[str, Any] = {"expert.yaml": package.manifest.data}
    for group in package.components.values():
        for component in group:
            contents[component.path] = component.text or component.doc.data
    return "sha256:" + sha256_json(contents)


def build(
    outcome: dict[str, Any],
    package: ExpertPackage,
    settings: dict[str, Any],
    tiers_from: dict[str, str],
    *,
    started_at: Any = None,
    duration_s: float | None = None,
) -> Any:
    """The dry run as an ``agentpack.results.runs.Run`` (``outcome`` is ``RunOutcome.to_json()``)."""
    from agentpack.results.runs import build_run

    from .names import FORMAT

    return build_run(
        {"command": "experts dry-run", "ok": outcome["status"] == "succeeded", "run": outcome},
        command="experts dry-run",
        input=package.root,
        input_digest=package_digest(package),
        format=FORMAT,
        name=outcome["process"],
        cases=cases(outcome, tiers_from),
        status="passed" if outcome["status"] == "succeeded" else "failed",
        message=outcome.get("error") or (None if outcome["status"] == "succeeded" else outcome["status"]),
        settings={**settings, "process": outcome["process"], "run_id": outcome["run_id"]},
        started_at=started_at,
        duration_s=duration_s,
    )


def view(run: Any) -> str:
    """The run page's section for a dry run: what would happen, each operation with its approval tier and
    whether it ran, the checklist, and the result."""
    from agentpack.results.viewer.html import badge, facts, join, json_block, table, tag

    report = run.report if isinstance(run.report, dict) else {}
    outcome = report.get("run") if isinstance(report.get("run"), dict) else None
    if outcome is None or not outcome.get("dry_run"):
        return ""
    plan = outcome.get("plan") or []
    by_tier = {t: [c for c in plan if c.get("tier") == t] for t in ("auto", "confirm", "manual")}
    ran = [c for c in plan if c.get("executed")]
    succeeded = outcome["status"] == "succeeded"
    summary = facts(
        [
            ("process", outcome["process"]),
            ("outcome", join([badge("passed" if succeeded else "failed"), " ", outcome["status"]])),
            ("error", outcome.get("error")),
            ("executed", f"{len(ran)} of {len(plan)} planned operations (auto operations with a binding)"),
            (
                "not executed",
                "; ".join(
                    f"{n} {what}"
                    for n, what in (
                        (sum(1 for c in by_tier["auto"] if not c.get("executed")), "auto without a binding"),
                        (len(by_tier["confirm"]), "confirm (would wait for approval)"),
                        (len(by_tier["manual"]), "manual (would be drafted for a person)"),
                    )
                    if n
                )
                or "nothing",
            ),
        ]
    )
    tier_class = {"auto": "pass", "confirm": "warn", "manual": "info"}
    rows = [
        [
            tag("code", c["operation"]),
            tag("span", c["tier"].upper(), class_=f"badge {tier_class.get(c['tier'], 'skip')}", data_tier=c["tier"]),
            WHAT_HAPPENS.get(c["tier"], ""),
            tag("b", "executed", class_="pass") if c.get("executed") else tag("span", "not executed", class_="warn"),
            "" if c.get("executed") else not_executed_because(c),
            tag("code", json.dumps(c.get("arguments"), ensure_ascii=False, default=str)),
        ]
        for c in plan
    ]
    operations = table(
        ["operation", "tier", "in a real run", "in this dry run", "why not", "arguments"],
        rows,
        class_="experts-plan",
    )
    steps = tag(
        "ol",
        join(
            tag("li", join([s["text"], "" if s.get("completed") else tag("span", " (not reached)", class_="fail")]))
            for s in outcome.get("steps") or []
        ),
        class_="experts-steps",
    )
    result = outcome.get("result") or {}
    return join(
        [
            summary,
            tag("h3", f"Operations ({len(plan)})"),
            operations if plan else tag("p", "the plan calls no operation", class_="muted"),
            tag("h3", f"Checklist ({len(outcome.get('steps') or [])} steps)"),
            steps,
            json_block(result.get("structured"), label="result") if result.get("structured") is not None else "",
        ]
    )
