"""SARIF 2.1.0, so findings show in code scanning."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from agentpack.kernel.models import Report
from agentpack.results.reporters.locate import base_dir, locate

LEVELS = {"error": "error", "warning": "warning", "info": "note"}


def _uri(path: str) -> str:
    """A file path as a URI reference: '/' separators, percent-encoded, never mistaken for a scheme."""
    uri = quote(path.replace("\\", "/"), safe="/:@!$&'()*+,;=~")
    first = uri.split("/", 1)[0]
    return f"./{uri}" if ":" in first else uri


def render(report: Report) -> str:
    """SARIF with every file relative to the repository root or the working directory (``locate``)."""
    base = base_dir()
    rules: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    for item in report.items:
        for f in item.findings:
            rules.setdefault(
                f.code,
                {
                    "id": f.code,
                    "shortDescription": {"text": f.code},
                    "defaultConfiguration": {"level": LEVELS[f.severity]},
                },
            )
            location: dict[str, Any] = {
                "physicalLocation": {"artifactLocation": {"uri": _uri(locate(f.file, item.path, base))}}
            }
            if f.line:
                region = {"startLine": f.line}
                if f.column:
                    region["startColumn"] = f.column
                location["physicalLocation"]["region"] = region
            result: dict[str, Any] = {
                "ruleId": f.code,
                "level": LEVELS[f.severity],
                "message": {"text": f.message + (f" (hint: {f.hint})" if f.hint else "")},
                "locations": [location],
            }
            if f.pointer:
                result["properties"] = {"pointer": f.pointer}
            results.append(result)
    for ev in report.evaluations:
        for s in ev.suites:
            for c in s.cases:
                if c.status in ("failed", "error"):
                    code = "EVAL-FAIL" if c.status == "failed" else "EVAL-ERROR"
                    rules.setdefault(code, {"id": code, "shortDescription": {"text": f"evaluation case {c.status}"}})
                    where = locate(c.file or s.file, ev.path, base) or ev.name
                    loc: dict[str, Any] = {"physicalLocation": {"artifactLocation": {"uri": _uri(where)}}}
                    if c.line:
                        loc["physicalLocation"]["region"] = {"startLine": c.line}
                    results.append(
                        {
                            "ruleId": code,
                            "level": "error",
                            "message": {"text": f"{s.id}/{c.id}: {c.message or c.status}"},
                            "locations": [loc],
                        }
                    )
    sarif = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "agentpack",
                        "version": report.tool.version,
                        "informationUri": "https://github.com/agentpack/agentpack",
                        "rules": [rules[k] for k in sorted(rules)],
                    }
                },
                "results": results,
            }
        ],
    }
    return json.dumps(sarif, indent=2) + "\n"
