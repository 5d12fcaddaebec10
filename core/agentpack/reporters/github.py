"""GitHub Actions workflow commands (``::error file=...,line=...::message``)."""

from __future__ import annotations

from ..models import Report

COMMANDS = {"error": "error", "warning": "warning", "info": "notice"}


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render(report: Report) -> str:
    lines = []
    for item in report.items:
        for f in item.findings:
            props = [f"file={_escape_property(f.file or item.path)}"]
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
                    props = [f"file={_escape_property(c.file or s.file or ev.path or ev.name)}"]
                    if c.line:
                        props.append(f"line={c.line}")
                    props.append(f"title={_escape_property(f'{s.id}/{c.id}')}")
                    lines.append(f"::error {','.join(props)}::{_escape_data(c.message or c.status)}")
    return "\n".join(lines) + ("\n" if lines else "")
