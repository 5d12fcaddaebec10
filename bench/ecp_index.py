"""Benchmark: ECP index build and query over the running Python's standard library (~1,800 files, 30 MB).

For each index format (keyword-index-v2, sqlite-fts-index-v1, vector-index-v1) it measures the build
time and peak memory (each build in its own process), the cold CLI query (a fresh ``agentpack query``
process), the warm in-process query, and retrieval quality (hit@1 and hit@5 over 20 questions whose
answer is a known module). When ``ecp-reference`` is installed in a virtual environment (the interop
tests' cache, or ``ECP_REFERENCE_VENV``), ``ecpctl`` runs on the same corpus in the same run and its
figures print beside ours. Prints figures only; asserts nothing.

Usage: python bench/ecp_index.py [--quick] [--no-reference]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import time
from pathlib import Path

QUERIES = [
    ("parse command line options and arguments with subparsers", "argparse.py"),
    ("compute the SHA-256 digest of a message with hashlib", "hashlib.py"),
    ("encode and decode base64 data", "base64.py"),
    ("read and write CSV files with a dialect and a sniffer", "csv.py"),
    ("pretty print nested data structures", "pprint.py"),
    ("match file names against shell-style wildcard patterns", "fnmatch.py"),
    ("create a temporary directory that is removed automatically", "tempfile.py"),
    ("copy a directory tree recursively with copytree", "shutil.py"),
    ("split a URL into scheme netloc path and query", "urllib/parse.py"),
    ("JSON decoder raw_decode and the scanner", "json/decoder.py"),
    ("heap queue push and pop the smallest item", "heapq.py"),
    ("bisect insort find the insertion point in a sorted list", "bisect.py"),
    ("dataclass field default_factory and frozen instances", "dataclasses.py"),
    ("dedent and fill text paragraphs to a width", "textwrap.py"),
    ("unified diff between two sequences of lines", "difflib.py"),
    ("random numbers from a gaussian distribution", "random.py"),
    ("parse an ini configuration file with sections and interpolation", "configparser.py"),
    ("abstract base classes with abstractmethod and ABCMeta", "abc.py"),
    ("send an email over SMTP with starttls and login", "smtplib.py"),
    ("read members of a zip archive and extract them", "zipfile"),
]
ASKED = sorted({answer for _, answer in QUERIES if answer.endswith(".py") and "/" not in answer})
QUICK_INCLUDE = ["json/**/*.py", "email/*.py", "zipfile/**/*.py", "textwrap.py", *ASKED]
"""--quick: the modules the questions are about (and the one the refresh touches), about 1 MB."""
FORMATS = [
    ("keyword", "keyword-index-v2", "type: keyword"),
    ("fts", "sqlite-fts-index-v1", "type: keyword\n        backend: sqlite-fts"),
    ("vector", "vector-index-v1", "type: vector\n        embedding: {model: agentpack-hash-v1, dimensions: 256}"),
]


CPU_SECONDS: dict[tuple, float] = {}
"""CPU seconds (user + system) of the last run of each argv prefix: steadier than wall time on a busy machine."""


def run_measured(argv: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MB) and stdout of a child process (its CPU seconds go to ``CPU_SECONDS``)."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = proc.stdout.read()
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{argv[:3]} failed: {err.decode()[-500:]}")
    CPU_SECONDS[tuple(argv[:3])] = usage.ru_utime + usage.ru_stime
    return wall, usage.ru_maxrss / 1024.0, out.decode()


def make_pack(root: Path, stdlib: Path, formats, quick: bool, reference: bool = False) -> Path:
    from agentpack_ecp.pack.scaffold import scaffold

    scaffold(root)
    manifest = root / "expert" / "EXPERT.yaml"
    text = manifest.read_text()
    include = json.dumps(QUICK_INCLUDE) if quick else '["**/*.py"]'
    text = text.replace("profile: conformance\n", "")
    text = text.replace("uri: expert/sources/docs", f"uri: {stdlib.as_uri()}")
    text = text.replace('include: ["**/*.md", "**/*.txt"]', f"include: {include}")
    text = text.replace('exclude: ["**/.git/**"]', 'exclude: ["site-packages/", "__pycache__/"]')
    start = text.index("    indexes:\n")
    end = text.index("maintenance:\n")
    entries = "".join(
        f"""      - id: std-{short}
        {kind}
        path: expert/context/indexes/std-{short}
        descriptor: expert/context/indexes/std-{short}/index.json
