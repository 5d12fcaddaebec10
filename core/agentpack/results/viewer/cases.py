"""The cases table a run page opens on: one row per case, failures first, sortable and filterable.

Each row reads what a person looks for first (status, name, input, expected, actual, checks, duration)
out of the case's JSON, whatever plugin wrote it: the input is ``input``/``question`` (else the first
step's input); expected and actual are the details' ``expected`` and ``answer``/``output``, else the
first failed check's (or the first check's) expected and actual pair, else the last step's output.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentpack.results.status import case_label
from agentpack.results.viewer.html import Html, badge, join, link, tag

CELL_CHARS = 160
"""A cell shows this much of a long value; the whole value is in its tooltip and on the case's page."""


def _steps(details: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    steps = details.get("steps")
    runs = details.get("runs")
    if not isinstance(steps, list) and isinstance(runs, list) and runs and isinstance(runs[0], Mapping):
        steps = runs[0].get("steps")
    return [s for s in steps if isinstance(s, Mapping)] if isinstance(steps, list) else []


def checks_of(case: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The case's checks: its assertions, else its steps' checks (``passed`` and ``name`` each)."""
    found = [a for a in case.get("assertions") or [] if isinstance(a, Mapping)]
    if found:
        return found
    details = case.get("details") if isinstance(case.get("details"), Mapping) else {}
    rows: list[Mapping[str, Any]] = []
    for step in _steps(details or {}):
        for check in step.get("checks") or []:
            if isinstance(check, Mapping):
                rows.append({**check, "passed": bool(check.get("passed"))})
    return rows


def _first(data: Mapping[str, Any], keys: Sequence[str]) -> Any:
    return next((data[k] for k in keys if data.get(k) not in (None, "", [], {})), None)


def output_of(case: Mapping[str, Any]) -> Any:
    """What the case's agent answered: the details' ``answer``/``output``, else the last step's output, else
    the first failed (or first) check's actual value; ``None`` when there is none."""
    details = case.get("details") if isinstance(case.get("details"), Mapping) else None
    found = _first(details or {}, ("answer", "public_output", "output"))
    steps = _steps(details or {})
    if found is None and steps:
        found = _first(steps[-1], ("public_output", "output"))
    if found is None:
        checks = checks_of(case)
        subject = next((c for c in checks if not c.get("passed")), checks[0] if checks else {})
        found = subject.get("actual")
    return found


def row_of(case: Mapping[str, Any]) -> dict[str, Any]:
    """``input``, ``expected``, ``actual`` (values, ``None`` when unknown) and ``checks`` (passed, total)."""
    details = case.get("details") if isinstance(case.get("details"), Mapping) else {}
    details = details or {}
    steps = _steps(details)
    checks = checks_of(case)
    failed = next((c for c in checks if not c.get("passed")), None)
    subject = failed or (checks[0] if checks else {})
    given = _first(details, ("input", "question", "prompt", "arguments"))
    if given is None and steps:
        given = steps[0].get("input")
    expected = _first(details, ("expected", "target"))
    actual = _first(details, ("answer", "public_output", "output"))
    if expected is None and subject.get("expected") is not None:
        expected, actual = subject.get("expected"), subject.get("actual")  # the check's own pair
    if actual is None and steps:
        actual = _first(steps[-1], ("public_output", "output"))
    passed = sum(1 for c in checks if c.get("passed"))
    return {"input": given, "expected": expected, "actual": actual, "checks": (passed, len(checks))}


def tags_of(case: Mapping[str, Any]) -> list[str]:
    """The case's tags: its ``tags``, or its details' (an agent protocol scenario keeps them there)."""
    details = case.get("details") if isinstance(case.get("details"), Mapping) else {}
    found = case.get("tags") if isinstance(case.get("tags"), list) else (details or {}).get("tags")
    return [str(t) for t in found] if isinstance(found, list) else []


def key_of(case: Mapping[str, Any]) -> str:
    return f"{case['suite']}/{case['id']}" if case.get("suite") else str(case.get("id"))


def _cell(value: Any) -> Html:
    if value is None:
        return Html("")
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    short = text if len(text) <= CELL_CHARS else text[: CELL_CHARS - 1] + "…"
    return tag("div", short, class_="cell-text", title=text if short != text else None)


def cases_table(
    cases: Sequence[tuple[int, Mapping[str, Any]]], href: Callable[[int], str], *, id: str | None = "case-table"
) -> Html:
    """The table of ``cases`` (``(index, case)`` pairs, in the order shown); ``href(index)`` is a case's URL.
    A column no case has a value for (a dry run has no expected output) is left out."""
    found = [(order, index, case, row_of(case)) for order, (index, case) in enumerate(cases)]
    shown = {
        column for column in ("input", "expected", "actual") if any(row[column] not in (None, "") for *_, row in found)
    }
    if any(row["checks"][1] for *_, row in found):
        shown.add("checks")
    rows = []
    for order, index, case, row in found:
        status = str(case.get("status") or "")
        passed, total = row["checks"]
        duration = float(case.get("duration_s") or 0)
        name = case.get("name") if case.get("name") not in (None, "", case.get("id")) else ""
        title = join(
            [
                link(href(index), key_of(case), class_="case-link"),
                tag("div", name, class_="muted") if name else "",
                tag("div", case.get("message"), class_="fail" if status in ("failed", "error") else "muted")
                if case.get("message")
                else "",
            ]
        )
        tags = tags_of(case)
        cells = [
            tag("td", badge(status, case_label(status)), data_value=order),
            tag("td", title, data_value=key_of(case)),
            *(tag("td", _cell(row[c])) for c in ("input", "expected", "actual") if c in shown),
            tag(
                "td",
                f"{passed}/{total}" if total else "",
                data_value=f"{passed / total:.4f}" if total else "-1",
                class_="num",
            )
            if "checks" in shown
            else "",
            tag("td", f"{duration * 1000:.1f} ms", data_value=f"{duration:.6f}", class_="num"),
        ]
        rows.append(
            tag(
                "tr",
                join(cells),
                data_row=key_of(case),
                data_status=status,
                data_suite=str(case.get("suite") or ""),
                data_tags=" ".join(str(t) for t in tags),
            )
        )
    heads = [
        ("status", "status"),
        ("case", "text"),
        *((c, "text") for c in ("input", "expected", "actual") if c in shown),
        *([("checks", "num")] if "checks" in shown else []),
        ("duration", "num"),
    ]
    head = join(
        tag("th", tag("button", h, type="button", class_="sort", data_sort=kind), scope="col") for h, kind in heads
    )
    body = Html(f"<thead><tr>{head}</tr></thead><tbody>{join(rows)}</tbody>")
    return tag("table", body, id=id, class_="case-table")


def case_toolbar(cases: Sequence[Mapping[str, Any]]) -> Html:
    """Free-text filter, status, suite and tag pickers, and the count shown (the viewer's script runs them)."""
    statuses = sorted({str(c.get("status")) for c in cases})
    suites = sorted({str(c.get("suite")) for c in cases if c.get("suite")})
    tags = sorted({t for c in cases for t in tags_of(c)})

    def pick(name: str, label: str, values: Sequence[tuple[str, str]]) -> Html:
        options = join([tag("option", "all", value=""), *(tag("option", text, value=v) for v, text in values)])
        return tag("label", join([label, " ", tag("select", options, id=f"case-{name}")]))

    status_values = [("failing", "failed or error"), *((s, case_label(s)) for s in statuses)]
    return tag(
        "div",
        join(
            [
                tag("input", "", id="case-filter", placeholder="filter cases…", aria_label="filter cases"),
                pick("status", "status", status_values),
                pick("suite", "suite", [(s, s) for s in suites]) if len(suites) > 1 else "",
                pick("tag", "tag", [(t, t) for t in tags]) if tags else "",
                tag("label", join([tag("input", "", type="checkbox", id="failures-only"), " failures only"])),
                tag("span", "", id="case-count", class_="muted"),
            ]
        ),
        class_="toolbar",
    )
