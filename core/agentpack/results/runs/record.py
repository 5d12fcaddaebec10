"""``record_run``: the one call a command makes to put a finished run into the store.

``build_run`` makes the ``Run`` without storing it (for a report file that shows the run as the
viewer will), and ``save_run`` stores a built run; ``record_run`` is the two in one call.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.kernel.runtypes import CASE_STATUSES, STATUSES, Case, Run

if TYPE_CHECKING:
    from agentpack.kernel.registry import Recording

_CASE_FIELDS = ("suite", "id", "name", "status", "duration_s", "message", "total_tokens")


def record_run(
    report: Any,
    *,
    command: str,
    input: str | Path,
    format: str | None = None,
    name: str | None = None,
    cases: Iterable[Mapping[str, Any]] | None = None,
    status: str | None = None,
    message: str | None = None,
    started_at: datetime | str | None = None,
    duration_s: float | None = None,
    agent: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    usage: Mapping[str, Any] | None = None,
    input_digest: str | None = None,
    tags: Iterable[str] = (),
    recording: Recording | None = None,
    store: str | Path | None = None,
) -> Run | None:
    """Record a finished run; returns the stored ``Run`` (``None`` when ``--no-record`` turned it off).

    ``report`` is the full report the command wrote: the core ``Report`` envelope (a model or its
    JSON), whose evaluations give the cases, totals, status, timings and token usage; or a plugin's
    own JSON report, with ``cases`` given as mappings with ``suite``, ``id``, ``status`` (passed,
    failed, error, skipped) and optionally ``name``, ``duration_s``, ``message``, ``total_tokens``;
    any other keys (``assertions``, ``details`` with input, output, tool calls, stderr...) are kept
    and shown by the viewer. ``status`` is derived unless given: ``error`` for an aborted
    evaluation, ``failed`` when a case failed, else ``passed``; pass ``interrupted`` after Ctrl-C.

    ``agent`` is ``{"name", "version", "capabilities"}``; ``settings`` holds model and judge settings
    (model and judge variables of the environment are added, never keys or tokens); ``usage`` has
    ``input_tokens``, ``output_tokens``, ``total_tokens``. The input's digest and the git state of
    its work tree are computed here. ``recording`` is what ``clikit.record_options`` gave the command
    (store, ``--no-record``, tags); ``store`` names a store file directly.

    Raises ``StoreError`` when the store cannot be written; the run is then not recorded at all.
    """
    if recording is not None and not recording.enabled:
        return None
    run = build_run(
        report,
        command=command,
        input=input,
        format=format,
        name=name,
        cases=cases,
        status=status,
        message=message,
        started_at=started_at,
        duration_s=duration_s,
        agent=agent,
        settings=settings,
        usage=usage,
        input_digest=input_digest,
        tags=tags,
    )
    return save_run(run, recording=recording, store=store)


def save_run(run: Run, *, recording: Recording | None = None, store: str | Path | None = None) -> Run | None:
    """Store a ``build_run`` result (its ``id`` is set); ``None`` when ``--no-record`` turned recording off.

    ``recording`` (from ``clikit.record_options``) names the store and adds its tags; ``store`` names a
    store file directly. Raises ``StoreError`` when the store cannot be written.
    """
    from agentpack.io import console
    from agentpack.results.runs.store import default_store_path, open_store

    if recording is not None:
        if not recording.enabled:
            return None
        store = recording.store or store
        run.tags = sorted({*run.tags, *(str(t) for t in recording.tags if str(t))})
    path = Path(store) if store is not None else default_store_path()
    with open_store(path) as opened:
        opened.add(run)
    console.note(f"run #{run.id} recorded in {_display(path)} (agentpack runs show {run.id}; agentpack view)")
    return run


def build_run(
    report: Any,
    *,
    command: str,
    input: str | Path,
    format: str | None = None,
    name: str | None = None,
    cases: Iterable[Mapping[str, Any]] | None = None,
    status: str | None = None,
    message: str | None = None,
    started_at: datetime | str | None = None,
    duration_s: float | None = None,
    agent: Mapping[str, Any] | None = None,
    settings: Mapping[str, Any] | None = None,
    usage: Mapping[str, Any] | None = None,
    input_digest: str | None = None,
    tags: Iterable[str] = (),
) -> Run:
    """The ``Run`` ``record_run`` would store (id 0 until it is saved); the arguments are ``record_run``'s."""
    from agentpack.kernel.version import __version__
    from agentpack.results.runs.provenance import environment_settings, git_state, input_key
    from agentpack.results.runs.provenance import input_digest as digest_of
    from agentpack.results.runs.store import project_root

    data = _as_json(report)
    evaluations = (
        [e for e in data.get("evaluations") or [] if isinstance(e, Mapping)] if isinstance(data, Mapping) else []
    )
    case_rows = [_case(c) for c in cases] if cases is not None else cases_of(evaluations)
    counts = {s: sum(1 for c in case_rows if c.status == s) for s in CASE_STATUSES}
    ran = len(case_rows) - counts["skipped"]
    aborted = next((str(e["aborted"]) for e in evaluations if e.get("aborted")), None)
    if status is None:
        if aborted:
            status = "error"
        elif counts["failed"] or counts["error"] or (isinstance(data, Mapping) and data.get("ok") is False):
            status = "failed"
        else:
            status = "passed"
    if status not in STATUSES:
        raise ValueError(f"run status must be one of {', '.join(STATUSES)}, not {status!r}")
    first = evaluations[0] if len(evaluations) == 1 else {}
    tokens = _usage(usage, evaluations, case_rows)
    git = git_state(input)
    run = Run(
        id=0,
        uid=uuid.uuid4().hex,
        command=command,
        input=input_key(input, project_root()),
        status=status,
        started_at=_iso(started_at or first.get("started_at") or _generated_at(data)),
        format=format or first.get("format") or (evaluations[0].get("format") if evaluations else None),
        name=name or first.get("name"),
        input_digest=input_digest or digest_of(input),
        duration_s=float(
            duration_s if duration_s is not None else sum(float(e.get("duration_s") or 0) for e in evaluations)
        ),
        total=len(case_rows),
        passed=counts["passed"],
        failed=counts["failed"],
        errors=counts["error"],
        skipped=counts["skipped"],
        pass_rate=round(counts["passed"] / ran, 4) if ran else 0.0,
        input_tokens=tokens.get("input_tokens"),
        output_tokens=tokens.get("output_tokens"),
        total_tokens=tokens.get("total_tokens"),
        git_commit=git["commit"],
        git_branch=git["branch"],
        git_dirty=git["dirty"],
        agent=dict(agent) if agent else None,
        settings=_settings(settings, environment_settings()),
        message=message or aborted,
        tool_version=__version__,
        tags=sorted({str(t) for t in tags if str(t)}),
        report=data,
        cases=case_rows,
    )
    return run


