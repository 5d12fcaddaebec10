"""Benchmark: DCI resolution over 100, 1,000 and 10,000 generated skills (cold, warm, peak memory).

Cold = a new ``Resolver`` (discovery with the core's SKILL.md validation, token
statistics, index) plus one resolution, with the process-wide memos (Porter
stems, Jaro-Winkler pairs) cleared first. Warm = the same query again on that
resolver (indexes and caches loaded). Warm+rescan also re-stats every file.
CPU is the process time of the cold runs (the machine may be shared: wall time
includes waiting for a core).
Peak memory is measured in a separate pass with tracemalloc (it slows Python
down, so it is not timed). Prints figures; asserts nothing.

    .venv/bin/python bench/dci.py [--sizes 100,1000,10000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
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
# agentskills-retrieval 0.7.0 (BM25 only, no contracts), measured on this machine by the author.
COMPARABLE = {1000: (2.5, 0.0075), 10000: (25.0, 0.038)}
TARGETS = {1000: (0.5, 0.005), 10000: (3.0, 0.030)}


def generate(root: Path, count: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for i in range(count):
        words = rng.sample(WORDS, 3)
        name = f"{words[0]}-{words[1]}-{i}"
        directory = root / "skills" / f"group-{i % 50:02d}" / name
        directory.mkdir(parents=True)
        description = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 20)))
        lines = ["---", f"name: {name}", f"description: {description.capitalize()}."]
        if rng.random() < 0.5:
            lines.append(f"compatibility: {', '.join(rng.sample(RUNTIMES, 2))}")
        if rng.random() < 0.7:
            caps = {f"{rng.choice(WORDS)}-{rng.choice(WORDS)}" for _ in range(rng.randint(1, 4))}
            mode = "^strict" if rng.random() < 0.3 else ""
            lines += ["metadata:", f'  contract: "DCI/1{mode} P({",".join(sorted(caps))}) E(input-text)"']
        lines += ["---", "Body.", ""]
        (directory / "SKILL.md").write_text("\n".join(lines), encoding="utf-8")


def run(size: int, repeat: int) -> dict:
    from agentpack.plugins import get_host
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
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
