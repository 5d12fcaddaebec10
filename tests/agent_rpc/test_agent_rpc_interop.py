"""Interoperability with ecp-runtime==0.10.0 and ecp-sdk==0.10.0, installed in a throwaway venv (cached in /tmp).

Both directions, over stdio and HTTP: our runtime runs agents written with
ecp-sdk (including the starter ``ecp init`` writes), and ``ecp run`` runs
agents written with our SDK.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agentpack.testing import reference_venv

pytestmark = pytest.mark.interop

VERSION = "0.10.0"
AGENTS = Path(__file__).parent / "agents"
AGENTPACK = str(Path(sys.executable).with_name("agentpack"))


@pytest.fixture(scope="module")
def ref() -> Path:
    """The reference venv, built once per version and reused (skip when the registry is unreachable)."""
    return reference_venv(f"ecp-{VERSION}", f"ecp-runtime=={VERSION}", f"ecp-sdk=={VERSION}")


def spawn_http(argv: list[str], env: dict | None = None) -> tuple[subprocess.Popen, str]:
    from agentpack.io.proc import spawn

    proc = spawn(argv, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env)
    for _ in range(20):
        line = proc.stderr.readline()
        match = re.search(r"(http://\S+/ecp)", line)
        if match:
            return proc, match.group(1)
    proc.kill()
    proc.wait()
    proc.stderr.close()
    raise AssertionError("HTTP agent did not announce its URL")


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def our_run(manifest: Path, env: dict | None = None) -> tuple[int, dict]:
    out = manifest.parent / "ours.json"
    proc = subprocess.run(
        [AGENTPACK, "rpc", "run", "-m", str(manifest), "--json-out", str(out)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    return proc.returncode, json.loads(out.read_text())


def ref_run(ref: Path, manifest: Path) -> tuple[int, dict]:
    out = manifest.parent / "ref.json"
    proc = subprocess.run(
        [str(ref / "bin" / "ecp"), "run", "--manifest", str(manifest), "--json-out", str(out)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.exists(), proc.stdout + proc.stderr
    return proc.returncode, json.loads(out.read_text())


def test_our_runtime_passes_the_ecp_init_starter_over_stdio(ref, tmp_path):
    starter = tmp_path / "ecp_eval"
    subprocess.run([str(ref / "bin" / "ecp"), "init", str(starter)], check=True, capture_output=True, timeout=60)
    env = {**os.environ, "PATH": f"{ref / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    code, report = our_run(starter / "manifest.yaml", env)
    assert code == 0, json.dumps(report["scenarios"], indent=1)[:2000]
    assert report["agent"]["name"] == "StarterAgent" and report["totals"]["checks_passed"] == 3


def test_our_runtime_passes_an_ecp_sdk_agent_over_http(ref, tmp_path):
    agent = tmp_path / "ecp_http_agent.py"
    agent.write_text(
        "import sys\nfrom ecp import Result, agent, on_reset, on_step, serve_http\n\n"
        "@agent(name='RefHttp', capabilities={'tool_calls': {}})\nclass A:\n"
        "    def __init__(self):\n        self.n = 0\n"
        "    @on_step\n    def step(self, text):\n        self.n += 1\n"
        "        return Result(public_output=f'#{self.n} {text}',\n"
        "                      tool_calls=[{'name': 'echo', 'arguments': {'t': text}}])\n"
        "    @on_reset\n    def reset(self):\n        self.n = 0\n\n"
        "serve_http(A(), port=int(sys.argv[1]))\n"
    )
    proc, url = spawn_http([str(ref / "bin" / "python"), str(agent), str(free_port())])
    try:
        manifest = tmp_path / "m.yaml"
        manifest.write_text(
            json.dumps(
                {
                    "manifest_version": "v1",
                    "name": "interop http",
                    "target": url,
                    "scenarios": [
                        {
                            "name": f"s{i}",
                            "steps": [
                                {
                                    "input": "hi",
                                    "graders": [
                                        {"type": "text_match", "condition": "equals", "value": "#1 hi"},
                                        {"type": "tool_usage", "tool_name": "echo", "arguments": {"t": "hi"}},
                                    ],
                                }
                            ],
                        }
                        for i in range(2)
                    ],
                }
            )
        )
        code, report = our_run(manifest)
        assert code == 0, json.dumps(report["scenarios"], indent=1)[:2000]
        conformance = subprocess.run(
            [AGENTPACK, "rpc", "conformance", url, "--json"], check=False, capture_output=True, text=True
        )
        assert json.loads(conformance.stdout)["conformant"], conformance.stdout
    finally:
        from agentpack.io.proc import kill_group

        kill_group(proc)
        proc.stderr.close()


def _manifest_for_ref(path: Path, target: str) -> Path:
    path.write_text(
        json.dumps(
            {
                "manifest_version": "v1",
                "name": "ours under ecp",
                "target": target,
                "scenarios": [
                    {
                        "name": "lookup",
                        "steps": [
                            {
                                "input": "lookup A-9",
                                "graders": [
                                    {
                                        "type": "text_match",
                                        "field": "public_output",
                                        "condition": "contains",
                                        "value": "A-9",
                                    },
                                    {
                                        "type": "text_match",
                                        "field": "evaluation_context",
                                        "condition": "contains",
                                        "value": "looked",
                                    },
                                    {
                                        "type": "tool_usage",
                                        "tool_name": "lookup_order",
                                        "arguments": {"order_id": "A-9"},
                                    },
                                ],
                            }
                        ],
                    },
                    {
                        "name": "echo",
                        "steps": [
                            {
                                "input": "hello",
                                "graders": [{"type": "text_match", "condition": "equals", "value": "Echo: hello"}],
                            }
                        ],
                    },
                ],
            }
        )
    )
    return path


def test_ecp_run_passes_our_sdk_agent_over_stdio(ref, tmp_path):
    target = f"{sys.executable} {AGENTS / 'sdk_agent.py'}"
    code, report = ref_run(ref, _manifest_for_ref(tmp_path / "m.yaml", target))
    assert code == 0 and report["passed"] == report["total"] == 4, json.dumps(report, indent=1)[:2000]
    check = subprocess.run(
        [str(ref / "bin" / "ecp"), "conformance", "--target", target, "--json"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert json.loads(check.stdout)["conformant"], check.stdout


def test_ecp_run_passes_our_sdk_agent_over_http(ref, tmp_path):
    proc, url = spawn_http([sys.executable, str(AGENTS / "sdk_agent.py"), "--http", "--port", "0"])
    try:
        code, report = ref_run(ref, _manifest_for_ref(tmp_path / "m.yaml", url))
        assert code == 0 and report["passed"] == report["total"] == 4, json.dumps(report, indent=1)[:2000]
        check = subprocess.run(
            [str(ref / "bin" / "ecp"), "conformance", "--target", url, "--json"],
            check=False,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert json.loads(check.stdout)["conformant"], check.stdout
    finally:
        from agentpack.io.proc import kill_group

        kill_group(proc)
        proc.stderr.close()


def test_reference_validates_what_we_validate(ref, tmp_path):
    manifest = _manifest_for_ref(tmp_path / "m.yaml", "python agent.py")
    ours = subprocess.run([AGENTPACK, "rpc", "validate", str(manifest)], check=False, capture_output=True, text=True)
    theirs = subprocess.run(
        [str(ref / "bin" / "ecp"), "validate", str(manifest)], check=False, capture_output=True, text=True
    )
    assert ours.returncode == theirs.returncode == 0, ours.stdout + theirs.stderr


def test_the_ecp_init_starter_runs_unchanged_from_where_ecp_init_ran(ref, tmp_path):
    """`ecp init` with its default, relative folder: the manifest's target is `python ecp_eval/agent.py`."""
    subprocess.run([str(ref / "bin" / "ecp"), "init"], cwd=tmp_path, check=True, capture_output=True, timeout=60)
    assert "ecp_eval/agent.py" in (tmp_path / "ecp_eval" / "manifest.yaml").read_text()
    env = {**os.environ, "PATH": f"{ref / 'bin'}{os.pathsep}{os.environ['PATH']}"}

    def ours(*args: str, cwd: Path = tmp_path) -> subprocess.CompletedProcess:
        command = [AGENTPACK, *args]
        return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, check=False)

    for args in (["rpc", "run", "-m", "ecp_eval/manifest.yaml"], ["eval", "ecp_eval/manifest.yaml"]):
        result = ours(*args)
        assert result.returncode == 0, result.stdout + result.stderr
    result = ours("rpc", "conformance", "python ecp_eval/agent.py", "--json")
    assert json.loads(result.stdout)["reachable"], result.stdout
    result = ours("rpc", "validate", "ecp_eval/manifest.yaml", "--portable", "--strict")
    assert result.returncode == 0, result.stdout
    elsewhere = ours("rpc", "run", "-m", "manifest.yaml", cwd=tmp_path / "ecp_eval")
    assert elsewhere.returncode == 2 and "can't open file" in elsewhere.stderr
    assert f"run from {tmp_path}" in elsewhere.stderr


