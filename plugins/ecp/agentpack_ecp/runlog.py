"""ECP evals as runs of agentpack's run store: the refresh eval gate (of ``ecp refresh``, each refresh of
``ecp watch`` and ``expert_refresh``) and ``expert_run_evals`` are recorded
like ``agentpack eval``, and ``view`` is the run page's section of questions, expectations and citations.

Recording never breaks what it records: a store that cannot be written is the caller's to report
(the CLI exits 2 after its output; an MCP tool logs it and still answers).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentpack.kernel.registry import Recording

    from .evals import Outcome

log = logging.getLogger(__name__)
EXPECTATIONS = (
    "must_cite",
    "must_not_cite",
    "must_cite_source_ids",
    "answer_must_include",
    "answer_must_not_include",
    "answer_must_match",
)


def record_gate(outcome: Outcome, root: Path, payload: dict[str, Any], recording: Recording | None = None) -> None:
    """Record a refresh's eval gate (the staged build's evals) as an ``ecp refresh`` run of the pack
    (``payload["trigger"]``: what started it, for a refresh of ``ecp watch``)."""
    from agentpack.kernel.models import Report
    from agentpack.results.runs import record_run

    report = Report(command="ecp refresh", generated_at=outcome.started_at, evaluations=[outcome.report()])
    decision = payload.get("decision")
    record_run(
        report,
        command="ecp refresh",
        input=root,
        message=None if outcome.ok else f"eval gate failed; refresh decision: {decision}",
        settings={
            "gate": "the staged build's evals (validation.eval_suites)",
            "strategy": payload.get("strategy"),
            "decision": decision,
            "refresh_run_id": payload.get("run_id"),
            **({"trigger": payload["trigger"]} if payload.get("trigger") else {}),
        },
        recording=recording,
    )


def record_evals(
    report: dict[str, Any], root: Path, suite_ids: list[str] | None, recording: Recording | None = None
) -> None:
    """Record an ``expert_run_evals`` call as an ``eval`` run (tag ``mcp``); a store error is logged, not raised."""
    from agentpack.results.runs import StoreError, record_run

    try:
        record_run(
            report,
            command="eval",
            input=root,
            settings={"via": "mcp expert_run_evals", "suites": suite_ids},
            tags=["mcp"],
            recording=recording,
        )
    except StoreError as exc:
        log.warning("expert_run_evals: the run was not recorded: %s", exc.message)


def _expected(assertions: list[dict[str, Any]]) -> list[Any]:
    rows = []
    for a in assertions:
        if a.get("name") not in EXPECTATIONS:
            continue
        values = a.get("expected")
        shown = ", ".join(map(str, values)) if isinstance(values, list) else str(values)
        rows.append(f"{'✓' if a.get('passed') else '✗'} {a['name']}: {shown}")
    return rows


def view(run: Any) -> str:
    """The run page's ECP section: per case, the question, what the suite expects and what the answer cited."""
    from agentpack.results.viewer.html import badge, join, table, tag

    rows = []
    for case in sorted(run.cases, key=lambda c: (not c.failing, c.key)):
        details = case.detail.get("details") if isinstance(case.detail.get("details"), dict) else {}
        question = details.get("question") or case.name
        if not question:
            continue
        expected = _expected(case.detail.get("assertions") or [])
        cited = [str(c) for c in details.get("cited") or []]
        rows.append(
            [
                join([badge(case.status), " ", tag("code", case.key)]),
                question,
                tag("ul", join(tag("li", e, class_="pass" if e.startswith("✓") else "fail") for e in expected))
                if expected
                else tag("span", "(no expectation)", class_="muted"),
                tag("ul", join(tag("li", tag("code", c)) for c in cited))
                if cited
                else tag("span", "nothing cited", class_="muted"),
            ]
        )
    if not rows:
        return ""
    return join(
        [
            tag("p", "Each question, what its suite expects (✓ held, ✗ not), what the answer cited.", class_="muted"),
            table(["case", "question", "expected", "cited"], rows, class_="ecp-questions"),
        ]
    )