"""
        for short, _, kind in formats
    )
    text = text[:start] + "    indexes:\n" + entries + text[end:]
    if reference:
        text = text.replace(
            "embedding: {model: agentpack-hash-v1, dimensions: 256}",
            "embedding: {model: hash-embedding-v1, dimensions: 256}",
        )
    manifest.write_text(text)
    suite = root / "expert" / "evals" / "conformance.yaml"
    suite.write_text(
        'suite_id: conformance\nsuite_version: "1.0"\ncases:\n  - case_id: smoke\n    mode: ephemeral\n'
        "    question: json decoder\n    assertions: {min_citations: 0}\n"
    )
    policy = root / "expert" / "maintenance" / "policy.json"
    data = json.loads(policy.read_text())
    data["validation"]["fail_action"] = "warn"
    data["budgets"]["max_update_duration_seconds"] = 3600
    policy.write_text(json.dumps(data))
    return root


def hit_rates(paths_per_query: list[list[str]]) -> tuple[int, int]:
    hit1 = hit5 = 0
    for (_, expected), paths in zip(QUERIES, paths_per_query, strict=False):
        good = [i for i, p in enumerate(paths) if p == expected or p.startswith(expected)]
        hit1 += bool(good and good[0] == 0)
        hit5 += bool(good and good[0] < 5)
    return hit1, hit5


def bench_agentpack(pack: Path, python: str, agentpack: str) -> dict[str, dict]:
    results: dict[str, dict] = {}
    for short, fmt, _ in FORMATS:
        code = (
            f"from agentpack_ecp.index.build import build_pack; "
            f"build_pack({str(pack)!r}, index_ids=['std-{short}'], rebuild=True)"
        )
        wall, rss, _ = run_measured([python, "-c", code])
        build_cpu = CPU_SECONDS[(python, "-c", code)]
        run_measured([agentpack, "query", str(pack), QUERIES[0][0], "--mode", short, "--json"])  # bytecode, caches
        cold, cpu = [], []
        for _ in range(5):
            argv = [agentpack, "query", str(pack), QUERIES[0][0], "--mode", short, "--json"]
            t, _, _ = run_measured(argv)
            cold.append(t)
            cpu.append(CPU_SECONDS[tuple(argv[:3])])
        results[short] = {
            "format": fmt,
            "build_s": wall,
            "build_cpu_s": build_cpu,
            "build_mb": rss,
            "cold_s": statistics.median(cold),
            "cold_cpu_s": statistics.median(cpu),
        }
    script = textwrap.dedent(f"""
        import json, time, statistics
        from agentpack_ecp.pack.manifest import load_pack
        from agentpack_ecp.query.response import query_pack
        out = {{}}
        queries = {json.dumps([q for q, _ in QUERIES])}
        for mode in ("keyword", "fts", "vector"):
            t0 = time.perf_counter()
            pack = load_pack({str(pack)!r})
            query_pack(pack, {{"question": queries[0], "mode": mode}})
            load = time.perf_counter() - t0
            paths, times, cpu = [], [], []
            for q in queries * 3:
                t, c = time.perf_counter(), time.process_time()
                r = query_pack(pack, {{"question": q, "mode": mode, "top_k": 5}})
                times.append(time.perf_counter() - t)
                cpu.append(time.process_time() - c)
                paths.append([c["artifact_path"] for c in r["citations"]])
            out[mode] = {{"load_s": load, "warm_ms": statistics.median(times) * 1000,
                          "warm_cpu_ms": statistics.median(cpu) * 1000, "paths": paths[: len(queries)]}}
        print(json.dumps(out))
    """)
    _, _, stdout = run_measured([python, "-c", script])
    for mode, data in json.loads(stdout).items():
        hits = hit_rates(data["paths"])
        results[mode].update(warm_ms=data["warm_ms"], warm_cpu_ms=data["warm_cpu_ms"], load_s=data["load_s"], hits=hits)
    return results


COLD_TARGET_S, WARM_TARGET_MS, BUILD_RATIO_TARGET, REFRESH_TARGET_S = 0.2, 5.0, 0.2, 0.5
"""Issue 19: cold CLI query, warm in-process query, keyword build / ecpctl's, one-file refresh."""


