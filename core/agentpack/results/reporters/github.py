"""GitHub Actions workflow commands (``::error file=...,line=...::message``)."""

from __future__ import annotations

from agentpack.kernel.models import Report
from agentpack.results.reporters.locate import base_dir, locate

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    """One annotation per finding and failed case; files relative to the repository root (``locate``)."""
    base = base_dir()
    lines = []
    for item in report.items:
        for f in item.findings:
            props = [f"file={_escape_property(locate(f.file, item.path, base))}"]
            if f.line:
                props.append(f"line={f.line}")
            if f.column:
                props.append(f"col={f.column}")
            props.append(f"title={_escape_property(f.code)}")
            message = f.message + (f" (hint: {f.hint})" if f.hint else "")
            lines.append(f"::{COMMANDS[f.severity]} {','.join(props)}::{_escape_data(message)}")
    for ev in report.evaluations:
        for s in ev.suites:
            for c in s.cases:
                if c.status in ("failed", "error"):
                    where = locate(c.file or s.file, ev.path, base) or ev.name
                    props = [f"file={_escape_property(where)}"]
                    if c.line:
                        props.append(f"line={c.line}")
                    props.append(f"title={_escape_property(f'{s.id}/{c.id}')}")
                    lines.append(f"::error {','.join(props)}::{_escape_data(c.message or c.status)}")
    if not lines:  # a check that found nothing says so in the job's annotations, rather than staying silent
        lines.append(f"::notice title=agentpack {_escape_property(report.command)}::{_escape_data(_all_clear(report))}")
    return "\n".join(lines) + "\n"


def _all_clear(report: Report) -> str:
    parts = []
    if report.items or not report.evaluations:
        packs = len(report.items)
        parts.append(f"{packs} pack{'s' if packs != 1 else ''} checked, no findings")
    if report.evaluations:
        cases = sum(ev.totals.total for ev in report.evaluations)
        parts.append(f"{cases} case{'s' if cases != 1 else ''} run, none failed")
    return "; ".join(parts)
