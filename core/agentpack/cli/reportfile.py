"""``write_run_report``: a command's ``--report FILE`` for a run, in the format the file's suffix names.

``.html``/``.htm``: the run's page as ``agentpack view`` shows it, self-contained (the plugins' run
views for its format included); ``.json``: the command's own JSON report, as recorded; a suffix a
registered reporter writes (``.xml`` JUnit, ``.sarif``, ``.txt``...): that reporter, given the run's
cases as the core's evaluation report; any other suffix: the JSON report.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentpack.kernel.models import Report
    from agentpack.kernel.registry import RunView
    from agentpack.kernel.runtypes import Run

HTML_SUFFIXES = (".html", ".htm")


def write_run_report(run: Run, path: str | Path, *, views: Sequence[RunView] | None = None) -> None:
    """Write ``run`` (from ``build_run``) to ``path`` atomically, in the format its suffix names.

    ``views`` are the run views to include in HTML (default: every registered one).
    """
    from agentpack.io.envelope import dumps
    from agentpack.io.fsutil import SHARED, atomic_write_text

    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in HTML_SUFFIXES:
        from agentpack.results.viewer.standalone import run_document

        if views is None:
            from agentpack.cli.clikit import host

            views = list(host().run_views().values())
        atomic_write_text(path, run_document(run, views), mode=SHARED)
        return
    if suffix != ".json" and _reporter_writes(suffix):
        from agentpack.cli.clikit import write_report

        write_report(eval_report_of(run), path)
        return
    atomic_write_text(path, dumps(run.report) + "\n", mode=SHARED)


def _reporter_writes(suffix: str) -> bool:
    from agentpack.cli.clikit import host

    return any(r.suffix.lower() == suffix for r in host().reporters().values())


def eval_report_of(run: Run) -> Report:
    """The run as the core's ``Report`` of one evaluation (its cases by suite), for the core's reporters."""
    from agentpack import __version__
    from agentpack.kernel.models import Report

    kept = ("file", "line", "assertions", "details")
    suites: dict[str, list[dict[str, Any]]] = {}
    for case in run.cases:
        row = {k: v for k, v in case.to_json().items() if k in ("id", "name", "status", "duration_s", "message")}
        row.update({k: case.detail[k] for k in kept if case.detail.get(k) is not None})
        suites.setdefault(case.suite or "cases", []).append(row)
    evaluation = {
        "name": run.name or run.input,
        "format": run.format or "",
        "path": run.input,
        "started_at": run.started_at,
        "duration_s": run.duration_s,
        "suites": [{"id": suite, "cases": cases} for suite, cases in suites.items()],
        "aborted": run.message if run.status == "error" else None,
    }
    return Report.model_validate(
        {
            "command": run.command,
            "tool": {"version": __version__},
            "generated_at": run.started_at,
            "evaluations": [evaluation],
        }
    )
