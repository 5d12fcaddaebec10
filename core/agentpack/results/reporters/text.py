"""Plain text for people: findings as ``file:line: severity code message``, then totals.

Each evaluation ends with its headline in the words of ``agentpack.results.status`` (``FAILED 3 passed,
1 failed of 4 (75.0%)``). PASS, FAIL, ERROR and NOT RUN (a skipped case) are coloured when printed on a
terminal (``console.styling``), never in files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentpack.io.console import style
from agentpack.results.status import TONE, of_totals

if TYPE_CHECKING:  # no pydantic at run time: a LazyReport (``agentpack validate``) is rendered as it is
    from agentpack.kernel.lazyreport import LazyReport
    from agentpack.kernel.models import EvalReport, Report

MARKS = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "NOT RUN"}


def _evaluation(ev: EvalReport) -> list[str]:
    lines = [f"{ev.name} ({ev.format})"]
    for suite in ev.suites:
        t = suite.totals
        lines.append(f"  suite {suite.id}: {t.passed}/{t.total} passed")
        ordered = sorted(suite.cases, key=lambda c: c.status == "passed")
        for case in ordered:
            mark = style(MARKS[case.status], case.status)
            lines.append(f"    {mark} {case.id}" + (f" - {case.message}" if case.message else ""))
            if case.status != "passed":
                for a in case.assertions:
                    if not a.passed:
                        lines.append(f"        x {a.name}: {a.message}")
    for f in ev.findings:
        lines.append(f"  {f.severity}: {f.code} {f.message}")
    t = ev.totals
    said = of_totals(ev.aborted, passed=t.passed, failed=t.failed, errors=t.errors, skipped=t.skipped, total=t.total)
    tone = {"pass": "passed", "fail": "failed", "error": "error"}.get(TONE.get(said["verdict"], ""), "skipped")
    lines.append(f"  {style(said['headline'], tone)}")
    if ev.aborted:
        lines.append(f"  {ev.aborted}")
    return lines


def render(report: Report | LazyReport) -> str:
    lines: list[str] = []
    for item in report.items:
        for f in item.findings:
            where = f.location() or item.path
            pointer = f" [{f.pointer}]" if f.pointer else ""
            lines.append(f"{where}: {f.severity} {f.code} {f.message}{pointer}")
            if f.hint:
                lines.append(f"    hint: {f.hint}")
        status = style("ok", "passed") if item.ok else style("invalid", "failed")
        fmt = f" ({item.format})" if item.format else ""
        lines.append(f"{item.path}{fmt}: {status}")
    for ev in report.evaluations:
        lines.extend(_evaluation(ev))
    s = report.summary
    if report.items:
        lines.append(f"{s['paths']} checked: {s['errors']} errors, {s['warnings']} warnings, {s['infos']} infos")
    return "\n".join(lines) + "\n"