def print_targets(ours: dict[str, dict], theirs: dict[str, dict]) -> None:
    """Each issue-19 figure against its target (CPU time beside wall time: the machine may be shared)."""
    print("targets:")
    for short, fmt, _ in FORMATS:
        row = ours[short]
        met = row["cold_cpu_s"] < COLD_TARGET_S
        print(
            f"  cold CLI query {fmt:20} {row['cold_s']:.3f} s wall, {row['cold_cpu_s']:.3f} s CPU "
            f"(target < {COLD_TARGET_S} s: {'met' if met else 'MISSED'} in CPU)"
        )
    for short, fmt, _ in FORMATS:
        row = ours[short]
        met = row["warm_cpu_ms"] < WARM_TARGET_MS
        print(
            f"  warm query     {fmt:20} {row['warm_ms']:.2f} ms wall, {row['warm_cpu_ms']:.2f} ms CPU "
            f"(target < {WARM_TARGET_MS} ms: {'met' if met else 'MISSED'} in CPU)"
        )
    if "keyword" in theirs:
        a, b = ours["keyword"], theirs["keyword"]
        wall, cpu = a["build_s"] / b["build_s"], a["build_cpu_s"] / b["build_cpu_s"]
        print(
            f"  keyword build: ours {a['build_s']:.2f} s ({a['build_cpu_s']:.2f} CPU, {a['build_mb']:.0f} MB), "
            f"ecpctl {b['build_s']:.2f} s ({b['build_cpu_s']:.2f} CPU, {b['build_mb']:.0f} MB): "
            f"{wall:.2f}x wall, {cpu:.2f}x CPU "
            f"(target <= {BUILD_RATIO_TARGET}x: {'met' if max(wall, cpu) <= BUILD_RATIO_TARGET else 'MISSED'})"
        )


def find_reference() -> Path | None:
    candidates = [
        os.environ.get("ECP_REFERENCE_VENV"),
        str(Path(tempfile.gettempdir()) / "agentpack-interop" / "ecp-reference-1.0.0"),
    ]
    for venv in filter(None, candidates):
        if (Path(venv) / "bin" / "ecpctl").exists():
            return Path(venv)
    return None


