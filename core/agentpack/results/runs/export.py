"""The built-in exporters of recorded runs: JSON Lines and CSV (``html`` is the HTML reporter's)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from typing import TextIO

from agentpack.kernel.runtypes import Run

RUN_COLUMNS = (
    "id",
    "uid",
    "command",
    "format",
    "name",
    "input",
    "input_digest",
    "status",
    "started_at",
    "duration_s",
    "total",
    "passed",
    "failed",
    "errors",
    "skipped",
    "pass_rate",
    "input_tokens",
    "output_tokens",
    "total_tokens",
    "git_commit",
    "git_branch",
    "git_dirty",
    "agent",
    "tags",
    "message",
)
CASE_COLUMNS = (
    "run_id",
    "run_started_at",
    "input",
    "suite",
    "case_id",
    "name",
    "status",
    "duration_s",
    "total_tokens",
    "message",
)


def _flag(options: dict[str, str], name: str, default: bool) -> bool:
    value = options.get(name)
    return default if value is None else value.strip().lower() in ("1", "true", "yes", "on")


def export_jsonl(runs: Iterable[Run], out: TextIO, options: dict[str, str]) -> None:
    """One run per line; ``--option report=false`` leaves the full reports out."""
    with_report = _flag(options, "report", True)
    for run in runs:
        out.write(json.dumps(run.to_json(report=with_report), ensure_ascii=False, default=str) + "\n")


def export_csv(runs: Iterable[Run], out: TextIO, options: dict[str, str]) -> None:
    """One row per run, or per case with ``--option rows=cases``."""
    writer = csv.writer(out, lineterminator="\n")
    if options.get("rows", "runs") == "cases":
        writer.writerow(CASE_COLUMNS)
        for run in runs:
            for case in run.cases:
                writer.writerow(
                    [
                        run.id,
                        run.started_at,
                        run.input,
                        case.suite,
                        case.id,
                        case.name or "",
                        case.status,
                        case.duration_s,
                        "" if case.total_tokens is None else case.total_tokens,
                        case.message,
                    ]
                )
        return
    writer.writerow(RUN_COLUMNS)
    for run in runs:
        row = []
        for column in RUN_COLUMNS:
            value = getattr(run, column)
            if column == "agent":
                value = (value or {}).get("name") or ""
            elif column == "tags":
                value = " ".join(value)
            elif value is None:
                value = ""
            row.append(value)
        writer.writerow(row)
