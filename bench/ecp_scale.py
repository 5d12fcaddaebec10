"""Benchmark: the SQLite FTS5 index at growing scale, beside ecpctl's, with issue 28's targets.

Corpora of about 4, 16 and 64 MB (``--sizes``) are made from this machine's real source and
documentation trees (Python's library, Perl's, /usr/share/doc: uncompressed text files only, taken
round-robin from the trees in a fixed order, so each corpus is a distinct real mix and the larger ones
contain the smaller). For each corpus, agentpack and ecpctl (ecp-reference, when installed: the
interop tests' cache or ``ECP_REFERENCE_VENV``) each get a pack with one FTS5 index and are measured
in turn in the same run:

* build: CPU seconds (user + system) and peak RSS of a fresh build process;
* one-file refresh: CPU of a refresh CLI process (no eval gate) after one file gained a line (median of 3);
* cold query: CPU of a fresh query CLI process (median of 5);
* warm query: in-process wall ms per question (median over 20 questions x 3), the index kept open;
  for agentpack also the FTS5 search alone (its top 20), with the side postings and with FTS5's own
  ``ORDER BY bm25()`` (what a database without them gets).

Targets (issue 28): build, refresh and cold query at most 1/2 of ecpctl's CPU at every size; warm
query flat in corpus size and peak build memory flat (the largest corpus's at most 1.5x the
smallest's). Each prints "met" or "not met". Prints figures only; asserts nothing.

Ours runs as a user installs it, from wheels of this tree (``bench/wheel_venv.py``: the development
venv's editable installs add a path finder per plugin to every process start); ``--editable`` (and
``--quick``) time the development venv instead.

Usage: python bench/ecp_scale.py [--quick] [--sizes 4,16,64] [--no-reference] [--editable]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import sysconfig
import tempfile
import textwrap
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ecp_index import CPU_SECONDS, FORMATS, QUERIES, find_reference, make_pack, run_measured
from wheel_venv import wheel_venv

FTS = [FORMATS[1]]
TEXT_SUFFIXES = {".py", ".pm", ".pl", ".pod", ".txt", ".md", ".rst", ".html", ".c", ".h", ".sh", ".cfg", ".ini"}
MAX_FILE = 256 * 1024
"""Files larger than this are left out (a source's default size limit skips them anyway)."""
FLAT = 1.5
"""Warm query and peak memory count as flat when the largest corpus's are at most this times the smallest's."""


def trees() -> list[Path]:
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    found = [stdlib, Path("/usr/lib/python3"), *sorted(Path("/usr/share").glob("perl*")), Path("/usr/share/doc")]
    return [t for t in dict.fromkeys(found) if t.is_dir()]


def text_files(tree: Path) -> list[Path]:
    out = []
    for path in sorted(tree.rglob("*")):
        if "__pycache__" in path.parts or "site-packages" in path.parts or path.is_symlink():
            continue
        if path.suffix in TEXT_SUFFIXES and path.is_file() and 0 < path.stat().st_size <= MAX_FILE:
            out.append(path)
    return out


def make_corpus(target: Path, megabytes: float, lists: list[tuple[Path, list[Path]]]) -> tuple[int, int]:
    """Copy files round-robin from ``lists`` into ``target`` until ``megabytes``; (files, bytes)."""
    limit, total, count = megabytes * 1e6, 0, 0
    cursors = [0] * len(lists)
    while total < limit and any(c < len(files) for c, (_, files) in zip(cursors, lists, strict=True)):
        for i, (tree, files) in enumerate(lists):
            if cursors[i] >= len(files) or total >= limit:
                continue
            path = files[cursors[i]]
            cursors[i] += 1
            dest = target / f"t{i}" / path.relative_to(tree)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, dest)
            total += dest.stat().st_size
            count += 1
    return count, total


def scale_pack(root: Path, corpus: Path, reference: bool) -> Path:
    pack = make_pack(root, corpus, FTS, False, reference=reference)
    manifest = pack / "expert" / "EXPERT.yaml"
    manifest.write_text(manifest.read_text().replace('include: ["**/*.py"]', 'include: ["**/*"]'))
    return pack


def touch(corpus: Path, n: int) -> None:
    path = min((p for p in corpus.rglob("*.py")), key=lambda p: p.as_posix())
    with path.open("a") as handle:
        handle.write(f"\n# benchmark edit {n}: wrap and fill paragraphs again\n")


def cpu(argv: list[str]) -> tuple[float, float]:
    """(CPU seconds, peak MB) of one process."""
    _, rss, _ = run_measured(argv)
    return CPU_SECONDS[tuple(argv[:3])], rss


