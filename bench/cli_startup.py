"""Benchmark: CLI start-up with every installed plugin, beside a bare interpreter.

Runs each command as a real subprocess, interleaved round by round (so load
on the machine hits all of them alike), and prints the median wall time of
``--runs`` rounds, the difference to ``python -c pass``, and the target
(``agentpack --help`` within 0.15 s of the bare interpreter). When ``--help``
misses the target it prints where the time goes, from ``python -X importtime``.
Prints figures; asserts nothing.

    .venv/bin/python bench/cli_startup.py [--runs 15] [--top 15]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

TARGET_S = 0.15
BIN = Path(sys.executable).parent
AGENTPACK = str(BIN / "agentpack")
COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "agentpack --help": [AGENTPACK, "--help"],
    "agentpack plugins": [AGENTPACK, "plugins"],
    "agentpack --version": [AGENTPACK, "--version"],
}


def wall(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def measure(runs: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for argv in COMMANDS.values():  # warm the OS caches once
        wall(argv)
    for _ in range(runs):
        for name, argv in COMMANDS.items():
            times[name].append(wall(argv))
    return times


def import_profile(argv: list[str]) -> list[tuple[int, int, str]]:
    """``(self_us, cumulative_us, module)`` for every import of ``argv`` run under ``-X importtime``."""
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    result = subprocess.run(argv, env=env, capture_output=True, text=True, check=True)
    rows = []
    for line in result.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, cumulative_us, module = line.removeprefix("import time:").split("|")
        rows.append((int(self_us), int(cumulative_us), module.rstrip()))
    return rows


PHASES = """
import contextlib, io, sys, time
marks = [time.perf_counter()]
import agentpack; marks.append(time.perf_counter())
import click; marks.append(time.perf_counter())
import agentpack.cli.app, agentpack.cli.launch; marks.append(time.perf_counter())
import importlib.metadata; marks.append(time.perf_counter())
import agentpack.kernel.plugins; marks.append(time.perf_counter())
importlib.metadata.entry_points(group="agentpack"); marks.append(time.perf_counter())
host = agentpack.kernel.plugins.get_host(); marks.append(time.perf_counter())
host.commands(); marks.append(time.perf_counter())
sys.argv = ["agentpack", "--help"]
with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):
    agentpack.cli.launch.run()
marks.append(time.perf_counter())
print(" ".join(str(b - a) for a, b in zip(marks, marks[1:])))
"""
PHASE_NAMES = (
    "import agentpack (pluggy)",
    "import click",
    "import agentpack.cli.app (rest)",
    "import importlib.metadata",
    "import agentpack.kernel.plugins (rest)",
    "entry_points() scan",
    "plugin manager (import plugins, register, check)",
    "commands() hook",
    "render --help",
)


def phases(runs: int) -> None:
    """In-process phases of `agentpack --help`, minimum over ``runs`` fresh processes. Plugin modules load
    through importlib.import_module, which -X importtime does not record, so this is the complete picture."""
    samples = [
        list(
            map(
                float,
                subprocess.run(
                    [sys.executable, "-c", PHASES], capture_output=True, text=True, check=True
                ).stdout.split(),
            )
        )
        for _ in range(runs)
    ]
    print(f"\nphases of `agentpack --help` in one process (minimum of {runs} runs):")
    for index, name in enumerate(PHASE_NAMES):
        print(f"    {min(s[index] for s in samples) * 1000:7.1f} ms  {name}")
    print(f"    {min(sum(s) for s in samples) * 1000:7.1f} ms  in all")


def explain(top: int) -> None:
    rows = import_profile([sys.executable, AGENTPACK, "--help"])
    bare = {m.strip() for _, _, m in import_profile([sys.executable, "-c", "pass"])}
    total = sum(s for s, _, m in rows if m.strip() not in bare)
    print(
        f"\nwhere `agentpack --help` spends its imports beyond a bare start (python -X importtime, "
        f"{total / 1000:.0f} ms in all):"
    )
    roots = [(c, m.strip()) for _, c, m in rows if not m.startswith("  ") and m.strip() not in bare]
    print("  top-level imports by cumulative time:")
    for cumulative, module in sorted(roots, reverse=True)[:top]:
        print(f"    {cumulative / 1000:7.1f} ms  {module}")
    print("  heaviest modules by own time:")
    for self_us, _, module in sorted(r for r in rows if r[2].strip() not in bare)[::-1][:top]:
        print(f"    {self_us / 1000:7.1f} ms  {module.strip()}")
    groups: dict[str, int] = {}
    for self_us, _, module in rows:
        if module.strip() in bare:
            continue
        name = module.strip().split(".")[0]
        groups[name] = groups.get(name, 0) + self_us
    print("  own time by top-level package:")
    for name, self_us in sorted(groups.items(), key=lambda kv: -kv[1])[:top]:
        print(f"    {self_us / 1000:7.1f} ms  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15, help="rounds to take the median of (default 15)")
    parser.add_argument("--top", type=int, default=15, help="rows of the import breakdown (default 15)")
    parser.add_argument("--explain", action="store_true", help="print the import breakdown even on target")
    parser.add_argument("--quick", action="store_true", help="3 runs (CI: the script still works)")
    args = parser.parse_args()
    if args.quick:
        args.runs = 3
    if not Path(AGENTPACK).exists():
        sys.exit(f"no agentpack script at {AGENTPACK}; run `make install` first")
    plugins = subprocess.run([AGENTPACK, "--version"], capture_output=True, text=True).stdout.strip().splitlines()
    print(f"{plugins[0]} with {len(plugins) - 1} plugins: {', '.join(p.split()[0] for p in plugins[1:])}")
    print(f"median of {args.runs} runs, each a new process ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})\n")
    times = measure(args.runs)
    bare = statistics.median(times["python -c pass"])
    print(f"{'command':22} {'median':>9} {'min':>9} {'max':>9} {'vs bare':>9}")
    for name, values in times.items():
        median = statistics.median(values)
        delta = "" if name == "python -c pass" else f"{(median - bare) * 1000:+7.0f}ms"
        print(f"{name:22} {median * 1000:7.0f}ms {min(values) * 1000:7.0f}ms {max(values) * 1000:7.0f}ms {delta:>9}")
    over = statistics.median(times["agentpack --help"]) - bare
    verdict = "within" if over <= TARGET_S else "MISSES"
    print(
        f"\ntarget: `agentpack --help` within {TARGET_S * 1000:.0f} ms of bare start: {verdict} "
        f"({over * 1000:.0f} ms; by minimum "
        f"{(min(times['agentpack --help']) - min(times['python -c pass'])) * 1000:.0f} ms)"
    )
    print("reference: the agent protocol's reference runtime takes about 500 ms to start")
    if over > TARGET_S or args.explain:
        phases(max(5, args.runs // 2))
        explain(args.top)


if __name__ == "__main__":
    main()
