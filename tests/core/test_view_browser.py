"""``agentpack view`` in a real browser: Playwright driving the system's Chromium (Debian's /usr/bin/chromium).

Every page is loaded, a run clicked through, two runs compared, a filter applied, and the browser's
console must stay free of errors. Screenshots of each page go to ``$AGENTPACK_TEST_ARTIFACTS`` (CI keeps
them) or a temporary folder. Skipped, with the reason, where Chromium or the ``playwright`` package is
missing (``.ci/run`` installs both, so CI always runs these).
"""

import itertools
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from .conftest import AGENTPACK, serving

CHROMIUM = os.environ.get("AGENTPACK_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
EXAMPLES = Path(__file__).parents[2] / "examples"
EXAMPLE_PACK = EXAMPLES / "ecp" / "conformance-pack"

pytest.importorskip("starlette", reason="agentpack view needs the mcp extra (starlette, uvicorn)")
sync_api = pytest.importorskip(
    "playwright.sync_api", reason="the playwright package is not installed (pip install playwright)"
)
if not (os.path.isfile(CHROMIUM) and os.access(CHROMIUM, os.X_OK)):
    pytest.skip(
        f"no Chromium at {CHROMIUM} (apt-get install chromium, or set AGENTPACK_CHROMIUM)", allow_module_level=True
    )


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory):
    folder = os.environ.get("AGENTPACK_TEST_ARTIFACTS")
    path = Path(folder) / "viewer" if folder else tmp_path_factory.mktemp("screenshots")
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="module")
def browser():
    with sync_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def page(browser):
    """A fresh page that records console errors and uncaught exceptions; the test fails on any."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    problems = []
    tab.on(
        "console",
        lambda message: problems.append(f"console {message.type}: {message.text}") if message.type == "error" else None,
    )
    tab.on("pageerror", lambda error: problems.append(f"page error: {error}"))
    tab.on("requestfailed", lambda request: problems.append(f"request failed: {request.url}"))
    yield tab
    context.close()
    assert problems == []


def shot(page, artifacts, name):
    page.screenshot(path=str(artifacts / f"{name}.png"), full_page=True)


def test_the_run_list_and_a_filter(page, viewer_url, artifacts):
    page.goto(viewer_url)
    assert page.title() == "runs · agentpack view"
    assert page.locator("#runs tbody tr").count() == 6
    shot(page, artifacts, "runs-list")
    page.select_option("#filter-status", "failed")
    page.click("#apply-filters")
    page.wait_for_url("**/?*status=failed*")
    assert page.locator("#runs tbody tr").count() == 1
    assert page.locator("#runs tbody tr").get_attribute("data-run") == "3"
    shot(page, artifacts, "runs-filtered")


def test_click_through_a_run(page, viewer_url, artifacts):
    page.goto(viewer_url)
    page.click("a.run-link:text-is('#3')")
    page.wait_for_url("**/runs/3")
    failing = page.locator("details.case.failing")
    assert failing.count() == 1 and failing.get_attribute("open") is not None
    assert page.locator("details.case").first.get_attribute("data-case") == "smoke/b"
    assert "lookup_order" in failing.inner_text()
    assert page.locator("svg.chart").count() == 3
    shot(page, artifacts, "run")
    page.check("#failures-only")
    assert page.locator("#case-count").inner_text() == "1 shown"
    page.uncheck("#failures-only")
    page.fill("#case-filter", "alpha")
    assert page.locator("#case-count").inner_text() == "1 shown"
    page.click("text=compare with previous run #2")
    page.wait_for_url("**/compare?a=2&b=3")
    assert "1 regression" in page.locator("#verdict").inner_text()


def test_an_aborted_run(page, viewer_url, artifacts):
    page.goto(viewer_url + "runs/5")
    banner = page.locator("#aborted")
    assert "ImportError: no module x" in banner.inner_text()
    shot(page, artifacts, "run-aborted")


def test_compare_two_picked_runs(page, viewer_url, artifacts):
    page.goto(viewer_url)
    button = page.locator("#compare-selected")
    assert button.is_disabled()
    page.check("input.pick[value='3']")
    page.check("input.pick[value='2']")
    assert button.is_enabled() and button.inner_text() == "Compare #2 → #3"
    button.click()
    page.wait_for_url("**/compare?a=2&b=3")
    assert page.locator("table.changes.regressed tbody tr").count() == 1
    assert page.locator("#side-by-side .side").count() == 1
    halves = [page.locator("#side-by-side .side > div").nth(i).bounding_box()["width"] for i in range(2)]
    assert min(halves) > 450  # base | head in two readable halves
    values = page.locator("#side-by-side table.assertions td pre").locator("visible=true")
    widths = [values.nth(i).bounding_box()["width"] for i in range(values.count())]
    assert len(widths) >= 2 and min(widths) > 90  # never a character or two per line
    assert page.locator("#output-diffs .output-diff[data-case='smoke/b'] pre del").inner_text() == "no"
    shot(page, artifacts, "compare")
    page.goto(viewer_url + "compare")
    shot(page, artifacts, "compare-picker")
    page.select_option("#pick-a", "4")
    page.select_option("#pick-b", "5")
    page.click("text=Compare >> nth=-1")
    page.wait_for_url("**/compare?a=4&b=5")
    assert "the run error" in page.locator("#verdict").inner_text()


def test_trend_pages(page, viewer_url, artifacts):
    page.goto(viewer_url + "trend")
    shot(page, artifacts, "trend-index")
    page.click("a.trend-link:text-is('packs/alpha')")
    page.wait_for_url("**/trend?input=packs%2Falpha")
    assert page.locator("svg.chart").count() == 4
    history = page.locator("#case-history tbody tr")
    assert history.count() == 1 and "REGRESSED" in history.inner_text()  # one pass -> fail is no flake
    assert "regression" in page.locator("#verdict").inner_text()
    shot(page, artifacts, "trend")


def test_the_issue_scenario_run_an_eval_twice_and_look(page, tmp_path, artifacts):
    """Done when: run an eval twice, open agentpack view, see both runs, what changed and a trend chart."""
    pack = tmp_path / "pack"
    shutil.copytree(EXAMPLE_PACK, pack)
    env = dict(os.environ, AGENTPACK_RUNS=str(tmp_path / "runs.sqlite"))
    for _ in range(2):
        result = subprocess.run(
            [str(AGENTPACK), "eval", str(pack)],
            check=False,
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert result.returncode == 0, result.stderr
    with serving(tmp_path / "runs.sqlite") as url:
        page.goto(url)
        assert page.locator("#runs tbody tr").count() == 2
        shot(page, artifacts, "issue-runs")
        page.click("a.run-link:text-is('#2')")
        page.click("text=compare with previous run #1")
        assert "no regressions" in page.locator("#verdict").inner_text()
        shot(page, artifacts, "issue-compare")
        page.goto(url + "trend?input=pack")
        assert page.locator("svg.chart-line").count() == 2
        shot(page, artifacts, "issue-trend")


@pytest.fixture(scope="module")
def plugin_runs(tmp_path_factory):
    """Runs of the formats that add run views (ECP eval, openexperts dry run, DCI resolution), recorded by
    the real commands, with their HTML reports; yields the viewer's URL and the report files."""
    folder = tmp_path_factory.mktemp("plugin-runs")
    for plugin in ("agentpack_ecp", "agentpack_openexperts", "agentpack_dci"):
        pytest.importorskip(plugin)
    shutil.copytree(EXAMPLE_PACK, folder / "pack")
    shutil.copytree(EXAMPLES / "openexperts" / "acme-support", folder / "acme-support")
    shutil.copytree(EXAMPLES / "dci" / "workspace", folder / "ws", ignore=shutil.ignore_patterns("state"))
    store = folder / "runs.sqlite"
    env = dict(os.environ, AGENTPACK_RUNS=str(store))
    bindings = str(EXAMPLES / "openexperts" / "bindings.yaml")
    plan = ["acme-support", "triage-ticket", "--input", "ticket_id=T-100", "--input", "customer_id=C-1"]
    resolve = ["-w", "ws", "--require", "web-search,summarization", "--selection", "cover", "--no-history"]
    commands = [
        ["eval", "pack", "--report", "eval.html"],
        ["experts", "dry-run", *plan, "--bindings", bindings, "--report", "plan.html"],
        ["dci", "resolve", *resolve, "--no-prompt", "--report", "resolve.html"],
    ]
    for args in commands:
        result = subprocess.run(
            [str(AGENTPACK), *args], check=False, env=env, cwd=folder, capture_output=True, text=True, timeout=300
        )
        assert result.returncode == 0, (args, result.stderr)
    with serving(store) as url:
        yield url, folder


