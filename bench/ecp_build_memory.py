"""Benchmark: peak memory and CPU of an ECP index build as the corpus grows, beside ecpctl's.

For each size (MB of distinct real Python source: the running interpreter's standard library, then its
site-packages) a corpus is copied once; then each format (keyword-index-v2, sqlite-fts-index-v1,
vector-index-v1) is built in a fresh process (``build_pack(..., rebuild=True)``) and its peak RSS and CPU
time (user + system) are read from ``wait4``. When ``ecp-reference`` is installed (the interop tests'
cache, or ``ECP_REFERENCE_VENV``) ``ecpctl build`` runs on the same corpora (keyword and FTS5). The targets
of issue 28 are printed with met or MISSED: our peak memory flat in corpus size (the largest size within
1.5x of the smallest) and the FTS5 build at most half of ecpctl's CPU. Prints figures only; asserts nothing.

Usage: python bench/ecp_build_memory.py [--sizes 4,16,64] [--quick] [--no-reference]
(``--quick``: 1 and 2 MB, for CI.)
"""

from __future__ import annotations

import argparse
import shutil
import sys
import sysconfig
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ecp_index import CPU_SECONDS, FORMATS, find_reference, make_pack, run_measured

FLAT_TARGET = 1.5
"""Our peak at the largest size over our peak at the smallest, per format."""
FTS_CPU_TARGET = 0.5
"""Our FTS5 build CPU over ecpctl's."""


def corpus_files() -> list[tuple[Path, Path]]:
    """``(root, file)`` of every .py file of the standard library, then of site-packages, in a stable order."""
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    purelib = Path(sysconfig.get_paths()["purelib"])
    out = []
    for root in (stdlib, purelib):
        for path in sorted(root.rglob("*.py")):
            rel = path.relative_to(root)
            if "__pycache__" in rel.parts or (root == stdlib and rel.parts[0] in ("site-packages", "dist-packages")):
                continue
            out.append((root, path))
    return out


def make_corpus(target: Path, mb: float, files: list[tuple[Path, Path]]) -> tuple[int, float]:
    """Copy files into ``target`` until ``mb`` MB (files over the build's 512 KB limit skipped)."""
    total = count = 0
    for root, path in files:
        size = path.stat().st_size
        if size > 512_000:
            continue
        dest = target / root.name / path.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)
        total += size
        count += 1
        if total >= mb * 1e6:
            break
    return count, total / 1e6


def build_ours(pack: Path, python: str, short: str) -> tuple[float, float]:
    code = (
        f"from agentpack_ecp.index.build import build_pack; "
        f"build_pack({str(pack)!r}, index_ids=['std-{short}'], rebuild=True)"
    )
    _, rss, _ = run_measured([python, "-c", code])
    return rss, CPU_SECONDS[(python, "-c", code)]


def build_reference(venv: Path, pack: Path) -> tuple[float, float]:
    argv = [str(venv / "bin" / "ecpctl"), "--json", "build", "--skill", str(pack)]
    _, rss, _ = run_measured(argv)
    return rss, CPU_SECONDS[tuple(argv[:3])]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="4,16,64", help="Corpus sizes in MB, comma-separated.")
    parser.add_argument("--quick", action="store_true", help="1 and 2 MB (CI).")
    parser.add_argument("--no-reference", action="store_true", help="Skip ecp-reference even when installed.")
    args = parser.parse_args()
    sizes = [1.0, 2.0] if args.quick else [float(s) for s in args.sizes.split(",")]
    python = sys.executable
    venv = None if args.no_reference else find_reference()
    files = corpus_files()
    work = Path(tempfile.mkdtemp(prefix="ecp-bench-memory-"))
    rows: dict[tuple[str, str], dict[float, tuple[float, float]]] = {}
    try:
        for mb in sizes:
            corpus = work / f"corpus-{mb:g}"
            count, real = make_corpus(corpus, mb, files)
            print(f"corpus {mb:g} MB: {count} files, {real:.1f} MB", flush=True)
            for short, fmt, kind in FORMATS:
                pack = make_pack(work / f"ours-{mb:g}-{short}", corpus, [(short, fmt, kind)], False)
                rows.setdefault((fmt, "agentpack"), {})[mb] = build_ours(pack, python, short)
                if venv is not None and short != "vector":
                    ref = make_pack(work / f"ref-{mb:g}-{short}", corpus, [(short, fmt, kind)], False, reference=True)
                    rows.setdefault((fmt, "ecp-reference"), {})[mb] = build_reference(venv, ref)
                shutil.rmtree(work / f"ours-{mb:g}-{short}", ignore_errors=True)
                shutil.rmtree(work / f"ref-{mb:g}-{short}", ignore_errors=True)
            shutil.rmtree(corpus, ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if venv is None:
        print("ecp-reference not installed (run the interop tests or set ECP_REFERENCE_VENV): ours only")
    header = f"{'format':22} {'tool':14}" + "".join(f" {f'{mb:g} MB: peak MB':>16} {'CPU s':>7}" for mb in sizes)
    print(header)
    print("-" * len(header))
    for (fmt, tool), by_size in rows.items():
        cells = "".join(f" {by_size[mb][0]:16.0f} {by_size[mb][1]:7.2f}" for mb in sizes)
        print(f"{fmt:22} {tool:14}{cells}")
    print("targets:")
    low, high = sizes[0], sizes[-1]
    for _, fmt, _ in FORMATS:
        ours = rows[(fmt, "agentpack")]
        ratio = ours[high][0] / ours[low][0]
        print(
            f"  peak memory {fmt:20} {ours[low][0]:.0f} MB at {low:g} MB, {ours[high][0]:.0f} MB at {high:g} MB: "
            f"{ratio:.2f}x (target <= {FLAT_TARGET}x: {'met' if ratio <= FLAT_TARGET else 'MISSED'})"
        )
    theirs = rows.get(("sqlite-fts-index-v1", "ecp-reference"))
    if theirs:
        ours = rows[("sqlite-fts-index-v1", "agentpack")]
        for mb in sizes:
            ratio = ours[mb][1] / theirs[mb][1]
            print(
                f"  FTS5 build CPU at {mb:g} MB: ours {ours[mb][1]:.2f} s, ecpctl {theirs[mb][1]:.2f} s: {ratio:.2f}x "
                f"(target <= {FTS_CPU_TARGET}x: {'met' if ratio <= FTS_CPU_TARGET else 'MISSED'})"
            )


if __name__ == "__main__":
    main()