# one feature each, on top of a manifest both runtimes accept
FEATURES: list[tuple[str, str, str]] = [
    (where, feature, value)
    for where, keys in (
        (
            "top",
            "description: d|cwd: .|shell: false|env: {A: b}|config: {a: 1}|require_capabilities: true|"
            "isolation: process|timeout: 5|scenario_timeout: 5|retries: 1|repeat: 2|pass_threshold: 0.5|"
            "judge: {model: m}|limits: {stderr_bytes: 10}|pid_namespace: false",
        ),
        ("scenario", "tags: [a]|description: d|skip: false|timeout: 5|step_timeout: 5|retries: 1|repeat: 2"),
        ("step", "name: n|timeout: 5|expect_status: done|constraints: {}"),
        ("grader", "name: n|case_sensitive: false|field: evaluation_context"),
        ("tool_grader", "not_called: false|count: 1|min_count: 1|max_count: 1|sequence: [echo]"),
        ("condition", "not_equals|not_regex|does_not_contain|regex"),
        ("dataset", "condition: contains|input_column: q"),
        ("target", "argv|string"),
        ("version", "missing|v1"),
    )
    for feature, value in [(item.split(":")[0], item) for item in keys.split("|")]
]


def _feature_manifest(folder: Path, where: str, value: str) -> Path:
    version = "" if (where, value) == ("version", "missing") else "manifest_version: v1\n"
    target = "[python, agent.py]" if (where, value) == ("target", "argv") else "python agent.py"
    top = f"{value}\n" if where == "top" else ""
    scenario = f"\n    {value}" if where == "scenario" else ""
    step = f"\n        {value}" if where == "step" else ""
    grader = f", {value}" if where == "grader" else ""
    tool = "tool_name: echo" + (f", {value}" if where == "tool_grader" else "")
    if value.startswith("sequence"):
        tool = value
    condition = value if where == "condition" else "contains"
    pattern = "pattern" if condition.endswith("regex") else "value"
    dataset = f", {value}" if where == "dataset" else ""
    (folder / "rows.csv").write_text("input,output,q\nhello,Echo: hello,hello\n")
    path = folder / f"{where}-{value.split(':')[0]}.yaml"
    path.write_text(
        f"{version}name: feature\ntarget: {target}\n{top}scenarios:\n"
        f"  - name: a{scenario}\n    steps:\n      - input: hello{step}\n        graders:\n"
        f"          - {{type: text_match, condition: {condition}, {pattern}: hello{grader}}}\n"
        f"          - {{type: tool_usage, {tool}}}\n"
        f"  - name: rows\n    dataset: {{type: csv, source: rows.csv{dataset}}}\n"
    )
    return path


