"""Each skill as an MCP tool: handlers directly, and through the official SDK client against the core server."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from skillctl_testkit import EXAMPLES, write_skill

from agentpack.io.errors import AgentpackError
from agentpack.kernel.registry import McpContext

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(autouse=True)
def _private_workspace(tmp_path, monkeypatch):
    """Runs default to the current folder as workspace: make it one nothing else writes to."""
    monkeypatch.chdir(tmp_path)


def tools_for(host, *packs, **options):
    return host.mcp_tools(McpContext(packs=[Path(p) for p in packs], options=options))


def test_every_example_skill_is_a_tool(agentpack_host):
    tools = tools_for(agentpack_host, EXAMPLES)
    skill_tools = {n: t for n, t in tools.items() if t.plugin == "skillctl"}
    assert sorted(skill_tools) == [
        "fs_hash_tree",
        "schema_validate_json",
        "security_scan_secrets",
        "skill_validate_manifest",
        "workflow_create_revision_snapshot",
    ]
    assert skill_tools["fs_hash_tree"].aliases == ("fs.hash_tree",)
    tool = skill_tools["schema_validate_json"]
    described = json.loads((EXAMPLES / "schema-validate-json" / "schemas" / "input.schema.json").read_text())
    assert tool.input_schema == described and tool.output_schema["required"][0] == "valid"
    assert tool.description.startswith("Validate a JSON instance")


def test_handler_returns_the_output_and_errors_carry_the_report(agentpack_host):
    tool = tools_for(agentpack_host, EXAMPLES / "schema-validate-json")["schema_validate_json"]
    assert tool.handler({"schema": {"type": "integer"}, "instance": 3}) == {
        "dialect": "https://json-schema.org/draft/2020-12/schema",
        "errorCount": 0,
        "errors": [],
        "schemaValid": True,
        "valid": True,
    }
    with pytest.raises(AgentpackError) as info:
        tool.handler({"schema": {}})
    message = str(info.value)
    assert message.startswith("invalid_input: 'instance' is a required property")
    report = json.loads(message.split("run report: ", 1)[1])
    assert report["status"] == "invalid_input" and report["skill"]["id"] == "schema.validate_json"


def test_mangled_names_and_the_former_choices(agentpack_host):
    mangled = tools_for(agentpack_host, EXAMPLES / "fs-hash-tree", **{"skillctl.tool_names": "mangled"})
    assert "fs-hash_tree" in mangled and "fs.hash_tree" not in mangled
    assert mangled["fs-hash_tree"].aliases == ("fs.hash_tree",)
    for former in ("dotted", "both"):  # deprecated: hosts refuse dotted names
        assert "fs_hash_tree" in tools_for(agentpack_host, EXAMPLES / "fs-hash-tree", **{"skillctl.tool_names": former})
    with pytest.raises(AgentpackError):
        tools_for(agentpack_host, EXAMPLES, **{"skillctl.tool_names": "weird"})


def test_default_pack_is_dot_skills_and_invalid_skills_are_skipped(agentpack_host, tmp_path, monkeypatch):
    from skillctl_testkit import manifest

    write_skill(tmp_path / "skills", "good")
    write_skill(tmp_path / "skills", "bad", data=manifest("demo.bad", version="x"))
    monkeypatch.chdir(tmp_path)
    names = [n for n, t in tools_for(agentpack_host).items() if t.plugin == "skillctl"]
    assert names == ["demo_echo"]


def test_through_the_official_sdk_client(agentpack_host, tmp_path):
    from mcp import Client

    from agentpack.mcp.server import build_server

    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "a.txt").write_text("hello\n")
    server = build_server(agentpack_host, McpContext(packs=[EXAMPLES], options={"skillctl.workspace": str(workspace)}))

    async def main():
        async with Client(server) as client:
            listed = (await client.list_tools()).tools
            ok = await client.call_tool("fs_hash_tree", {"path": "src"})
            bad = await client.call_tool("fs.hash_tree", {"path": "missing"})  # the former name still answers
            return listed, ok, bad

    listed, ok, bad = anyio.run(main)
    assert "fs.hash_tree" not in {t.name for t in listed}
    tool = next(t for t in listed if t.name == "fs_hash_tree")
    assert tool.input_schema["required"] == ["path"] and tool.output_schema["properties"]["treeSha256"]
    assert not ok.is_error and ok.structured_content["fileCount"] == 1
    assert ok.structured_content["files"][0]["path"] == "a.txt"
    assert bad.is_error and bad.content[0].text.startswith("failed: the skill ended with exit code 2")
    assert '"status": "failed"' in bad.content[0].text


def test_a_skill_that_writes_needs_the_server_workspace(agentpack_host):
    skill = EXAMPLES / "workflow-create-revision-snapshot"
    tool = tools_for(agentpack_host, skill)["workflow_create_revision_snapshot"]
    with pytest.raises(AgentpackError) as info:
        tool.handler({})
    assert info.value.message == (
        "no_workspace: skill workflow.create_revision_snapshot writes to its workspace and the run has none"
    )
    assert info.value.file.endswith("skill.yaml")
    assert info.value.hint == "start the server with --option skillctl.workspace=DIR"
