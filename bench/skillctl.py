"""Run overhead of skillctl: the same command started bare, through the Python API and through the CLI.

Prints medians side by side; never asserts. Targets (issue 8): under 0.1 s over a bare start from the
CLI, under 3 ms from the API. The origin's runner adds about 0.28 s for fs.hash_tree on the reference
machine (figure from the issue; its runner is a repository script, not an installable package).

    .venv/bin/python bench/skillctl.py [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKILL = REPO / "examples" / "skills" / "fs-hash-tree"
BIN = Path(sys.executable).parent


def medians(fn, runs: int) -> tuple[float, float]:
    """Median wall and CPU milliseconds (this process plus its children) of ``fn``."""
    fn()  # warm up (imports, caches, page cache)
    walls, cpus = [], []
    for _ in range(runs):
        before = _cpu()
        t0 = time.perf_counter()
        fn()
        walls.append((time.perf_counter() - t0) * 1000)
        cpus.append((_cpu() - before) * 1000)
    return statistics.median(walls), statistics.median(cpus)


def _cpu() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    from agentpack_skillctl.api import run_skill
    from agentpack_skillctl.sandbox import build_env, network_isolation

    workspace = Path(tempfile.mkdtemp(prefix="skillctl-bench-"))
    try:
        shutil.copytree(SKILL / "fixtures" / "workspace", workspace, dirs_exist_ok=True)
        request = json.dumps({"path": "src"}).encode()
        env, _ = build_env(granted=[], time="forbidden", randomness="forbidden",
                           extra={"SKILL_WORKSPACE": str(workspace)})
        bare_argv = [sys.executable, str(SKILL / "impl" / "run.py")]

        def bare(prefix=()):
            subprocess.run([*prefix, *bare_argv], input=request, capture_output=True, env=env, cwd=SKILL,
                           check=True)

        def api():
            result = run_skill(SKILL, {"path": "src"}, workspace=workspace)
            assert result.ok, result.report["errors"]

        def cli():
            subprocess.run([str(BIN / "skillctl"), "run", str(SKILL), "-i", "-", "--workspace", str(workspace),
                            "--quiet-logs"], input=request, capture_output=True, check=True)

        iso = network_isolation()
        rows = [("bare start (python3 impl/run.py)", medians(bare, args.runs))]
        if iso.prefix:
            rows.append((f"bare start inside unshare ({iso.level})", medians(lambda: bare(iso.prefix), args.runs)))
        rows.append(("Python API run_skill()", medians(api, args.runs)))
        rows.append(("CLI skillctl run", medians(cli, args.runs)))
        base_wall, base_cpu = rows[0][1]
        print(f"fs.hash_tree, {args.runs} runs each, medians (network isolation: {iso.level}; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
        print(f"{'':40} {'wall ms':>9} {'overhead':>9} {'cpu ms':>9} {'overhead':>9}")
        for name, (wall, cpu) in rows:
            print(f"{name:40} {wall:9.1f} {wall - base_wall:9.1f} {cpu:9.1f} {cpu - base_cpu:9.1f}")
        print(f"{'origin runner (issue figure)':40} {'':>9} {280.0:9.1f}")
        print("targets: API overhead < 3 ms, CLI overhead < 100 ms (wall). On a loaded machine, read the CPU column.")
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    main()