def bench_reference(venv: Path, work: Path, stdlib: Path, quick: bool) -> dict[str, dict]:
    results: dict[str, dict] = {}
    python, ecpctl = str(venv / "bin" / "python"), str(venv / "bin" / "ecpctl")
    for short, fmt, kind in FORMATS[:2]:
        pack = make_pack(work / f"ref-{short}", stdlib, [(short, fmt, kind)], quick, reference=True)
        argv = [ecpctl, "--json", "build", "--skill", str(pack)]
        wall, rss, _ = run_measured(argv)
        build_cpu = CPU_SECONDS[tuple(argv[:3])]
        cold_s, _, _ = run_measured([ecpctl, "--json", "query", "--skill", str(pack), QUERIES[0][0]])
        script = textwrap.dedent(f"""
            import json, time
            from pathlib import Path
            from ecp_reference.runtime import query_expert
            queries = {json.dumps([q for q, _ in QUERIES])}
            paths, times = [], []
            for q in queries:
                t = time.perf_counter()
                r = query_expert(Path({str(pack)!r}), question=q, top_k=5)
                times.append(time.perf_counter() - t)
                paths.append([c.get("artifact_path", "") for c in r["citations"]])
            print(json.dumps({{"warm_ms": sorted(times)[len(times) // 2] * 1000, "paths": paths}}))
        """)
        _, _, stdout = run_measured([python, "-c", script])
        data = json.loads(stdout.strip().splitlines()[-1])
        results[short] = {
            "format": fmt,
            "build_s": wall,
            "build_cpu_s": build_cpu,
            "build_mb": rss,
            "cold_s": cold_s,
            "warm_ms": data["warm_ms"],
            "hits": hit_rates(data["paths"]),
        }
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="A small corpus (the modules asked about).")
    parser.add_argument("--no-reference", action="store_true", help="Skip ecp-reference even when installed.")
    args = parser.parse_args()
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    python = sys.executable
    agentpack = str(Path(python).with_name("agentpack"))
    files = [p for p in stdlib.rglob("*.py") if not p.relative_to(stdlib).as_posix().startswith("site-packages/")]
    print(
        f"corpus: {stdlib} ({len(files)} .py files, {sum(p.stat().st_size for p in files) / 1e6:.1f} MB)"
        + (" [--quick: a subset]" if args.quick else "")
    )
    work = Path(tempfile.mkdtemp(prefix="ecp-bench-"))
    try:
        pack = make_pack(work / "stdlib-expert", stdlib, FORMATS, args.quick)
        ours = bench_agentpack(pack, python, agentpack)
        venv = None if args.no_reference else find_reference()
        theirs = bench_reference(venv, work, stdlib, args.quick) if venv else {}
        if not venv:
            print("ecp-reference not installed (run the interop tests or set ECP_REFERENCE_VENV): ours only")
        header = (
            f"{'format':22} {'tool':13} {'build s':>8} {'(CPU s)':>8} {'peak MB':>8} {'cold CLI s':>10} {'(CPU s)':>8} "
            f"{'warm ms':>9} {'(CPU ms)':>8} {'hit@1':>6} {'hit@5':>6}"
        )
        print(header)
        print("-" * len(header))
        for short, fmt, _ in FORMATS:
            for tool, table in (("agentpack", ours), ("ecp-reference", theirs)):
                row = table.get(short)
                if row is None:
                    continue
                h1, h5 = row["hits"]
                cpu = f"{row['cold_cpu_s']:8.3f}" if "cold_cpu_s" in row else f"{'':8}"
                warm_cpu = f"{row['warm_cpu_ms']:8.2f}" if "warm_cpu_ms" in row else f"{'':8}"
                print(
                    f"{fmt:22} {tool:13} {row['build_s']:8.2f} {row['build_cpu_s']:8.2f} {row['build_mb']:8.0f} "
                    f"{row['cold_s']:10.3f} {cpu} {row['warm_ms']:9.2f} {warm_cpu} {h1:>3}/20 {h5:>3}/20"
                )
        print_targets(ours, theirs)
    finally:
        shutil.rmtree(work, ignore_errors=True)


# -- lifecycle: incremental refresh after one changed file, MCP query latency (ECP part II) ------
def copy_corpus(stdlib: Path, target: Path, quick: bool) -> Path:
    """A writable copy of the corpus (the refresh changes one file in it)."""
    patterns = QUICK_INCLUDE if quick else ("**/*.py",)
    for pattern in patterns:
        for path in stdlib.glob(pattern):
            rel = path.relative_to(stdlib)
            if rel.parts[0] in ("site-packages", "__pycache__") or "__pycache__" in rel.parts:
                continue
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
    return target


def touch_one_file(corpus: Path, n: int) -> None:
    path = corpus / "textwrap.py"
    path.write_text(path.read_text() + f"\n# benchmark edit {n}: wrap and fill paragraphs again\n")


