"""``agentpack view`` over real HTTP on 127.0.0.1: every page, filters, the JSON API, errors, start-up cost."""

import json
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request

import pytest

from agentpack.kernel.registry import RunView
from agentpack.results.runs import open_store
from agentpack.results.viewer import pages
from agentpack.results.viewer.html import tag

from .conftest import AGENTPACK, serving

pytest.importorskip("starlette", reason="agentpack view needs the mcp extra (starlette, uvicorn)")


def get(url, path=""):
    try:
        with urllib.request.urlopen(url + path, timeout=30) as response:
            return response.status, response.headers, response.read().decode("utf-8")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers, exc.read().decode("utf-8")


def test_the_run_list_and_its_filters(viewer_url):
    status, headers, body = get(viewer_url)
    assert status == 200 and headers["Content-Security-Policy"].startswith("default-src 'self'")
    assert body.count("data-run=") == 6 and "Runs (6)" in body
    _, _, failed = get(viewer_url, "?status=error")
    assert failed.count("data-run=") == 1 and 'data-run="5"' in failed
    _, _, tagged = get(viewer_url, "?tag=nightly&format=skill")
    assert tagged.count("data-run=") == 1 and 'data-run="6"' in tagged
    _, _, dated = get(viewer_url, "?since=2026-03-02&until=2026-03-03")
    assert dated.count("data-run=") == 2
    _, _, none = get(viewer_url, "?input=nothing")
    assert "no runs match these filters" in none


def test_a_run_page_shows_failures_first_with_their_steps(viewer_url):
    status, _, body = get(viewer_url, "runs/3")
    assert status == 200
    assert body.index('data-case="smoke/b"') < body.index('data-case="smoke/a"')  # failures first
    assert "What is alpha?" in body  # the case's question
    assert "lookup_order" in body and "&quot;id&quot;: 42" in body  # tool calls as indented JSON
    assert "warning: slow lookup" in body  # step stderr
    assert 'class="chart chart-passrate"' in body and 'class="chart chart-hist"' in body
    assert 'href="/compare?a=2&amp;b=3"' in body


def test_an_unreachable_agent_shows_its_stderr_at_the_top(viewer_url):
    _, _, body = get(viewer_url, "runs/5")
    banner = body.index('id="aborted"')
    assert banner < body.index('id="cases"')
    assert "agent unreachable in scenario" in body[banner:] and "ImportError: no module x" in body[banner:]


def test_compare_and_trend_pages(viewer_url):
    _, _, body = get(viewer_url, "compare?a=2&b=3")
    assert "1 regression" in body and 'id="regressed"' in body and 'id="side-by-side"' in body
    assert body.index('id="regressed"') < body.index('id="new"') < body.index('id="removed"')
    _, _, default = get(viewer_url, "compare?b=5")
    assert "Compare #4 → #5" in default
    _, _, picker = get(viewer_url, "compare")  # the latest run (#6) is the first of its input
    assert "pick two runs" in picker and 'id="pick-a"' in picker
    _, _, trend = get(viewer_url, "trend?input=packs/alpha")
    assert "regression: the pass rate falls" in trend and 'id="case-history"' in trend
    assert 'data-status="regressed"' in trend and 'data-status="flaky"' not in trend  # one pass -> fail
    assert trend.count("<svg") == 4
    _, _, index = get(viewer_url, "trend")
    assert index.count('class="trend-link"') == 3


def test_the_json_api(viewer_url):
    _, headers, body = get(viewer_url, "api/runs?status=failed")
    assert headers["content-type"] == "application/json"
    assert [r["id"] for r in json.loads(body)["runs"]] == [3]
    run = json.loads(get(viewer_url, "api/runs/4")[2])["run"]
    assert run["agent"]["name"] == "SupportAgent" and len(run["cases"]) == 2
    assert json.loads(get(viewer_url, "api/compare?a=2&b=3")[2])["counts"]["regressed"] == 1
    assert json.loads(get(viewer_url, "api/trend?input=packs/alpha")[2])["regression"] is True
    status, _, missing = get(viewer_url, "api/runs/99")
    assert status == 404 and json.loads(missing)["ok"] is False