def test_the_ecp_view_shows_questions_expectations_and_citations(page, plugin_runs, artifacts):
    url, _ = plugin_runs
    page.goto(url + "runs/1")
    view = page.locator("section[data-view='ecp-questions']")
    assert view.locator("table.ecp-questions tbody tr").count() == 7
    assert "What vertical datum do predicted heights use by default?" in view.inner_text()
    assert "✓ must_cite: docs/configuration.md" in view.inner_text()
    shot(page, artifacts, "run-ecp")


def test_the_dry_run_view_shows_the_plan_and_its_approvals(page, plugin_runs, artifacts):
    url, _ = plugin_runs
    page.goto(url + "runs/2")
    view = page.locator("section[data-view='experts-plan']")
    assert view.locator("table.experts-plan tbody tr").count() == 5
    confirm = view.locator("tr", has=page.locator("[data-tier='confirm']"))
    assert "not executed" in confirm.inner_text() and "waits for a person's approval" in confirm.inner_text()
    assert view.locator("ol.experts-steps li").count() == 8
    shot(page, artifacts, "run-experts-dry-run")


def test_the_dci_view_shows_candidates_scores_and_a_chart(page, plugin_runs, artifacts):
    url, _ = plugin_runs
    page.goto(url + "runs/3")
    view = page.locator("section[data-view='dci-candidates']")
    assert view.locator("svg.chart-breakdown").count() == 1
    assert view.locator("table.dci-candidates tbody tr").count() >= 2
    assert "web-search::skills/research/web-search" in view.inner_text()
    shot(page, artifacts, "run-dci")


