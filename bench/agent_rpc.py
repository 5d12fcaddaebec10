"""Benchmark the agent-rpc runtime against ecp-runtime 0.10.0 (when it can be installed in a throwaway venv).

Agents: a raw stdlib echo agent, an agent written with our SDK and, with the
reference present, one written with ecp-sdk. Manifests (block-style YAML, as
people write them): 1 scenario x 200 steps and 200 scenarios x 1 step. Each
cell is the wall time of the whole CLI run (``agentpack rpc run`` vs ``ecp
run``), the median of ``--repeat`` runs that alternate between the two, and
the mean per-step latency the runtime reports. Prints figures side by side
with the machine's load; asserts nothing.

Both runtimes are installed from wheels into throwaway venvs, as users get
them (ours from this tree, see ``wheel_venv``; ``--editable`` uses the
development venv instead), and each agent runs on the interpreter of the venv
that has its SDK (the raw echo agent on ours). Both run with a bytecode cache
(``PYTHONPYCACHEPREFIX`` under the temporary folder, even when the environment
sets ``PYTHONDONTWRITEBYTECODE``) and each cell is warmed up once; ``--cold``
measures without that cache.

    .venv/bin/python bench/agent_rpc.py [--steps 200] [--repeat 3] [--shape 1xN] [--no-ref] [--cold] [--editable]
                                        [--pid-namespace]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

import yaml
from wheel_venv import wheel_venv

REF_VERSION = "0.10.0"
REF_HOME = Path(tempfile.gettempdir()) / "agentpack-interop" / f"ecp-{REF_VERSION}"
DEV_BIN = Path(sys.executable).parent
"""The development venv's scripts (``--editable``); otherwise ``agentpack`` and our agents run from the wheel venv's."""
PYCACHE = Path(tempfile.gettempdir()) / "agentpack-bench-pycache"
ENV = dict(os.environ)

RAW_AGENT = """import json, sys
out = sys.stdout
for line in sys.stdin:
    m = json.loads(line)
    method = m["method"]
    if method == "agent/initialize":
        r = {"name": "raw-echo", "protocol_version": "1.0", "capabilities": {}}
    elif method == "agent/reset":
        r = True
    else:
        r = {"status": "done", "public_output": "Echo: " + m["params"]["input"]}
    out.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\\n")
    out.flush()
"""

OUR_SDK_AGENT = """from agentpack.agents import Agent, Result
agent = Agent("sdk-echo")
@agent.step
def step(text):
    return Result(public_output="Echo: " + text)
@agent.reset
def reset():
    pass
agent.main()
"""

REF_SDK_AGENT = """from ecp import Result, agent, on_reset, on_step, serve
@agent(name="ecp-sdk-echo")
class Echo:
    @on_step
    def step(self, text):
        return Result(public_output="Echo: " + text)
    @on_reset
    def reset(self):
        pass
