"""The plugin passes the core's conformance kit; detection, loading, and routing of core commands."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from agentpack.testing import FormatPluginConformance

AGENT = Path(__file__).parent / "agents" / "sdk_agent.py"


def _manifest(folder: Path, scenarios: list) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "manifest.yaml"
    path.write_text(
        yaml.safe_dump(
            {"manifest_version": "v1", "name": "kit", "target": [sys.executable, str(AGENT)], "scenarios": scenarios},
            sort_keys=False,
        )
    )
    return path


class TestAgentRpcConformance(FormatPluginConformance):
    plugin_name = "agent_rpc"
    format_name = "agent-rpc"
    module = "agentpack_agent_rpc.plugin"

    def make_valid_pack(self, tmp_path: Path) -> Path:
        return _manifest(
            tmp_path,
            [
                {
                    "name": "hello",
                    "steps": [
                        {"input": "hi", "graders": [{"type": "text_match", "condition": "contains", "value": "hi"}]}
                    ],
                }
            ],
        )

    def make_invalid_pack(self, tmp_path: Path) -> Path:
        return _manifest(tmp_path, [{"name": "hello", "steps": [{"input": "hi", "grader": []}]}])


def test_detects_a_folder_with_manifest_yaml(agentpack_host, tmp_path):
    _manifest(tmp_path / "evals", [{"name": "a", "steps": [{"input": "x"}]}])
    detection = agentpack_host.detect(tmp_path / "evals")
    assert detection.format == "agent-rpc" and detection.confidence == 0.9


def test_detection_knows_the_manifest_names_without_importing_the_manifest_module():
    from agentpack_agent_rpc import plugin
    from agentpack_agent_rpc.manifest import model as manifest

    assert plugin.MANIFEST_NAMES == manifest.MANIFEST_NAMES


def test_ignores_other_yaml(agentpack_host, tmp_path):
    (tmp_path / "a.yaml").write_text("scenarios: [1]\n")  # no target or manifest_version
    (tmp_path / "b.yaml").write_text("name: x\ntarget: y\n")
    (tmp_path / "c.yaml").write_text("scenarios: [\n")  # broken YAML is not claimed
    for name in ("a.yaml", "b.yaml", "c.yaml"):
        assert all(d.format != "agent-rpc" for d in agentpack_host.detect_all(tmp_path / name))


def test_load_reports_yaml_syntax_with_location(agentpack_host, tmp_path):
    import pytest

    from agentpack.io.errors import PackError

    path = tmp_path / "m.yaml"
    path.write_text("name: x\ntarget: y\nscenarios:\n  - name: [\n")
    with pytest.raises(PackError) as info:
        agentpack_host.load(path, "agent-rpc")
    assert info.value.file == str(path) and info.value.line


def test_eval_routes_to_the_runner(agentpack_cli, tmp_path):
    path = _manifest(
        tmp_path,
        [
            {
                "name": "good",
                "steps": [
                    {"input": "hi", "graders": [{"type": "text_match", "condition": "contains", "value": "Echo"}]}
                ],
            },
            {
                "name": "bad",
                "tags": ["smoke"],
                "steps": [{"input": "hi", "graders": [{"type": "text_match", "condition": "equals", "value": "nope"}]}],
            },
        ],
    )
    result = agentpack_cli("eval", path, "--json")
    assert result.exit_code == 1, result.stderr
    evaluation = result.json()["evaluations"][0]
    suite = evaluation["suites"][0]
    assert suite["id"] == "kit" and [c["id"] for c in suite["cases"]] == ["good", "bad"]
    bad = suite["cases"][1]["assertions"][0]
    assert bad["expected"] == {"equals": "nope"} and bad["actual"] == "Echo: hi"
    assert "expected public_output to equal 'nope'" in bad["message"]
    assert evaluation["metadata"]["agent"]["name"] == "test-sdk-agent"
    only = agentpack_cli("eval", path, "--filter", "good", "--json")
    assert only.exit_code == 0 and len(only.json()["evaluations"][0]["suites"][0]["cases"]) == 1


def test_eval_of_an_invalid_manifest_is_a_usage_error(agentpack_cli, tmp_path):
    path = _manifest(tmp_path, [{"name": "a", "steps": [{"input": "x", "graders": [{"type": "nope"}]}]}])
    result = agentpack_cli("eval", path)
    assert result.exit_code == 2
    assert "unknown grader type 'nope'" in result.stderr and f"{path}:" in result.stderr


def test_core_validate_routes_here(agentpack_cli, tmp_path):
    path = _manifest(
        tmp_path,
        [
            {
                "name": "a",
                "steps": [
                    {"input": "x", "graders": [{"type": "text_match", "condition": "regex", "pattern": "(unclosed"}]}
                ],
            }
        ],
    )
    result = agentpack_cli("validate", path, "--json")
    assert result.exit_code == 1
    finding = result.json()["items"][0]["findings"][0]
    assert finding["code"] == "ARP104" and finding["pointer"] == "/scenarios/0/steps/0/graders/0/pattern"
    lines = path.read_text().splitlines()
    assert lines[finding["line"] - 1].strip().startswith("pattern:")


def test_plugin_registers_rpc_command_and_hooks(agentpack_host):
    assert agentpack_host.commands()["rpc"].plugin == "agent_rpc"
    assert hasattr(agentpack_host.pm.hook, "agentpack_agent_rpc_register_graders")
    assert hasattr(agentpack_host.pm.hook, "agentpack_agent_rpc_register_executors")


def _count_scenarios(n: int, **extra) -> list:
    step = {"input": "count", "graders": [{"type": "text_match", "condition": "equals", "value": "1"}]}
    return [{"name": f"s{i}", "tags": ["odd" if i % 2 else "even"], "steps": [step], **extra} for i in range(n)]


def test_eval_honours_jobs_isolation_tags_and_writes_the_native_reports(agentpack_cli, tmp_path):
    import json

    from agentpack_agent_rpc.schema_store import REPORT, store

    path = _manifest(tmp_path, _count_scenarios(5))
    out = tmp_path / "out"
    result = agentpack_cli(
        "eval",
        path,
        "--jobs",
        "2",
        "--option",
        "isolation=process",
        "--option",
        "tags=even",
        "--option",
        f"json-out={out / 'r.json'}",
        "--option",
        f"html={out / 'r.html'}",
        "--json",
    )
    assert result.exit_code == 0, result.stderr
    cases = result.json()["evaluations"][0]["suites"][0]["cases"]
    assert [c["id"] for c in cases] == ["s0", "s2", "s4"]
    report = json.loads((out / "r.json").read_text())
    assert store().validate(REPORT, report) == []
    assert report["run"]["jobs"] == 2 and report["run"]["isolation"] == "process"
    assert report["run"]["filters"] == ["tag:even"]
    assert len({run["pid"] for s in report["scenarios"] for run in s["runs"]}) == 3
    page = (out / "r.html").read_text()
    assert 'data-view="agent-rpc"' in page and page.count('class="case"') == 3  # the run's page, its 3 scenarios


def test_eval_timeout_and_max_duration_options(agentpack_cli, tmp_path):
    import json

    from .conftest import bad_target

    path = tmp_path / "manifest.yaml"
    scenarios = [{"name": "hangs", "steps": [{"input": "a"}, {"input": "b"}]}]  # the agent hangs on step 2
    path.write_text(yaml.safe_dump({"name": "kit", "target": bad_target("hang"), "scenarios": scenarios}))
    result = agentpack_cli("eval", path, "--option", "timeout=0.5", "--option", f"json_out={tmp_path / 'r.json'}")
    assert result.exit_code == 1, result.stderr
    steps = json.loads((tmp_path / "r.json").read_text())["scenarios"][0]["runs"][0]["steps"]
    assert [s["exit_reason"] for s in steps] == ["ok", "timeout"]
    result = agentpack_cli("eval", path, "--option", "max_duration=0.5", "--option", f"json_out={tmp_path / 'r.json'}")
    assert result.exit_code == 1, result.stderr
    assert json.loads((tmp_path / "r.json").read_text())["exit_reason"] == "max_duration_exceeded"


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("colour=red", "unknown option 'colour' for an agent-rpc manifest; known: timeout, max_duration"),
        ("timeout=soon", "option timeout must be a positive number of seconds, got 'soon'"),
        ("max_duration=-1", "option max_duration must be a positive number of seconds, got '-1'"),
        ("isolation=thread", "option isolation must be 'reset' or 'process', got 'thread'"),
        ("executor=cluster", "unknown executor 'cluster'; available: local"),
    ],
)
def test_eval_rejects_bad_options_before_running(agentpack_cli, tmp_path, option, message):
    path = _manifest(tmp_path, _count_scenarios(1))
    result = agentpack_cli("eval", path, "--option", option)
    assert result.exit_code == 2 and message in result.stderr, result.stderr
