"""Benchmarks for the openexperts plugin (figures only, never assertions).

1. Load + validate a generated package with 200 functions and 50 processes.
2. 10,000 events through a serial_per_key trigger over 100 keys with a no-op driver:
   throughput, per-key ordering check, peak memory.

There is no published reference implementation of openexperts to compare against;
the figures are printed for this implementation alone.

    .venv/bin/python bench/openexperts.py [--events 10000] [--keys 100]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import threading
import time
import tracemalloc
from pathlib import Path

import yaml


def generate(root: Path, functions: int = 200, processes: int = 50) -> Path:
    """A valid package: every function uses a tool and a knowledge file, every process a trigger."""
    for folder in ("persona", "functions", "processes", "tools", "knowledge", "state"):
        (root / folder).mkdir(parents=True)
    (root / "README.md").write_text("# bench\n")
    (root / "orchestrator.md").write_text("# Orchestrator\n\nRoute work.\n")
    (root / "persona" / "identity.md").write_text("# Identity\n")
    (root / "knowledge" / "guide.md").write_text("# Guide\n\nUse it.\n")
    (root / "state" / "notes.md").write_text("---\nname: notes\nscope: persistent\n---\n# Notes\n")
    tools = [f"tool{i}" for i in range(10)]
    for tool in tools:
        ops = [
            {
                "name": f"op{j}",
                "description": "x",
                "approval": "auto",
                "input": {"type": "object", "properties": {"key": {"type": "string"}}},
            }
            for j in range(5)
        ]
        (root / "tools" / f"{tool}.yaml").write_text(
            yaml.safe_dump({"name": tool, "description": tool, "operations": ops})
        )
    for i in range(functions):
        front = {
            "name": f"function-{i}",
            "description": f"Function {i}",
            "tools": [tools[i % 10]],
            "knowledge": ["knowledge/guide.md"],
            "inputs": [{"name": "key", "type": "string"}],
            "outputs": [{"name": "confidence", "type": "string", "enum": ["high", "medium", "low"]}],
        }
        (root / "functions" / f"function-{i}.md").write_text(
            "---\n" + yaml.safe_dump(front) + "---\n\n## Steps\n\nDo the thing.\n"
        )
    triggers = []
    for i in range(processes):
        front = {
            "name": f"process-{i}",
            "description": f"Process {i}",
            "trigger": f"t{i}",
            "inputs": [{"name": "key", "type": "string"}, {"name": "seq", "type": "number"}],
            "functions": [f"function-{i}", f"function-{i + 50}"],
            "tools": [tools[i % 10]],
            "scratchpad": "scratch/p-{key}.md",
            "context": ["state/notes.md"],
        }
        (root / "processes" / f"process-{i}.md").write_text(
            "---\n" + yaml.safe_dump(front) + "---\n\n- [ ] one\n- [ ] two\n- [ ] three\n"
        )
        triggers.append(
            {
                "name": f"t{i}",
                "type": "webhook",
                "process": f"process-{i}",
                "payload_mapping": {"key": "key", "seq": "seq"},
                "concurrency_key": "key",
            }
        )
    manifest = {
        "spec": "1.0",
        "name": "bench",
        "version": "1.0.0",
        "description": "generated",
        "requires": {"tools": tools},
        "concurrency": {"default": "serial_per_key"},
        "policy": {"approval": {"default": "auto"}},
        "execution": {
            "timeout": "5m",
            "idempotent": False,
            "retry": {"max_attempts": 1},
            "resume_from_execution_log": True,
        },
        "triggers": triggers,
        "components": {
            "orchestrator": "orchestrator.md",
            "persona": ["persona/identity.md"],
            "functions": [f"functions/function-{i}.md" for i in range(functions)],
            "processes": [f"processes/process-{i}.md" for i in range(processes)],
            "tools": [f"tools/{t}.yaml" for t in tools],
            "knowledge": ["knowledge/guide.md"],
            "state": ["state/notes.md"],
        },
    }
    (root / "expert.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return root


def bench_validation(root: Path, repeat: int = 5) -> None:
    from agentpack.kernel.plugins import get_host
    from agentpack_openexperts.loader import load_package
    from agentpack_openexperts.validate import validate_package

    host = get_host()
    validate_package(load_package(root), host)  # warm the schema validators
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        findings = validate_package(load_package(root), host)
        times.append(time.perf_counter() - start)
    tracemalloc.start()  # a separate pass: tracing slows Python down several times
    validate_package(load_package(root), host)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    errors = [f for f in findings if f.severity == "error"]
    print(
        f"validate 200 functions + 50 processes: median {statistics.median(times) * 1000:.0f} ms, "
        f"min {min(times) * 1000:.0f} ms over {repeat} runs; peak traced memory {peak / 2**20:.1f} MiB; "
        f"{len(findings)} findings ({len(errors)} errors)"
    )


def bench_events(root: Path, events: int, keys: int, workers: int) -> None:
    from agentpack_openexperts.runtime import AgentResult, ExpertRuntime

    order: dict[str, list[int]] = {}
    lock = threading.Lock()

    class NoOp:
        def run(self, session):
            with lock:
                order.setdefault(session.inputs["key"], []).append(session.inputs["seq"])
            return AgentResult(narrative="ok")

    tools = {f"tool{i}": {} for i in range(10)}
    with tempfile.TemporaryDirectory() as work:
        rt = ExpertRuntime(root, tools=tools, driver=NoOp(), workdir=work, workers=workers, broker="approve")
        with rt.started(cron=False):
            start = time.perf_counter()
            for n in range(events):
                rt.fire("t0", {"key": f"k{n % keys}", "seq": n})
            submitted = time.perf_counter() - start
            rt.wait_idle(timeout=600)
            elapsed = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    ordered = all(seqs == sorted(seqs) for seqs in order.values())
    done = sum(len(v) for v in order.values())
    print(
        f"{events} events, serial_per_key over {keys} keys, {workers} workers, no-op driver: "
        f"{done} ran in {elapsed:.2f} s ({done / elapsed:,.0f} events/s; accepting took {submitted:.2f} s); "
        f"order per key kept: {ordered}; peak RSS of the process {peak / 2**20:.0f} MiB"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--keys", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="200 events over 10 keys (CI: the script still works)")
    args = parser.parse_args()
    if args.quick:
        args.events, args.keys = 200, 10
    with tempfile.TemporaryDirectory() as tmp:
        root = generate(Path(tmp) / "bench-expert")
        bench_validation(root)
        bench_events(root, args.events, args.keys, args.workers)
    print("reference implementation: none published for openexperts (figures are for agentpack only)")


if __name__ == "__main__":
    main()
