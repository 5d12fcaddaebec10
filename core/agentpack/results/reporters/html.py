"""A self-contained HTML report: verdict, findings, the cases table failures first, the cases, then charts.

A validation's charts count paths: the pass-rate bar of valid and invalid ones, and per format.

Self-contained: the stylesheet, the script and the charts (inline SVG) are in the file; nothing is
fetched. Cases are drawn by the same fragments as ``agentpack view``, so the report and the viewer
show a run the same way, with the numbers of the JSON report.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TextIO

from agentpack.kernel.models import EvalReport, Finding, Report, ValidationItem
from agentpack.kernel.runtypes import Run
from agentpack.results.status import VERDICTS, evaluation_status, of_totals
from agentpack.results.viewer.cases import case_toolbar, cases_table
from agentpack.results.viewer.fragments import case_block, failures_first, first_stderr, severity_counts, summary_charts
from agentpack.results.viewer.html import Html, badge, join, json_block, tag
from agentpack.results.viewer.standalone import document


def _finding_row(f: Finding) -> Html:
    message = join([f.message, join([Html("<br>"), tag("small", f"hint: {f.hint}")]) if f.hint else ""])
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


def _plugin_views(ev: EvalReport, command: str) -> Html:
    """The sections the plugins' run views show for this evaluation's format in ``agentpack view`` (ECP's
    questions and citations...), drawn from the evaluation as the run it records."""
    from agentpack.kernel.plugins import get_host

    views = [v for v in get_host().run_views().values() if not v.formats or ev.format in v.formats]
    if not views:
        return Html("")
    from agentpack.results.runs.record import cases_of
    from agentpack.results.viewer.pages import run_views

    data = ev.model_dump(mode="json")
    t = ev.totals
    run = Run(
        id=0,
        uid="",
        command=command,
        input=ev.path or ev.name,
        status=evaluation_status(ev.aborted, failed=t.failed, errors=t.errors),
        started_at=data.get("started_at") or "",
        format=ev.format,
        name=ev.name,
        report={"command": command, "evaluations": [data]},
        cases=cases_of([data]),
    )
    return run_views(run, views)


def _evaluation(ev: EvalReport, number: int, command: str) -> Html:
    cases: list[dict[str, Any]] = [{"suite": s.id, **c.model_dump(mode="json")} for s in ev.suites for c in s.cases]
    ordered = list(enumerate(failures_first(cases), 1))
    t = ev.totals
    said = of_totals(ev.aborted, passed=t.passed, failed=t.failed, errors=t.errors, skipped=t.skipped, total=t.total)
    banner: Html = Html("")
    if ev.aborted:
        stderr = first_stderr(cases)
        banner = tag(
            "div",
            join(
                [
                    tag(
                        "b",
                        f"The run {'was interrupted' if said['verdict'] == 'interrupted' else 'could not finish'}: ",
                    ),
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
            tag("span", f"{t.skipped} not run", class_="muted"),
            tag("span", f"pass rate {said['rate']}") if said["rate"] else "",
            tag("span", f"{ev.duration_s:.2f} s"),
        ]
    )
    meta = tag("details", join([tag("summary", "run metadata"), json_block(ev.metadata)])) if ev.metadata else ""
    return join(
        [
            tag("h2", join([badge(said["verdict"]), " ", ev.name, " ", tag("small", f"({ev.format})")])),
            tag("p", said["headline"], class_="headline"),
            banner,
            tag("p", totals, class_="totals"),
            tag("p", _counts(ev.findings), class_="totals") if ev.findings else "",
            _findings_table(ev.findings),
            cases_table(ordered, lambda i: f"#e{number}-case-{i}", id=None) if ordered else "",
            _plugin_views(ev, command),
            join(case_block(c, anchor=f"e{number}-case-{i}") for i, c in ordered),
            summary_charts(cases) if cases else "",
            meta,
        ]
    )


def _verdict(report: Report) -> Html:
    """The report's word: for evaluations the worst of their verdicts (an interrupted or not-run one says so),
    for a validation OK or INVALID."""
    if report.evaluations:
        words = [
            of_totals(
                e.aborted, **{k: getattr(e.totals, k) for k in ("passed", "failed", "errors", "skipped", "total")}
            )["verdict"]
            for e in report.evaluations
        ]
        worst = max(words, key=VERDICTS.index)
        return badge(worst)
    return tag("b", "OK", class_="pass") if report.ok else tag("b", "INVALID", class_="fail")


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
    verdict = _verdict(report)
    when = f" - {report.generated_at.isoformat()}" if report.generated_at else ""
    cases = [
        {"suite": su.id, **c.model_dump(mode="json")} for e in report.evaluations for su in e.suites for c in su.cases
    ]
    if cases:  # the viewer's toolbar: text, status, suite and tag, over every evaluation's cases table
        toolbar = case_toolbar(cases)
    else:
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
            join(_evaluation(e, n, report.command) for n, e in enumerate(report.evaluations, 1)),
        ]
    )
    return document(f"agentpack {report.command} report", body)


def export_run(runs: Iterable[Run], out: TextIO, options: dict[str, str]) -> None:
    """``agentpack runs export RUN -o html``: one run's page as ``agentpack view`` shows it (with the plugins'
    views), a self-contained file."""
    from agentpack.io.errors import AgentpackError
    from agentpack.kernel.plugins import get_host
    from agentpack.results.viewer.standalone import run_document

    selected = list(runs)
    if len(selected) != 1:
        raise AgentpackError(
            f"-o html writes one run's page; {len(selected)} runs were selected",
            hint="name the run: agentpack runs export RUN -o html --to run.html",
        )
    out.write(run_document(selected[0], list(get_host().run_views().values())))
