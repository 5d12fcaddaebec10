"""The viewer's pages as HTML text: run list, run, compare and trend. No web framework here."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from agentpack.kernel.registry import RunView
from agentpack.kernel.runtypes import Case, Run
from agentpack.results import charts, status
from agentpack.results.runs.compare import TITLES
from agentpack.results.viewer.cases import case_toolbar, cases_table, key_of, output_of
from agentpack.results.viewer.diff import diff_block
from agentpack.results.viewer.fragments import case_block, failures_first, first_stderr, summary_charts
from agentpack.results.viewer.html import Html, badge, esc, facts, join, json_block, link, section, table, tag

log = logging.getLogger(__name__)
FILTERS = ("q", "format", "command", "status", "input", "tag", "since", "until")
PER_PAGE = 50


def layout(title: str, body: Any, *, store: str = "") -> str:
    nav = join(
        [
            link("/", "agentpack view", class_="brand"),
            link("/", "Runs"),
            link("/compare", "Compare"),
            link("/trend", "Trends"),
            tag("small", store, title="run store"),
        ]
    )
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)} · agentpack view</title>"
        '<link rel=icon href="data:,"><link rel=stylesheet href="/static/app.css"></head><body>'
        f"{tag('header', nav, class_='top')}<main>{esc(body)}</main>"
        '<script src="/static/app.js"></script></body></html>\n'
    )


def empty(message: str, hint: str = "") -> Html:
    return tag("div", join([tag("p", message), tag("p", tag("code", hint)) if hint else ""]), class_="empty")


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _tokens(value: int | None) -> str:
    return "" if value is None else f"{value:,}"


def _commit(run: Run) -> str:
    if not run.git_commit:
        return ""
    return run.git_commit[:8] + (" (dirty)" if run.git_dirty else "")


# -- run list -----------------------------------------------------------------------------------
def _select(name: str, values: Sequence[str], chosen: str | None, label: str) -> Html:
    options = join([tag("option", "any", value=""), *(tag("option", v, value=v, selected=v == chosen) for v in values)])
    return tag("label", join([label, tag("select", options, name=name, id=f"filter-{name}")]))


def _date(name: str, chosen: str | None, label: str) -> Html:
    return tag(
        "label", join([label, tag("input", "", type="date", name=name, value=chosen or "", id=f"filter-{name}")])
    )


def _pager(filters: Mapping[str, str | None], page: int, total: int, per_page: int) -> Html:
    """``runs 51–100 of 240`` with links to the newer and older pages (the filters kept)."""
    last = max(1, -(-total // per_page))
    kept: dict[str, Any] = {k: v for k, v in filters.items() if v}
    if per_page != PER_PAGE:
        kept["limit"] = per_page

    def to(n: int, text: str, rel: str) -> Html:
        return link("/?" + urlencode({**kept, "page": n}), text, rel=rel, id=f"page-{rel}")

    first, end = (page - 1) * per_page + 1, min(total, page * per_page)
    return tag(
        "div",
        join(
            [
                to(page - 1, "← newer", "prev") if page > 1 else "",
                tag("span", f"runs {first}–{end} of {total} · page {page} of {last}", class_="muted"),
                to(page + 1, "older →", "next") if page < last else "",
            ]
        ),
        class_="pager",
    )


def run_list(
    runs: Sequence[Run],
    filters: Mapping[str, str | None],
    choices: Mapping[str, Sequence[str]],
    *,
    page: int = 1,
    total: int | None = None,
    per_page: int = PER_PAGE,
) -> Html:
    """The runs, newest first, one page of ``per_page`` (``total`` is how many match the filters)."""
    total = len(runs) if total is None else total
    form = tag(
        "form",
        join(
            [
                tag(
                    "label",
                    join(
                        [
                            "search",
                            tag(
                                "input",
                                "",
                                type="search",
                                name="q",
                                value=filters.get("q") or "",
                                id="filter-q",
                                placeholder="name, input, tag, #id…",
                            ),
                        ]
                    ),
                ),
                _select("format", choices.get("format", ()), filters.get("format"), "format"),
                _select("command", choices.get("command", ()), filters.get("command"), "command"),
                _select("status", choices.get("status", ()), filters.get("status"), "status"),
                _select("input", choices.get("input", ()), filters.get("input"), "input"),
                _select("tag", choices.get("tag", ()), filters.get("tag"), "tag"),
                _date("since", filters.get("since"), "from"),
                _date("until", filters.get("until"), "to"),
                tag("button", "Apply filters", type="submit", id="apply-filters"),
                link("/", "clear"),
            ]
        ),
        class_="filters",
        method="get",
        action="/",
    )
    toolbar = tag(
        "div",
        join([tag("button", "Compare (pick two runs)", type="button", id="compare-selected", disabled=True)]),
        class_="toolbar",
    )
    if not runs:
        listing = empty(
            "no runs match these filters" if any(filters.values()) else "no runs recorded yet",
            "" if any(filters.values()) else "agentpack eval PATH  # records a run",
        )
        return join([tag("h1", "Runs"), form, listing])
    rows = []
    for r in runs:
        said = status.of_run(r)
        trend_href = "/trend?" + urlencode({"input": r.input})
        rows.append(
            tag(
                "tr",
                join(
                    [
                        tag(
                            "td",
                            tag("input", "", type="checkbox", class_="pick", value=r.id, aria_label=f"pick #{r.id}"),
                        ),
                        tag("td", link(f"/runs/{r.id}", f"#{r.id}", class_="run-link")),
                        tag("td", r.name or "", class_="run-name"),
                        tag("td", badge(said["verdict"])),
                        tag("td", said["counts"]),
                        tag("td", said["rate"] or "–"),
                        tag("td", r.command),
                        tag("td", link(trend_href, r.input, title="trend of this input"), class_="run-input"),
                        tag("td", r.format or ""),
                        tag("td", r.started_at[:19].replace("T", " ")),
                        tag("td", f"{r.duration_s:.2f} s"),
                        tag("td", _tokens(r.total_tokens)),
                        tag("td", _commit(r)),
                        tag("td", ", ".join(r.tags)),
                    ]
                ),
                data_run=r.id,
                data_status=r.status,
                data_verdict=said["verdict"],
            )
        )
    head = [
        "",
        "run",
        "name",
        "status",
        "cases",
        "pass rate",
        "command",
        "input",
        "format",
        "started",
        "time",
        "tokens",
        "commit",
        "tags",
    ]
    listing = tag(
        "table",
        Html(f"<thead><tr>{join(tag('th', h) for h in head)}</tr></thead><tbody>{join(rows)}</tbody>"),
        id="runs",
    )
    pager = _pager(filters, page, total, per_page) if total > per_page else ""
    return join([tag("h1", f"Runs ({total})"), form, toolbar, listing, pager])


# -- one run ------------------------------------------------------------------------------------
def run_views(run: Run, views: Sequence[RunView]) -> Html:
    """The sections the plugins' run views give for ``run``'s format (a failing view shows its error)."""
    parts = []
    for view in views:
        if view.formats and run.format not in view.formats:
            continue
        try:
            body = view.render(run)
        except Exception as exc:  # a broken view must not take the page down
            log.warning("run view %s of plugin %s failed: %r", view.name, view.plugin, exc)
            body = tag("p", f"this view failed: {exc!r}", class_="fail")
        if body:
            parts.append(section(view.title, Html(body), class_="view", data_view=view.name))
    return join(parts)


def ordered_cases(run: Run) -> list[tuple[int, Mapping[str, Any]]]:
    """``(index, case JSON)`` of the run's cases, failures first; ``index`` (from 1) is the case's URL part."""
    cases = [(i, c.to_json()) for i, c in enumerate(run.cases, 1)]
    place = {id(case): i for i, case in cases}
    return [(place[id(c)], c) for c in failures_first(c for _, c in cases)]


def _score(run: Run) -> Html:
    """The run's verdict and pass rate, in the corner of its page."""
    said = status.of_run(run)
    rate, _, of_ran = said["rate"].partition(" ")
    return tag(
        "div",
        join(
            [
                badge(said["verdict"]),
                tag("div", rate or "–", class_="big"),
                tag("div", of_ran, class_="muted") if of_ran else "",
                tag("div", said["counts"]),
            ]
        ),
        class_="score",
        id="score",
    )


