"""The plugin passes the core's conformance kit; detection, loading, and routing of core commands."""

from __future__ import annotations

import sys
from pathlib import Path

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


def test_ignores_other_yaml(agentpack_host, tmp_path):
    (tmp_path / "a.yaml").write_text("scenarios: [1]\n")  # no target or manifest_version
    (tmp_path / "b.yaml").write_text("name: x\ntarget: y\n")
    (tmp_path / "c.yaml").write_text("scenarios: [\n")  # broken YAML is not claimed
    for name in ("a.yaml", "b.yaml", "c.yaml"):
        assert all(d.format != "agent-rpc" for d in agentpack_host.detect_all(tmp_path / name))


def test_load_reports_yaml_syntax_with_location(agentpack_host, tmp_path):
    import pytest

    from agentpack.errors import PackError

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
