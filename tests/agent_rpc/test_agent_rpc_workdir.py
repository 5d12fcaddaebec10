"""Where the agent starts, and why it did not: manifests in ecp-runtime's shapes run unchanged.

The fixtures have the shapes ecp-runtime's users have (written here, not
copied): the starter ``ecp init`` makes (``ecp_eval/agent.py`` and a manifest
whose target is ``python ecp_eval/agent.py``, run from the folder where
``ecp init`` ran) and an upstream example (``examples/<demo>/agent.py`` with
target ``python examples/<demo>/agent.py``, run from the repository root).
Their agents are raw stdio agents, so ``python`` only needs the standard
library. Rule: without ``cwd:`` the agent starts in the caller's directory
(as the reference); ``cwd:`` is relative to the manifest (portable manifests).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ECHO_AGENT = """import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m["method"] == "agent/initialize":
        r = {"name": "UpstreamShaped", "protocol_version": "1.0", "capabilities": {"tool_calls": {}}}
    elif m["method"] == "agent/reset":
        r = True
    else:
        text = m["params"]["input"]
        r = {"status": "done", "public_output": "Echo: " + text, "evaluation_context": "echoed",
             "tool_calls": [{"name": "echo", "arguments": {"text": text}}]}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\\n")
    sys.stdout.flush()
"""

MANIFEST = """manifest_version: "v1"
name: "Upstream-shaped evaluation"
target: '{target}'
{extra}
scenarios:
  - name: "Echo"
    steps:
      - input: "hello there"
        graders:
          - type: text_match
            field: public_output
            condition: contains
            value: "hello there"
          - type: tool_usage
            tool_name: "echo"
            arguments:
              text: "hello there"
"""


@pytest.fixture(autouse=True)
def python_on_path(monkeypatch):
    """``python`` resolves to this interpreter, as in an activated virtual environment."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def starter(root: Path, folder: str = "ecp_eval", extra: str = "") -> Path:
    """The ecp-init shape: FOLDER/agent.py and FOLDER/manifest.yaml targeting ``python FOLDER/agent.py``."""
    (root / folder).mkdir(parents=True)
    (root / folder / "agent.py").write_text(ECHO_AGENT)
    manifest = root / folder / "manifest.yaml"
    manifest.write_text(MANIFEST.format(target=f"python {folder}/agent.py", extra=extra))
    return manifest


def upstream_example(root: Path, demo: str = "customer_support_demo") -> Path:
    """The upstream examples' shape: examples/DEMO/agent.py, run from the repository root."""
    return starter(root, f"examples/{demo}")


def test_the_ecp_init_starter_runs_from_where_ecp_init_ran(agentpack_cli, tmp_path, monkeypatch):
    manifest = starter(tmp_path)
    monkeypatch.chdir(tmp_path)
    for args in (["rpc", "run", "-m", "ecp_eval/manifest.yaml"], ["eval", "ecp_eval/manifest.yaml"]):
        result = agentpack_cli(*args)
        assert result.exit_code == 0, result.stdout + result.stderr
    result = agentpack_cli("rpc", "conformance", "python ecp_eval/agent.py")
    assert "initialize result" in result.stdout and result.exit_code in (0, 1)
    assert manifest.exists()


def test_an_upstream_example_runs_from_the_repository_root(agentpack_cli, tmp_path, monkeypatch):
    upstream_example(tmp_path)
    (tmp_path / "README.md").write_text("an upstream-shaped repository\n")
    monkeypatch.chdir(tmp_path)
    path = "examples/customer_support_demo/manifest.yaml"
    result = agentpack_cli("rpc", "run", "-m", path, "--json-out", "r.json")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert json.loads(Path("r.json").read_text())["agent"]["name"] == "UpstreamShaped"
    result = agentpack_cli("rpc", "validate", path, "--portable", "--json")
    assert result.exit_code == 0 and result.json()["items"][0]["findings"] == []
    result = agentpack_cli("rpc", "conformance", "--target", "python examples/customer_support_demo/agent.py")
    assert "PASS initialize result: name 'UpstreamShaped'" in result.stdout  # ecp conformance --target's form
    assert agentpack_cli("rpc", "conformance").exit_code == 2


def test_elsewhere_the_starter_is_unreachable_with_the_reason_and_a_hint(agentpack_cli, tmp_path, monkeypatch):
    starter(tmp_path)
    monkeypatch.chdir(tmp_path / "ecp_eval")  # not where ecp init ran
    result = agentpack_cli("rpc", "run", "-m", "manifest.yaml", "--json-out", "r.json")
    assert result.exit_code == 2, result.stdout + result.stderr
    assert "can't open file" in result.stderr and "ecp_eval/agent.py" in result.stderr
    assert f"'ecp_eval/agent.py' is found from {tmp_path}: run from {tmp_path}, or add 'cwd: ..'" in result.stderr
    report = json.loads(Path("r.json").read_text())
    scenario = report["scenarios"][0]
    assert scenario["exit_reason"] == "agent_unreachable" and "can't open file" in scenario["message"]
    assert "can't open file" in scenario["runs"][0]["stderr"]
    assert "can't open file" in result.stdout.split("\n")[1]  # the summary line says why


