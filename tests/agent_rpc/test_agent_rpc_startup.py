"""The run's start-up path: the agent starts while the manifest is validated, and the JSON report layout."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentpack.io.errors import AgentpackError
from agentpack.io.yamlio import parse_yaml
from agentpack_agent_rpc import api as api_module
from agentpack_agent_rpc.api import open_manifest, run_manifest, validate_manifest
from agentpack_agent_rpc.manifest import model as manifest_module
from agentpack_agent_rpc.manifest import reader
from agentpack_agent_rpc.manifest.builder import early_target
from agentpack_agent_rpc.manifest.reader import document_head, read_document
from agentpack_agent_rpc.report import dumps
from agentpack_agent_rpc.runner import RunOptions

STEP = {"input": "hi", "graders": [{"type": "text_match", "condition": "contains", "value": "Echo: hi"}]}


@pytest.fixture
def opened(monkeypatch) -> list:
    """Every transport a ``Target.open`` call returns during the test, in order."""
    seen: list = []
    original = manifest_module.Target.open

    def spy(self, scope=None):
        transport = original(self, scope)
        seen.append(transport)
        return transport

    monkeypatch.setattr(manifest_module.Target, "open", spy)
    return seen


def test_the_agent_started_early_runs_the_first_scenario(write_manifest, helpers, opened):
    path = write_manifest([{"name": "a", "steps": [STEP]}, {"name": "b", "steps": [STEP]}])
    manifest, transport = open_manifest(path)
    assert transport is not None and opened == [transport]
    report = run_manifest(path, RunOptions(), manifest=manifest, transport=transport)
    assert report["ok"]
    assert helpers.run_pids(report) == [transport.pid, transport.pid]  # reset isolation: one process
    assert len(opened) == 1 and helpers.group_gone(transport.pgid)


def test_an_invalid_manifest_kills_the_agent_started_early(write_manifest, helpers, opened):
    path = write_manifest([{"name": "a", "steps": [{**STEP, "inptu": "typo"}]}])
    with pytest.raises(AgentpackError, match="inptu"):
        open_manifest(path)
    assert len(opened) == 1
    assert opened[0].proc.poll() is not None and helpers.group_gone(opened[0].pgid)


def test_an_unused_early_agent_is_closed_by_the_run(write_manifest, helpers):
    path = write_manifest([{"name": "a", "steps": [STEP]}])
    manifest, transport = open_manifest(path)
    report = run_manifest(path, RunOptions(filters=["no such scenario"]), manifest=manifest, transport=transport)
    assert report["totals"]["scenarios"] == 0
    assert transport.proc.poll() is not None and helpers.group_gone(transport.pgid)


def test_run_manifest_by_path_uses_the_early_start(write_manifest, helpers, opened):
    path = write_manifest([{"name": "a", "steps": [STEP]}])
    report = run_manifest(path)
    assert report["ok"] and helpers.run_pids(report) == [opened[0].pid] and len(opened) == 1


def test_a_program_that_cannot_start_is_reported_by_the_run(write_manifest, tmp_path):
    path = write_manifest([{"name": "a", "steps": [STEP]}], target=[str(tmp_path / "no-such-agent")])
    manifest, transport = open_manifest(path)
    assert transport is None
    report = run_manifest(path, manifest=manifest)
    assert report["scenarios"][0]["exit_reason"] == "agent_unreachable"


def test_an_http_target_is_not_started_early(write_manifest, opened):
    path = write_manifest([{"name": "a", "steps": [STEP]}], target="http://127.0.0.1:9/ecp")
    manifest, transport = open_manifest(path)
    assert transport is None and opened == [] and manifest.target.kind == "http"


@pytest.mark.parametrize(
    "top",
    [
        {"target": 42},
        {"target": ["python", 3]},
        {"target": []},
        {"target": "  "},
        {"shell": "yes"},
        {"env": ["A=1"]},
        {"env": {"A": {"nested": 1}}},
        {"cwd": 5},
        {"limits": {"stderr_bytes": "big"}},
        {"limits": {"max_message_bytes": 0}},
        {"cwd": "../outside"},
        {"target": ["python"], "shell": True},
    ],
)
def test_early_target_declines_target_keys_it_is_unsure_of(write_manifest, top):
    path = write_manifest([{"name": "a", "steps": [STEP]}], **top)
    doc, _ = read_document(path)
    assert early_target(doc, path) is None


def test_early_target_equals_the_validated_target(write_manifest, tmp_path):
    (tmp_path / "agent").mkdir()
    path = write_manifest(
        [{"name": "a", "steps": [STEP]}],
        target="python agent.py --flag 'a b'",
        cwd="agent",
        env={"MODEL": "small", "N": 3, "ON": True},
        limits={"stderr_bytes": 1024},
    )
    doc, _ = read_document(path)
    manifest, findings = validate_manifest(path)
    assert findings == [] and early_target(doc, path) == manifest.target


@pytest.fixture
def events(monkeypatch, opened) -> list:
    """``"open"`` for every agent started and ``("parse", lines)`` for every YAML text parsed, in order."""
    import agentpack.io.yamlio

    seen: list = []
    parse = agentpack.io.yamlio.parse_yaml
    original = manifest_module.Target.open

    def spy_parse(text, **kwargs):
        seen.append(("parse", text.count("\n")))
        return parse(text, **kwargs)

    def spy_open(self, scope=None):
        seen.append("open")
        return original(self, scope)

    monkeypatch.setattr(agentpack.io.yamlio, "parse_yaml", spy_parse)
    monkeypatch.setattr(reader, "parse_yaml", spy_parse)
    monkeypatch.setattr(manifest_module.Target, "open", spy_open)
    return seen


def test_the_agent_starts_from_the_lines_above_scenarios_before_the_rest_is_parsed(write_manifest, events):
    path = write_manifest([{"name": f"s{i}", "steps": [STEP]} for i in range(20)], env={"A": "1"})
    _, transport = open_manifest(path)
    try:
        assert events[1] == "open" and events[0][1] < 10 < events[2][1], events
        assert events.count("open") == 1 and transport.proc.poll() is None
    finally:
        transport.kill()
        transport.close()
        transport.scope.close()  # the run's containment: its guard process


def test_target_keys_below_scenarios_wait_for_the_whole_manifest(write_manifest, tmp_path, events):
    path = write_manifest([{"name": "a", "steps": [STEP]}])
    path.write_text(path.read_text() + "env:\n  LATE: 'yes'\n")
    assert document_head(path.read_text(), path) is None
    manifest, transport = open_manifest(path)
    try:
        assert events == [("parse", events[0][1]), "open"] and manifest.target.env == {"LATE": "yes"}
        assert transport is not None and manifest.target == early_target(read_document(path)[0], path)
    finally:
        transport.kill()
        transport.close()
        transport.scope.close()  # the run's containment: its guard process


@pytest.mark.parametrize(
    "text",
    [
        "scenarios: []\n",
        "name: x\ntarget: [a,\nscenarios: []\n",
        "- a\nscenarios: []\n",
        '{"name": "x", "scenarios": []}\n',
    ],
)
def test_no_head_when_the_part_above_scenarios_is_not_a_mapping(text, tmp_path):
    assert document_head(text, tmp_path / "m.yaml") is None


def test_an_agent_started_from_a_head_that_disagrees_is_killed(write_manifest, monkeypatch, helpers, opened):
    path = write_manifest([{"name": "a", "steps": [STEP]}])
    wrong = parse_yaml("target: python -c 'import time; time.sleep(30)'\n")
    monkeypatch.setattr(api_module, "document_head", lambda text, file: wrong)
    _, transport = open_manifest(path)
    assert transport is None and len(opened) == 1
    assert opened[0].proc.poll() is not None and helpers.group_gone(opened[0].pgid)


def test_json_report_layout_is_indented_with_one_line_per_scenario(write_manifest):
    path = write_manifest([{"name": "a", "steps": [STEP]}, {"name": "b ünïcode", "steps": [STEP]}])
    report = run_manifest(path)
    text = dumps(report)
    assert json.loads(text) == report
    assert text.startswith('{\n  "schema_version": 1,\n') and text.endswith("\n  ]\n}\n")
    lines = text.splitlines()
    scenario_lines = lines[lines.index('  "scenarios": [') + 1 : -2]
    assert [json.loads(line.rstrip(","))["name"] for line in scenario_lines] == ["a", "b ünïcode"]
    empty = dict(report, scenarios=[])
    assert json.loads(dumps(empty)) == empty


def test_cli_json_outputs_are_the_same_report(agentpack_cli, write_manifest, tmp_path: Path):
    path = write_manifest([{"name": "a", "steps": [STEP]}])
    result = agentpack_cli("rpc", "run", "-m", path, "--json", "--json-out", tmp_path / "out" / "r.json")
    assert result.exit_code == 0, result.stderr
    assert result.json() == json.loads((tmp_path / "out" / "r.json").read_text())


def test_report_files_replace_atomically_and_leave_no_temporary_file(tmp_path: Path):
    from agentpack_agent_rpc.outputs import write_text as _write_text

    target = tmp_path / "new" / "dir" / "r.json"
    _write_text(target, "first\n")
    _write_text(target, "second ü\n")
    assert target.read_text(encoding="utf-8") == "second ü\n"
    assert [p.name for p in target.parent.iterdir()] == ["r.json"]


@pytest.mark.parametrize("mode", ["linger", "ignore_eof"])
def test_the_report_is_ready_while_the_agent_exits_and_leaving_the_block_reaps_it(write_manifest, helpers, mode):
    from agentpack_agent_rpc.api import running

    from .conftest import _live_members, bad_target

    path = write_manifest([{"name": "a", "steps": [{"input": "hi"}]}], target=bad_target(mode))
    with running(path) as report:
        pid = helpers.run_pids(report)[0]
        assert report["ok"] and _live_members(pid)  # the agent saw the end of its input, is still exiting
    assert helpers.group_gone(pid)


def test_an_error_while_writing_the_report_still_reaps_the_agent(write_manifest, helpers):
    from agentpack_agent_rpc.api import running

    from .conftest import bad_target

    path = write_manifest([{"name": "a", "steps": [{"input": "hi"}]}], target=bad_target("ignore_eof"))
    with pytest.raises(OSError), running(path) as report:
        pid = helpers.run_pids(report)[0]
        raise OSError("disk full")
    assert helpers.group_gone(pid)


def test_broken_yaml_below_the_head_kills_the_agent_started_from_it(write_manifest, helpers, opened):
    path = write_manifest([{"name": "a", "steps": [STEP]}])
    path.write_text(path.read_text() + "  - name: [unclosed\n")
    with pytest.raises(AgentpackError) as info:
        open_manifest(path)
    assert info.value.line is not None and len(opened) == 1
    assert opened[0].proc.poll() is not None and helpers.group_gone(opened[0].pgid)