def run_page(run: Run, views: Sequence[RunView], previous: Run | None, *, standalone: bool = False) -> Html:
    """A run's page: the cases table first (failures first), the plugins' views, the cases' details, then the
    run's metadata folded; ``standalone`` leaves out what needs the viewer (trends, compare, the API), and
    its case links are anchors in the page."""
    ordered = ordered_cases(run)
    cases = [c for _, c in ordered]
    said = status.of_run(run)
    banner: Html = Html("")
    if run.status in ("error", "interrupted"):
        stderr = first_stderr(cases)
        banner = tag(
            "div",
            join(
                [
                    tag("b", "The run could not finish: " if run.status == "error" else "The run was interrupted: "),
                    run.message or run.status,
                    json_block(stderr, label="agent stderr") if stderr else "",
                ]
            ),
            class_="banner",
            id="aborted",
        )
    links: list[Any] = [link("/trend?" + urlencode({"input": run.input}), "trend of this input"), " · "]
    if previous is not None:
        links += [link(f"/compare?a={previous.id}&b={run.id}", f"compare with previous run #{previous.id}"), " · "]
    links += [link(f"/api/runs/{run.id}", "JSON"), " · ", link(f"/runs/{run.id}/export", "save as HTML")]
    what = " · ".join(filter(None, [run.name, run.command, run.input]))
    title = f" Run #{run.id} · {what}" if run.id else f" {what}"
    href = (lambda i: f"#case-{i}") if standalone else (lambda i: f"/runs/{run.id}/cases/{i}")
    table = cases_table(ordered, href) if cases else empty("this run recorded no cases")
    return join(
        [
            tag("div", join([tag("h1", join([badge(said["verdict"]), title])), _score(run)]), class_="run-head"),
            tag("p", said["headline"], id="headline", class_=f"headline {status.TONE.get(said['verdict'], '')}"),
            banner,
            "" if standalone else tag("p", join(links), class_="links"),
            section(
                f"Cases ({len(cases)}, failures first)",
                join([case_toolbar(cases) if cases else "", table]),
                id="cases",
            ),
            run_views(run, views),
            section(
                "Case details",
                join(case_block(c, anchor=f"case-{i}") for i, c in ordered),
                id="case-details",
            )
            if cases
            else "",
            tag(
                "details",
                join(
                    [tag("summary", "Run metadata and charts"), run_facts(run), summary_charts(cases) if cases else ""]
                ),
                id="run-metadata",
            ),
        ]
    )


