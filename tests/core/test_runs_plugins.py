"""Plugin commands record their runs: rpc run, skill test, dci resolve (and the DCI run view)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from agentpack.results.runs import open_store
from agentpack.testing import run_cli

EXAMPLES = Path(__file__).parents[2] / "examples"


@pytest.fixture
def store(tmp_path, monkeypatch):
    path = tmp_path / "runs.sqlite"
    monkeypatch.setenv("AGENTPACK_RUNS", str(path))
    return path


def _runs(store):
    with open_store(store) as opened:
        return [opened.get(r.id) for r in reversed(opened.find())]


def test_rpc_run_records_scenarios_agent_and_tokens(store, tmp_path):
    pytest.importorskip("agentpack_agent_rpc")
    work = tmp_path / "rpc"
    shutil.copytree(EXAMPLES / "agent_rpc", work)
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    env.pop("OPENAI_API_KEY", None)
    result = subprocess.run(
        [Path(sys.executable).with_name("agentpack"), "rpc", "run", "manifest.yaml", "--tag", "demo"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr  # the example runs offline, without a judge's API key
    (run,) = _runs(store)
    assert (run.command, run.format, run.name, run.tags) == ("rpc run", "agent-rpc", "support-agent-demo", ["demo"])
    assert run.agent["name"] == "support-agent" and "tool_calls" in run.agent["capabilities"]
    assert run.total == 4 and run.status == "passed" and run.total_tokens and run.settings["judge"] == {}
    assert run.input_digest == run.report["manifest"]["digest"]
    steps = run.case_map()["support-agent-demo/order status"].detail["details"]["runs"][0]["steps"]
    assert steps[0]["input"] and "public_output" in steps[0]


def test_skill_test_records_its_run(store):
    pytest.importorskip("agentpack_skillctl")
    result = run_cli(["skill", "--root", EXAMPLES / "skills", "test", "fs.hash_tree", "--no-record"])
    assert result.exit_code == 0 and not store.exists()
    assert run_cli(["skill", "--root", EXAMPLES / "skills", "test", "fs.hash_tree"]).exit_code == 0
    (run,) = _runs(store)
    assert run.command == "skill test" and run.status == "passed" and run.total >= 1
    assert run.input.endswith("fs-hash-tree") and run.settings["refs"] == ["fs.hash_tree"]


def test_dci_resolve_records_capabilities_and_shows_candidates(store, tmp_path, agentpack_host):
    pytest.importorskip("agentpack_dci")
    workspace = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "dci" / "workspace", workspace, ignore=shutil.ignore_patterns("state"))
    base = ["dci", "resolve", "-w", workspace, "--no-history", "--no-prompt"]
    assert run_cli([*base, "--require", "web-search", "--optional", "summarization"]).exit_code == 0
    assert run_cli([*base, "--require", "web-search,summarization", "--decision", "abort"]).exit_code == 1
    first, second = _runs(store)
    assert [(c.key, c.status) for c in first.cases] == [
        ("required/web-search", "passed"),
        ("optional/summarization", "skipped"),
    ]
    assert second.status == "failed" and second.case_map()["required/summarization"].status == "failed"
    compared = run_cli(["runs", "compare", "--json"]).json()
    assert [e["key"] for e in compared["changes"]["regressed"]] == ["required/web-search"]

    from agentpack.results.viewer import pages

    html = pages.run_page(first, list(agentpack_host.run_views().values()), None)
    assert 'data-view="dci-candidates"' in html and "S_contract" in html
    assert "web-search::skills/research/web-search" in html


def test_dci_resolve_report_file_by_suffix(store, tmp_path):
    """--report: .html is the run page (candidates, score breakdown chart, tie-breaks), .json the report."""
    pytest.importorskip("agentpack_dci")
    import json

    workspace = tmp_path / "ws"
    shutil.copytree(EXAMPLES / "dci" / "workspace", workspace, ignore=shutil.ignore_patterns("state"))
    base = ["dci", "resolve", "-w", workspace, "--no-history", "--no-prompt", "--require", "web-search"]
    page, data = tmp_path / "resolve.html", tmp_path / "resolve.json"
    assert run_cli([*base, "--report", page, "--no-record"]).exit_code == 0 and not store.exists()
    html = page.read_text()
    assert 'data-view="dci-candidates"' in html and 'class="chart chart-breakdown"' in html
    assert "web-search::skills/research/web-search" in html and "0.60 S_contract" in html
    assert "<script" in html and "http://" not in html and "https://" not in html
    assert run_cli([*base, "--report", data, "--json"]).exit_code == 0
    (run,) = _runs(store)
    from agentpack_dci.report import split_report

    # the file holds the origin's report; the run keeps it with agentpack's extension fields for the viewer
    assert json.loads(data.read_text()) == split_report(run.report)[0] and run.report["candidates"]


def test_experts_dry_run_records_its_plan_and_writes_a_report(store, tmp_path, agentpack_host):
    """A case per checklist step and per planned operation with its approval tier; --report .html shows the plan."""
    pytest.importorskip("agentpack_openexperts")
    package = tmp_path / "acme-support"
    shutil.copytree(EXAMPLES / "openexperts" / "acme-support", package)
    page = tmp_path / "plan.html"
    args = ["experts", "dry-run", package, "triage-ticket", "--input", "ticket_id=T-100", "--input", "customer_id=C-1"]
    bindings = ["--bindings", EXAMPLES / "openexperts" / "bindings.yaml"]
    result = run_cli([*args, *bindings, "--report", page, "--tag", "plan"])
    assert result.exit_code == 0, result.stderr
    assert "not executed: a real run asks for approval first" in result.stdout
    assert "helpdesk.reply [manual]" in result.stdout and "not executed: a person does this" in result.stdout
    (run,) = _runs(store)
    assert (run.command, run.format, run.name, run.status, run.tags) == (
        "experts dry-run",
        "openexperts",
        "triage-ticket",
        "passed",
        ["plan"],
    )
    cases = run.case_map()
    assert sum(1 for key in cases if key.startswith("triage-ticket steps/")) == 8
    confirm = cases["triage-ticket operations/helpdesk.set_status"]
    assert confirm.status == "skipped" and confirm.detail["details"]["tier"] == "confirm"
    assert "expert.yaml" in confirm.detail["details"]["tier_from"]
    assert cases["triage-ticket operations/helpdesk.get_ticket"].status == "passed"
    assert run.input_digest.startswith("sha256:") and run.settings["inputs"] == {
        "ticket_id": "T-100",
        "customer_id": "C-1",
    }
    html = page.read_text()
    assert 'data-view="experts-plan"' in html and 'data-tier="confirm"' in html and "waits for a person" in html

    from agentpack.results.viewer import pages

    shown = pages.run_page(run, list(agentpack_host.run_views().values()), None)
    assert 'data-view="experts-plan"' in shown and "helpdesk.set_status" in shown
    unbound = run_cli([*args, "--no-record"])  # no bindings: every operation is only described, and says so
    assert unbound.exit_code == 0 and len(_runs(store)) == 1
    assert "helpdesk.get_ticket [auto]" in unbound.stdout
    assert "not executed: no binding for this tool; a real run with a binding runs without asking" in unbound.stdout
    assert "the 5 operation(s) not executed were only described: no tool was called for them" in unbound.stdout


def test_ecp_refresh_gate_and_mcp_run_evals_are_recorded_and_shown(store, tmp_path, agentpack_host):
    """The refresh eval gate is an 'ecp refresh' run; expert_run_evals an 'eval' run tagged mcp; the ECP view
    lists each question with what its suite expects and what the answer cited."""
    pytest.importorskip("agentpack_ecp")
    from agentpack.kernel.registry import McpContext

    pack = tmp_path / "pack"
    shutil.copytree(EXAMPLES / "ecp" / "conformance-pack", pack)
    result = run_cli(["ecp", "refresh", pack, "--rebuild", "--tag", "gate"])
    assert result.exit_code == 0, result.stderr
    tools = agentpack_host.mcp_tools(McpContext(packs=[pack]))
    payload = tools["expert_run_evals"].handler({"suite_id": "retrieval"})
    assert payload["ok"] is True
    gate, mcp = _runs(store)
    assert (gate.command, gate.format, gate.status, gate.tags) == ("ecp refresh", "ecp", "passed", ["gate"])
    assert gate.settings["decision"] == "published" and gate.total >= 1
    assert (mcp.command, mcp.tags, mcp.total) == ("eval", ["mcp"], 4) and mcp.settings["suites"] == ["retrieval"]
    assert mcp.total == payload["evaluations"][0]["totals"]["total"]

    from agentpack.results.viewer import pages

    shown = pages.run_page(mcp, list(agentpack_host.run_views().values()), None)
    assert 'data-view="ecp-questions"' in shown and "What vertical datum do predicted heights use by default?" in shown
    assert "✓ must_cite: docs/configuration.md" in shown and "corpus::docs/configuration.md#L1-L16" in shown


def test_ctrl_c_during_skill_test_reports_the_finished_skills_and_exits_130(store, tmp_path, monkeypatch):
    pytest.importorskip("agentpack_skillctl")
    from agentpack_skillctl import skilltest

    real, calls = skilltest.run_suite, []

    def interrupted_on_the_second(directory, *args, **kwargs):
        calls.append(directory)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(directory, *args, **kwargs)

    monkeypatch.setattr(skilltest, "run_suite", interrupted_on_the_second)
    out = tmp_path / "report.json"
    result = run_cli(["skill", "--root", EXAMPLES / "skills", "test", "--report", out])
    assert result.exit_code == 130 and "interrupted" in result.stderr
    import json

    evaluation = json.loads(out.read_text())["evaluations"][0]
    assert len(evaluation["suites"]) == 1 and evaluation["aborted"].startswith("interrupted (Ctrl-C)")
    (run,) = _runs(store)
    assert run.status == "interrupted" and run.total == len(evaluation["suites"][0]["cases"])


def test_mcp_tools_record_as_their_cli_twins_and_respect_mcp_serve_recording(store, tmp_path, agentpack_host, caplog):
    """experts_dry_run is an 'experts dry-run' run tagged mcp; mcp serve's --no-record/--store/--tag reach every
    recording tool (ECP's too); a store that cannot be written is logged and the call still answers."""
    pytest.importorskip("agentpack_openexperts")
    pytest.importorskip("agentpack_ecp")
    from agentpack.kernel.registry import McpContext, Recording

    package, pack = tmp_path / "acme-support", tmp_path / "pack"
    shutil.copytree(EXAMPLES / "openexperts" / "acme-support", package)
    shutil.copytree(EXAMPLES / "ecp" / "conformance-pack", pack)
    arguments = {"process": "triage-ticket", "inputs": {"ticket_id": "T-100", "customer_id": "C-1"}}

    def call(tool, args, recording=None):
        return agentpack_host.mcp_tools(McpContext(packs=[package, pack], recording=recording))[tool].handler(args)

    payload = call("experts_dry_run", arguments)
    assert payload["ok"] is True and payload["run"]["dry_run"] is True
    (run,) = _runs(store)
    assert (run.command, run.format, run.name, run.tags) == ("experts dry-run", "openexperts", "triage-ticket", ["mcp"])
    assert run.settings["via"] == "mcp experts_dry_run" and run.settings["run_id"] == payload["run"]["run_id"]
    assert run.case_map()["triage-ticket operations/helpdesk.set_status"].status == "skipped"

    off = Recording(enabled=False)
    call("experts_dry_run", arguments, off)
    call("expert_run_evals", {"suite_id": "retrieval"}, off)
    assert len(_runs(store)) == 1

    other = tmp_path / "other.sqlite"
    call("experts_dry_run", arguments, Recording(store=other, tags=("nightly",)))
    call("expert_run_evals", {"suite_id": "retrieval"}, Recording(store=other, tags=("nightly",)))
    with open_store(other) as opened:
        assert [(r.command, r.tags) for r in reversed(opened.find())] == [
            ("experts dry-run", ["mcp", "nightly"]),
            ("eval", ["mcp", "nightly"]),
        ]

    broken = tmp_path / "broken.sqlite"
    broken.write_text("not a database")
    assert call("experts_dry_run", arguments, Recording(store=broken))["ok"] is True
    assert "experts_dry_run: the run was not recorded" in caplog.text and broken.read_text() == "not a database"


def test_mcp_serve_takes_the_recording_options(monkeypatch, tmp_path):
    import agentpack.mcp.server

    seen = []
    monkeypatch.setattr(agentpack.mcp.server, "serve", lambda host, context, **kw: seen.append(context))
    result = run_cli(["mcp", "serve", "--no-record", "--store", tmp_path / "s.sqlite", "--tag", "a"])
    assert result.exit_code == 0, result.stderr
    (recording,) = [context.recording for context in seen]
    assert (recording.enabled, recording.store, recording.tags) == (False, tmp_path / "s.sqlite", ("a",))
