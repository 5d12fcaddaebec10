"""A self-contained HTML report: totals, failures first, per-case detail, a filter box."""

from __future__ import annotations

import json
from html import escape
from typing import Any

from ..models import CaseResult, EvalReport, Report

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1b1f23;background:#fff}
h1{font-size:1.4rem}h2{font-size:1.15rem;margin-top:2rem}
.totals span{display:inline-block;margin-right:1rem;padding:.2rem .6rem;border-radius:4px;background:#f1f3f5}
.pass{color:#17692b}.fail{color:#b3261e}.warn{color:#8a5a00}
table{border-collapse:collapse;width:100%;margin:.5rem 0}td,th{border:1px solid #d0d7de;padding:.3rem .5rem;
text-align:left;vertical-align:top}th{background:#f6f8fa}details{margin:.3rem 0}pre{white-space:pre-wrap;
background:#f6f8fa;padding:.5rem;border-radius:4px;max-height:30rem;overflow:auto}
#filter{padding:.3rem;width:20rem}
"""

SCRIPT = """
const box=document.getElementById('filter'),only=document.getElementById('onlyfail');
function apply(){const q=box.value.toLowerCase();document.querySelectorAll('[data-row]').forEach(e=>{
const hit=e.textContent.toLowerCase().includes(q);const bad=e.dataset.status!=='passed'&&e.dataset.status!=='ok';
e.style.display=(hit&&(!only.checked||bad))?'':'none';});}
box.addEventListener('input',apply);only.addEventListener('change',apply);
"""


def _value(value: Any) -> str:
    if isinstance(value, str):
        return escape(value)
    return escape(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def _case(case: CaseResult, suite: str) -> str:
    cls = "pass" if case.status == "passed" else "fail"
    rows = "".join(
        f"<tr><td class={'pass' if a.passed else 'fail'}>{'pass' if a.passed else 'FAIL'}</td>"
        f"<td>{escape(a.name)}</td><td><pre>{_value(a.expected)}</pre></td><td><pre>{_value(a.actual)}</pre></td>"
        f"<td>{escape(a.message)}</td></tr>"
        for a in case.assertions
    )
    table = (
        f"<table><tr><th></th><th>check</th><th>expected</th><th>actual</th><th>message</th></tr>{rows}</table>"
        if rows
        else ""
    )
    details = "".join(f"<h4>{escape(k)}</h4><pre>{_value(v)}</pre>" for k, v in case.details.items())
    return (
        f"<details data-row data-status='{case.status}' {'open' if case.status != 'passed' else ''}>"
        f"<summary><b class={cls}>{case.status.upper()}</b> {escape(suite)} / {escape(case.id)} "
        f"<small>{case.duration_s * 1000:.1f} ms</small> {escape(case.message)}</summary>{table}{details}</details>"
    )


def _evaluation(ev: EvalReport) -> str:
    t = ev.totals
    cases = [(s.id, c) for s in ev.suites for c in s.cases]
    cases.sort(key=lambda sc: (sc[1].status == "passed", sc[0], sc[1].id))
    findings = "".join(
        f"<li class=warn>{escape(f.severity)} {escape(f.code)}: {escape(f.message)}</li>" for f in ev.findings
    )
    meta = f"<details><summary>run metadata</summary><pre>{_value(ev.metadata)}</pre></details>" if ev.metadata else ""
    return (
        f"<h2>{escape(ev.name)} <small>({escape(ev.format)})</small></h2>"
        f"<p class=totals><span>{t.total} cases</span><span class=pass>{t.passed} passed</span>"
        f"<span class=fail>{t.failed} failed</span><span>{t.errors} errors</span>"
        f"<span>pass rate {t.pass_rate:.0%}</span><span>{ev.duration_s:.2f} s</span></p>"
        f"{meta}<ul>{findings}</ul>" + "".join(_case(c, s) for s, c in cases)
    )


def render(report: Report) -> str:
    s = report.summary
    items = ""
    for item in report.items:
        rows = "".join(
            f"<tr data-row data-status='{f.severity}'><td class={'fail' if f.severity == 'error' else 'warn'}>"
            f"{f.severity}</td><td>{escape(f.code)}</td><td>{escape(f.location())}</td>"
            f"<td>{escape(f.pointer or '')}</td><td>{escape(f.message)}"
            + (f"<br><small>hint: {escape(f.hint)}</small>" if f.hint else "")
            + "</td></tr>"
            for f in sorted(item.findings, key=lambda f: f.sort_key())
        )
        status = "<b class=pass>ok</b>" if item.ok else "<b class=fail>invalid</b>"
        items += f"<h2>{escape(item.path)} <small>{escape(item.format or '')}</small> {status}</h2>" + (
            f"<table><tr><th>severity</th><th>code</th><th>where</th><th>field</th><th>message</th></tr>{rows}</table>"
            if rows
            else ""
        )
    head = (
        (
            f"<p class=totals><span>{s['paths']} paths</span><span class=fail>{s['errors']} errors</span>"
            f"<span class=warn>{s['warnings']} warnings</span></p>"
        )
        if report.items
        else ""
    )
    verdict = "<b class=pass>OK</b>" if report.ok else "<b class=fail>FAILED</b>"
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>agentpack {escape(report.command)} report</title><style>{STYLE}</style></head><body>"
        f"<h1>agentpack {escape(report.command)} {verdict}</h1>"
        f"<p><small>agentpack {escape(report.tool.version)}"
        f"{' - ' + escape(report.generated_at.isoformat()) if report.generated_at else ''}</small></p>"
        "<p><input id=filter placeholder='filter...'> "
        "<label><input type=checkbox id=onlyfail> failures only</label></p>"
        f"{head}{items}{''.join(_evaluation(e) for e in report.evaluations)}"
        f"<script>{SCRIPT}</script></body></html>\n"
    )
