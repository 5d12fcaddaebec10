"""Pieces shared by the viewer and the HTML report: case blocks (failures first) and summary charts.

Both take cases as JSON (``CaseResult`` dumps with a ``suite``, or the store's
``Case.to_json()``), so the report file and the viewer show a run the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentpack.results import charts
from agentpack.results.viewer.diff import diff_block
from agentpack.results.viewer.html import Html, badge, join, json_block, tag

FEATURED = (
    ("question", "question"),
    ("input", "input"),
    ("expected", "expected"),
    ("answer", "answer"),
    ("output", "output"),
    ("public_output", "output"),
    ("citations", "citations"),
    ("cited", "cited"),
    ("tool_calls", "tool calls"),
    ("evaluation_context", "context"),
    ("context", "context"),
    ("stderr", "stderr"),
    ("error", "error"),
)
STEP_FIELDS = (
    ("input", "input"),
    ("public_output", "output"),
    ("output", "output"),
    ("evaluation_context", "context"),
    ("tool_calls", "tool calls"),
    ("logs", "logs"),
    ("usage", "usage"),
    ("stderr", "stderr"),
    ("error", "error"),
)
FAILING = ("failed", "error")


def _flaky(case: Mapping[str, Any]) -> bool:
    details = case.get("details")
    return isinstance(details, Mapping) and bool(details.get("flaky"))


def failures_first(cases: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Failed and errored cases first, then flaky ones (``details.flaky``: passed some runs, not all), then
    skipped, then passed; by suite and id within each."""
    rank = {"error": 0, "failed": 0, "skipped": 2, "passed": 3}

    def key(case: Mapping[str, Any]) -> tuple[int, str, str]:
        place = rank.get(str(case.get("status")), 2)
        return (min(place, 1) if _flaky(case) else place, str(case.get("suite", "")), str(case.get("id")))

    return sorted(cases, key=key)


def _empty(value: Any) -> bool:
    return value is None or value == "" or value == [] or value == {}


def _blocks(data: Mapping[str, Any], fields: Sequence[tuple[str, str]]) -> tuple[list[Html], set[str]]:
    shown: list[Html] = []
    used: set[str] = set()
    for key, label in fields:
        if key in data and not _empty(data[key]):
            shown.append(json_block(data[key], label=label))
            used.add(key)
    return shown, used


def _reason(value: Any) -> str:
    """`` · exit reason: X`` unless X is ``ok`` (or empty): a failed run never says "exit reason ok"."""
    return f" · exit reason: {value}" if value and value != "ok" else ""


def _check(check: Mapping[str, Any]) -> dict[str, Any]:
    """A step's check (the agent protocol's graders) as an assertion row: its type, name and field as the name."""
    name = " ".join(str(check[k]) for k in ("type", "name") if check.get(k))
    field = f" on {check['field']}" if check.get("field") else ""
    return {**check, "name": name + field, "message": check.get("reason")}


def step_block(step: Mapping[str, Any]) -> Html:
    """One step of a scenario: its input, output, context, tool calls (as JSON), stderr and checks."""
    head = f"step {step.get('index', '')}" + (f" {step['name']}" if step.get("name") else "")
    status = step.get("agent_status") or step.get("status")
    duration = step.get("duration_ms")
    extra = "".join(
        [
            f" · {status}" if status else "",
            _reason(step.get("exit_reason")),
            f" · {duration:.1f} ms" if isinstance(duration, int | float) else "",
        ]
    )
    shown, used = _blocks(step, STEP_FIELDS)
    checks = step.get("checks")
    if isinstance(checks, list) and checks and all(isinstance(c, Mapping) for c in checks):
        shown.append(assertions_table([_check(c) for c in checks]))
    skip = {"index", "name", "status", "agent_status", "exit_reason", "duration_ms", "checks"}
    rest = {k: v for k, v in step.items() if k not in used and k not in skip and not _empty(v)}
    if rest:
        shown.append(json_block(rest, label="more"))
    return tag("div", join([tag("div", head + extra, class_="label"), *shown]), class_="step")


def _runs_block(runs: Sequence[Mapping[str, Any]]) -> Html:
    parts: list[Html] = []
    many = len(runs) > 1
    for i, run in enumerate(runs, 1):
        status = str(run.get("status") or "")
        title = f"run {run.get('repetition', i)}" if many else "steps"
        attempt = run.get("attempt")
        duration = run.get("duration_ms")
        notes = "".join(
            [
                f" (attempt {attempt})" if isinstance(attempt, int) and attempt > 1 else "",
                _reason(run.get("exit_reason")),
                f" · {duration:.1f} ms" if isinstance(duration, int | float) else "",
                f" · pid {run['pid']}" if run.get("pid") else "",
            ]
        )
        head = join([tag("b", title), " ", badge(status) if status else "", notes])
        parts.append(tag("div", head, class_="label"))
        if not _empty(run.get("stderr")):
            parts.append(
                json_block(run["stderr"], label="agent stderr (outside steps)" if run.get("steps") else "stderr")
            )
        if not _empty(run.get("warnings")):
            parts.append(json_block(run["warnings"], label="warnings"))
        parts += [step_block(s) for s in run.get("steps") or [] if isinstance(s, Mapping)]
    return join(parts)


def details_block(details: Mapping[str, Any]) -> Html:
    """A case's details: question, input, output, citations, tool calls, stderr first; steps; the rest as JSON."""
    shown, used = _blocks(details, FEATURED)
    runs = details.get("runs")
    if isinstance(runs, list) and runs and all(isinstance(r, Mapping) for r in runs):
        shown.append(_runs_block(runs))
        used.add("runs")
    steps = details.get("steps")
    if isinstance(steps, list) and steps and all(isinstance(s, Mapping) for s in steps):
        shown += [step_block(s) for s in steps]
        used.add("steps")
    for key, value in details.items():
        if key not in used and not _empty(value) and not (key == "exit_reason" and value == "ok"):
            shown.append(json_block(value, label=key.replace("_", " ")))
    return join(shown)