def run_facts(run: Run) -> Html:
    """The run's metadata: command, input, name, times, counts, tokens, git, agent, settings, tags."""
    agent = run.agent or {}
    said = status.of_run(run)
    return facts(
        [
            ("status", join([badge(said["verdict"]), " ", run.message or ""])),
            ("command", run.command),
            ("format", run.format),
            ("input", run.input),
            ("name", run.name),
            ("started", run.started_at),
            ("duration", f"{run.duration_s:.3f} s"),
            ("cases", said["counts"] + (f" ({said['rate']})" if said["rate"] else "")),
            (
                "tokens",
                " / ".join(
                    f"{k} {v:,}"
                    for k, v in (("in", run.input_tokens), ("out", run.output_tokens), ("total", run.total_tokens))
                    if v is not None
                ),
            ),
            ("git", " ".join(filter(None, [run.git_commit, "(dirty)" if run.git_dirty else "", run.git_branch]))),
            ("input digest", run.input_digest),
            ("agent", " ".join(filter(None, [agent.get("name"), agent.get("version")]))),
            ("capabilities", json_block(agent.get("capabilities")) if agent.get("capabilities") else ""),
            (
                "settings",
                tag("details", join([tag("summary", ", ".join(run.settings)), json_block(run.settings)]))
                if run.settings
                else "",
            ),
            ("tags", ", ".join(run.tags)),
            ("agentpack", run.tool_version),
        ]
    )


