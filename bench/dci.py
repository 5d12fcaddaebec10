"""Benchmark: DCI resolution over 100, 1,000 and 10,000 generated skills (cold, warm, peak memory).

Cold = a new ``Resolver`` (discovery with the core's SKILL.md validation, token
statistics, index) plus one resolution, with the process-wide memos (Porter
stems, Jaro-Winkler pairs) cleared first. Warm = the same query again on that
resolver (indexes and caches loaded). Warm+rescan also re-stats every file.
CPU is the process time of the cold runs (the machine may be shared: wall time
includes waiting for a core).
Peak memory is measured in a separate pass with tracemalloc (it slows Python
down, so it is not timed). Prints figures; asserts nothing.

``--cli`` measures what a user waits for instead, beside the reference in the same run: a cold
``agentpack dci resolve`` process on a just-generated workspace (first) and again, against a cold
process of agentskills-retrieval 0.7.0 (``LexicalSelector`` over agentskills-fs's
``LocalFileSystemSkillProvider``: BM25 only). Runs alternate between the tools; the medians and
minimums of wall time, the median CPU time (the machine may be shared) and the ratios print, and the
peak RSS of each process (``wait4``; ours with ``-o json`` and ``-o text``), each beside its target
with "met" or "not met" (wall at most 0.2x the reference's; peak RSS at most the reference's). The
reference needs Python >= 3.12: it is installed once in a throwaway venv under the temporary
directory, made with the first of ``$AGENTPACK_BENCH_PYTHON312``, ``python3.13``, ``python3.12`` or
a pyenv 3.12+ that runs.

    .venv/bin/python bench/dci.py [--sizes 100,1000,10000] [--repeat 5]
    .venv/bin/python bench/dci.py --cli [--sizes 1000,10000] [--repeat 5] [--editable]

``--cli`` times agentpack as a user installs it: core and every plugin from wheels built from this
tree (``bench/wheel_venv.py``); ``--editable`` times the development venv instead.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

WORDS = [
    "search",
    "web",
    "summarize",
    "document",
    "review",
    "code",
    "translate",
    "text",
    "extract",
    "table",
    "plan",
    "task",
    "schedule",
    "meeting",
    "analyze",
    "data",
    "chart",
    "report",
    "email",
    "draft",
    "reply",
    "test",
    "run",
    "build",
    "deploy",
    "monitor",
    "alert",
    "query",
    "database",
    "index",
    "crawl",
    "page",
    "parse",
    "json",
    "yaml",
    "validate",
    "schema",
    "convert",
    "format",
    "compare",
    "option",
    "evaluate",
    "criteria",
    "decide",
    "risk",
    "audit",
    "log",
    "trace",
    "debug",
    "profile",
    "cache",
    "store",
    "fetch",
    "upload",
    "image",
    "audio",
    "video",
    "caption",
    "classify",
]
RUNTIMES = ("cli", "copilot", "opencode", "codex")
# agentskills-retrieval 0.7.0 (BM25 only, no contracts), measured on this machine by the issue's author.
COMPARABLE = {1000: (2.5, 0.0075), 10000: (25.0, 0.038)}
TARGETS = {1000: (0.5, 0.005), 10000: (3.0, 0.030)}


def generate(root: Path, count: int, seed: int = 7, flat: bool = False) -> None:
    """``count`` skills under ``root/skills``: in 50 group folders, or directly beneath it when ``flat``
    (the layout agentskills-fs discovers, and without ``compatibility``, which it wants as a mapping)."""
    rng = random.Random(seed)
    for i in range(count):
        words = rng.sample(WORDS, 3)
        name = f"{words[0]}-{words[1]}-{i}"
        directory = root / "skills" / ("" if flat else f"group-{i % 50:02d}") / name
        directory.mkdir(parents=True)
        description = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
        lines = ["---", f"name: {name}", f"description: {description.capitalize()}."]
        if rng.random() < 0.5 and not flat:
            lines.append(f"compatibility: {', '.join(rng.sample(RUNTIMES, 2))}")
        if rng.random() < 0.7:
            caps = {f"{rng.choice(WORDS)}-{rng.choice(WORDS)}" for _ in range(rng.randint(1, 4))}
            mode = "^strict" if rng.random() < 0.3 else ""
            lines += ["metadata:", f'  contract: "DCI/1{mode} P({",".join(sorted(caps))}) E(input-text)"']
        lines += ["---", "Body.", ""]
        (directory / "SKILL.md").write_text("\n".join(lines), encoding="utf-8")


def run(size: int, repeat: int) -> dict:
    from agentpack.kernel.plugins import get_host
    from agentpack_dci.report import build_report
    from agentpack_dci.resolve import Resolver, ResolveRequest, clear_memos

    host = get_host()
    request = ResolveRequest(
        required=["search-web", "summarize-document"],
        optional=["review-code"],
        query="search the web and summarize documents",
    )
    with tempfile.TemporaryDirectory(prefix="dci-bench-") as tmp:
        root = Path(tmp)
        generate(root, size)
        cold, cpu = [], []
        for _ in range(repeat):
            clear_memos()
            start, start_cpu = time.perf_counter(), time.process_time()
            resolver = Resolver(root, host=host, ephemeral_history=True)
            resolution = resolver.resolve(request)
            cold.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
        warm, rescan, report = [], [], []
        for _ in range(repeat * 4):
            start = time.perf_counter()
            resolution = resolver.resolve(request)
            warm.append(time.perf_counter() - start)
            start = time.perf_counter()
            build_report(resolution)
            report.append(time.perf_counter() - start)
        for _ in range(max(1, repeat // 2)):
            start = time.perf_counter()
            resolver.refresh()
            resolver.resolve(request)
            rescan.append(time.perf_counter() - start)
        tracemalloc.start()
        build_report(Resolver(root, host=host, ephemeral_history=True).resolve(request))
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return {
        "size": size,
        "cold": statistics.median(cold),
        "cold_cpu": statistics.median(cpu),
        "warm": statistics.median(warm),
        "report": statistics.median(report),
        "rescan": statistics.median(rescan),
        "peak_mb": peak / 2**20,
        "selected": build_report(resolution)["selected_candidates"],
    }


REFERENCE = ("agentskills-retrieval==0.7.0", "agentskills-fs==0.7.0")
QUERY = "search the web and summarize documents"
REFERENCE_SCRIPT = """
import asyncio, sys
from pathlib import Path
from agentskills_core import SkillRegistry
from agentskills_fs import LocalFileSystemSkillProvider
from agentskills_retrieval import LexicalSelector