def test_a_portable_manifest_declares_cwd_and_runs_from_anywhere(agentpack_cli, tmp_path, monkeypatch):
    manifest = starter(tmp_path, "evals", extra="cwd: .")
    manifest.write_text(manifest.read_text().replace("python evals/agent.py", "python agent.py"))
    (tmp_path / "elsewhere").mkdir()
    for where in (tmp_path, tmp_path / "evals", tmp_path / "elsewhere"):
        monkeypatch.chdir(where)
        result = agentpack_cli("rpc", "run", "-m", str(manifest))
        assert result.exit_code == 0, (where, result.stdout + result.stderr)


def test_without_cwd_a_manifest_for_its_own_folder_gets_a_hint(agentpack_cli, tmp_path, monkeypatch):
    manifest = starter(tmp_path, "evals")
    manifest.write_text(manifest.read_text().replace("python evals/agent.py", "python agent.py"))
    monkeypatch.chdir(tmp_path)
    result = agentpack_cli("rpc", "run", "-m", "evals/manifest.yaml")
    assert result.exit_code == 2
    assert "hint: without 'cwd:' the agent starts in the current directory" in result.stderr
    assert "add 'cwd: .' to the manifest" in result.stderr


BROKEN = {
    "missing module": ("import no_such_module_for_agentpack_tests\n", "ModuleNotFoundError"),
    "crash": ("import sys\nsys.stderr.write('fatal: no model configured\\n')\nsys.exit(3)\n", "no model configured"),
}


@pytest.mark.parametrize("kind", sorted(BROKEN))
def test_run_conformance_and_eval_agree_on_unreachable_and_say_why(agentpack_cli, tmp_path, monkeypatch, kind):
    source, text = BROKEN[kind]
    (tmp_path / "agent.py").write_text(source)
    (tmp_path / "manifest.yaml").write_text(MANIFEST.format(target="python agent.py", extra=""))
    monkeypatch.chdir(tmp_path)
    run = agentpack_cli("rpc", "run", "-m", "manifest.yaml", "--json-out", "r.json")
    conformance = agentpack_cli("rpc", "conformance", "python agent.py", "--json")
    evaluation = agentpack_cli("eval", "manifest.yaml")
    assert run.exit_code == conformance.exit_code == evaluation.exit_code == 2
    assert text in run.stderr and text in evaluation.stderr and text in conformance.stderr
    report = conformance.json()
    assert not report["reachable"] and text in report["checks"][0]["message"]
    assert text in json.loads(Path("r.json").read_text())["scenarios"][0]["message"]


def test_a_missing_program_is_unreachable_for_run_and_conformance(agentpack_cli, tmp_path, monkeypatch):
    (tmp_path / "manifest.yaml").write_text(MANIFEST.format(target="no-such-agent-program", extra=""))
    monkeypatch.chdir(tmp_path)
    run = agentpack_cli("rpc", "run", "-m", "manifest.yaml")
    conformance = agentpack_cli("rpc", "conformance", "no-such-agent-program")
    assert run.exit_code == conformance.exit_code == 2
    assert "cannot start agent 'no-such-agent-program'" in run.stderr
    assert "cannot start agent 'no-such-agent-program'" in conformance.stdout


def test_the_pytest_plugin_shows_the_agent_stderr_when_it_cannot_start(tmp_path):
    import subprocess

    (tmp_path / "agent.py").write_text("import no_such_module_for_agentpack_tests\n")
    (tmp_path / "test_it.py").write_text(
        "import sys, pytest\n"
        "@pytest.mark.agent_rpc(target=[sys.executable, 'agent.py'])\n"
        "def test_agent(rpc_agent):\n    pass\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "agentpack_agent_rpc.pytest_plugin", "-p", "no:cacheprovider"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    assert "AgentUnreachable" in result.stdout and "ModuleNotFoundError" in result.stdout


def test_report_locations_are_relative_to_the_working_directory(agentpack_cli, tmp_path, monkeypatch):
    manifest = upstream_example(tmp_path)
    text = manifest.read_text().replace("contains", "equals")  # a failing check: a located result
    manifest.write_text(text + "  - name: rows\n    dataset: {type: jsonl, source: rows.jsonl}\n")
    (manifest.parent / "rows.jsonl").write_text('{"input": "a"}\n{broken\n')
    monkeypatch.chdir(tmp_path)
    absolute = str(manifest.resolve())
    result = agentpack_cli("rpc", "validate", absolute, "-o", "sarif")
    uri = json.loads(result.stdout)["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert uri["artifactLocation"]["uri"] == "examples/customer_support_demo/rows.jsonl"
    manifest.write_text(text)
    for output in ("sarif", "github"):
        result = agentpack_cli("eval", absolute, "-o", output)
        assert result.exit_code == 1, result.stderr
        assert "examples/customer_support_demo/manifest.yaml" in result.stdout and absolute not in result.stdout
    result = agentpack_cli("rpc", "run", "-m", absolute, "--report", "r.sarif")
    assert "file:" not in Path("r.sarif").read_text() and absolute not in Path("r.sarif").read_text()
