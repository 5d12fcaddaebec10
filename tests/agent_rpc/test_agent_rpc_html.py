"""``rpc run --report x.html``: the viewer's run page built from the core's HTML pieces, with the agent protocol's
section: inline SVG charts, failures first (flaky first among passes), per-step checks, tool calls as indented
JSON, warnings and infos counted apart, no "exit reason ok" on a failed run, an unreachable agent's stderr on top.
"""

from __future__ import annotations

import json
import re
from html import unescape

from .conftest import PY, bad_target


def equals(value: str) -> dict:
    return {"type": "text_match", "condition": "equals", "value": value}


def text_of(page: str) -> str:
    """What a reader sees: the page without its markup, script and style."""
    body = re.sub(r"<(script|style)>.*?</\1>", "", page, flags=re.S)
    return unescape(re.sub(r"<[^>]+>", " ", body))


def run_page(agentpack_cli, path, tmp_path, *extra) -> tuple[int, str, dict]:
    page, native = tmp_path / "out" / "r.html", tmp_path / "out" / "r.json"
    result = agentpack_cli("rpc", "run", "-m", path, "--report", page, "--json-out", native, "--no-record", *extra)
    return result.exit_code, page.read_text(), json.loads(native.read_text())


def test_the_page_is_the_core_run_page_with_charts_and_failures_first(agentpack_cli, write_manifest, tmp_path):
    scenarios = [
        {"name": "a passes", "steps": [{"input": "hello", "graders": [equals("Echo: hello")]}]},
        {
            "name": "b coin",
            "repeat": 2,
            "pass_threshold": 0.5,
            "steps": [{"input": "flaky", "graders": [equals("good")]}],
        },
        {"name": "c tools", "steps": [{"input": "lookup A-1", "graders": [equals("nope")]}]},
    ]
    code, page, native = run_page(
        agentpack_cli, write_manifest(scenarios, env={"FLAKY_FILE": str(tmp_path / "n")}), tmp_path
    )
    assert code == 1 and native["totals"]["flaky"] == 1
    for chart in ("chart-passrate", "chart-suites", "chart-hist"):
        assert f'class="chart {chart}"' in page
    assert 'data-passed="2" data-failed="1" data-errors="0" data-skipped="0"' in page  # the JSON report's totals
    assert page.count('class="chart chart-hist"') == 2  # latency per scenario (the core's) and per step (the view's)
    assert f'aria-label="latency per step: {native["latency"]["count"]} values' in page
    assert not re.search(r"https?://|<link|\ssrc=", page), "self-contained"
    order = [m.group(1) for m in re.finditer(r'<details class="case[^"]*"[^>]*data-case="[^/"]+/([^"]+)"', page)]
    assert order == ["c tools", "b coin", "a passes"], "failures first, then flaky, then passes"
    assert '<b class="warn"> flaky</b>' in page
    assert "&quot;order_id&quot;: &quot;A-1&quot;,\n" in page  # tool calls as indented JSON
    failing = page[page.index('data-case="test run/c tools"') :]
    assert "text_match equals" not in failing and "text_match on public_output" in failing  # the step's checks
    totals = native["totals"]
    for pill in (f"{totals['scenarios']} scenarios", f"checks {totals['checks_passed']}/{totals['checks_total']}"):
        assert pill in page


def test_a_failed_run_never_says_exit_reason_ok(agentpack_cli, write_manifest, tmp_path):
    code, page, native = run_page(
        agentpack_cli, write_manifest([{"name": "x", "steps": [{"input": "hi", "graders": [equals("no")]}]}]), tmp_path
    )
    assert code == 1 and native["exit_reason"] == "ok" and native["ok"] is False
    shown = " ".join(text_of(page).split())
    assert not re.search(r"exit reason:? ok", shown, re.I), shown
    assert "every scenario ran to its end; 1 did not pass" in shown


def test_an_unreachable_agent_shows_its_stderr_at_the_top(agentpack_cli, write_manifest, tmp_path):
    target = [PY, "-c", "import sys; sys.stderr.write('ImportError: no module named foo\\n'); sys.exit(3)"]
    code, page, native = run_page(
        agentpack_cli, write_manifest([{"name": "x", "steps": [{"input": "a"}]}], target=target), tmp_path
    )
    assert code == 2 and native["exit_reason"] == "agent_unreachable"
    banner = page.index('id="aborted"')
    assert banner < page.index("chart-passrate") and banner < page.index('data-view="agent-rpc"')
    top = text_of(page[banner : page.index("</div>", page.index("agent stderr", banner))])
    assert "agent unreachable" in top and "ImportError: no module named foo" in top
    assert "exit reason: agent_unreachable" in text_of(page)


def test_warnings_are_counted_apart_from_infos(agentpack_cli, write_manifest, tmp_path):
    """A run's warnings (here: a capability the agent does not declare) are listed and counted as warnings."""
    scenario = {"name": "x", "steps": [{"input": "hi", "graders": [{"type": "tool_usage", "tool_name": "t"}]}]}
    target = bad_target("legacy")  # no protocol_version, no capabilities: two warnings
    code, page, native = run_page(agentpack_cli, write_manifest([scenario], target=target), tmp_path)
    warnings = native["warnings"]
    assert warnings and code in (1, 2)
    counts = '<span class="fail">0 errors</span><span class="warn">{} warnings</span><span class="info">0 infos</span>'
    assert counts.format(len(warnings)) in page
    assert all(f'<li class="warn">{w}</li>' in unescape(page) for w in warnings)
