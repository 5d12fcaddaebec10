"""A self-contained HTML report of a run: summary, failures first, every step's exchange, and filters."""

from __future__ import annotations

import json
from html import escape
from typing import Any

STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1b1f23;max-width:80rem}
h1{font-size:1.4rem}.pill{display:inline-block;margin:0 .6rem .4rem 0;padding:.2rem .6rem;border-radius:4px;
background:#f1f3f5}.passed,.pass{color:#17692b}.failed,.error,.fail{color:#b3261e}.skipped{color:#6a737d}
.flaky{color:#8a5a00}details.scenario{border:1px solid #d0d7de;border-radius:6px;margin:.5rem 0;padding:.3rem .6rem}
summary{cursor:pointer}table{border-collapse:collapse;width:100%;margin:.4rem 0}td,th{border:1px solid #d0d7de;
padding:.25rem .45rem;text-align:left;vertical-align:top}th{background:#f6f8fa;width:11rem}
pre{white-space:pre-wrap;word-break:break-word;background:#f6f8fa;padding:.4rem;border-radius:4px;margin:0;
max-height:24rem;overflow:auto}.step{border-left:3px solid #d0d7de;padding-left:.7rem;margin:.6rem 0}
#controls{position:sticky;top:0;background:#fff;padding:.4rem 0}#q{padding:.3rem;width:20rem}
"""

SCRIPT = """
const q=document.getElementById('q');const boxes=[...document.querySelectorAll('[data-status-filter]')];
function apply(){const text=q.value.toLowerCase();const on=new Set(boxes.filter(b=>b.checked).map(b=>b.value));
document.querySelectorAll('details.scenario').forEach(e=>{const hit=e.textContent.toLowerCase().includes(text);
e.style.display=(hit&&on.has(e.dataset.status))?'':'none';});}
q.addEventListener('input',apply);boxes.forEach(b=>b.addEventListener('change',apply));
"""

ORDER = {"error": 0, "failed": 1, "passed": 3, "skipped": 4}


def _pre(value: Any) -> str:
    if value is None or value == "" or value == []:
        return "<small>(none)</small>"
    text = value if isinstance(value, str) else json.dumps(value, indent=2, ensure_ascii=False, default=str)
    return f"<pre>{escape(text)}</pre>"


def _check_row(c: dict[str, Any]) -> str:
    verdict = "pass" if c["passed"] else ("ERROR" if c["error"] else "FAIL")
    name = " " + escape(c["name"]) if c.get("name") else ""
    return (
        f"<tr><td class={'pass' if c['passed'] else 'fail'}>{verdict}</td><td>{escape(c['type'])}{name}<br><small>"
        f"{escape(c['field'])}</small></td><td>{_pre(c['expected'])}</td><td>{_pre(c['actual'])}</td>"
        f"<td>{escape(c['reason'])}</td></tr>"
    )


def _checks(step: dict[str, Any]) -> str:
    rows = "".join(_check_row(c) for c in step["checks"])
    return (
        (f"<table><tr><th>verdict</th><th>check</th><th>expected</th><th>actual</th><th>reason</th></tr>{rows}</table>")
        if rows
        else ""
    )


def _step(step: dict[str, Any]) -> str:
    fields = [
        ("input", step["input"]),
        ("public_output", step["public_output"]),
        ("evaluation_context", step["evaluation_context"]),
        ("tool_calls", step["tool_calls"]),
    ]
    for name in ("logs", "usage", "error", "stderr"):
        if step.get(name):
            fields.append((name, step[name]))
    table = "".join(f"<tr><th>{name}</th><td>{_pre(value)}</td></tr>" for name, value in fields)
    status = step["agent_status"] or step["status"]
    return (
        f"<div class=step><b>step {step['index']}</b>{' ' + escape(step['name']) if step.get('name') else ''} "
        f"<small class={escape(step['status'])}>{escape(step['exit_reason'])}</small> <small>status "
        f"{escape(str(status))} · {step['duration_ms']:.2f} ms</small><table>{table}</table>{_checks(step)}</div>"
    )


def _scenario(s: dict[str, Any]) -> str:
    runs = ""
    for run in s["runs"]:
        head = (
            (
                f"<p><b>run {run['repetition']}</b> (attempt {run['attempt']}) <span class={run['status']}>"
                f"{run['status']}</span> <small>{escape(run['exit_reason'])} · {run['duration_ms']:.1f} ms"
                f"{' · pid ' + str(run['pid']) if run.get('pid') else ''}</small></p>"
            )
            if len(s["runs"]) > 1 or run["attempt"] > 1
            else ""
        )
        extra = ""
        if run["stderr"]:
            extra += f"<details><summary>agent stderr (outside steps)</summary>{_pre(run['stderr'])}</details>"
        if run["warnings"]:
            extra += f"<details open><summary>warnings</summary>{_pre(run['warnings'])}</details>"
        runs += head + extra + "".join(_step(step) for step in run["steps"])
    tags = "".join(f"<span class=pill>{escape(t)}</span>" for t in s["tags"])
    flaky = " <b class=flaky>flaky</b>" if s["flaky"] else ""
    rate = f" · pass rate {s['pass_rate']:.0%} of {len(s['runs'])}" if s["repeat"] > 1 else ""
    return (
        f"<details class=scenario data-status='{s['status']}'{' open' if s['status'] in ('failed', 'error') else ''}>"
        f"<summary><b class={s['status']}>{s['status'].upper()}</b>{flaky} {escape(s['name'])} <small>"
        f"{s['duration_ms']:.1f} ms{rate} · {escape(s['exit_reason'])}</small> {escape(s['message'])}</summary>"
        f"{tags}{runs}</details>"
    )


def render(report: dict[str, Any]) -> str:
    t = report["totals"]
    lat = report["latency"]
    agent = report["agent"] or {}
    scenarios = sorted(report["scenarios"], key=lambda s: ORDER.get(s["status"], 2) - (0.5 if s["flaky"] else 0))
    verdict = "<b class=pass>PASSED</b>" if report["ok"] else "<b class=fail>FAILED</b>"
    pills = [
        f"{t['scenarios']} scenarios",
        f"<span class=passed>{t['passed']} passed</span>",
        f"<span class=failed>{t['failed']} failed</span>",
        f"<span class=error>{t['errors']} errors</span>",
        f"{t['skipped']} skipped",
        f"<span class=flaky>{t['flaky']} flaky</span>",
        f"pass rate {t['pass_rate']:.1%}",
        f"checks {t['checks_passed']}/{t['checks_total']}",
        f"steps {t['steps_executed']}/{t['steps_planned']}",
        f"latency mean {lat['mean_ms']:.2f} ms · p95 {lat['p95_ms']:.2f} ms",
        f"{report['run']['duration_ms'] / 1000:.2f} s",
    ]
    meta = {
        "manifest": report["manifest"],
        "agent": agent,
        "run": report["run"],
        "runtime": report["runtime"],
        "usage": report["usage"],
        "exit_reason": report["exit_reason"],
    }
    warnings = "".join(f"<li class=flaky>{escape(w)}</li>" for w in report["warnings"])
    boxes = "".join(
        f"<label><input type=checkbox data-status-filter value={k} checked> {k}</label> "
        for k in ("failed", "error", "passed", "skipped")
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(report['manifest']['name'])} — agent-rpc report</title><style>{STYLE}</style></head><body>"
        f"<h1>{escape(report['manifest']['name'])} {verdict}</h1>"
        f"<p><small>agent {escape(str(agent.get('name', '?')))} "
        f"(protocol {escape(str(agent.get('protocol_version', '?')))}) "
        f"· {escape(report['manifest']['target'])} · {escape(report['manifest']['digest'])} · "
        f"{escape(report['run']['started_at'] or '')} · exit reason {escape(report['exit_reason'])}</small></p>"
        + "".join(f"<span class=pill>{p}</span>" for p in pills)
        + (f"<ul>{warnings}</ul>" if warnings else "")
        + f"<details><summary>run metadata</summary>{_pre(meta)}</details>"
        f"<div id=controls><input id=q placeholder='filter scenarios, inputs, outputs...'> {boxes}</div>"
        + "".join(_scenario(s) for s in scenarios)
        + f"<script>{SCRIPT}</script></body></html>\n"
    )
