"""``--executor ray`` on a real two-node Ray cluster on 127.0.0.1: verdicts, faults, cancellation and limits.

The cluster (a head and a second node joining it, one CPU each) is started
once for the module and stopped afterwards, with a check that none of its
processes is left. The node-loss test kills the second node, so it runs last.
Skipped where Ray is not installed, unless AGENTPACK_TESTS_REQUIRE lists
``ray`` (``.ci/run`` sets it, so CI cannot skip them silently).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentpack_agent_rpc.schema_store import REPORT, store

if importlib.util.find_spec("ray") is None:
    if "ray" in os.environ.get("AGENTPACK_TESTS_REQUIRE", "").split(","):
        raise RuntimeError("AGENTPACK_TESTS_REQUIRE lists ray, but Ray is not installed")
    pytest.skip("Ray is not installed (pip install 'agentpack-agent-rpc[ray]')", allow_module_level=True)

pytestmark = pytest.mark.slow

_spec = importlib.util.spec_from_file_location("agent_rpc_ray_cluster", Path(__file__).with_name("ray_cluster.py"))
assert _spec and _spec.loader
rc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(rc)

AGENTPACK = str(Path(sys.executable).with_name("agentpack"))
AGENT = """\
import os, sys, time
from pathlib import Path
from agentpack.agents import Agent, Result

Path(os.environ["STARTED_DIR"], str(os.getpid())).touch()
agent = Agent("ray-test-agent")
state = {"config": {}}


@agent.initialize
def initialize(config):
    state["config"] = config


@agent.step
def step(text):
    time.sleep(float(os.environ.get("STEP_SECONDS", "0")))
    if text == "env":
        return Result(public_output=os.environ.get("GREETING", "unset"))
    if text == "config":
        return Result(public_output=str(state["config"].get("tone")))
    if text == "file":
        return Result(public_output=Path("data/fact.txt").read_text().strip())
    if text == "boom":
        raise RuntimeError("the agent broke")
    return Result(public_output=f"Echo: {text}")


if __name__ == "__main__":
    agent.main()
