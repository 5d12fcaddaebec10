"""Scale-out of ``agentpack rpc run``: an I/O-bound agent run locally and on a Ray cluster of one and two nodes.

    python bench/agent_rpc_scale.py [--scenarios 400] [--delay 0.05] [--jobs 4] [--node-cpus 2]

400 one-step scenarios against an SDK agent that waits 50 ms per step (an
agent waiting on a model), run in one go: locally with ``--jobs 1`` and
``--jobs N``, then with ``--executor ray -j N`` on a real cluster on
127.0.0.1 (``tests/agent_rpc/ray_cluster.py``) of one node and of two nodes
of the same size (``--node-cpus`` CPUs each, one scenario slot per CPU).

Throughput is measured once every slot runs: from the first result of the
slot that started last to the last result (the start-up, connecting to Ray
and placing the slots, is printed apart). The overhead per
scenario is the median, over every slot (one agent process each), of the
time between two of its results less the later scenario's own duration as
the runner measured it on the node: what Ray (or the local thread pool)
adds per scenario. Targets: two nodes give at least 1.8x the throughput of
one, and Ray's overhead per scenario stays under 5 ms.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parent.parent
AGENT = """\
import os, time
from agentpack.agents import Agent, Result

agent = Agent("io-bound-agent")
DELAY = float(os.environ["STEP_DELAY"])


@agent.step
def step(text):
    time.sleep(DELAY)  # waiting on a model, a tool or a service
    return Result(public_output=f"Echo: {text}")


if __name__ == "__main__":
    agent.main()
"""


def load_cluster_helpers() -> Any:
    spec = importlib.util.spec_from_file_location("ray_cluster", ROOT / "tests" / "agent_rpc" / "ray_cluster.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write_job(folder: Path, scenarios: int, delay: float) -> Path:
    (folder / "agent.py").write_text(AGENT)
    manifest = {
        "manifest_version": "v1",
        "name": "scale",
        "target": [sys.executable, "agent.py"],
        "cwd": ".",  # agent.py is beside the manifest
        "env": {"STEP_DELAY": str(delay)},
        "scenarios": [
            {
                "name": f"s{i:04}",
                "steps": [
                    {
                        "input": f"hi {i}",
                        "graders": [{"type": "text_match", "condition": "contains", "value": f"hi {i}"}],
                    }
                ],
            }
            for i in range(scenarios)
        ],
    }
    path = folder / "manifest.yaml"
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return path


def measure(label: str, path: Path, **options: Any) -> dict[str, Any]:
    from agentpack_agent_rpc.api import run_manifest
    from agentpack_agent_rpc.runner import RunOptions

    arrivals: list[tuple[float, dict[str, Any]]] = []
    start = time.perf_counter()
    report = run_manifest(
        path, RunOptions(on_result=lambda record: arrivals.append((time.perf_counter(), record)), **options)
    )
    wall = time.perf_counter() - start
    n = len(arrivals)
    assert report["totals"]["passed"] == n == report["totals"]["scenarios"], report["totals"]
    by_slot: dict[int, list[tuple[float, dict[str, Any]]]] = {}
    for arrival in arrivals:  # one agent process per slot (reset isolation)
        by_slot.setdefault(arrival[1]["runs"][0]["pid"], []).append(arrival)
    gaps = [
        (later[0] - earlier[0]) * 1000 - later[1]["duration_ms"]
        for results in by_slot.values()
        for earlier, later in itertools.pairwise(results)
    ]
    all_running = max(results[0][0] for results in by_slot.values())
    nodes = {(s.get("node") or {}).get("id") for s in report["scenarios"]}
    return {
        "label": label,
        "wall": wall,
        "startup": arrivals[0][0] - start,
        "throughput": len([a for a in arrivals if a[0] > all_running]) / (arrivals[-1][0] - all_running),
        "overhead_ms": statistics.median(gaps),
        "own_ms": statistics.fmean(s["duration_ms"] for s in report["scenarios"]),
        "slots": len(by_slot),
        "nodes": len(nodes - {None}),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", type=int, default=400)
    parser.add_argument("--delay", type=float, default=0.05, help="seconds the agent waits per step")
    parser.add_argument("--jobs", type=int, default=4, help="-j for the local and the Ray runs")
    parser.add_argument("--node-cpus", type=int, default=2, help="CPUs (scenario slots) per Ray node")
    parser.add_argument("--quick", action="store_true", help="40 scenarios of 10 ms, one Ray node (CI)")
    args = parser.parse_args()
    if args.quick:
        args.scenarios, args.delay = 40, 0.01
    rc = load_cluster_helpers()
    os.environ.update(rc.ray_env())  # before Ray is imported: loopback nodes, no usage stats
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        path = write_job(Path(tmp), args.scenarios, args.delay)
        rows.append(measure("local -j 1", path, jobs=1))
        rows.append(measure(f"local -j {args.jobs}", path, jobs=args.jobs))
        with rc.short_temp_dir() as temp:
            cluster = rc.LocalCluster(temp, cpus=args.node_cpus)
            try:
                cluster.start()
                ray = {"jobs": args.jobs, "executor": "ray", "executor_options": {"address": cluster.address}}
                rows.append(measure(f"ray, 1 node x {args.node_cpus} CPU, -j {args.jobs}", path, **ray))
                if not args.quick:  # a second node takes most of a quick run's time
                    cluster.add_node()
                    rows.append(measure(f"ray, 2 nodes x {args.node_cpus} CPU, -j {args.jobs}", path, **ray))
            finally:
                cluster.stop()
            left = "none" if cluster.none_left() else "SOME"
    print(f"{args.scenarios} scenarios, agent waits {args.delay * 1000:g} ms per step; load {os.getloadavg()[0]:.2f}")
    print(f"{'run':30} {'wall s':>7} {'start s':>8} {'scen/s':>7} {'own ms':>7} {'overhead ms':>12} {'slots':>6}")
    for r in rows:
        print(
            f"{r['label']:30} {r['wall']:7.2f} {r['startup']:8.2f} {r['throughput']:7.1f} "
            f"{r['own_ms']:7.1f} {r['overhead_ms']:12.2f} {r['slots']:6}"
        )
    if len(rows) > 3:
        speedup = rows[3]["throughput"] / rows[2]["throughput"]
        print(f"two nodes / one node: {speedup:.2f}x throughput (target >= 1.8x)")
    print(f"ray overhead per scenario: {max(r['overhead_ms'] for r in rows[2:]):.2f} ms (target < 5 ms)")
    print(f"processes left by the cluster: {left}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
