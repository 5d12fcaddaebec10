"""Run overhead of skillctl: the same command started bare, through the Python API and through the CLI.

Prints medians side by side; never asserts. Targets: under 0.1 s over a bare start from the CLI (issue 8,
kept by issue 14 with the sandbox on), under 3 ms from the API without the sandbox. The sandbox rows
(bubblewrap, seccomp) show what it costs; "sandbox off" is AGENTPACK_SKILLCTL_SANDBOX=off. The origin's
runner adds about 0.28 s for fs.hash_tree on the reference machine (figure from the issue; its runner is
a repository script, not an installable package).

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
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SKILL = REPO / "examples" / "skills" / "fs-hash-tree"
BIN = Path(sys.executable).parent


def medians(fns: dict[str, Callable[[], None]], runs: int) -> dict[str, tuple[float, float, float, float]]:
    """Median wall, CPU (this process plus its children) and own CPU, and best wall milliseconds of ``fns``.

    The functions take turns (one round calls each once), so a change of machine load hits all of them alike.
    """
    for fn in fns.values():
        fn()  # warm up (imports, caches, bytecode, page cache)
    walls: dict[str, list[float]] = {name: [] for name in fns}
    cpus: dict[str, list[float]] = {name: [] for name in fns}
    own: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            before, before_own = _cpu(), _cpu(children=False)
            t0 = time.perf_counter()
            fn()
            walls[name].append((time.perf_counter() - t0) * 1000)
            cpus[name].append((_cpu() - before) * 1000)
            own[name].append((_cpu(children=False) - before_own) * 1000)
    return {
        name: (
            statistics.median(walls[name]),
            statistics.median(cpus[name]),
            statistics.median(own[name]),
            min(walls[name]),
        )
        for name in fns
    }


def _cpu(children: bool = True) -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    if not children:
        return me.ru_utime + me.ru_stime
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--quick", action="store_true", help="2 runs (CI: the script still works)")
    args = parser.parse_args()
    if args.quick:
        args.runs = 2
    from agentpack_skillctl import bwrap, confine, sandbox
    from agentpack_skillctl.api import run_skill
    from agentpack_skillctl.netns import in_fresh_namespace, make_spare

    workspace = Path(tempfile.mkdtemp(prefix="skillctl-bench-"))
    try:
        shutil.copytree(SKILL / "fixtures" / "workspace", workspace, dirs_exist_ok=True)
        request = json.dumps({"path": "src"}).encode()
        env, _ = sandbox.build_env(
            granted=[], time="forbidden", randomness="forbidden", extra={"SKILL_WORKSPACE": str(workspace)}
        )
        bare_argv = [sys.executable, str(SKILL / "impl" / "run.py")]
        # an installed package has its bytecode: let the CLI write it (the skill itself still runs without)
        cli_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

        def bare(prefix=(), start=lambda spawn: spawn()):
            proc = start(
                lambda: subprocess.Popen([*prefix, *bare_argv], stdin=-1, stdout=-1, stderr=-1, env=env, cwd=SKILL)
            )
            proc.communicate(request)
            assert proc.returncode == 0

        def api(netns="on", box="on"):
            os.environ[sandbox.NETNS_ENV] = netns
            os.environ[confine.SANDBOX_ENV] = box
            sandbox.network_isolation.cache_clear()
            result = run_skill(SKILL, {"path": "src"}, workspace=workspace)
            assert result.ok, result.report["errors"]

        def cli(**extra):
            subprocess.run(
                [str(BIN / "skillctl"), "run", str(SKILL), "-i", "-", "--workspace", str(workspace), "--quiet-logs"],
                input=request,
                capture_output=True,
                check=True,
                env={**cli_env, **extra},
            )

        os.environ[sandbox.NETNS_ENV] = "on"
        sandbox.network_isolation.cache_clear()
        iso = sandbox.network_isolation()
        exec_unshare = shutil.which("unshare", path="/usr/bin:/bin:/usr/sbin:/sbin")
        rows = {"bare start (python3 impl/run.py)": bare}
        if exec_unshare and os.geteuid() == 0:
            rows["bare start inside unshare(1) --net"] = lambda: bare((exec_unshare, "--net", "--"))

        def in_thread(spawn):  # as the runner does from its second run on: the next namespace made meanwhile
            proc = in_fresh_namespace(spawn)
            make_spare()
            return proc

        if iso.in_thread:
            rows["bare start, in-thread netns"] = lambda: bare(start=in_thread)
        probe = bwrap.probe()
        if probe.error is None and probe.path:
            box = [probe.path, *bwrap.namespace_args(network=False, userns=probe.userns), *bwrap.system_args()]
            box += ["--tmpfs", "/tmp", "--ro-bind", str(SKILL), str(SKILL), "--ro-bind", str(workspace), str(workspace)]
            box += [a for r in bwrap.runtime_roots() for a in ("--ro-bind", r, r)] + ["--"]
            rows["bare start inside bwrap (no seccomp)"] = lambda: bare(tuple(box))
        rows["Python API run_skill()"] = api
        rows["Python API, sandbox off"] = lambda: api(box="off")
        rows["Python API, sandbox and netns off"] = lambda: api("off", "off")
        rows["CLI skillctl run"] = cli
        rows["CLI, sandbox off"] = lambda: cli(**{confine.SANDBOX_ENV: "off"})
        rows["CLI, sandbox and netns off"] = lambda: cli(**{confine.SANDBOX_ENV: "off", sandbox.NETNS_ENV: "off"})
        rows["CLI, prepared-skill cache off"] = lambda: cli(AGENTPACK_SKILLCTL_PREPARED_CACHE="off")
        figures = medians(rows, args.runs)
        base_wall, base_cpu, base_own, base_best = figures["bare start (python3 impl/run.py)"]
        print(
            f"fs.hash_tree, {args.runs} interleaved runs each, medians (sandbox: {probe.version or probe.error}; "
            f"network isolation without it: {iso.level}; "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)"
        )
        print(
            f"{'':42} {'wall ms':>9} {'overhead':>9} {'cpu ms':>9} {'overhead':>9} {'runner cpu':>11} "
            f"{'best wall':>10} {'overhead':>9}"
        )
        for name, (wall, cpu, own, best) in figures.items():
            print(
                f"{name:42} {wall:9.1f} {wall - base_wall:9.1f} {cpu:9.1f} {cpu - base_cpu:9.1f} "
                f"{own - base_own:11.2f} {best:10.1f} {best - base_best:9.1f}"
            )
        print(f"{'origin runner (issue figure)':42} {'':>9} {280.0:9.1f}")
        print(
            "targets: CLI overhead < 100 ms (wall), API overhead < 3 ms without the sandbox. On a loaded machine the "
            "median wall is "
            "noise: read the CPU and best-wall columns."
        )
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


if __name__ == "__main__":
    main()
