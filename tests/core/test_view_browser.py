"""``agentpack view`` in a real browser: Playwright driving the system's Chromium (Debian's /usr/bin/chromium).

Every page is loaded, a run clicked through, two runs compared, a filter applied, and the browser's
console must stay free of errors. Screenshots of each page go to ``$AGENTPACK_TEST_ARTIFACTS`` (CI keeps
them) or a temporary folder. Skipped, with the reason, where Chromium or the ``playwright`` package is
missing (``.ci/run`` installs both, so CI always runs these).
"""

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
    assert page.locator("#flaky tbody tr").count() == 1
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
    [("eval.html", None), ("plan.html", "experts-plan"), ("resolve.html", "dci-candidates")],
)
def test_the_html_reports_open_offline_and_match_the_viewer(page, plugin_runs, artifacts, name, view):
    """The report files are self-contained (the page fixture fails on any request) and show the same sections."""
    _, folder = plugin_runs
    page.goto((folder / name).as_uri())
    assert page.locator("svg.chart-passrate").count() == 1
    if view:
        assert page.locator(f"section[data-view='{view}']").count() == 1
    page.check("#failures-only")
    shot(page, artifacts, f"report-{name.removesuffix('.html')}")


def test_the_rpc_run_report_opens_offline_with_its_charts_and_steps(page, tmp_path, artifacts):
    """``rpc run --report x.html``: the run's page with the agent protocol's section, self-contained, failures first."""
    pytest.importorskip("agentpack_agent_rpc")
    work = tmp_path / "rpc"
    shutil.copytree(EXAMPLES / "agent_rpc", work)
    manifest = (work / "manifest.yaml").read_text()
    (work / "failing.yaml").write_text(manifest.replace("value: order number,", "value: no such words,"))
    env = dict(os.environ, PATH=f"{AGENTPACK.parent}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        [str(AGENTPACK), "rpc", "run", "failing.yaml", "--report", "r.html", "--no-record"],
        check=False,
        env=env,
        cwd=work,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stderr
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
