"""Plain text for people: findings as ``file:line: severity code message``, then totals."""

from __future__ import annotations

from ..models import EvalReport, Report


def _evaluation(ev: EvalReport) -> list[str]:
    lines = [f"{ev.name} ({ev.format})"]
    for suite in ev.suites:
        t = suite.totals
        lines.append(f"  suite {suite.id}: {t.passed}/{t.total} passed")
        ordered = sorted(suite.cases, key=lambda c: c.status == "passed")
        for case in ordered:
            mark = {"passed": "PASS", "failed": "FAIL", "error": "ERROR", "skipped": "SKIP"}[case.status]
            lines.append(f"    {mark} {case.id}" + (f" - {case.message}" if case.message else ""))
            if case.status != "passed":
                for a in case.assertions:
                    if not a.passed:
                        lines.append(f"        x {a.name}: {a.message}")
    for f in ev.findings:
        lines.append(f"  {f.severity}: {f.code} {f.message}")
    t = ev.totals
    lines.append(
        f"  {t.passed} passed, {t.failed} failed"
        + (f", {t.errors} errors" if t.errors else "")
        + (f", {t.skipped} skipped" if t.skipped else "")
    )
    return lines


def render(report: Report) -> str:
    lines: list[str] = []
    for item in report.items:
        for f in item.findings:
            where = f.location() or item.path
            pointer = f" [{f.pointer}]" if f.pointer else ""
            lines.append(f"{where}: {f.severity} {f.code} {f.message}{pointer}")
            if f.hint:
                lines.append(f"    hint: {f.hint}")
        status = "ok" if item.ok else "invalid"
        fmt = f" ({item.format})" if item.format else ""
        lines.append(f"{item.path}{fmt}: {status}")
    for ev in report.evaluations:
        lines.extend(_evaluation(ev))
    s = report.summary
    if report.items:
        lines.append(f"{s['paths']} checked: {s['errors']} errors, {s['warnings']} warnings")
    return "\n".join(lines) + "\n"
