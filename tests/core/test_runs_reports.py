"""The same numbers everywhere: each command's JSON report is schema-valid, and the recorded run, the HTML
report and the viewer's run page show its numbers (rpc run, skill test, eval, dci resolve)."""

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentpack.results.runs import open_store
from agentpack.testing import run_cli

EXAMPLES = Path(__file__).parents[2] / "examples"
AGENTPACK = Path(sys.executable).with_name("agentpack")


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("AGENTPACK_RUNS", str(path))
    return path


def the_run(store):
    with open_store(store) as opened:
        (summary,) = opened.find()
        return opened.get(summary.id)


def chart_counts(html: str) -> tuple[int, int, int, int]:
    """passed, failed, errors, skipped of the pass-rate chart of a page (the viewer's or a report's)."""
    found = re.search(r'data-passed="(\d+)" data-failed="(\d+)" data-errors="(\d+)" data-skipped="(\d+)"', html)
    assert found, "no pass-rate chart"
    passed, failed, errors, skipped = (int(g) for g in found.groups())
    return passed, failed, errors, skipped


def viewer_page(run, agentpack_host) -> str:
    from agentpack.results.viewer import pages

    return pages.run_page(run, list(agentpack_host.run_views().values()), None)


def run_counts(run) -> tuple[int, int, int, int]:
    return run.passed, run.failed, run.errors, run.skipped


def core_report_checks(data: dict, run, html: str, agentpack_host) -> None:
    """A core Report envelope: schema-valid, its summary is the run's totals, the report's and viewer's charts."""
    from agentpack.kernel.schemas import core_schemas

    assert core_schemas().validate("https://agentpack.dev/schemas/core/report.v1.json", data) == []
    cases = data["summary"]["cases"]
    assert (cases["passed"], cases["failed"], cases["errors"], cases["skipped"]) == run_counts(run)
    assert cases["total"] == run.total
    durations = {
        f"{s['id']}/{c['id']}": c["duration_s"] for e in data["evaluations"] for s in e["suites"] for c in s["cases"]
    }
    assert durations == {c.key: c.duration_s for c in run.cases}
    assert chart_counts(html) == run_counts(run) == chart_counts(viewer_page(run, agentpack_host))


def test_eval(store, tmp_path, agentpack_host):
    pytest.importorskip("agentpack_ecp")
    pack = tmp_path / "pack"
    shutil.copytree(EXAMPLES / "ecp" / "conformance-pack", pack)
    result = run_cli(["eval", pack, "--json", "--report", tmp_path / "eval.html"])
    assert result.exit_code == 0, result.stderr
    core_report_checks(result.json(), the_run(store), (tmp_path / "eval.html").read_text(), agentpack_host)


def test_skill_test(store, tmp_path, agentpack_host):
    pytest.importorskip("agentpack_skillctl")
    page = tmp_path / "skills.html"
    result = run_cli(["skill", "--root", EXAMPLES / "skills", "test", "fs.hash_tree", "--json", "--report", page])
    assert result.exit_code == 0, result.stderr
    core_report_checks(result.json(), the_run(store), page.read_text(), agentpack_host)


def test_rpc_run(store, tmp_path, agentpack_host):
    pytest.importorskip("agentpack_agent_rpc")
    from agentpack_agent_rpc.schema_store import REPORT
    from agentpack_agent_rpc.schema_store import store as rpc_schemas

    work = tmp_path / "rpc"
    shutil.copytree(EXAMPLES / "agent_rpc", work)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    result = subprocess.run(
        [AGENTPACK, "rpc", "run", "manifest.yaml", "--json-out", "r.json", "--report", "r.html"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads((work / "r.json").read_text())
    assert rpc_schemas().validate(REPORT, data) == []
    run, t = the_run(store), data["totals"]
    assert (t["passed"], t["failed"], t["errors"], t["skipped"]) == run_counts(run) and t["scenarios"] == run.total
    usage = data["usage"]
    assert t["pass_rate"] == run.pass_rate and (run.input_tokens, run.output_tokens) == (
        usage["input_tokens"],
        usage["output_tokens"],
    )
    assert {s["id"]: s["duration_ms"] / 1000 for s in data["scenarios"]} == {c.id: c.duration_s for c in run.cases}
    html = (work / "r.html").read_text()
    for pill in (f"{t['passed']} passed", f"{t['failed']} failed", f"{t['scenarios']} scenarios"):
        assert pill in html
    assert chart_counts(html) == run_counts(run) == chart_counts(viewer_page(run, agentpack_host))
    latency = data["latency"]
    assert f'aria-label="latency per step: {latency["count"]} values' in html  # the report's executed steps


def test_dci_resolve(store, tmp_path, agentpack_host):
    pytest.importorskip("agentpack_dci")
    from agentpack_dci import schemas_store

    workspace = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "dci" / "workspace", workspace, ignore=shutil.ignore_patterns("state"))
    page = tmp_path / "resolve.html"
    args = ["dci", "resolve", "-w", workspace, "--no-history", "--no-prompt"]
    result = run_cli([*args, "--require", "web-search", "--optional", "summarization", "--json", "--report", page])
    assert result.exit_code == 0, result.stderr
    data = result.json()["report"]
    assert schemas_store.store().validate(schemas_store.REPORT, data) == []
    run = the_run(store)
    from agentpack_dci.report import split_report

    full = run.report  # the origin's report and agentpack's extension fields, as the viewer shows them
    assert split_report(full)[0] == data and run.total == len(full["query"]["required"]) + len(
        full["query"]["optional"]
    )
    html, shown = page.read_text(), viewer_page(run, agentpack_host)
    assert chart_counts(html) == run_counts(run) == chart_counts(shown)
    for candidate in data["candidates"]:
        cell = f"<b>{candidate['scores']['s_total_final']}</b>"
        assert cell in html and cell in shown
