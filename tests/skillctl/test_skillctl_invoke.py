"""``agentpack_invoke``: another format runs a skill through ``Host.invoke`` and gets a typed, located result."""

from __future__ import annotations

import pytest
from skillctl_testkit import EXAMPLES, manifest, write_skill

from agentpack.io.errors import AgentpackError, PackError
from agentpack.kernel.invocation import InvokeRequest

pytestmark = pytest.mark.timeout(60)


def invoke(host, path, value, **kwargs):
    return host.invoke(host.load(path, format="skillctl"), InvokeRequest(value, **kwargs))


def test_a_run_gives_back_the_output(agentpack_host):
    result = invoke(agentpack_host, EXAMPLES / "schema-validate-json", {"schema": {"type": "integer"}, "instance": 3})
    assert result.ok and result.errors == []
    assert result.output["valid"] is True
    assert result.report["status"] == "ok" and result.report["skill"]["id"] == "schema.validate_json"


def test_bad_input_is_a_status_with_the_pointer(agentpack_host):
    result = invoke(agentpack_host, EXAMPLES / "schema-validate-json", {"schema": 3, "instance": 1})
    assert (result.status, result.output) == ("invalid_input", None)
    first = result.errors[0]
    assert (first.code, first.side, first.pointer) == ("input_schema", "input", "/schema")
    assert result.summary() == f"invalid_input: input_schema at input /schema: {first.message}"
    assert "is not of type 'object', 'boolean'" in first.message


def test_an_invalid_contract_is_located_in_skill_yaml(agentpack_host, tmp_path):
    folder = write_skill(tmp_path, "bad", data=manifest("demo.bad", version="not-semver"))
    result = invoke(agentpack_host, folder, {"value": 1})
    assert result.status == "invalid_skill" and result.report == {}
    first = result.errors[0]
    assert first.file.endswith("skill.yaml") and isinstance(first.line, int) and first.code.startswith("SKC")


def test_a_skill_that_writes_needs_a_workspace(agentpack_host, tmp_path):
    skill = EXAMPLES / "workflow-create-revision-snapshot"
    refused = invoke(agentpack_host, skill, {})
    assert refused.status == "no_workspace" and refused.errors[0].file.endswith("skill.yaml")
    workspace = tmp_path / "ws"
    (workspace / "src").mkdir(parents=True)
    (workspace / "src" / "a.txt").write_text("a\n")
    done = invoke(agentpack_host, skill, {"source": "src"}, workspace=workspace)
    assert done.ok, done.summary()
    assert (workspace / "ai_workflow_revisions").is_dir()


def test_options_timeout_and_a_bad_value(agentpack_host, tmp_path):
    folder = write_skill(tmp_path / "skills", code="import time\ntime.sleep(30)\n")
    result = invoke(agentpack_host, folder, {}, options={"timeout_ms": "200"})
    assert result.status == "timeout" and result.errors[0].code == "timeout"
    with pytest.raises(AgentpackError, match="timeout_ms must be a whole number of milliseconds, not 'soon'"):
        invoke(agentpack_host, folder, {}, options={"timeout_ms": "soon"})


def test_option_require_sandbox_refuses_an_incomplete_one(agentpack_host, tmp_path, monkeypatch):
    from agentpack_skillctl import confine

    monkeypatch.setenv(confine.SANDBOX_ENV, "off")  # no bubblewrap: the sandbox lacks protections
    folder = write_skill(tmp_path / "skills")
    assert invoke(agentpack_host, folder, {"value": 1}).ok
    refused = invoke(agentpack_host, folder, {"value": 1}, options={"require_sandbox": "true"})
    assert (refused.status, refused.errors[0].code, refused.errors[0].side) == ("error", "sandbox_required", "runner")


def test_a_skills_tree_is_not_one_skill(agentpack_host):
    with pytest.raises(PackError, match="is a skills/ tree: invoke one skill folder"):
        invoke(agentpack_host, EXAMPLES, {})