@pytest.mark.parametrize(
    ("name", "view"),
    [("eval.html", "ecp-questions"), ("plan.html", "experts-plan"), ("resolve.html", "dci-candidates")],
)
def test_the_html_reports_open_offline_and_match_the_viewer(page, plugin_runs, artifacts, name, view):
    """The report files are self-contained (the page fixture fails on any request) and show the same sections."""
    _, folder = plugin_runs
    page.goto((folder / name).as_uri())
    assert page.locator("svg.chart-passrate").count() == 1
    assert page.locator(f"section[data-view='{view}']").count() == 1
    assert page.locator("table.case-table").first.bounding_box()["y"] < 700  # the cases table on the first screen
    if name == "eval.html":  # the ECP eval report shows each question and its citations, as the viewer does
        questions = page.locator("table.ecp-questions")
        assert (
            questions.locator("tbody tr").count() == 7
            and "✓ must_cite: docs/configuration.md" in questions.inner_text()
        )
    page.check("#failures-only")
    shot(page, artifacts, f"report-{name.removesuffix('.html')}")


def failing_rpc_run(tmp_path, *args):
    """``rpc run`` of the example manifest with one scenario made to fail, with ``args``; returns its folder."""
    pytest.importorskip("agentpack_agent_rpc")
    work = tmp_path / "rpc"
    shutil.copytree(EXAMPLES / "agent_rpc", work)
    manifest = (work / "manifest.yaml").read_text()
    (work / "failing.yaml").write_text(manifest.replace("value: order number,", "value: no such words,"))
    env = dict(os.environ, PATH=f"{AGENTPACK.parent}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        [str(AGENTPACK), "rpc", "run", "failing.yaml", *args],
        check=False,
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
    return work


def test_the_rpc_run_report_opens_offline_with_its_charts_and_steps(page, tmp_path, artifacts):
    """``rpc run --report x.html``: the run's page with the agent protocol's section, self-contained, failures first."""
    work = failing_rpc_run(tmp_path, "--report", "r.html", "--no-record")
    page.goto((work / "r.html").as_uri())
    assert page.locator("svg.chart-passrate").count() == 1 and page.locator("svg.chart-hist").count() == 2
    view = page.locator("section[data-view='agent-rpc']")
    assert "every scenario ran to its end; 1 did not pass" in view.inner_text()
    first = page.locator("details.case").first
    assert first.get_attribute("data-status") == "failed" and first.get_attribute("open") is not None
    assert "no such words" in first.locator("table.assertions").first.inner_text()
    assert "exit reason: ok" not in page.locator("body").inner_text()
    shot(page, artifacts, "report-rpc-run")
    page.check("#failures-only")
    assert page.locator("#case-count").inner_text() == "1 shown"


# -- issue 27: the cases table first, diffs, honest statuses, what a person sees ---------------------
def _case(case_id, status, *, expected=None, actual=None, duration=0.01, question=None, answer=None, tags=None):
    case = {
        "id": case_id,
        "status": status,
        "duration_s": duration,
        "message": "" if status == "passed" else f"{case_id} did not hold",
        "assertions": [
            {"name": "answer", "passed": status == "passed", "expected": expected, "actual": actual, "message": ""}
        ],
        "details": {k: v for k, v in (("question", question), ("answer", answer)) if v is not None},
    }
    if tags:
        case["tags"] = tags
    return case


def _eval(name, cases, aborted=None):
    return {
        "schema_version": 1,
        "command": "eval",
        "evaluations": [{"name": name, "format": "ecp", "suites": [{"id": "qa", "cases": cases}], "aborted": aborted}],
    }


LONG = "supercalifragilistic-identifier-of-the-expected-release-channel-for-customers"


@pytest.fixture(scope="module")
def honest_store(tmp_path_factory):
    """A store of runs that need honest words: diffs, a changed output, an always failing input, a flaky and a
    regressed case, an interrupted run."""
    from agentpack.results.runs import record_run

    store = tmp_path_factory.mktemp("honest") / "runs.sqlite"

    def record(input_key, name, cases, **kwargs):
        record_run(
            _eval(name, cases, kwargs.pop("aborted", None)),
            command="eval",
            input=input_key,
            name=name,
            store=store,
            **kwargs,
        )

    first = [
        _case(
            "monday",
            "failed",
            expected="The order shipped on Monday morning",
            actual="The order shipped on Tuesday morning",
            question="When did order 42 ship?",
            tags=["smoke"],
        ),
        _case(
            "json",
            "failed",
            expected={"status": "shipped", "items": [1, 2]},
            actual={"status": "pending", "items": [1, 2, 3]},
        ),
        _case("long", "failed", expected=LONG, actual=LONG.replace("customers", "partners"), duration=0.02),
        _case("ok", "passed", expected="yes", actual="yes", answer="Yes, it is in stock.", duration=0.3),
    ]
    record("packs/diffs", "diffs pack", first)  # 1
    second = [dict(c) for c in first]
    second[3] = _case("ok", "passed", expected="yes", actual="yes", answer="Yes, three are in stock.", duration=0.3)
    record("packs/diffs", "diffs pack", second)  # 2
    for _ in range(2):  # 3, 4
        record("packs/broken", "broken pack", [_case("a", "failed", expected="x", actual="y")])
    for x, y in (("passed", "passed"), ("failed", "passed"), ("passed", "failed")):  # 5, 6, 7
        record("packs/flaky", "flaky pack", [_case("x", x), _case("y", y)])
    cut = [_case(f"c{i}", "passed") for i in range(5)] + [_case("c5", "failed")]
    record("packs/big", "big pack", cut, status="interrupted", aborted="interrupted (Ctrl-C) before the end")  # 8
    return store


@pytest.fixture(scope="module")
def honest(honest_store):
    with serving(honest_store) as url:
        yield url


def test_a_run_opens_on_its_cases_table_failures_first(page, honest, artifacts):
    page.goto(honest + "runs/1")
    table = page.locator("#case-table")
    assert table.bounding_box()["y"] < 400  # the first screen, not below a metadata table
    assert page.locator("#run-metadata").get_attribute("open") is None  # folded below
    heads = page.locator("#case-table thead th").all_inner_texts()
    assert heads == ["status", "case", "input", "expected", "actual", "checks", "duration"]
    rows = page.locator("#case-table tbody tr")
    assert [rows.nth(i).get_attribute("data-status") for i in range(4)] == ["failed"] * 3 + ["passed"]
    monday = page.locator("#case-table tr[data-row='qa/monday']").inner_text()
    assert "When did order 42 ship?" in monday and "0/1" in monday
    assert "diffs pack" in page.locator("h1").inner_text()
    assert page.locator("#score").inner_text().split("\n")[:2] == ["FAILED", "25.0%"]
    assert page.locator("#headline").inner_text() == "FAILED 1 passed, 3 failed of 4 (25.0%)"
    expected = rows.first.locator("td").nth(3).bounding_box()
    assert expected["width"] > 120  # no one-character columns
    shot(page, artifacts, "run-page-after")


def test_the_cases_table_sorts_and_filters(page, honest):
    page.goto(honest + "runs/1")
    rows = page.locator("#case-table tbody tr")
    page.click("#case-table button.sort:text-is('duration')")
    order = [r.get_attribute("data-row") for r in rows.all()]
    assert order == ["qa/json", "qa/monday", "qa/long", "qa/ok"]  # fastest first; ties keep their order
    page.click("#case-table button.sort:text-is('duration')")
    assert rows.first.get_attribute("data-row") == "qa/ok"  # slowest first
    page.select_option("#case-status", "passed")
    assert page.locator("#case-count").inner_text() == "1 shown" and rows.locator("visible=true").count() == 1
    page.select_option("#case-status", "")
    page.select_option("#case-tag", "smoke")
    assert page.locator("#case-count").inner_text() == "1 shown"
    page.select_option("#case-tag", "")
    page.fill("#case-filter", "pending")
    assert page.locator("#case-count").inner_text() == "1 shown"
    assert page.locator("details.case[data-case='qa/json']").is_visible()
    assert not page.locator("details.case[data-case='qa/ok']").is_visible()


def test_a_case_page_has_its_diff_and_prev_next(page, honest, artifacts):
    page.goto(honest + "runs/1")
    page.click("a.case-link:text-is('qa/json')")
    page.wait_for_url("**/runs/1/cases/2")
    changes = page.locator("table.json-diff tbody tr").all_inner_texts()
    assert [c.split("\t")[0] for c in changes] == ["$.status", "$.items[2]"]
    assert "(absent)" in changes[1]
    assert not page.locator("#prev-case").count()  # the first case of the table
    page.click("#next-case")
    page.wait_for_url("**/runs/1/cases/3")
    shot(page, artifacts, "case-page-long-values")
    cells = page.locator("table.assertions td pre")
    widths = [cells.nth(i).bounding_box()["width"] for i in range(2)]
    assert min(widths) > 250  # expected and actual are readable columns
    lines = cells.first.evaluate(
        "e => { const s = getComputedStyle(e);"
        " const inner = e.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom);"
        " return Math.round(inner / parseFloat(s.lineHeight)); }"
    )
    assert lines <= 3  # the long identifier wraps at its hyphens at most, never a character or two per line
    page.click("#next-case")
    page.wait_for_url("**/runs/1/cases/1")
    diff = page.locator("pre.word-diff").first
    assert diff.locator("del").all_inner_texts() == ["Monday"] and diff.locator("ins").all_inner_texts() == ["Tuesday"]
    assert page.locator("#prev-case").is_visible() and page.locator("#next-case").is_visible()
    shot(page, artifacts, "case-page")


def test_compare_shows_the_output_that_changed_as_a_diff(page, honest, artifacts):
    page.goto(honest + "compare?a=1&b=2")
    assert "still failing" in page.locator("#verdict").inner_text()
    assert "ok" not in (page.locator("#verdict").get_attribute("class") or "").split()
    changed = page.locator("#output-diffs .output-diff")
    assert changed.count() == 1 and changed.first.get_attribute("data-case") == "qa/ok"
    assert changed.locator("pre ins").all_inner_texts() == ["three are"]
    shot(page, artifacts, "compare-diffs")


def test_statuses_say_what_happened(page, honest, plugin_runs, artifacts):
    page.goto(honest + "trend?input=packs/broken")
    verdict = page.locator("#verdict")
    assert (
        verdict.get_attribute("data-verdict") == "still failing" and "every one of the 2 runs" in verdict.inner_text()
    )
    assert "ok" not in verdict.get_attribute("class").split()
    page.goto(honest + "trend?input=packs/flaky")
    history = {
        row.locator("code").inner_text(): row.locator(".badge").inner_text()
        for row in page.locator("#case-history tbody tr").all()
    }
    assert history == {"qa/x": "FLAKY", "qa/y": "REGRESSED"}
    shot(page, artifacts, "trend-histories")
    page.goto(honest + "runs/8")
    assert page.locator("#headline").inner_text() == "INTERRUPTED after 6 cases: 5 passed, 1 failed"
    assert "%" not in page.locator("#score").inner_text()
    shot(page, artifacts, "run-interrupted")
    url, _ = plugin_runs
    page.goto(url + "runs/2")  # the dry run: 3 of 5 operations not executed
    assert page.locator("h1 .badge").inner_text() == "PARTLY RUN"
    assert "3 not run" in page.locator("#headline").inner_text()
    assert page.locator("#case-table tbody tr").first.locator(".badge").inner_text() == "NOT RUN"


def test_the_runs_list_names_searches_and_pages(page, honest, artifacts):
    page.goto(honest)
    names = page.locator("#runs td.run-name").all_inner_texts()
    assert names[0] == "big pack" and "diffs pack" in names
    assert page.locator("#runs tr[data-run='8'] .badge").inner_text() == "INTERRUPTED"
    page.fill("#filter-q", "flaky")
    page.click("#apply-filters")
    page.wait_for_url("**q=flaky*")
    assert page.locator("#runs tbody tr").count() == 3
    page.goto(honest + "?limit=3")
    assert page.locator("#runs tbody tr").count() == 3 and "page 1 of 3" in page.locator(".pager").inner_text()
    page.click("#page-next")
    page.wait_for_url("**page=2*")
    assert [r.get_attribute("data-run") for r in page.locator("#runs tbody tr").all()] == ["5", "4", "3"]
    shot(page, artifacts, "runs-paged")


def test_export_html_is_the_run_page_as_a_file(page, honest_store, tmp_path, artifacts):
    out = tmp_path / "run-1.html"
    args = ["runs", "export", "1", "-o", "html", "--to", str(out), "--store", str(honest_store)]
    result = subprocess.run([str(AGENTPACK), *args], check=False, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    page.goto(out.as_uri())
    assert page.locator("#case-table tbody tr").count() == 4 and page.locator("#headline").is_visible()
    page.click("a.case-link:text-is('qa/ok')")
    assert page.locator("details#case-4").get_attribute("open") is not None  # the anchor opens the case
    shot(page, artifacts, "export-html")


def test_validate_html_shows_hints_as_text_not_markup(page, tmp_path, artifacts):
    skill = tmp_path / "my-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: my-skill\ndescription: does things\ncolour: blue\n---\nbody\n")
    out = tmp_path / "validate.html"
    result = subprocess.run(
        [str(AGENTPACK), "validate", str(skill), "-o", "html"], check=False, capture_output=True, text=True, timeout=300
    )
    out.write_text(result.stdout)
    page.goto(out.as_uri())
    text = page.locator("table.findings").inner_text()
    assert "hint: allowed fields:" in text and "under 'metadata'" in text
    assert "<br>" not in text and "<small>" not in text and "&#x27;" not in text
    assert page.locator("table.findings small").count() >= 1
    shot(page, artifacts, "report-validate")


def test_the_rpc_run_page_in_the_viewer_spaces_its_totals(page, tmp_path, artifacts):
    """The agent protocol's totals are spans side by side: the viewer's stylesheet spaces them as the report does."""
    store = tmp_path / "runs.sqlite"
    failing_rpc_run(tmp_path, "--store", str(store))
    with serving(store) as url:
        page.goto(url + "runs/1")
        spans = page.locator("section[data-view='agent-rpc'] p.totals span")
        assert spans.count() >= 3
        boxes = [spans.nth(i).bounding_box() for i in range(3)]
        gaps = [b["x"] - (a["x"] + a["width"]) for a, b in itertools.pairwise(boxes)]
        assert min(gaps) >= 10, gaps  # "4 scenarios  3 passed", not "4 scenarios3 passed"
        assert page.locator("#case-table tbody tr").first.get_attribute("data-status") == "failed"
        page.select_option("#case-tag", "refunds")  # a scenario's tags (kept in its details) filter the table
        assert page.locator("#case-count").inner_text() == "1 shown"
        shot(page, artifacts, "run-rpc")