def _as_json(report: Any) -> Any:
    if hasattr(report, "model_dump"):
        if getattr(getattr(report, "tool", None), "version", None) == "":
            from agentpack.kernel.version import __version__

            report.tool.version = __version__
        return report.model_dump(mode="json")
    return report


def _generated_at(data: Any) -> Any:
    return data.get("generated_at") if isinstance(data, Mapping) else None


def cases_of(evaluations: list[Mapping[str, Any]]) -> list[Case]:
    """The cases of evaluation reports (as JSON), each with its suite's id."""
    rows = []
    for evaluation in evaluations:
        for suite in evaluation.get("suites") or []:
            for case in suite.get("cases") or []:
                rows.append(_case({"suite": suite.get("id") or "", **case}))
    return rows


def _case(value: Mapping[str, Any]) -> Case:
    status = value.get("status")
    if status not in CASE_STATUSES:
        raise ValueError(f"case status must be one of {', '.join(CASE_STATUSES)}, not {status!r}")
    detail = {k: v for k, v in value.items() if k not in _CASE_FIELDS}
    tokens = value.get("total_tokens")
    if tokens is None:
        usage = (value.get("details") or {}).get("usage") if isinstance(value.get("details"), Mapping) else None
        tokens = _total(usage) if isinstance(usage, Mapping) else None
    return Case(
        suite=str(value.get("suite") or ""),
        id=str(value.get("id")),
        status=str(status),
        name=None if value.get("name") is None else str(value.get("name")),
        duration_s=float(value.get("duration_s") or 0.0),
        message=str(value.get("message") or ""),
        total_tokens=_count(tokens),
        detail=detail,
    )


_MAX_COUNT = 2**63 - 1
"""The largest count SQLite stores as an INTEGER: an agent's report of more tokens is not a count."""


def _count(value: Any) -> int | None:
    """A token count from a report: a whole, finite number from 0 to ``_MAX_COUNT``, else ``None``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
        return None
    if not 0 <= value <= _MAX_COUNT:
        return None
    return int(value)


def _total(usage: Mapping[str, Any]) -> int | None:
    total = _count(usage.get("total_tokens"))
    if total is not None:
        return total
    parts = [usage.get(k) for k in ("input_tokens", "output_tokens", "prompt_tokens", "completion_tokens")]
    numbers = [n for n in map(_count, parts) if n is not None]
    return _count(sum(numbers)) if numbers else None


def _usage(given: Mapping[str, Any] | None, evaluations: list[Mapping[str, Any]], cases: list[Case]) -> dict[str, int]:
    sources = [given] if given else [e.get("metadata", {}).get("usage") for e in evaluations]
    totals: dict[str, int] = {}
    for usage in sources:
        if not isinstance(usage, Mapping):
            continue
        for key, alias in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
            value = _count(usage.get(key, usage.get(alias)))
            if value is not None:
                totals[key] = totals.get(key, 0) + value
        total = _total(usage)
        if total is not None:
            totals["total_tokens"] = totals.get("total_tokens", 0) + total
    if "total_tokens" not in totals:
        per_case = [c.total_tokens for c in cases if c.total_tokens is not None]
        if per_case:
            totals["total_tokens"] = sum(per_case)
    return {key: value for key, value in totals.items() if _count(value) is not None}


def _settings(given: Mapping[str, Any] | None, environment: dict[str, str]) -> dict[str, Any]:
    from agentpack.results.runs.provenance import without_secrets

    settings: dict[str, Any] = without_secrets(dict(given or {}))
    if environment:
        settings.setdefault("environment", environment)
    return settings


def _iso(value: Any) -> str:
    """RFC 3339 in UTC with a ``Z`` (sortable text); now when ``value`` is empty."""
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            value = None
    if not isinstance(value, datetime):
        value = datetime.now(UTC)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    stamp: str = value.astimezone(UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