def reference_verdicts(ref: Path, paths: list[Path]) -> dict[Path, str]:
    """``ok`` or ``rejected`` per manifest, as the reference's manifest model reads it."""
    script = (
        "import sys\nfrom ecp_runtime.manifest import ECPManifest\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n        ECPManifest.from_yaml(path)\n        print('ok')\n"
        "    except Exception:\n        print('rejected')\n"
    )
    answer = subprocess.run(
        [str(ref / "bin" / "python"), "-c", script, *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return dict(zip(paths, answer.stdout.split(), strict=True))


def test_the_reference_accepts_empty_scenarios_and_rejects_empty_steps(ref):
    """Its own CLI tests' `scenarios: []` and its probe of `steps: []` without a dataset: we agree (an empty
    `steps` is an error of ours in every mode: ARP100)."""
    from agentpack_agent_rpc.api import validate_manifest

    rpc = Path(__file__).parents[2] / ".." / "shared" / "reference" / "upstream" / "interop3" / "rpc"
    if not rpc.is_dir():
        pytest.skip(f"the reference's manifests are not at {rpc}")
    paths = [rpc / "reference-tests" / "cli-test-empty-scenarios.yaml", rpc / "probes" / "empty-steps.yaml"]
    theirs = reference_verdicts(ref, paths)
    assert list(theirs.values()) == ["ok", "rejected"]
    for path in paths:
        _, findings = validate_manifest(path, portable=True)
        assert any(f.severity == "error" for f in findings) == (theirs[path] == "rejected"), path.name


def test_validate_portable_agrees_with_what_the_reference_accepts(ref, tmp_path):
    from agentpack_agent_rpc.api import validate_manifest

    paths = [_feature_manifest(tmp_path, where, value) for where, _, value in FEATURES]
    theirs = reference_verdicts(ref, paths)
    for path in paths:
        manifest, findings = validate_manifest(path, portable=True)
        assert manifest is not None, (path.name, findings)
        codes = {f.code for f in findings}
        assert ("ARP401" in codes) == (theirs[path] == "rejected"), (path.name, theirs[path], findings)
