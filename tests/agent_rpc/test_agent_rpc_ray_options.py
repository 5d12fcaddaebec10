"""``--executor ray`` without a cluster: options, clear errors, what travels with a job, and --fail-fast locally."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from agentpack.io.errors import AgentpackError, MissingDependencyError
from agentpack.io.installhint import command
from agentpack_agent_rpc.api import executors, require_manifest, run_manifest
from agentpack_agent_rpc.ray_executor.package import check_size, judge_env, relocate, uses_judge
from agentpack_agent_rpc.ray_executor.settings import RaySettings
from agentpack_agent_rpc.runner import RunOptions

ECHO = {"input": "hi", "graders": [{"type": "text_match", "condition": "contains", "value": "Echo: hi"}]}
FAILS = {"input": "hi", "graders": [{"type": "text_match", "condition": "equals", "value": "nope"}]}


def test_ray_is_a_registered_executor_like_any_other():
    found = executors()
    assert set(found) >= {"local", "ray"}
    assert found["ray"].plugin == found["local"].plugin


def test_the_address_comes_from_the_option_then_ray_address():
    assert RaySettings.read({"address": "10.0.0.5:6379"}, {"RAY_ADDRESS": "other:1"}).address == "10.0.0.5:6379"
    assert RaySettings.read({}, {"RAY_ADDRESS": "other:1"}).address == "other:1"
    local = RaySettings.read({"local": True}, {"RAY_ADDRESS": "other:1"})
    assert local.local and local.address is None


def test_no_address_is_a_clear_error():
    with pytest.raises(AgentpackError, match="needs a Ray cluster") as exc:
        RaySettings.read({}, {})
    assert "--ray-local" in (exc.value.hint or "")
    with pytest.raises(AgentpackError, match="not both"):
        RaySettings.read({"address": "a:1", "local": True}, {})


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("CPUS", "0", "a number above 0"),
        ("NODE_RETRIES", "-1", "an integer 0 or more"),
        ("JUDGE_CONCURRENCY", "two", "an integer above 0"),
        ("MAX_UPLOAD_MB", "nan", "a number above 0"),
    ],
)
def test_tuning_variables_are_checked(name, value, message):
    with pytest.raises(AgentpackError, match=f"AGENTPACK_AGENT_RPC_RAY_{name} must be {message}"):
        RaySettings.read({"local": True}, {f"AGENTPACK_AGENT_RPC_RAY_{name}": value})
    tuned = RaySettings.read({"local": True}, {"AGENTPACK_AGENT_RPC_RAY_CPUS": "0.25"})
    assert tuned.cpus == 0.25 and tuned.node_retries == 3


def test_cli_without_an_address_exits_2_with_the_hint(agentpack_cli, write_manifest, monkeypatch):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    path = write_manifest([{"name": "a", "steps": [ECHO]}])
    result = agentpack_cli("rpc", "run", "-m", path, "--executor", "ray")
    assert result.exit_code == 2
    assert "needs a Ray cluster" in result.stderr and "--ray-local" in result.stderr


def test_ray_options_go_with_the_ray_executor(agentpack_cli, write_manifest):
    path = write_manifest([{"name": "a", "steps": [ECHO]}])
    result = agentpack_cli("rpc", "run", "-m", path, "--ray-address", "127.0.0.1:1")
    assert result.exit_code == 2 and "go with --executor ray" in result.stderr


def test_a_missing_ray_names_the_extra(write_manifest, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray raises ImportError
    path = write_manifest([{"name": "a", "steps": [ECHO]}])
    with pytest.raises(MissingDependencyError) as exc:
        run_manifest(path, RunOptions(executor="ray", executor_options={"address": "127.0.0.1:1"}))
    assert exc.value.hint == command("agentpack-agent-rpc", "ray")
    assert "ray" in exc.value.hint


def test_a_folder_too_big_to_travel_is_an_error_before_connecting(write_manifest, tmp_path, monkeypatch):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "big.bin").write_bytes(b"x" * 300_000)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "pack").write_bytes(b"x" * 900_000)  # left out, as Ray leaves it out
    path = write_manifest([{"name": "a", "steps": [ECHO]}])
    monkeypatch.setenv("AGENTPACK_AGENT_RPC_RAY_MAX_UPLOAD_MB", "0.25")
    with pytest.raises(AgentpackError, match=r"is 0\.3 MiB, more than the 0\.25 MiB") as exc:
        run_manifest(path, RunOptions(executor="ray", executor_options={"address": "127.0.0.1:1"}))
    assert "data/ (0.3 MiB)" in exc.value.message and ".git" not in exc.value.message
    assert check_size(tmp_path, 1.0) < 400_000


def test_relocate_moves_the_folder_paths_and_keeps_the_rest(write_manifest, tmp_path):
    (tmp_path / "agent").mkdir()
    path = write_manifest(
        [{"name": "a", "steps": [ECHO]}], target=["python", str(tmp_path / "agent" / "run.py"), "/etc/x"], cwd="agent"
    )
    manifest = require_manifest(path)
    moved = relocate(manifest, Path("/node/pkg"))
    assert moved.root == Path("/node/pkg") and moved.path == Path("/node/pkg/manifest.yaml")
    assert moved.target.cwd == "/node/pkg/agent"
    assert moved.target.command == ["python", "/node/pkg/agent/run.py", "/etc/x"]
    assert moved.scenarios is manifest.scenarios and not uses_judge(manifest)


def test_only_the_judge_settings_travel_from_this_environment():
    env = {"OPENAI_API_KEY": "k", "ECP_LLM_JUDGE_MODEL": "m", "AGENTPACK_AGENT_RPC_JUDGE_X": "1", "HOME": "/root"}
    assert judge_env(env) == {"OPENAI_API_KEY": "k", "ECP_LLM_JUDGE_MODEL": "m", "AGENTPACK_AGENT_RPC_JUDGE_X": "1"}


def test_the_job_spec_holds_the_working_dir_and_no_secret(tmp_path, monkeypatch):
    from agentpack_agent_rpc.ray_executor import cluster

    calls: list[dict] = []
    fake = SimpleNamespace(init=lambda **kwargs: calls.append(kwargs), shutdown=lambda: calls.append({"shutdown": 1}))
    monkeypatch.setattr(cluster, "import_ray", lambda: fake)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    with cluster.connect(RaySettings("127.0.0.1:1", False), tmp_path) as ray:
        assert ray is fake
    assert calls[0]["address"] == "127.0.0.1:1"
    assert calls[0]["runtime_env"] == {"working_dir": str(tmp_path)} and "sk-secret" not in repr(calls[0])
    assert calls[-1] == {"shutdown": 1}


def test_a_cluster_that_cannot_be_reached_is_a_clear_error(tmp_path, monkeypatch):
    from agentpack_agent_rpc.ray_executor import cluster

    def refuse(**kwargs):
        raise ConnectionError("Could not find any running Ray instance")

    monkeypatch.setattr(cluster, "import_ray", lambda: SimpleNamespace(init=refuse, shutdown=lambda: None))
    expected = r"cannot connect to the Ray cluster at 10\.9\.9\.9:6379: Could not find"
    with pytest.raises(AgentpackError, match=expected), cluster.connect(RaySettings("10.9.9.9:6379", False), tmp_path):
        pass


def test_help_and_local_runs_do_not_import_ray(write_manifest):
    path = write_manifest([{"name": "a", "steps": [ECHO]}])
    code = (
        "import sys\n"
        "from agentpack.cli.app import main\n"
        "for args in (['rpc', 'run', '--help'], ['rpc', 'run', '-m', sys.argv[1], '--json']):\n"
        "    try:\n"
        "        main(args)\n"
        "    except SystemExit:\n"
        "        pass\n"
        "print('ray' in sys.modules, file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True)
    assert out.stderr.strip().splitlines()[-1] == "False", out.stderr


def test_fail_fast_stops_after_the_first_failure(write_manifest):
    path = write_manifest(
        [{"name": "ok", "steps": [ECHO]}, {"name": "bad", "steps": [FAILS]}, {"name": "later", "steps": [ECHO]}]
    )
    report = run_manifest(path, RunOptions(fail_fast=True))
    statuses = {s["id"]: (s["status"], s["exit_reason"]) for s in report["scenarios"]}
    assert statuses["ok"] == ("passed", "ok") and statuses["bad"][0] == "failed"
    assert statuses["later"] == ("skipped", "fail_fast")
    assert not report["run"]["interrupted"] and not report["ok"]
    assert [s["message"] for s in report["scenarios"]][2] == "not run: --fail-fast stopped the run after a failure"


def test_fail_fast_on_the_cli(agentpack_cli, write_manifest, tmp_path):
    path = write_manifest([{"name": "bad", "steps": [FAILS]}, {"name": "later", "steps": [ECHO]}])
    result = agentpack_cli("rpc", "run", "-m", path, "--fail-fast", "--json-out", tmp_path / "r.json")
    assert result.exit_code == 1
    report = json.loads((tmp_path / "r.json").read_text())
    assert [s["status"] for s in report["scenarios"]] == ["failed", "skipped"]
