"""Tool bindings: Python files, MCP servers over stdio (official SDK), skills of the skillctl format."""

import json
import sys
import textwrap
from pathlib import Path

import pytest

from agentpack.io.errors import AgentpackError
from agentpack.io.installhint import command

HERE = Path(__file__).parent

SKILL_YAML = """\
apiVersion: skill/v1
kind: Skill
id: crm.lookup
name: CRM lookup
version: 1.0.0
description: Look a customer up in a fixed table.
governance: {specId: TEST-1, oneSkillPerCommit: true, concepts: [], synchronizations: []}
runtime: {type: command, command: [python3, impl/run.py], cwd: ".", timeoutMs: 20000}
io:
  inputSchema: schemas/input.schema.json
  outputSchema: schemas/output.schema.json
  input: {transport: stdin, encoding: json}
  output: {transport: stdout, encoding: json}
determinism: {network: forbidden, time: forbidden, randomness: forbidden}
security:
  access:
    filesystem: {read: [], write: []}
    env: {read: []}
    subprocess: {allowed: false}
    network: {allowed: false}
observability:
  logs: {format: jsonl, destination: stderr}
  runReport: {enabled: true}
"""


def make_skill(folder: Path) -> Path:
    (folder / "impl").mkdir(parents=True)
    (folder / "schemas").mkdir()
    (folder / "skill.yaml").write_text(SKILL_YAML)
    (folder / "schemas" / "input.schema.json").write_text(
        json.dumps(
            {
                "$schema": "https://json-schema.org/draft/2020-12/schema",
                "type": "object",
                "required": ["customer_id"],
                "properties": {"customer_id": {"type": "string"}},
                "additionalProperties": False,
            }
        )
    )
    (folder / "schemas" / "output.schema.json").write_text(
        json.dumps(
            {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": ["id", "name"]}
        )
    )
    (folder / "impl" / "run.py").write_text(
        textwrap.dedent("""\
        import json, sys
        request = json.load(sys.stdin)
        json.dump({"id": request["customer_id"], "name": "Skill " + request["customer_id"], "plan": "s"}, sys.stdout)
        """)
    )
    return folder


CHAT_SCRIPT = {
    "processes": {
        "answer-chat": {
            "steps": [
                [{"call": "crm.get_customer", "args": {"customer_id": "${inputs.customer_id}"}, "save": "c"}],
                [],
            ],
            "finish": {"structured": {"name": "${saved.c.name}"}},
        }
    }
}


def runtime_with(make_runtime, pack, bindings_file, script=CHAT_SCRIPT):
    from agentpack_openexperts.runtime import BindContext
    from agentpack_openexperts.runtime.bindings import load_bindings_file

    rt = make_runtime(pack, driver="scripted", driver_options={"script": script})
    rt.tools = load_bindings_file(bindings_file, BindContext(bindings_file.parent, rt))
    return rt


def test_python_file_bindings(make_runtime, acme, tmp_path):
    (tmp_path / "impl.py").write_text(
        textwrap.dedent("""\
        class Crm:
            def get_customer(self, customer_id):
                return {"id": customer_id, "name": "Py " + customer_id}
        HELPDESK = {"get_ticket": lambda ticket_id: {"id": ticket_id}}
        """)
    )
    bindings = tmp_path / "bindings.yaml"
    bindings.write_text("tools:\n  crm: {python: impl.py:Crm}\n  helpdesk: {python: impl.py:HELPDESK}\n")
    rt = runtime_with(make_runtime, acme, bindings)
    assert rt.run_process("answer-chat", {"customer_id": "C-1"}).result["structured"] == {"name": "Py C-1"}


@pytest.mark.parametrize(
    "text,message",
    [
        ("tools:\n  crm: {python: impl.py}\n", "does not match"),
        ("tools:\n  crm: {python: missing.py:Crm}\n", "does not exist"),
        ("tools:\n  crm: {python: no_such_module_xyz:Crm}\n", "cannot import"),
        ("tools:\n  crm: {carrier_pigeon: yes}\n", "unknown key"),
        ("tools:\n  crm: {skill: not-a-skill}\n", "not a skill folder"),
    ],
)
def test_bad_bindings_files_point_at_the_problem(make_runtime, acme, tmp_path, text, message):
    bindings = tmp_path / "bindings.yaml"
    bindings.write_text(text)
    (tmp_path / "not-a-skill").mkdir()
    with pytest.raises(AgentpackError, match=message) as info:
        runtime_with(make_runtime, acme, bindings)
    assert info.value.file and info.value.line == 2


def test_mcp_server_binding(make_runtime, acme, tmp_path, monkeypatch):
    calls = tmp_path / "calls.jsonl"
    bindings = tmp_path / "bindings.yaml"
    bindings.write_text(
        json.dumps(
            {
                "tools": {
                    "crm": {
                        "mcp": {
                            "command": [sys.executable, str(HERE / "mcp_crm_server.py")],
                            "env": {"CRM_CALLS": str(calls)},
                            "tool_names": {"get_customer": "lookup_customer"},
                        }
                    },
                    "helpdesk": {"python": "impl.py:HELPDESK"},
                }
            }
        )
    )
    (tmp_path / "impl.py").write_text("HELPDESK = {}\n")
    rt = runtime_with(make_runtime, acme, bindings)
    outcome = rt.run_process("answer-chat", {"customer_id": "C-5"})
    assert outcome.result["structured"] == {"name": "MCP C-5"}
    assert [json.loads(line) for line in calls.read_text().splitlines()] == [{"customer_id": "C-5"}]
    crm = rt.tools.bindings["crm"]
    assert crm.tools == ["lookup_customer"]
    with pytest.raises(Exception, match="Error executing tool lookup_customer"):  # the SDK masks the detail
        crm.call("get_customer", {"customer_id": "boom"})
    from agentpack_openexperts.runtime.bindings import ToolError

    with pytest.raises(ToolError, match="offers no tool 'list_open'"):
        crm.call("list_open", {})


def test_mcp_server_that_cannot_start(make_runtime, acme, tmp_path):
    bindings = tmp_path / "bindings.yaml"
    bindings.write_text(json.dumps({"tools": {"crm": {"mcp": {"command": ["/nonexistent/server"]}}}}))
    with pytest.raises(AgentpackError, match="cannot start MCP server"):
        runtime_with(make_runtime, acme, bindings)


def test_skill_binding(make_runtime, acme, tmp_path, agentpack_host):
    """Skills run through the host (``Host.invoke`` reaches the skillctl plugin), never a subprocess."""
    if "skillctl" not in agentpack_host.formats():
        pytest.skip("no installed plugin offers the skillctl format")
    make_skill(tmp_path / "skills" / "crm-lookup")
    bindings = tmp_path / "bindings.yaml"
    bindings.write_text("tools:\n  crm: {skills: {get_customer: skills/crm-lookup}}\n  helpdesk: {python: impl.py:H}\n")
    (tmp_path / "impl.py").write_text("H = {}\n")
    rt = runtime_with(make_runtime, acme, bindings)
    outcome = rt.run_process("answer-chat", {"customer_id": "C-8"})
    assert outcome.ok and outcome.result["structured"] == {"name": "Skill C-8"}
    from agentpack_openexperts.runtime.bindings import ToolError

    with pytest.raises(ToolError, match="crm-lookup ended with status invalid_input: input_schema at input "):
        rt.tools.call("crm", "get_customer", {"id": "wrong"})


def test_a_skill_that_cannot_run_is_a_located_tool_error(make_runtime, acme, tmp_path, agentpack_host):
    if "skillctl" not in agentpack_host.formats():
        pytest.skip("no installed plugin offers the skillctl format")
    from agentpack_openexperts.runtime.bindings import ToolError
    from agentpack_openexperts.runtime.skill_adapter import runner

    skill = make_skill(tmp_path / "skills" / "crm-lookup")
    bindings = tmp_path / "bindings.yaml"
    bindings.write_text("tools:\n  crm: {skills: {get_customer: skills/crm-lookup}}\n  helpdesk: {python: impl.py:H}\n")
    (tmp_path / "impl.py").write_text("H = {}\n")
    rt = runtime_with(make_runtime, acme, bindings)
    (skill / "skill.yaml").write_text(SKILL_YAML.replace("version: 1.0.0", "version: one"))
    with pytest.raises(ToolError, match=r"crm-lookup ended with status invalid_skill: .*skill\.yaml:\d+: SKC"):
        rt.tools.call("crm", "get_customer", {"customer_id": "C-1"})
    (skill / "skill.yaml").write_text("apiVersion: [unclosed\n")
    with pytest.raises(ToolError, match=r"crm-lookup cannot be loaded: .*skill\.yaml:\d+"):
        runner(agentpack_host)(skill, {"customer_id": "C-1"})


def test_skill_binding_without_the_skillctl_format():
    from agentpack.kernel.host import Host
    from agentpack.kernel.plugins import create_plugin_manager
    from agentpack_openexperts.runtime.skill_adapter import runner

    with pytest.raises(AgentpackError, match="needs the skillctl format") as info:
        runner(Host(create_plugin_manager(load_entrypoints=False)))
    assert info.value.hint == command("agentpack-core", "skillctl")
    assert info.value.hint.endswith("plugins/skillctl")  # the dev venv: an editable install from the clone


@pytest.fixture
def media_url():
    """The media server over Streamable HTTP, stopped after the test."""
    from agentpack.testing import served_url

    with served_url([sys.executable, str(HERE / "mcp_media_server.py"), "--http", "0"]) as url:
        yield url


@pytest.mark.parametrize("transport", ["stdio", "streamable-http"])
def test_mcp_binding_reads_every_page_keeps_media_and_says_it_is_agentpack(transport, request):
    from agentpack_openexperts.runtime.mcp_bridge import McpBinding

    if transport == "stdio":
        binding = McpBinding([sys.executable, str(HERE / "mcp_media_server.py")])
    else:
        binding = McpBinding(url=request.getfixturevalue("media_url"))
    try:
        assert binding.tools == ["whoami", "picture", "sound", "link"]  # page two is offered too
        assert binding.call("whoami", {}) == {"text": "agentpack"}
        picture = binding.call("picture", {})
        assert picture["text"] == "a red dot"
        assert picture["content"][1] == {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        assert binding.call("sound", {})["content"] == [{"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"}]
        (link,) = binding.call("link", {})["content"]
        assert (link["type"], link["uri"], link["name"]) == ("resource_link", "file:///tmp/report.pdf", "report.pdf")
    finally:
        binding.close()


def test_mcp_binding_by_url_in_a_bindings_file(make_runtime, acme, tmp_path, media_url):
    bindings = tmp_path / "bindings.yaml"
    bindings.write_text(json.dumps({"tools": {"crm": {"mcp": {"url": media_url}}}}))
    rt = runtime_with(make_runtime, acme, bindings)
    assert rt.tools.bindings["crm"].tools == ["whoami", "picture", "sound", "link"]
    both = tmp_path / "both.yaml"
    both.write_text(json.dumps({"tools": {"crm": {"mcp": {"url": media_url, "command": ["x"]}}}}))
    with pytest.raises(AgentpackError):
        runtime_with(make_runtime, acme, both)