def case_page(run: Run, index: int) -> Html | None:
    """One case of ``run`` (``index`` from 1): its checks with diffs, its transcript, prev/next in the run
    page's order; ``None`` when the run has no such case."""
    ordered = ordered_cases(run)
    place = next((n for n, (i, _) in enumerate(ordered) if i == index), None)
    if place is None:
        return None
    case = ordered[place][1]
    nav: list[Any] = [link(f"/runs/{run.id}", f"← run #{run.id}")]
    if place > 0:
        nav += [" · ", link(f"/runs/{run.id}/cases/{ordered[place - 1][0]}", "previous case", id="prev-case")]
    if place + 1 < len(ordered):
        nav += [" · ", link(f"/runs/{run.id}/cases/{ordered[place + 1][0]}", "next case", id="next-case")]
    nav.append(tag("span", f" · case {place + 1} of {len(ordered)} (failures first)", class_="muted"))
    return join(
        [
            tag("p", join(nav), class_="links"),
            tag("h1", join([badge(str(case.get("status"))), f" {key_of(case)}"])),
            case_block(case, open_=True),
            tag("details", join([tag("summary", "the case as JSON"), json_block(case)]), id="case-json"),
        ]
    )


# -- compare ------------------------------------------------------------------------------------
def _change_rows(entries: Sequence[Mapping[str, Any]], kind: str) -> Html:
    def ms(value: float | None) -> str:
        return "" if value is None else f"{value * 1000:+.1f} ms"

    rows = [
        tag(
            "tr",
            join(
                [
                    tag("td", tag("code", e["key"])),
                    tag("td", badge(e["before"]) if e["before"] else "–"),
                    tag("td", badge(e["after"]) if e["after"] else "–"),
                    tag("td", ms(e["duration_delta_s"])),
                    tag("td", "" if e["tokens_delta"] is None else f"{e['tokens_delta']:+,.0f}"),
                    tag("td", e["message"]),
                ]
            ),
            class_=kind,
        )
        for e in entries
    ]
    head = join(tag("th", h) for h in ("case", "before", "after", "time", "tokens", "message"))
    return tag("table", Html(f"<thead><tr>{head}</tr></thead><tbody>{join(rows)}</tbody>"), class_=f"changes {kind}")


def compare_picker(runs: Sequence[Run], message: str = "") -> Html:
    def choose(name: str, label: str, default: int | None) -> Html:
        options = join(tag("option", r.label, value=r.id, selected=r.id == default) for r in runs)
        return tag("label", join([label, tag("select", options, name=name, id=f"pick-{name}")]))

    form = tag(
        "form",
        join(
            [
                choose("a", "base (older)", runs[1].id if len(runs) > 1 else None),
                choose("b", "head (newer)", runs[0].id if runs else None),
                tag("button", "Compare", type="submit"),
            ]
        ),
        class_="filters",
        method="get",
        action="/compare",
    )
    return join([tag("h1", "Compare two runs"), tag("p", message) if message else "", form if runs else ""])


def _output_diffs(before: Mapping[str, Case], after: Mapping[str, Case]) -> list[Html]:
    """A word (or JSON) diff for every case in both runs whose output changed."""
    blocks = []
    for key, new in after.items():
        old = before.get(key)
        if old is None:
            continue
        was, now = output_of(old.to_json()), output_of(new.to_json())
        diff = diff_block(was, now, labels=("base", "head"))
        if diff:
            head = join([tag("code", key), " ", badge(old.status), " → ", badge(new.status)])
            blocks.append(
                tag("div", join([tag("div", head, class_="label"), diff]), class_="output-diff", data_case=key)
            )
    return blocks


