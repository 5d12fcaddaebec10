"""A self-contained HTML report: verdict, charts, findings and cases failures first, a filter box.

A validation's charts count paths: the pass-rate bar of valid and invalid ones, and per format.

Self-contained: the stylesheet, the script and the charts (inline SVG) are in the file; nothing is
fetched. Cases are drawn by the same fragments as ``agentpack view``, so the report and the viewer
show a run the same way, with the numbers of the JSON report.
"""

from __future__ import annotations

from typing import Any

from agentpack.kernel.models import EvalReport, Finding, Report, ValidationItem
from agentpack.results.viewer.fragments import case_block, failures_first, first_stderr, severity_counts, summary_charts
from agentpack.results.viewer.html import Html, badge, join, json_block, tag
from agentpack.results.viewer.standalone import document


def _finding_row(f: Finding) -> Html:
    message = join([f.message, Html("<br>") + tag("small", f"hint: {f.hint}") if f.hint else ""])
    cells = [badge(f.severity), f.code, f.location(), f.pointer or "", message]
    return tag(
        "tr",
        join(tag("td", c) for c in cells),
        data_case=f"{f.code} {f.location()}",
        data_status="error" if f.severity == "error" else f.severity,
    )


def _findings_table(findings: list[Finding]) -> Html:
    if not findings:
        return Html("")
    head = join(tag("th", h) for h in ("severity", "code", "where", "field", "message"))
    rows = join(_finding_row(f) for f in sorted(findings, key=lambda f: f.sort_key()))
    return tag("table", Html(f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody>"), class_="findings")


def _counts(findings: list[Finding]) -> Html:
    return severity_counts(f.severity for f in findings)


def _validation_charts(items: list[ValidationItem]) -> Html:
    """The pass-rate bar of the paths (valid or not) and their breakdown per format: each path as a case."""
    paths = [
        {"suite": i.format or "(no format)", "id": i.path, "status": "passed" if i.ok else "failed"} for i in items
    ]
    return summary_charts(paths)


def _item(item: ValidationItem) -> Html:
    status = tag("b", "ok", class_="pass") if item.ok else tag("b", "invalid", class_="fail")
    return join(
        [
            tag("h2", join([item.path, " ", tag("small", item.format or ""), " ", status])),
            tag("p", _counts(item.findings), class_="totals") if item.findings else "",
            _findings_table(item.findings),
        ]
    )


def _evaluation(ev: EvalReport) -> Html:
    t = ev.totals
    cases: list[dict[str, Any]] = [{"suite": s.id, **c.model_dump(mode="json")} for s in ev.suites for c in s.cases]
    banner: Html = Html("")
    if ev.aborted:
        stderr = first_stderr(cases)
        banner = tag(
            "div",
            join(
                [
                    tag("b", "The run could not finish: "),
                    ev.aborted,
                    json_block(stderr, label="agent stderr") if stderr else "",
                ]
            ),
            class_="banner",
            id="aborted",
        )
    totals = join(
        [
            tag("span", f"{t.total} cases"),
            tag("span", f"{t.passed} passed", class_="pass"),
            tag("span", f"{t.failed} failed", class_="fail"),
            tag("span", f"{t.errors} errors", class_="error"),
            tag("span", f"{t.skipped} skipped", class_="muted"),
            tag("span", f"pass rate {t.pass_rate:.0%}"),
            tag("span", f"{ev.duration_s:.2f} s"),
        ]
    )
    meta = tag("details", join([tag("summary", "run metadata"), json_block(ev.metadata)])) if ev.metadata else ""
    return join(
        [
            tag("h2", join([ev.name, " ", tag("small", f"({ev.format})")])),
            banner,
            tag("p", totals, class_="totals"),
            summary_charts(cases) if cases else "",
            tag("p", _counts(ev.findings), class_="totals") if ev.findings else "",
            _findings_table(ev.findings),
            meta,
            join(case_block(c) for c in failures_first(cases)),
        ]
    )


def render(report: Report) -> str:
    s = report.summary
    head: Html = Html("")
    if report.items:
        head = tag(
            "p",
            join(
                [
                    tag("span", f"{s['paths']} paths"),
                    tag("span", f"{s['errors']} errors", class_="fail"),
                    tag("span", f"{s['warnings']} warnings", class_="warn"),
                    tag("span", f"{s['infos']} infos", class_="info"),
                ]
            ),
            class_="totals",
        )
    verdict = tag("b", "OK", class_="pass") if report.ok else tag("b", "FAILED", class_="fail")
    when = f" - {report.generated_at.isoformat()}" if report.generated_at else ""
    toolbar = tag(
        "p",
        join(
            [
                tag("input", "", id="case-filter", placeholder="filter...", aria_label="filter"),
                " ",
                tag("label", join([tag("input", "", type="checkbox", id="failures-only"), " failures only"])),
                " ",
                tag("span", "", id="case-count", class_="muted"),
            ]
        ),
        class_="toolbar",
    )
    body = join(
        [
            tag("h1", join([f"agentpack {report.command} ", verdict])),
            tag("p", tag("small", f"agentpack {report.tool.version}{when}")),
            toolbar,
            head,
            _validation_charts(report.items) if report.items else "",
            join(_item(i) for i in report.items),
            join(_evaluation(e) for e in report.evaluations),
        ]
    )
    return document(f"agentpack {report.command} report", body)