async def main():
    registry = SkillRegistry()
    await registry.register_all(LocalFileSystemSkillProvider(Path(sys.argv[1])))
    selection = await LexicalSelector(registry).select(sys.argv[2])
    print(len(selection.skill_ids))

asyncio.run(main())
"""


def reference_python() -> Path | None:
    """The reference venv's python (built once), or None without a Python >= 3.12 or a registry."""
    home = Path(tempfile.gettempdir()) / "agentpack-interop" / "agentskills-retrieval-0.7.0-py312"
    python = home / "bin" / "python"
    if (home / ".ready").exists():
        return python
    candidates = [os.environ.get("AGENTPACK_BENCH_PYTHON312"), shutil.which("python3.13"), shutil.which("python3.12")]
    candidates += sorted(map(str, Path.home().glob(".pyenv/versions/3.1[2-9]*/bin/python")), reverse=True)
    base = next((c for c in candidates if c and _is_312(c)), None)
    if not base:
        print("no Python >= 3.12 for agentskills-retrieval (set AGENTPACK_BENCH_PYTHON312): ours only")
        return None
    subprocess.run([base, "-m", "venv", "--clear", str(home)], check=True)
    pip = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", *REFERENCE],
        capture_output=True,
        text=True,
    )
    if pip.returncode != 0:
        print(f"cannot install {' '.join(REFERENCE)}: {pip.stderr[-300:]}: ours only")
        return None
    (home / ".ready").touch()
    return python


def _is_312(python: str) -> bool:
    check = "import sys; sys.exit(sys.version_info < (3, 12))"
    return subprocess.run([python, "-c", check], capture_output=True).returncode == 0