def compare_page(result: Mapping[str, Any], base: Run, head: Run, runs: Sequence[Run]) -> Html:
    d = result["deltas"]
    good = result["verdict"] == "no regressions"
    banner = tag(
        "div",
        join([badge(result["verdict"]), " ", tag("b", result["verdict_text"])]),
        class_="banner ok" if good else "banner",
        id="verdict",
        data_verdict=result["verdict"],
    )
    b, h = result["base"], result["head"]
    notes = []
    if not result["same_input"]:
        notes.append(tag("p", f"different inputs: {b['input']} and {h['input']}", class_="warn"))
    elif result["input_changed"]:
        notes.append(tag("p", "the input changed between these runs (its digest differs)", class_="muted"))
    summary = table(
        ["", link(f"/runs/{base.id}", f"base #{base.id}"), link(f"/runs/{head.id}", f"head #{head.id}"), "change"],
        [
            ["status", badge(status.of_run(base)["verdict"]), badge(status.of_run(head)["verdict"]), ""],
            [
                "pass rate",
                status.of_run(base)["rate"] or "–",
                status.of_run(head)["rate"] or "–",
                f"{d['pass_rate'] * 100:+.1f} pts",
            ],
            ["cases", status.of_run(base)["counts"], status.of_run(head)["counts"], ""],
            ["duration", f"{base.duration_s:.2f} s", f"{head.duration_s:.2f} s", f"{d['duration_s']:+.2f} s"],
            [
                "mean case time",
                f"{result['mean_case_duration_s']['base'] * 1000:.1f} ms",
                f"{result['mean_case_duration_s']['head'] * 1000:.1f} ms",
                f"{d['mean_case_duration_s'] * 1000:+.1f} ms",
            ],
            [
                "tokens",
                _tokens(base.total_tokens),
                _tokens(head.total_tokens),
                "" if d["total_tokens"] is None else f"{d['total_tokens']:+,.0f}",
            ],
            ["commit", _commit(base), _commit(head), ""],
            ["started", base.started_at[:19], head.started_at[:19], ""],
        ],
        id="compare-summary",
    )
    sections = []
    for kind, title in TITLES.items():
        entries = result["changes"][kind]
        if entries:
            sections.append(section(f"{title}: {len(entries)}", _change_rows(entries, kind), id=kind))
    before, after = base.case_map(), head.case_map()
    changed = [e for kind in ("regressed", "fixed", "changed") for e in result["changes"][kind]]
    if changed:
        pairs = []
        for e in changed:
            left, right = before.get(e["key"]), after.get(e["key"])
            pairs.append(
                tag(
                    "div",
                    join(
                        [
                            tag("div", case_block(left.to_json()) if left else "–"),
                            tag("div", case_block(right.to_json()) if right else "–"),
                        ]
                    ),
                    class_="side",
                )
            )
        sections.append(section("Changed cases side by side (base | head)", join(pairs), id="side-by-side"))
    outputs = _output_diffs(before, after)
    if outputs:
        sections.append(section(f"Outputs that changed: {len(outputs)}", join(outputs), id="output-diffs"))
    keys = list(after) + [k for k in before if k not in after]
    every = table(
        ["case", f"#{base.id}", f"#{head.id}", f"#{base.id} time", f"#{head.id} time"],
        [
            [
                tag("code", k),
                badge(before[k].status) if k in before else "–",
                badge(after[k].status) if k in after else "–",
                f"{before[k].duration_s * 1000:.1f} ms" if k in before else "",
                f"{after[k].duration_s * 1000:.1f} ms" if k in after else "",
            ]
            for k in keys
        ],
        id="all-cases",
    )
    sections.append(section(f"All cases ({len(keys)}; {result['unchanged']} unchanged)", every))
    return join(
        [
            tag("h1", f"Compare #{base.id} → #{head.id}"),
            banner,
            *notes,
            summary,
            *sections,
            tag("details", join([tag("summary", "pick other runs"), compare_picker(runs)])),
        ]
    )