def test_missing_pages_and_runs_are_404_pages(viewer_url):
    for path in ("runs/99", "nowhere", "trend?input=nothing"):
        status, _, body = get(viewer_url, path)
        assert status == 404 and "<!doctype html>" in body, path


def test_assets_are_bundled_and_nothing_is_fetched_from_elsewhere(viewer_url):
    assert get(viewer_url, "static/app.css")[0] == 200 and get(viewer_url, "static/app.js")[0] == 200
    for path in ("", "runs/3", "compare?a=2&b=3", "trend?input=packs/alpha"):
        body = get(viewer_url, path)[2]
        assert "https://" not in body and "//cdn" not in body and 'src="http' not in body


def test_an_empty_store_says_so(tmp_path):
    with serving(tmp_path / "none.sqlite") as url:
        assert "no runs recorded yet" in get(url)[2]
        assert "no runs recorded yet" in get(url, "trend")[2]
        assert get(url, "runs/1")[0] == 404


def test_a_port_in_use_is_a_one_line_error(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        result = subprocess.run(
            [str(AGENTPACK), "view", "--port", str(port), "--store", str(tmp_path / "x.sqlite")],
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"error: port {port} on 127.0.0.1 is in use; choose another with --port (0: any free port)"
    ]


def test_ctrl_c_stops_the_viewer_with_130(seeded_store):
    proc = subprocess.Popen(
        [str(AGENTPACK), "view", "--port", "0", "--store", str(seeded_store)], stdout=subprocess.PIPE, text=True
    )
    try:
        url = proc.stdout.readline().split()[2]
        assert get(url)[0] == 200
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def test_cli_start_up_does_not_import_the_web_stack():
    code = (
        "import sys\nfrom agentpack.cli.app import main\nmain(['--help'])\n"
        "print([m for m in ('starlette', 'uvicorn', 'sqlite3', 'agentpack.results.viewer.app') if m in sys.modules])"
    )
    result = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60)
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_run_views_add_sections_and_a_broken_one_is_contained(seeded_store):
    def good(run):
        return tag("p", f"{len(run.cases)} cases of {run.format}", class_="mine")

    def broken(run):
        raise RuntimeError("view bug")

    views = [
        RunView(name="mine", title="Mine", formats=("ecp",), render=good, plugin="p"),
        RunView(name="other", title="Other format", formats=("dci",), render=good, plugin="p"),
        RunView(name="broken", title="Broken", formats=(), render=broken, plugin="p"),
    ]
    with open_store(seeded_store) as store:
        run = store.get(3)
    html = pages.run_page(run, views, None)
    assert '<p class="mine">3 cases of ecp</p>' in html and "Other format" not in html
    assert "this view failed: RuntimeError(&#x27;view bug&#x27;)" in html
    assert html.index('id="cases"') < html.index('data-view="mine"') < html.index('id="case-details"')


def test_case_pages_export_search_and_paging(viewer_url):
    status, _, case = get(viewer_url, "runs/3/cases/2")
    assert status == 200 and "smoke/b" in case and 'id="next-case"' in case and 'id="prev-case"' not in case
    assert get(viewer_url, "runs/3/cases/9")[0] == 404 and get(viewer_url, "runs/99/cases/1")[0] == 404
    status, headers, exported = get(viewer_url, "runs/3/export")
    assert status == 200 and headers["Content-Disposition"] == 'attachment; filename="run-3.html"'
    assert "<style>" in exported and 'href="#case-2"' in exported
    _, _, found = get(viewer_url, "?q=support")
    assert found.count("data-run=") == 2 and "Runs (2)" in found
    _, _, paged = get(viewer_url, "?limit=4&page=2")
    assert paged.count("data-run=") == 2 and "runs 5–6 of 6 · page 2 of 2" in paged
    assert 'href="/?limit=4&amp;page=1"' in paged
    _, _, api = get(viewer_url, "api/runs?q=alpha&limit=1")
    assert [(r["id"], r["verdict"]) for r in json.loads(api)["runs"]] == [(3, "failed")]
    _, _, one = get(viewer_url, "api/runs/5")
    assert json.loads(one)["run"]["headline"] == "ERROR: it could not finish (0 passed, 1 errors of 1)"
