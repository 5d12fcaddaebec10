"""One status vocabulary for runs, cases and histories: the words the CLI, the viewer and every report use.

A run's *verdict* says what happened, not just whether nothing failed:

- ``passed``: every case ran and passed;
- ``partly run``: nothing failed, but some cases did not run (a dry run's unexecuted operations);
- ``not run``: no case ran at all;
- ``failed``: a case failed or errored;
- ``error``: the run could not finish (the agent crashed, a suite could not load);
- ``interrupted``: it was stopped (Ctrl-C) before it finished.

A skipped case is shown as ``not run``. A pass rate counts only the cases that ran, and is shown
with how many that is, so "1 passed, 4 not run" never reads as 100%. An interrupted or errored run
shows no pass rate at all: what ran is not the run.

A case's *history* over several runs (``case_history``): ``passing`` (always passed), ``still failing``
(never passed), ``regressed`` (went from passing to failing and stayed), ``fixed`` (the reverse),
``flaky`` (flipped both ways: passed after failing *and* failed after passing).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import pairwise
from typing import Any, Protocol

VERDICTS = ("passed", "partly run", "not run", "failed", "error", "interrupted")
HISTORIES = ("passing", "still failing", "regressed", "fixed", "flaky")
CASE_LABELS = {"passed": "passed", "failed": "failed", "error": "error", "skipped": "not run"}
TONE = {
    "passed": "pass",
    "passing": "pass",
    "fixed": "pass",
    "partly run": "warn",
    "not run": "skip",
    "skipped": "skip",
    "failed": "fail",
    "still failing": "fail",
    "regressed": "fail",
    "error": "error",
    "interrupted": "warn",
    "flaky": "warn",
}
"""The colour family of each word: ``pass``, ``fail``, ``error``, ``warn`` or ``skip``."""


class Counted(Protocol):
    """A run (``Run``) or anything with its status and counts."""

    status: str
    passed: int
    failed: int
    errors: int
    skipped: int
    total: int


def counts_of(run: Counted) -> dict[str, Any]:
    return {
        "passed": run.passed,
        "failed": run.failed,
        "errors": run.errors,
        "skipped": run.skipped,
        "total": run.total,
    }


def of_run(run: Counted) -> dict[str, str]:
    """A run's ``verdict``, ``headline``, ``counts`` and ``rate`` text (what listings and pages show)."""
    return said(run.status, **counts_of(run))


def said(run_status: str, *, passed: int, failed: int, errors: int, skipped: int, total: int) -> dict[str, str]:
    counts = {"passed": passed, "failed": failed, "errors": errors, "skipped": skipped, "total": total}
    return {
        "verdict": verdict(run_status, **counts),
        "headline": headline(run_status, **counts),
        "counts": counts_text(**counts),
        "rate": rate_text(status=run_status, **counts),
    }


def evaluation_status(aborted: str | None, *, failed: int, errors: int) -> str:
    """An evaluation's stored status: ``interrupted`` for an ``aborted`` reason that starts so (the CLI's
    Ctrl-C reasons do), ``error`` for any other, else ``failed`` or ``passed``."""
    if aborted:
        return "interrupted" if aborted.lower().startswith("interrupted") else "error"
    return "failed" if failed or errors else "passed"


def of_totals(
    aborted: str | None, *, passed: int, failed: int, errors: int, skipped: int, total: int
) -> dict[str, str]:
    """``of_run`` for a report's evaluation (its ``aborted`` reason and totals)."""
    run_status = evaluation_status(aborted, failed=failed, errors=errors)
    return said(run_status, passed=passed, failed=failed, errors=errors, skipped=skipped, total=total)


def case_label(status: str) -> str:
    """A case status as people read it (``skipped`` is ``not run``)."""
    return CASE_LABELS.get(status, status)


def verdict(status: str, *, passed: int, failed: int, errors: int, skipped: int, total: int) -> str:
    """The run's verdict (one of ``VERDICTS``) from its stored status and counts."""
    if status in ("error", "interrupted"):
        return status
    if status == "failed" or failed or errors:
        return "failed"
    if total and skipped >= total:
        return "not run"
    if skipped:
        return "partly run"
    return "passed"


def counts_text(*, passed: int, failed: int, errors: int, skipped: int, total: int) -> str:
    """``4 passed, 1 failed, 2 not run of 7``: each count that is not zero (``passed`` always), then the total."""
    parts = [f"{passed} passed"]
    parts += [f"{n} {word}" for n, word in ((failed, "failed"), (errors, "errors"), (skipped, "not run")) if n]
    return ", ".join(parts) + f" of {total}"


def rate_text(*, passed: int, failed: int, errors: int, skipped: int, total: int, status: str = "passed") -> str:
    """The pass rate as people should read it: of the cases that ran, with how many that is when some did not.

    Empty for an errored or interrupted run and when nothing ran: no rate stands for the run then.
    """
    ran = total - skipped
    if status in ("error", "interrupted") or ran <= 0:
        return ""
    rate = f"{passed / ran * 100:.1f}%"
    return rate if not skipped else f"{rate} of the {ran} that ran"


def headline(status: str, *, passed: int, failed: int, errors: int, skipped: int, total: int) -> str:
    """One line for a run: ``FAILED 3 passed, 2 failed of 5 (60.0%)``, ``INTERRUPTED after 6 cases: ...``."""
    counts = {"passed": passed, "failed": failed, "errors": errors, "skipped": skipped, "total": total}
    word = verdict(status, **counts)
    ran = counts_text(**counts)
    if word == "interrupted":
        return f"INTERRUPTED after {total - skipped} cases: {ran.rsplit(' of ', 1)[0]}"
    if word == "error":
        return f"ERROR: it could not finish ({ran})"
    rate = rate_text(status=status, **counts)
    return f"{word.upper()} {ran}" + (f" ({rate})" if rate else "")


def case_history(statuses: Iterable[str]) -> str:
    """A case's history over runs, oldest first (skipped runs left out): one of ``HISTORIES``."""
    states = [s == "passed" for s in statuses if s != "skipped"]
    downs = sum(1 for a, b in pairwise(states) if a and not b)
    ups = sum(1 for a, b in pairwise(states) if b and not a)
    if downs and ups:
        return "flaky"
    if downs:
        return "regressed"
    if ups:
        return "fixed"
    return "passing" if all(states) else "still failing"