def bench_refresh(work: Path, corpus: Path, quick: bool, python: str, agentpack: str) -> dict[str, dict]:
    """Per format: a pack with that one index, built, then refreshed after one changed file (3 times)."""
    results: dict[str, dict] = {}
    for short, fmt, kind in FORMATS:
        pack = make_pack(work / f"refresh-{short}", corpus, [(short, fmt, kind)], quick)
        run_measured([python, "-c", f"from agentpack_ecp.index.build import build_pack; build_pack({str(pack)!r})"])
        inproc, inproc_cpu, cli = [], [], []
        script = textwrap.dedent(f"""
            import json, time
            from agentpack_ecp.lifecycle.refresh import refresh
            t = time.perf_counter()
            c = time.process_time()
            r = refresh({str(pack)!r})
            print(json.dumps({{"s": time.perf_counter() - t, "cpu": time.process_time() - c,
                               "decision": r["decision"], "strategy": r["strategy"]}}))
        """)
        for n in range(3):
            touch_one_file(corpus, 3 * FORMATS.index((short, fmt, kind)) + n)
            _, _, out = run_measured([python, "-c", script])
            data = json.loads(out.strip().splitlines()[-1])
            assert data["decision"] == "published" and data["strategy"] == "incremental", data
            inproc.append(data["s"])
            inproc_cpu.append(data["cpu"])
        rss = 0.0
        cpu = []
        for n in range(5):
            touch_one_file(corpus, 100 + 5 * FORMATS.index((short, fmt, kind)) + n)
            argv = [agentpack, "ecp", "refresh", str(pack), "--json"]
            wall, peak, out = run_measured(argv)
            assert json.loads(out)["strategy"] == "incremental", out[:300]
            cli.append(wall)
            cpu.append(CPU_SECONDS[tuple(argv[:3])])
            rss = max(rss, peak)
        results[short] = {
            "format": fmt,
            "refresh_s": statistics.median(inproc),
            "refresh_cpu_s": statistics.median(inproc_cpu),
            "cli_s": statistics.median(cli),
            "cli_cpu_s": statistics.median(cpu),
            "cli_mb": rss,
        }
    return results


def bench_reference_refresh(venv: Path, work: Path, corpus: Path, quick: bool) -> dict[str, dict]:
    results: dict[str, dict] = {}
    ecpctl = str(venv / "bin" / "ecpctl")
    for short, fmt, kind in FORMATS[:2]:
        pack = make_pack(work / f"ref-refresh-{short}", corpus, [(short, fmt, kind)], quick, reference=True)
        run_measured([ecpctl, "--json", "build", "--skill", str(pack)])
        touch_one_file(corpus, 200 + FORMATS.index((short, fmt, kind)))
        wall, rss, _ = run_measured([ecpctl, "--json", "refresh", "--skill", str(pack)])
        results[short] = {"format": fmt, "refresh_s": wall, "cli_s": wall, "cli_mb": rss}
    return results


def bench_mcp(pack: Path, agentpack: str) -> dict[str, dict]:
    """expert_query over a real stdio ``agentpack mcp serve``: first call (loads the index) and warm calls."""
    import anyio
    from mcp import Client, StdioServerParameters

    params = StdioServerParameters(
        command=agentpack, args=["mcp", "serve", "--pack", str(pack)], env={**os.environ, "AGENTPACK_PLUGINS": "ecp"}
    )

    async def run() -> dict[str, dict]:
        out: dict[str, dict] = {}
        async with Client(params, read_timeout_seconds=300) as client:
            for short, _, _ in FORMATS:
                t = time.perf_counter()
                await client.call_tool("expert_query", {"question": QUERIES[0][0], "mode": short})
                first = time.perf_counter() - t
                times = []
                for question, _ in QUERIES:
                    t = time.perf_counter()
                    result = await client.call_tool("expert_query", {"question": question, "mode": short})
                    times.append(time.perf_counter() - t)
                    if result.is_error:
                        raise RuntimeError(result.content[0].text)
                times.sort()
                out[short] = {
                    "first_ms": first * 1000,
                    "median_ms": statistics.median(times) * 1000,
                    "p95_ms": times[int(len(times) * 0.95) - 1] * 1000,
                }
        return out

    return anyio.run(run)