def ours(pack: Path, corpus: Path, python: str, agentpack: str, reps: int) -> dict[str, float]:
    code = f"from agentpack_ecp.index.build import build_pack; build_pack({str(pack)!r}, rebuild=True)"
    build_cpu, build_mb = cpu([python, "-c", code])
    question = QUERIES[0][0]
    query = [agentpack, "query", str(pack), question, "--mode", "fts", "--json"]
    cpu(query)  # bytecode and page cache
    cold = statistics.median(cpu(query)[0] for _ in range(reps + 2))
    refresh = []
    for n in range(reps):
        touch(corpus, n)
        refresh.append(cpu([agentpack, "ecp", "refresh", str(pack), "--json", "--no-evals", "--no-record"])[0])
    script = textwrap.dedent(f"""
        import json, statistics, time
        from agentpack_ecp.pack.manifest import load_pack
        from agentpack_ecp.query.response import query_pack
        pack = load_pack({str(pack)!r})
        queries = {json.dumps([q for q, _ in QUERIES])}
        query_pack(pack, {{"question": queries[0], "mode": "fts"}})
        times = []
        for q in queries * 3:
            t = time.perf_counter()
            query_pack(pack, {{"question": q, "mode": "fts", "top_k": 5}})
            times.append(time.perf_counter() - t)
        # the FTS5 search alone (the top 20 a top_k 5 query asks for): the side postings' MaxScore,
        # and FTS5's own ORDER BY bm25() that a database without them gets
        from pathlib import Path
        from agentpack_ecp.index.fts import FtsIndex
        from agentpack_ecp.index.tokenize import tokenize
        folder = Path({str(pack)!r}) / "expert" / "context" / "indexes" / "std-fts"
        index = FtsIndex(folder, json.loads((folder / "index_data.json").read_text()))
        topk, ranked = [], []
        for q in queries * 3:
            terms = list(dict.fromkeys(tokenize(q)))
            t = time.perf_counter()
            index.search(terms, 20, None, None)
            topk.append(time.perf_counter() - t)
            t = time.perf_counter()
            index._ranked(terms, 20, None, None)
            ranked.append(time.perf_counter() - t)
        print(json.dumps([statistics.median(x) * 1000 for x in (times, topk, ranked)]))
    """)
    warm, topk, ranked = json.loads(run_measured([python, "-c", script])[2].strip().splitlines()[-1])
    return {
        "build": build_cpu,
        "mb": build_mb,
        "refresh": statistics.median(refresh),
        "cold": cold,
        "warm": warm,
        "topk": topk,
        "ranked": ranked,
    }


def reference(venv: Path, pack: Path, corpus: Path, reps: int) -> dict[str, float]:
    ecpctl, python = str(venv / "bin" / "ecpctl"), str(venv / "bin" / "python")
    build_cpu, build_mb = cpu([ecpctl, "--json", "build", "--skill", str(pack)])
    query = [ecpctl, "--json", "query", "--skill", str(pack), QUERIES[0][0]]
    cpu(query)
    cold = statistics.median(cpu(query)[0] for _ in range(reps + 2))
    refresh = []
    for n in range(reps):
        touch(corpus, 100 + n)
        refresh.append(cpu([ecpctl, "--json", "refresh", "--skill", str(pack), "--no-evals"])[0])
    script = textwrap.dedent(f"""
        import json, statistics, time
        from pathlib import Path
        from ecp_reference.runtime import query_expert
        queries = {json.dumps([q for q, _ in QUERIES])}
        query_expert(Path({str(pack)!r}), question=queries[0], top_k=5)
        times = []
        for q in queries * 3:
            t = time.perf_counter()
            query_expert(Path({str(pack)!r}), question=q, top_k=5)
            times.append(time.perf_counter() - t)
        print(json.dumps(statistics.median(times) * 1000))
    """)
    warm = json.loads(run_measured([python, "-c", script])[2].strip().splitlines()[-1])
    return {"build": build_cpu, "mb": build_mb, "refresh": statistics.median(refresh), "cold": cold, "warm": warm}


FLOORS = {
    "cold": ("cold query", "import click, pluggy, yaml, sqlite3, json"),
    "refresh": (
        "one-file refresh",
        "import os; os.environ.setdefault('OPENBLAS_NUM_THREADS', '1'); "
        "import click, pluggy, yaml, sqlite3, json, numpy",
    ),
}
"""What every such process imports before it reads a pack: the CLI (click), the plugin host (pluggy),
EXPERT.yaml's parser, the index's database, and for a refresh the arrays its postings are patched with
(with the one OpenBLAS thread the index package asks for)."""