def _assertion_rows(a: Mapping[str, Any]) -> Html:
    """A check's row, and under a failed one the diff of its expected and actual values."""
    passed = bool(a.get("passed"))
    row = tag(
        "tr",
        join(
            [
                tag("td", badge("passed" if passed else ("error" if a.get("error") else "failed"))),
                tag("td", a.get("name")),
                tag("td", json_block(a.get("expected"))),
                tag("td", json_block(a.get("actual"))),
                tag("td", a.get("message")),
            ]
        ),
    )
    diff = "" if passed else diff_block(a.get("expected"), a.get("actual"))
    return join([row, tag("tr", tag("td", diff, colspan=5), class_="diff-row") if diff else ""])


def assertions_table(assertions: Sequence[Mapping[str, Any]]) -> Html:
    """The checks, failed first, each failed one with a diff of expected and actual."""
    if not assertions:
        return Html("")
    rows = join(_assertion_rows(a) for a in sorted(assertions, key=lambda a: bool(a.get("passed"))))
    head = Html(
        "<colgroup><col class=c-status><col class=c-check><col class=c-value><col class=c-value><col class=c-msg>"
        "</colgroup><thead><tr><th></th><th>check</th><th>expected</th><th>actual</th><th>message</th></tr></thead>"
    )
    return tag("table", Html(head + f"<tbody>{rows}</tbody>"), class_="assertions")


def case_block(case: Mapping[str, Any], *, anchor: str | None = None, open_: bool = False) -> Html:
    """A ``<details>`` for one case: open when it failed (or ``open_``); summary line, checks, then details."""
    status = str(case.get("status") or "")
    failing = status in FAILING
    key = f"{case['suite']}/{case['id']}" if case.get("suite") else str(case.get("id"))
    name = case.get("name")
    duration = float(case.get("duration_s") or 0) * 1000
    tokens = case.get("total_tokens")
    summary = join(
        [
            badge(status),
            " ",
            tag("b", f"{case['suite']} / {case['id']}" if case.get("suite") else key),
            tag("span", f" {name}", class_="muted") if name and name != case.get("id") else "",
            tag("b", " flaky", class_="warn") if _flaky(case) else "",
            tag("small", f"  {duration:.1f} ms" + (f" · {tokens:,} tokens" if isinstance(tokens, int) else "")),
            tag("div", case.get("message"), class_="fail" if failing else "muted") if case.get("message") else "",
        ]
    )
    where = ":".join(str(case[k]) for k in ("file", "line") if case.get(k) is not None)
    body = join(
        [
            tag("div", where, class_="muted") if where else "",
            assertions_table(case.get("assertions") or []),
            details_block(case.get("details") or {}) if isinstance(case.get("details"), Mapping) else "",
        ]
    )
    return tag(
        "details",
        Html(tag("summary", summary) + body),
        class_="case failing" if failing else "case",
        open=failing or open_,
        id=anchor,
        data_case=key,
        data_status=status,
    )


def first_stderr(cases: Iterable[Mapping[str, Any]]) -> str | None:
    """The first non-empty stderr in the cases' details (runs and steps included), for an aborted run's banner."""
    for case in cases:
        details = case.get("details")
        if not isinstance(details, Mapping):
            continue
        candidates: list[Any] = [details.get("stderr")]
        for run in details.get("runs") or []:
            if isinstance(run, Mapping):
                candidates.append(run.get("stderr"))
                candidates += [s.get("stderr") for s in run.get("steps") or [] if isinstance(s, Mapping)]
        found = next((c for c in candidates if isinstance(c, str) and c.strip()), None)
        if found:
            return found
    return None


def severity_counts(severities: Iterable[str]) -> Html:
    """Errors, warnings and infos, each counted and coloured apart (an info is never a warning)."""
    seen = list(severities)
    return join(
        tag("span", f"{seen.count(severity)} {label}", class_=css)
        for severity, label, css in (
            ("error", "errors", "fail"),
            ("warning", "warnings", "warn"),
            ("info", "infos", "info"),
        )
    )


def suite_rows(cases: Iterable[Mapping[str, Any]]) -> list[tuple[str, int, int, int, int]]:
    counts: dict[str, list[int]] = {}
    index = {"passed": 0, "failed": 1, "error": 2, "skipped": 3}
    for case in cases:
        row = counts.setdefault(str(case.get("suite") or "(cases)"), [0, 0, 0, 0])
        row[index.get(str(case.get("status")), 1)] += 1
    return [(name, row[0], row[1], row[2], row[3]) for name, row in counts.items()]


def summary_charts(cases: Sequence[Mapping[str, Any]]) -> Html:
    """Pass-rate bar, per-suite breakdown and latency histogram (ms) of ``cases`` (no histogram when
    no case has a duration, as in a resolution or a plan)."""
    rows = suite_rows(cases)
    totals = [sum(r[1] for r in rows), sum(r[2] for r in rows), sum(r[3] for r in rows), sum(r[4] for r in rows)]
    latencies = [float(c.get("duration_s") or 0) * 1000 for c in cases if c.get("status") != "skipped"]
    figures = [("pass rate", charts.pass_rate_bar(*totals)), ("per suite", charts.stacked_bars(rows))]
    if any(latencies):
        figures.append(("latency per case", charts.histogram(latencies, title="latency per case", unit="ms")))
    return tag(
        "div",
        join(tag("figure", Html(Html(svg) + tag("figcaption", caption))) for caption, svg in figures),
        class_="charts",
    )