"""


def contains(value: str) -> dict[str, Any]:
    return {"type": "text_match", "condition": "contains", "value": value}


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    with rc.short_temp_dir() as temp:
        local = rc.LocalCluster(temp)
        try:
            local.start({"node_head": 1})
            local.add_node({"node_b": 1})
            yield local
        finally:
            local.stop()
            assert local.none_left()


@pytest.fixture
def job(tmp_path) -> Any:
    """``job(scenarios, **top)``: a manifest folder with the test agent and a data file; returns the manifest."""
    (tmp_path / "started").mkdir()

    def write(scenarios: list[dict[str, Any]], script: str = AGENT, **top: Any) -> Path:
        folder = tmp_path / "job"
        (folder / "data").mkdir(parents=True, exist_ok=True)
        (folder / "data" / "fact.txt").write_text("the sky is blue\n")
        (folder / "agent.py").write_text(script)
        env = {"STARTED_DIR": str(tmp_path / "started"), **top.pop("env", {})}
        data = {
            "manifest_version": "v1",
            "name": "ray run",
            "target": [sys.executable, "agent.py"],
            "cwd": ".",
            "env": env,
        }
        path = folder / "manifest.yaml"
        path.write_text(yaml.safe_dump({**data, **top, "scenarios": scenarios}, sort_keys=False))
        return path

    return write


def agents_started(tmp_path: Path) -> list[int]:
    return [int(p.name) for p in (tmp_path / "started").iterdir()]


def wait_for_agents_on_every_node(cluster: Any, tmp_path: Path, timeout: float = 120) -> None:
    """Until each node runs an agent of this test (an agent descends from its node's ``ray start``)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        started = set(agents_started(tmp_path))
        if all(started & rc.descendants(node.proc.pid) for node in cluster.nodes):
            return
        time.sleep(0.1)
    raise TimeoutError("the run did not reach both nodes")


def assert_agents_gone(tmp_path: Path, seconds: float = 45) -> None:
    """Every agent this test started has ended (an agent on a killed node ends when its stdin closes: give a
    loaded machine time for it)."""
    deadline = time.monotonic() + seconds
    alive = agents_started(tmp_path)
    while alive and time.monotonic() < deadline:
        alive = [pid for pid in alive if Path(f"/proc/{pid}").exists() and _not_zombie(pid)]
        time.sleep(0.2)
    assert alive == []


def _not_zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def command(manifest: Path, out: Path, *args: str, executor: str | None = None) -> list[str]:
    cmd = [AGENTPACK, "rpc", "run", "-m", str(manifest), "--json-out", str(out), *args]
    if executor:
        cmd += ["--executor", "ray", "--ray-address", executor]
    return cmd


def rpc_run(manifest: Path, out: Path, *args: str, executor: str | None = None, **env: str) -> tuple[int, dict, str]:
    proc = subprocess.run(
        command(manifest, out, *args, executor=executor),
        capture_output=True,
        text=True,
        env=rc.ray_env(**env),
        timeout=240,
    )
    report = json.loads(out.read_text()) if out.exists() else {}
    return proc.returncode, report, proc.stderr


def verdicts(report: dict) -> dict[str, Any]:
    return {
        s["id"]: (
            s["status"],
            s["exit_reason"],
            s["passes"],
            s["pass_rate"],
            [(r["repetition"], r["attempt"], r["status"]) for r in s["runs"]],
            [c["passed"] for r in s["runs"] for step in r["steps"] for c in step["checks"]],
        )
        for s in report["scenarios"]
    }


def many_scenarios() -> list[dict[str, Any]]:
    scenarios: list[dict[str, Any]] = []
    for i in range(110):
        kind = i % 11
        tags = ["later"] if i >= 105 else ["main"]
        if kind == 0:
            steps = [{"input": "env", "graders": [contains("hello from the manifest")]}]
        elif kind == 1:
            steps = [{"input": "config", "graders": [contains("friendly")]}]
        elif kind == 2:
            steps = [{"input": "file", "graders": [contains("sky is blue")]}]
        elif kind == 3:
            steps = [{"input": f"wrong {i}", "graders": [{"type": "text_match", "condition": "equals", "value": "x"}]}]
        elif kind == 4:
            steps = [{"input": "boom", "graders": [contains("never")]}]
        else:
            steps = [{"input": f"turn {i}.{n}", "graders": [contains(f"Echo: turn {i}.{n}")]} for n in range(2)]
        scenario: dict[str, Any] = {"name": f"scenario {i:03}", "tags": tags, "steps": steps}
        if kind == 4:
            scenario["retries"] = 1
        if kind == 5:
            scenario["repeat"] = 3
        scenarios.append(scenario)
    return scenarios


def test_ray_gives_the_local_verdicts_on_both_nodes(cluster, job, tmp_path):
    manifest = job(
        many_scenarios(),
        env={"GREETING": "hello from the manifest", "STEP_SECONDS": "0.02"},
        config={"tone": "friendly"},
    )
    code_local, local, _ = rpc_run(manifest, tmp_path / "local.json", "-j", "2", "--filter", "tag:main")
    code_ray, remote, stderr = rpc_run(
        manifest, tmp_path / "ray.json", "-j", "2", "--filter", "tag:main", executor=cluster.address
    )
    assert code_local == code_ray == 1, stderr
    assert store().validate(REPORT, remote) == []
    assert len(remote["scenarios"]) == 105
    assert verdicts(remote) == verdicts(local)
    assert remote["totals"] == local["totals"]
    assert remote["totals"]["passed"] and remote["totals"]["failed"] and remote["totals"]["errors"]
    assert remote["run"]["filters"] == ["tag:main"] and remote["agent"]["name"] == "ray-test-agent"
    assert len(rc.node_counts(remote)) == 2, "both nodes ran scenarios"
    assert all(s["node"]["ip"] == "127.0.0.1" and s["node"]["resubmitted"] == 0 for s in remote["scenarios"])
    assert "node" not in local["scenarios"][0]
    assert_agents_gone(tmp_path)


def test_an_agent_that_cannot_start_is_an_error_with_its_stderr(cluster, job, tmp_path):
    broken = "import sys\nsys.stderr.write('cannot load the model on this node\\n')\nsys.exit(3)\n"
    manifest = job(
        [{"name": f"s{i}", "steps": [{"input": "hi", "graders": [contains("x")]}]} for i in range(3)], broken
    )
    code, report, stderr = rpc_run(manifest, tmp_path / "r.json", "-j", "2", executor=cluster.address)
    assert code == 2, stderr
    assert "exited with status 3 before answering" in stderr
    for scenario in report["scenarios"]:
        assert (scenario["status"], scenario["exit_reason"]) == ("error", "agent_unreachable")
        assert "cannot load the model on this node" in scenario["runs"][0]["stderr"]
        assert scenario["node"]["id"]


def test_eval_runs_on_the_cluster_named_by_ray_address(cluster, job, tmp_path):
    manifest = job([{"name": f"s{i}", "steps": [{"input": "hi", "graders": [contains("Echo: hi")]}]} for i in range(4)])
    proc = subprocess.run(
        [AGENTPACK, "eval", str(manifest), "-j", "2", "--option", "executor=ray", "--json"],
        capture_output=True,
        text=True,
        env=rc.ray_env(RAY_ADDRESS=cluster.address),
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    evaluation = json.loads(proc.stdout)["evaluations"][0]
    assert [c["status"] for suite in evaluation["suites"] for c in suite["cases"]] == ["passed"] * 4


def test_an_http_agent_is_reached_from_the_node(cluster, job, tmp_path, http_agent):
    url = http_agent()
    manifest = job(
        [{"name": f"s{i}", "steps": [{"input": f"hi {i}", "graders": [contains(f"Echo: hi {i}")]}]} for i in range(3)]
    )
    data = yaml.safe_load(manifest.read_text())
    manifest.write_text(yaml.safe_dump({**data, "target": url}, sort_keys=False))
    code, report, stderr = rpc_run(manifest, tmp_path / "r.json", "-j", "2", executor=cluster.address)
    assert code == 0, stderr
    assert report["run"]["jobs"] == 1 and report["manifest"]["transport"] == "http"
    assert any("--jobs ignored for an HTTP agent" in w for w in report["warnings"])


def test_fail_fast_stops_the_remote_scenarios(cluster, job, tmp_path):
    steps = [{"input": "hi", "graders": [contains("Echo")]}]
    scenarios = [{"name": f"s{i:02}", "steps": steps} for i in range(30)]
    scenarios[2] = {"name": "s02", "steps": [{"input": "hi", "graders": [contains("never said")]}]}
    manifest = job(scenarios, env={"STEP_SECONDS": "0.2"})
    code, report, stderr = rpc_run(manifest, tmp_path / "r.json", "-j", "2", "--fail-fast", executor=cluster.address)
    assert code == 1, stderr
    statuses = {s["id"]: s["status"] for s in report["scenarios"]}
    assert statuses["s02"] == "failed" and statuses["s29"] == "skipped"
    assert sum(1 for s in report["scenarios"] if s["exit_reason"] == "fail_fast") > 20
    assert not report["run"]["interrupted"]
    assert_agents_gone(tmp_path)


class SlowJudge:
    """An OpenAI-compatible endpoint that answers PASS after a pause and records how many calls overlapped."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.current = self.peak = self.calls = 0
        self.auth: set[str] = set()
        judge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                with judge.lock:
                    judge.current += 1
                    judge.calls += 1
                    judge.peak = max(judge.peak, judge.current)
                    judge.auth.add(self.headers.get("Authorization", ""))
                time.sleep(0.3)
                with judge.lock:
                    judge.current -= 1
                body = json.dumps(
                    {"choices": [{"message": {"role": "assistant", "content": "Fine.\nRESULT: PASS"}}]}
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def test_judge_calls_share_one_cluster_wide_limit_and_the_key_reaches_the_nodes(cluster, job, tmp_path):
    judge = SlowJudge()
    try:
        grader = {"type": "llm_judge", "prompt": "Is it an echo?"}
        manifest = job(
            [{"name": f"s{i}", "steps": [{"input": f"hi {i}", "graders": [grader]}]} for i in range(16)],
            judge={"base_url": judge.url},
        )
        code, report, stderr = rpc_run(
            manifest,
            tmp_path / "r.json",
            "-j",
            "2",
            executor=cluster.address,
            OPENAI_API_KEY="sk-test-secret",
            AGENTPACK_AGENT_RPC_RAY_JUDGE_CONCURRENCY="1",
        )
    finally:
        judge.close()
    assert code == 0, stderr
    assert judge.calls == 16 and judge.peak == 1
    assert judge.auth == {"Bearer sk-test-secret"}
    assert len(rc.node_counts(report)) == 2


def test_sigint_cancels_the_remote_scenarios_and_writes_the_reports(cluster, job, tmp_path):
    manifest = job(
        [{"name": f"s{i:02}", "steps": [{"input": "hi", "graders": [contains("Echo")]}] * 2} for i in range(40)],
        env={"STEP_SECONDS": "0.25"},
    )
    out = tmp_path / "r.json"
    html = tmp_path / "r.html"
    proc = subprocess.Popen(
        [*command(manifest, out, "-j", "2", "--report", str(html), executor=cluster.address)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=rc.ray_env(),
    )
    try:
        wait_for_agents_on_every_node(cluster, tmp_path)
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, stderr
    report = json.loads(out.read_text())
    assert html.exists() and store().validate(REPORT, report) == []
    assert report["run"]["interrupted"] and report["exit_reason"] == "interrupted"
    statuses = [s["status"] for s in report["scenarios"]]
    assert len(statuses) == 40 and "passed" in statuses and statuses.count("skipped") > 20
    stopped = [s for s in report["scenarios"] if s["exit_reason"] == "interrupted" and s["runs"]]
    assert stopped and all("interrupted" in s["message"] for s in stopped)
    assert_agents_gone(tmp_path)


def test_losing_a_node_mid_run_reruns_its_scenarios_elsewhere_once(cluster, job, tmp_path):
    manifest = job(
        [
            {"name": f"s{i:02}", "steps": [{"input": f"hi {i}", "graders": [contains(f"Echo: hi {i}")]}]}
            for i in range(30)
        ],
        env={"STEP_SECONDS": "0.2"},
    )
    out = tmp_path / "r.json"
    proc = subprocess.Popen(
        command(manifest, out, "-j", "2", executor=cluster.address),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=rc.ray_env(),
    )
    try:
        wait_for_agents_on_every_node(cluster, tmp_path)
        time.sleep(0.5)
        cluster.nodes[1].kill()
        _, stderr = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, stderr
    report = json.loads(out.read_text())
    assert store().validate(REPORT, report) == []
    ids = [s["id"] for s in report["scenarios"]]
    assert sorted(ids) == sorted(set(ids)) and len(ids) == 30
    assert all(s["status"] == "passed" and len(s["runs"]) == 1 for s in report["scenarios"])
    assert len(rc.node_counts(report)) == 2
    assert any(s["node"]["resubmitted"] for s in report["scenarios"])
    assert_agents_gone(tmp_path)


def test_ray_local_starts_and_stops_a_throwaway_instance(job, tmp_path):
    manifest = job([{"name": f"s{i}", "steps": [{"input": "hi", "graders": [contains("Echo: hi")]}]} for i in range(3)])
    out = tmp_path / "r.json"
    with rc.short_temp_dir() as temp:
        proc = subprocess.run(
            [AGENTPACK, "rpc", "run", "-m", str(manifest), "--json-out", str(out), "--executor", "ray", "--ray-local"],
            capture_output=True,
            text=True,
            env=rc.ray_env(RAY_ADDRESS="", RAY_TMPDIR=str(temp)),
            timeout=240,
        )
        assert proc.returncode == 0, proc.stderr
        assert rc.none_left(temp)
    report = json.loads(out.read_text())
    assert report["totals"]["passed"] == 3 and len(rc.node_counts(report)) == 1
    assert_agents_gone(tmp_path)
