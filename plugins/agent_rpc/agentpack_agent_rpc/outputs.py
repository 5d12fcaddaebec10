"""The report files of a run: the native JSON report, the run's HTML page, JUnit XML, or a registered reporter.

Files are written atomically without fsync (decision 26): a temporary file
beside the target, then ``os.replace``, parent folders created. Readers see
the old report or the new one, never a part; unlike the core's
``atomic_write_text`` there is no fsync and no ``tempfile`` import, because a
report is derived data and those cost a few milliseconds of every run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .report import dumps, junit_xml, to_eval_report

if TYPE_CHECKING:
    from agentpack.results.runs import Run


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see the module docstring)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def html(report: dict[str, Any], run: Run | None = None) -> str:
    """The run's self-contained HTML page: the viewer's run page (``run``, else built from ``report``)."""
    from . import runlog  # loads only when a page is asked for

    return runlog.page(run or runlog.build(report, Path(report["manifest"]["path"]), {}))


def junit(report: dict[str, Any]) -> str:
    """JUnit XML through the core's reporter."""
    return junit_xml(report)


def write_report(report: dict[str, Any], path: Path, *, text: str | None = None, run: Run | None = None) -> None:
    """Write ``report`` to ``path`` in the format its suffix names.

    ``.html``/``.htm``: the run's page (``run`` when the caller built it); ``.json``: the native JSON report
    (``text`` when the caller has it already); ``.xml``: JUnit XML. Any other
    suffix (``.sarif``, ``.txt``, a plugin's) goes to the registered reporter
    for it, with the run as the core's evaluation report.
    """
    suffix = path.suffix.lower()
    if suffix in (".html", ".htm"):
        write_text(path, html(report, run))
    elif suffix == ".json":
        write_text(path, text if text is not None else dumps(report))
    elif suffix == ".xml":
        write_text(path, junit(report))
    else:
        from agentpack.cli import clikit
        from agentpack.kernel.models import Report

        clikit.write_report(Report(command="rpc run", evaluations=[to_eval_report(report)]), path)