def floors(python: str, reps: int) -> dict[str, float]:
    """CPU seconds of a fresh interpreter importing only ``FLOORS``' modules (median of ``reps + 2``), by the
    key of the measurement they bound."""
    return {
        key: statistics.median(cpu([python, "-c", code])[0] for _ in range(reps + 2))
        for key, (_, code) in FLOORS.items()
    }


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def report(rows: list[tuple[float, dict[str, float], dict[str, float] | None]], floor: dict[str, float]) -> None:
    header = (
        f"{'corpus MB':>9} {'tool':9} {'build CPU s':>11} {'peak MB':>8} {'refresh CPU s':>13} "
        f"{'cold CPU s':>10} {'warm ms':>8} {'search ms':>9} {'(FTS5 ranks)':>12}"
    )
    print(header)
    print("-" * len(header))
    for size, mine, theirs in rows:
        for tool, row in (("agentpack", mine), ("ecpctl", theirs)):
            if row is not None:
                search = f"{row['topk']:9.2f} {row['ranked']:12.2f}" if "topk" in row else ""
                print(
                    f"{size:9.1f} {tool:9} {row['build']:11.2f} {row['mb']:8.0f} {row['refresh']:13.3f} "
                    f"{row['cold']:10.3f} {row['warm']:8.2f} {search}"
                )
    print("targets:")
    for size, mine, theirs in rows:
        if theirs is None:
            continue
        for key, name in (("build", "build"), ("refresh", "one-file refresh"), ("cold", "cold query")):
            ratio = mine[key] / theirs[key] if theirs[key] else float("inf")
            print(f"  {size:5.1f} MB {name:17} {ratio:5.2f}x ecpctl's CPU (target <= 0.5): {verdict(ratio <= 0.5)}")
    for key, value in floor.items():
        name = FLOORS[key][0]
        best = min((theirs[key] for _, _, theirs in rows if theirs is not None), default=None)
        against = f" = {value / best:.2f}x ecpctl's smallest {name}" if best else ""
        print(f"  start-up floor of a {name} (interpreter and imports only): {value:.3f} s{against}")
    first, last = rows[0][1], rows[-1][1]
    if len(rows) > 1:
        for key, name in (("warm", "warm query"), ("topk", "FTS5 search"), ("mb", "peak build memory")):
            growth = last[key] / first[key]
            print(
                f"  {name:17} {growth:5.2f}x from {rows[0][0]:.1f} to {rows[-1][0]:.1f} MB "
                f"(flat: <= {FLAT}x): {verdict(growth <= FLAT)}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="One 0.5 MB corpus, one repetition each (CI).")
    parser.add_argument("--sizes", default="4,16,64", help="Corpus sizes in MB, comma-separated.")
    parser.add_argument("--no-reference", action="store_true", help="Skip ecp-reference even when installed.")
    parser.add_argument("--editable", action="store_true", help="Time the development venv, not a wheel install.")
    args = parser.parse_args()
    # installed code has its bytecode: a PYTHONDONTWRITEBYTECODE environment would make every measured
    # process compile both tools again (0.04-0.1 s each), which no user pays
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    sizes = [0.5] if args.quick else [float(s) for s in args.sizes.split(",")]
    reps = 1 if args.quick else 3
    python = sys.executable if args.quick or args.editable else str(wheel_venv("ecp") / "bin" / "python")
    agentpack = str(Path(python).with_name("agentpack"))
    print(f"ours: {agentpack}")
    venv = None if args.no_reference else find_reference()
    load = os.getloadavg()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    lists = [(t, text_files(t)) for t in trees()]
    print("trees: " + ", ".join(f"{t} ({len(f)} files)" for t, f in lists))
    if not venv:
        print("ecp-reference not installed (run the interop tests or set ECP_REFERENCE_VENV): ours only")
    work = Path(tempfile.mkdtemp(prefix="ecp-scale-"))
    rows = []
    try:
        for i, size in enumerate(sizes):
            corpus = work / f"corpus-{size:g}"
            files, total = make_corpus(corpus, size, lists)
            print(f"corpus {size:g} MB: {files} files, {total / 1e6:.1f} MB", flush=True)
            mine = ours(scale_pack(work / f"ours-{i}", corpus, False), corpus, python, agentpack, reps)
            theirs = None
            if venv:
                theirs = reference(venv, scale_pack(work / f"ref-{i}", corpus, True), corpus, reps)
            rows.append((total / 1e6, mine, theirs))
        report(rows, floors(python, reps))
        load = os.getloadavg()
        print(f"load average at the end {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