serve(Echo())
"""


def reference() -> Path | None:
    if (REF_HOME / ".ready").exists():
        return REF_HOME
    try:
        REF_HOME.parent.mkdir(parents=True, exist_ok=True)
        venv.create(REF_HOME, with_pip=True, clear=True)
        subprocess.run(
            [
                str(REF_HOME / "bin" / "python"),
                "-m",
                "pip",
                "install",
                "-q",
                f"ecp-runtime=={REF_VERSION}",
                f"ecp-sdk=={REF_VERSION}",
            ],
            check=True,
            capture_output=True,
            timeout=600,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"(reference runtime unavailable: {exc})", file=sys.stderr)
        return None
    (REF_HOME / ".ready").write_text("ok\n")
    return REF_HOME


def manifest(folder: Path, name: str, target: str, scenarios: int, steps: int) -> Path:
    path = folder / f"{name}.yaml"
    body = {
        "manifest_version": "v1",
        "name": name,
        "target": target,
        "scenarios": [
            {
                "name": f"s{i}",
                "steps": [
                    {
                        "input": f"m{i}-{j}",
                        "graders": [{"type": "text_match", "condition": "equals", "value": f"Echo: m{i}-{j}"}],
                    }
                    for j in range(steps)
                ],
            }
            for i in range(scenarios)
        ],
    }
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


CPU: dict[str, float] = {}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed(argv: list[str], out: Path) -> tuple[float, dict | None]:
    """Wall time of the run; its CPU (runtime and agents, user+system) goes to ``CPU['last']``."""
    out.unlink(missing_ok=True)
    cpu = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run([*argv, "--json-out", str(out)], check=False, capture_output=True, text=True, env=ENV)
    wall = time.perf_counter() - start
    CPU["last"] = _children_cpu() - cpu
    if not out.exists():
        print(f"  run failed ({proc.returncode}): {proc.stderr[-400:]}", file=sys.stderr)
        return wall, None
    return wall, json.loads(out.read_text())


def ours(bin_dir: Path, path: Path, out: Path) -> tuple[float, float | None]:
    wall, report = timed([str(bin_dir / "agentpack"), "rpc", "run", "--manifest", str(path)], out)
    ok = report and report["ok"]
    return wall, report["latency"]["mean_ms"] if ok else None


def theirs(ref: Path, path: Path, out: Path) -> tuple[float, float | None]:
    wall, report = timed([str(ref / "bin" / "ecp"), "run", "--manifest", str(path)], out)
    ok = report and report["passed"] == report["total"]
    return wall, report["audit"]["latency"]["mean_ms"] if ok else None


def agent_startup(target: str) -> float:
    """Wall time from spawning the agent to its answer to agent/initialize (the agent's own start-up)."""
    import shlex

    init = b'{"jsonrpc":"2.0","id":1,"method":"agent/initialize","params":{"protocol_version":"1.0","config":{}}}\n'
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        proc = subprocess.Popen(
            shlex.split(target), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=ENV
        )
        proc.stdin.write(init)
        proc.stdin.flush()
        proc.stdout.readline()
        samples.append(time.perf_counter() - start)
        proc.stdin.close()
        proc.wait()
    return statistics.median(samples)


def overhead_per_step(folder: Path, target: str, steps: int) -> float:
    """Our runtime's marginal CPU per step (ms): CPU of a 1x2N run minus a 1xN run, over N (agent excluded)."""
    from agentpack_agent_rpc.api import run_manifest
    from agentpack_agent_rpc.runner import RunOptions

    def cpu(count: int) -> float:
        path = manifest(folder, f"overhead-{count}", target, 1, count)
        samples = []
        for _ in range(3):
            start = time.process_time()
            run_manifest(path, RunOptions())
            samples.append(time.process_time() - start)
        return min(samples)

    return (cpu(2 * steps) - cpu(steps)) * 1000 / steps


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _cell(label: str, shape: str, path: Path, folder: Path, ref: Path | None, repeat: int, bin_dir: Path) -> str:
    """Alternate our run and the reference's ``repeat`` times (after one warm-up each); medians."""
    ours(bin_dir, path, folder / "ours.json")
    if ref:
        theirs(ref, path, folder / "ref.json")
    walls, cpus, lats, rwalls, rcpus, rlats = [], [], [], [], [], []
    for _ in range(repeat):
        wall, lat = ours(bin_dir, path, folder / "ours.json")
        walls.append(wall), cpus.append(CPU["last"]), lats.append(lat)
        if ref:
            rwall, rlat = theirs(ref, path, folder / "ref.json")
            rwalls.append(rwall), rcpus.append(CPU["last"]), rlats.append(rlat)
    med = statistics.median
    wall, cpu = med(walls), med(cpus)
    lat = med(lats) if None not in lats else float("nan")
    row = f"{label:10} {shape:9} {wall:12.3f}"
    if ref:
        rwall = med(rwalls)
        row += f" {rwall:14.3f} {rwall / wall:8.1f}x {cpu:6.2f}/{med(rcpus):<8.2f}"
    else:
        row += f" {'-':>14} {'-':>9} {cpu:6.2f}/{'-':<8}"
    row += f" {lat:13.3f}"
    row += f" {med(rlats):12.3f}" if ref and None not in rlats else f" {'-':>12}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3, help="runs per cell (median; default 3)")
    parser.add_argument(
        "--shape",
        action="append",
        choices=["1xN", "Nx1"],
        help="manifest shapes to run (default both): 1 scenario x N steps, N scenarios x 1 step",
    )
    parser.add_argument("--no-ref", action="store_true", help="skip the reference runtime")
    parser.add_argument("--cold", action="store_true", help="no bytecode cache (every run compiles its sources)")
    parser.add_argument("--editable", action="store_true", help="run ours from the development venv")
    parser.add_argument("--pid-namespace", action="store_true", help="our agents in PID namespaces (bubblewrap)")
    parser.add_argument("--quick", action="store_true", help="5 steps, one run, the dev venv, no reference (CI)")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeat, args.no_ref, args.editable = 5, 1, True, True
    if args.pid_namespace:
        ENV["AGENTPACK_AGENT_RPC_PID_NAMESPACE"] = "1"
    bin_dir = DEV_BIN if args.editable else wheel_venv("agent_rpc") / "bin"
    if args.cold:
        ENV["PYTHONDONTWRITEBYTECODE"] = "1"
        ENV.pop("PYTHONPYCACHEPREFIX", None)
    else:
        ENV.pop("PYTHONDONTWRITEBYTECODE", None)
        ENV["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    ref = None if args.no_ref else reference()
    n = args.steps
    shapes = {"1xN": (f"1x{n}", 1, n), "Nx1": (f"{n}x1", n, 1)}
    chosen = [shapes[s] for s in (args.shape or ["1xN", "Nx1"])]
    print(
        f"load average {_load()}; {os.cpu_count()} CPUs; median of {args.repeat} runs per cell; "
        f"{'no bytecode cache' if args.cold else 'bytecode cache on'}; agentpack from "
        f"{'the development venv' if args.editable else 'wheels'} ({bin_dir.parent})"
        + ("; our agents in PID namespaces" if args.pid_namespace else "")
    )
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "raw_agent.py").write_text(RAW_AGENT)
        (folder / "sdk_agent.py").write_text(OUR_SDK_AGENT)
        agents = {
            "raw echo": f"{bin_dir / 'python'} {folder / 'raw_agent.py'}",
            "our SDK": f"{bin_dir / 'python'} {folder / 'sdk_agent.py'}",
        }
        if ref:
            (folder / "ref_sdk_agent.py").write_text(REF_SDK_AGENT)
            agents["ecp-sdk"] = f"{ref / 'bin' / 'python'} {folder / 'ref_sdk_agent.py'}"
        print(
            f"{'agent':10} {'manifest':9} {'agentpack s':>12} {'ecp-runtime s':>14} {'speed-up':>9} "
            f"{'CPU ours/ref s':>15} {'ours ms/step':>13} {'ref ms/step':>12}"
        )
        for label, target in agents.items():
            for shape, scenarios, steps in chosen:
                path = manifest(folder, f"{label.replace(' ', '_')}-{shape}", target, scenarios, steps)
                print(_cell(label, shape, path, folder, ref, args.repeat, bin_dir), flush=True)
        cost = overhead_per_step(folder, agents["raw echo"], n)
        print(
            f"\nagentpack runtime CPU per step (marginal, in-process, raw echo agent, incl. parsing, grading, "
            f"reporting and busy-polling for the answer): {cost:.3f} ms"
        )
        for label in ("raw echo", "our SDK", "ecp-sdk"):
            if label in agents:
                startup = agent_startup(agents[label]) * 1000
                print(
                    f"start-up of the {label} agent alone (spawn to its initialize answer, median of 5): "
                    f"{startup:.0f} ms"
                )
    print(f"load average {_load()}")


if __name__ == "__main__":
    main()