# -- trend --------------------------------------------------------------------------------------
def trend_index(inputs: Sequence[tuple[str, int, str]]) -> Html:
    if not inputs:
        return join([tag("h1", "Trends"), empty("no runs recorded yet", "agentpack eval PATH  # records a run")])
    rows = [
        [link("/trend?" + urlencode({"input": name}), name, class_="trend-link"), count, latest[:19].replace("T", " ")]
        for name, count, latest in inputs
    ]
    return join([tag("h1", "Trends"), tag("p", "Pick an input:"), table(["input", "runs", "latest"], rows)])


def trend_page(result: Mapping[str, Any], runs: Sequence[Run]) -> Html:
    points = result["points"]
    labels = [f"#{p['id']}" for p in points]
    tone = {"no regression": "ok", "not enough history": "note", "flaky": "note"}.get(result["verdict"], "")
    verdict = result["verdict_text"]
    latencies = [c.duration_s * 1000 for r in runs for c in r.cases if c.status != "skipped"]
    tokens = [(label, float(p["total_tokens"])) for label, p in zip(labels, points, strict=True) if p["total_tokens"]]
    figures: list[tuple[str, Html]] = [
        (
            "pass rate per run",
            Html(charts.line_chart(list(zip(labels, [p["pass_rate"] for p in points], strict=True)))),
        ),
        (
            "run duration",
            Html(
                charts.line_chart(
                    list(zip(labels, [p["duration_s"] for p in points], strict=True)),
                    title="run duration",
                    y_max=0.0,
                    fmt=lambda v: f"{v:.2f} s",
                )
            ),
        ),
        ("case latency distribution over these runs", Html(charts.histogram(latencies, title="case latency"))),
        (
            "tokens per run",
            Html(charts.bar_chart(tokens, title="tokens")) if tokens else tag("p", "no token usage recorded"),
        ),
    ]
    chart_block = tag(
        "div",
        join(tag("figure", join([svg, tag("figcaption", caption)])) for caption, svg in figures),
        class_="charts",
    )
    ids = [r.id for r in runs]
    history_rows = []
    for c in result["cases"]:
        if c["trend"] == "passing":
            continue
        seen = {h["run"]: h["status"] for h in c["history"]}
        cells = join(
            tag("span", "", class_=seen.get(i, "absent"), title=f"#{i}: {seen.get(i, 'not run')}") for i in ids
        )
        history_rows.append(
            [
                tag("code", c["key"]),
                badge(c["trend"]),
                c["runs"],
                c["flips"],
                c["passed"],
                c["failed"],
                tag("span", cells, class_="cells"),
            ]
        )
    histories = (
        table(
            ["case", "history", "runs", "flips", "passed", "failed", "oldest → newest"], history_rows, id="case-history"
        )
        if history_rows
        else tag("p", "every case passed in every run", class_="muted")
    )
    runs_table = table(
        ["run", "status", "pass rate", "passed", "duration", "p50 / p95 case", "tokens", "commit"],
        [
            [
                link(f"/runs/{p['id']}", f"#{p['id']}"),
                badge(p["verdict"]),
                _pct(p["pass_rate"]),
                f"{p['passed']}/{p['total']}",
                f"{p['duration_s']:.2f} s",
                f"{p['case_p50_s'] * 1000:.1f} / {p['case_p95_s'] * 1000:.1f} ms",
                _tokens(p["total_tokens"]),
                (p["commit"] or "")[:8] + (" (dirty)" if p["dirty"] and p["commit"] else ""),
            ]
            for p in reversed(points)
        ],
    )
    return join(
        [
            tag("h1", f"Trend of {result['input']}"),
            tag(
                "div",
                join([badge(result["verdict"]), " ", tag("b", verdict)]),
                class_=f"banner {tone}".strip(),
                id="verdict",
                data_verdict=result["verdict"],
            ),
            section("Cases that did not always pass", histories),
            chart_block,
            section(f"Runs ({len(points)})", runs_table),
        ]
    )