def timed(argv: list[str], cwd: Path, ok: tuple[int, ...] = (0, 1)) -> tuple[float, float, float]:
    """Wall and CPU seconds and peak RSS (MiB) of one process (``wait4``: its own rusage, not the
    maximum over every child so far); an exit status outside ``ok`` stops the bench."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    assert proc.stderr is not None
    stderr = proc.stderr.read()  # read to the end first, so a chatty process cannot block on a full pipe
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    proc.stderr.close()
    if proc.returncode not in ok:
        raise SystemExit(f"{argv[0]} failed ({proc.returncode}): {stderr.decode(errors='replace')[-500:]}")
    return elapsed, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024  # Linux: KiB


def run_cli(size: int, repeat: int, reference: Path | None, agentpack: str) -> dict[str, list[tuple[float, ...]]]:
    """Cold processes, alternating: ours on a just-generated workspace (first), ours again, ours with text
    output, the reference."""
    ours = [agentpack, "dci", "resolve", "-r", "search-web,summarize-document", "--optional", "review-code"]
    ours += ["--query", QUERY, "--no-prompt", "--no-history", "--no-record"]
    times: dict[str, list[tuple[float, ...]]] = {"first": [], "again": [], "text": [], "reference": []}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="dci-bench-cli-") as tmp:
            root = Path(tmp)
            generate(root, size, flat=True)
            times["first"].append(timed([*ours, "-o", "json"], root))
            times["again"].append(timed([*ours, "-o", "json"], root))
            times["text"].append(timed([*ours, "-o", "text"], root))
            if reference is not None:
                times["reference"].append(timed([str(reference), "-c", REFERENCE_SCRIPT, "skills", QUERY], root, (0,)))
    return times


def verdict(ok: bool) -> str:
    return "met" if ok else "not met"


def cli_main(sizes: list[int], repeat: int, editable: bool) -> None:
    # as a user installs it: every plugin from wheels (see wheel_venv), unless --editable asks for the dev venv
    if editable:
        agentpack = str(Path(sys.executable).with_name("agentpack"))
    else:
        from wheel_venv import wheel_venv

        agentpack = str(wheel_venv("agent_rpc", "dci", "ecp", "openexperts", "skillctl") / "bin" / "agentpack")
    print(f"ours: {agentpack}")
    # what an installed package does: its bytecode cached (PYTHONDONTWRITEBYTECODE would make every
    # process compile the modules again), written by one resolution before the timed runs
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    with tempfile.TemporaryDirectory(prefix="dci-bench-warmup-") as tmp:
        generate(Path(tmp), 10, flat=True)
        timed([agentpack, "dci", "resolve", "-r", "search-web"], Path(tmp))
    load = os.getloadavg()
    print(f"load average at start: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} on {os.cpu_count()} CPUs")
    reference = reference_python()
    print("wall s median/min (CPU s median); ratios: ours / reference, of the medians; peak RSS MiB, the largest")
    print(
        f"{'skills':>7}  {'first':>20}  {'again':>20}  {'reference':>20}  {'first/ref wall':>14}  {'CPU':>5}"
        f"  {'time target':>11}  {'RSS json':>8}  {'text':>6}  {'ref':>6}  {'memory target':>13}"
    )
    for size in sizes:
        t = run_cli(size, repeat, reference, agentpack)

        def cell(key: str, t: dict[str, list[tuple[float, ...]]] = t) -> tuple[str, float, float, float]:
            rows = t[key]
            if not rows:
                return f"{'-':>20}", float("nan"), float("nan"), float("nan")
            wall = statistics.median(r[0] for r in rows)
            cpu = statistics.median(r[1] for r in rows)
            text = f"{wall:6.3f}/{min(r[0] for r in rows):6.3f} ({cpu:5.3f})"
            return text, wall, cpu, max(r[2] for r in rows)

        first, again, text, ref = cell("first"), cell("again"), cell("text"), cell("reference")
        rss = max(first[3], again[3])
        print(
            f"{size:>7}  {first[0]:>20}  {again[0]:>20}  {ref[0]:>20}"
            f"  {first[1] / ref[1]:>13.2f}x  {first[2] / ref[2]:>4.2f}x  {verdict(first[1] <= 0.2 * ref[1]):>11}"
            f"  {rss:>8.1f}  {text[3]:>6.1f}  {ref[3]:>6.1f}  {verdict(max(rss, text[3]) <= ref[3]):>13}"
        )
    load = os.getloadavg()
    print(f"load average at end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print("targets: first run's wall at most 0.2x the reference's; peak RSS (json and text) at most the reference's")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default=None, help="Default 100,1000,10000 (--cli: 1000,10000).")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--cli", action="store_true", help="Cold CLI processes beside agentskills-retrieval.")
    parser.add_argument("--editable", action="store_true", help="--cli: time the dev venv, not a wheel install.")
    parser.add_argument("--quick", action="store_true", help="100 skills, one run (CI: the script still works).")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.repeat = args.sizes or "100", 1
    if args.cli:
        cli_main([int(s) for s in (args.sizes or "1000,10000").split(",")], args.repeat, args.editable)
        return
    args.sizes = args.sizes or "100,1000,10000"
    print(
        f"{'skills':>7}  {'cold s':>8}  {'cpu s':>6}  {'warm ms':>8}  {'report ms':>9}  {'rescan ms':>9}"
        f"  {'peak MB':>8}  {'target cold/warm':>17}  {'agentskills-retrieval cold/warm':>31}"
    )
    for size in (int(s) for s in args.sizes.split(",")):
        r = run(size, args.repeat)
        target = TARGETS.get(size)
        other = COMPARABLE.get(size)
        t = f"{target[0]:.1f} s / {target[1] * 1000:.0f} ms" if target else "-"
        o = f"{other[0]:.1f} s / {other[1] * 1000:.1f} ms" if other else "-"
        print(
            f"{size:>7}  {r['cold']:>8.3f}  {r['cold_cpu']:>6.3f}  {r['warm'] * 1000:>8.2f}"
            f"  {r['report'] * 1000:>9.2f}  {r['rescan'] * 1000:>9.1f}  {r['peak_mb']:>8.1f}  {t:>17}  {o:>31}"
        )


if __name__ == "__main__":
    main()