def lifecycle_main(quick: bool, reference: bool) -> None:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    python = sys.executable
    agentpack = str(Path(python).with_name("agentpack"))
    work = Path(tempfile.mkdtemp(prefix="ecp-bench-lifecycle-"))
    try:
        corpus = copy_corpus(stdlib, work / "corpus", quick)
        files = list(corpus.rglob("*.py"))
        print(
            f"\nlifecycle: a copy of the corpus ({len(files)} files, "
            f"{sum(p.stat().st_size for p in files) / 1e6:.1f} MB); one file changed before each refresh"
        )
        ours = bench_refresh(work, corpus, quick, python, agentpack)
        venv = find_reference() if reference else None
        theirs = bench_reference_refresh(venv, work, corpus, quick) if venv else {}
        header = (
            f"{'format':22} {'tool':13} {'refresh s':>10} {'(CPU s)':>8} {'CLI refresh s':>14} {'(CPU s)':>8} "
            f"{'peak MB':>8}"
        )
        print(header)
        print("-" * len(header))
        for short, fmt, _ in FORMATS:
            for tool, table in (("agentpack", ours), ("ecp-reference", theirs)):
                row = table.get(short)
                if row is not None:
                    cpu = f"{row['cli_cpu_s']:8.3f}" if "cli_cpu_s" in row else f"{'':8}"
                    inproc_cpu = f"{row['refresh_cpu_s']:8.3f}" if "refresh_cpu_s" in row else f"{'':8}"
                    print(
                        f"{fmt:22} {tool:13} {row['refresh_s']:10.3f} {inproc_cpu} {row['cli_s']:14.3f} {cpu} "
                        f"{row['cli_mb']:8.0f}"
                    )
        for short, fmt, _ in FORMATS:
            row = ours[short]
            met = row["refresh_s"] < REFRESH_TARGET_S
            print(
                f"  one-file refresh {fmt:20} {row['refresh_s']:.3f} s wall, {row['refresh_cpu_s']:.3f} s CPU "
                f"(target < {REFRESH_TARGET_S} s: {'met' if met else 'MISSED'} in wall time, "
                f"{'met' if row['refresh_cpu_s'] < REFRESH_TARGET_S else 'MISSED'} in CPU)"
            )
        print(
            "(agentpack 'refresh s': in-process refresh() incl. change detection, staged build, evals and "
            "atomic publish, median of 3; 'CLI refresh s': a fresh 'agentpack ecp refresh' process, median of 5 "
            "(CPU s: its user + system time); ecp-reference: 'ecpctl refresh')"
        )
        pack = make_pack(work / "mcp-pack", corpus, FORMATS, quick)
        run_measured([python, "-c", f"from agentpack_ecp.index.build import build_pack; build_pack({str(pack)!r})"])
        latency = bench_mcp(pack, agentpack)
        print(f"\nMCP expert_query over stdio ({len(QUERIES)} questions, index resident after the first call)")
        print(f"{'mode':10} {'first call ms':>14} {'median ms':>10} {'p95 ms':>8}")
        for mode, row in latency.items():
            print(f"{mode:10} {row['first_ms']:14.1f} {row['median_ms']:10.2f} {row['p95_ms']:8.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    # measure what an installed package does: with its bytecode cached (a PYTHONDONTWRITEBYTECODE
    # environment would make every child process compile the plugin's modules again)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPUs")
    lifecycle_only = "--lifecycle-only" in sys.argv
    if lifecycle_only:
        sys.argv.remove("--lifecycle-only")
    else:
        main()
    lifecycle_main("--quick" in sys.argv, "--no-reference" not in sys.argv)
    print(f"load average at end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
