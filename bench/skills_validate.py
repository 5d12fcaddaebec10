"""Benchmark: validating one Agent Skill in a cold process, ``agentpack validate DIR`` beside skills-ref.

What pre-commit runs on every commit. Each run is a new process; ours and the reference
(``python -m skills_ref.cli validate DIR``, skills-ref 0.1.1, the dev venv's test dependency)
alternate, after one warm-up each (bytecode written). The figure is the median CPU time (user +
system of the child, from ``resource.getrusage``), steadier than wall time on a shared machine;
wall medians are printed beside it. Both run from the same interpreter and venv. Target (issue 28):
ours at or below skills-ref's CPU. ``--explain`` prints the slowest imports of our process.
Prints figures and met/not met; asserts nothing.

Usage: python bench/skills_validate.py [--runs 15] [--quick] [--explain] [SKILL_DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SKILL = """\
---
name: pdf-tools
description: Extract text and tables from PDF files, fill forms and merge documents. Use when working with PDFs.
license: Apache-2.0
metadata:
  author: bench
  version: "1.0"
---

# PDF tools

Read the file, then extract what the user asked for.
"""


def timed(argv: list[str]) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one process running ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{' '.join(argv)} failed ({done.returncode}): {done.stdout[-500:]}{done.stderr[-500:]}")
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def explain(argv: list[str], top: int = 12) -> None:
    env = {**os.environ, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    rows = []
    for line in done.stderr.splitlines():
        parts = line.removeprefix("import time:").split("|")
        if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2][1:].startswith(" "):
            rows.append((int(parts[1]), parts[2].strip()))  # a top-level import (nested ones are indented)
    print("slowest top-level imports of ours (cumulative, microseconds, one run):")
    for total, name in sorted(rows, reverse=True)[:top]:
        print(f"  {total:>8}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("skill", nargs="?", type=Path, help="a skill folder (default: a generated one)")
    parser.add_argument("--runs", type=int, default=15, help="runs of each (median; default 15)")
    parser.add_argument("--quick", action="store_true", help="3 runs (CI: the script still works)")
    parser.add_argument("--explain", action="store_true", help="also print our slowest imports")
    args = parser.parse_args()
    runs = 3 if args.quick else args.runs
    with tempfile.TemporaryDirectory() as tmp:
        skill = args.skill
        if skill is None:
            skill = Path(tmp) / "pdf-tools"
            skill.mkdir()
            (skill / "SKILL.md").write_text(SKILL)
        ours = [str(Path(sys.executable).with_name("agentpack")), "validate", str(skill)]
        theirs = [sys.executable, "-m", "skills_ref.cli", "validate", str(skill)]
        try:
            import skills_ref  # noqa: F401
        except ImportError:
            theirs = []
            print("skills-ref is not installed (pip install skills-ref==0.1.1): ours only")
        times: dict[str, list[tuple[float, float]]] = {"agentpack validate": [], "skills-ref validate": []}
        for argv in (ours, theirs):
            if argv:
                timed(argv)  # warm-up: bytecode, page cache
        for _ in range(runs):
            times["agentpack validate"].append(timed(ours))
            if theirs:
                times["skills-ref validate"].append(timed(theirs))
        print(f"one skill, cold process, median of {runs} ({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f})")
        print(f"{'command':22} {'CPU ms':>8} {'wall ms':>8}")
        for name, values in times.items():
            if values:
                cpu, wall = (statistics.median(v[i] for v in values) * 1000 for i in (0, 1))
                print(f"{name:22} {cpu:8.1f} {wall:8.1f}")
        if theirs:
            ours_cpu = statistics.median(v[0] for v in times["agentpack validate"])
            ref_cpu = statistics.median(v[0] for v in times["skills-ref validate"])
            ratio = ours_cpu / ref_cpu
            print(f"target: ours at or below skills-ref's CPU: {ratio:.2f}x ({'met' if ratio <= 1 else 'NOT met'})")
        if args.explain:
            explain(ours)


if __name__ == "__main__":
    main()
