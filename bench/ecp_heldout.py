"""Benchmark: ECP retrieval on held-out corpora nothing was tuned on, recall@k and MRR beside ecpctl's.

Corpora from this machine (a corpus that is missing is skipped and said so): Perl's standard library
(``/usr/share/perl/5.*``, ``*.pm``), Tcl's and Tk's script libraries (``/usr/share/tcltk``), and a mixed
repository with its tests (the installed ``jsonschema`` and ``referencing`` packages). The questions are
in ``bench/data/ecp_heldout_questions.json``, committed before the first run; they are never changed and
no ranking default is chosen by looking at these figures (``bench/ecp_retrieval.py`` holds the tuning
half). Per corpus, one pack with a keyword and an FTS5 index is built and each is queried alone; the
``-plain`` rows query a copy of that build with file roles and per-file diversity turned off
(``context.ranking``), to show what they change. ``ecpctl`` (ecp-reference, when installed: see
``bench/ecp_retrieval.py``) builds and queries a keyword pack of the same corpus in the same run.
recall@k: the share of questions with an answering file among the first k citations; MRR over the top
10. Asserts nothing.

Usage: python bench/ecp_heldout.py [--corpus NAME ...] [--no-reference] [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from ecp_retrieval import QUERY_SCRIPT, bench_agentpack, bench_reference, find_reference, make_pack, rank_of, run

from agentpack_ecp.pack.ranking import ROLE_WEIGHTS

QUESTIONS = Path(__file__).parent / "data" / "ecp_heldout_questions.json"
KINDS = ["keyword", "fts"]
RECALL_AT = (1, 3, 5, 10)
PLAIN = "  ranking:\n    diversity: 1\n    roles: {" + ", ".join(f"{r}: {{weight: 1}}" for r in ROLE_WEIGHTS) + "}\n"
"""``context.ranking`` turning file roles and per-file diversity off: the ``-plain`` rows show what they do."""
CORPORA = ("perl", "tcl", "jsonschema")
NONE = ["**/.git/**"]
"""The exclude list of a corpus that excludes nothing (the manifest's schema wants one pattern)."""


def prepare(work: Path, name: str) -> tuple[Path, list[str], list[str]] | None:
    """(root, include, exclude) of the corpus ``name``, or ``None`` when this machine lacks it."""
    if name == "perl":
        found = sorted(Path("/usr/share/perl").glob("5.*.*"))
        return (found[-1], ["**/*.pm"], NONE) if found else None
    if name == "tcl":
        root = Path("/usr/share/tcltk")
        return (root, ["**/*.tcl", "**/*.tm"], NONE) if (root / "tcl8.6").is_dir() else None
    root = work / "corpus-jsonschema"
    for package in ("jsonschema", "referencing"):
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            return None
        shutil.copytree(Path(spec.origin).parent, root / package, ignore=shutil.ignore_patterns("__pycache__"))
    return root, ["**/*.py"], NONE


def plain(pack: Path, copy: Path, texts: list[str]) -> dict[str, list[list[str]]]:
    """Paths cited per question by each index of a copy of the built ``pack`` with roles and diversity off."""
    shutil.copytree(pack, copy, symlinks=True)
    manifest = copy / "expert" / "EXPERT.yaml"
    manifest.write_text(manifest.read_text().replace("context:\n", "context:\n" + PLAIN, 1))
    configs = {f"{kind}-plain": [kind] for kind in KINDS}
    return json.loads(run([sys.executable, "-c", QUERY_SCRIPT, str(copy), json.dumps(configs)], json.dumps(texts)))


def scores(ranks: list[int | None]) -> dict[str, float]:
    n = len(ranks) or 1
    out = {f"recall@{k}": sum(r is not None and r <= k for r in ranks) / n for k in RECALL_AT}
    out["mrr"] = sum(1.0 / r for r in ranks if r is not None) / n
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", choices=CORPORA, help="Only these corpora.")
    parser.add_argument("--no-reference", action="store_true", help="Skip ecp-reference even when installed.")
    parser.add_argument(
        "--quick", action="store_true", help="The jsonschema corpus (always installed), no reference (CI: still works)."
    )
    parser.add_argument("--json", type=Path, help="Also write the figures and every rank here.")
    args = parser.parse_args()
    if args.quick:
        args.corpus, args.no_reference = args.corpus or ["jsonschema"], True
    questions = json.loads(QUESTIONS.read_text())["questions"]
    venv = None if args.no_reference else find_reference()
    if venv is None:
        print("ecp-reference not installed (run the interop tests or set ECP_REFERENCE_VENV): ours only")
    report: dict = {}
    work = Path(tempfile.mkdtemp(prefix="ecp-heldout-"))
    try:
        for name in args.corpus or list(CORPORA):
            corpus = prepare(work, name)
            if corpus is None:
                print(f"\n{name}: not on this machine, skipped")
                continue
            asked = [q for q in questions if q["corpus"] == name]
            texts = [q["q"] for q in asked]
            pack = make_pack(work / f"{name}-pack", corpus, KINDS)
            result = bench_agentpack(pack, texts, KINDS, None)
            result["paths"].update(plain(pack, work / f"{name}-plain", texts))
            if venv is not None:
                ref = bench_reference(venv, make_pack(work / f"{name}-ref", corpus, ["keyword"], True), texts)
                result["builds"].update(ref["builds"])
                result["paths"].update(ref["paths"])
            table = {}
            for config, paths in result["paths"].items():
                ranks = [rank_of(p, q["answers"]) for p, q in zip(paths, asked, strict=True)]
                table[config] = dict(scores(ranks), ranks={q["id"]: r for q, r in zip(asked, ranks, strict=True)})
            report[name] = {"builds": result["builds"], "n": len(asked), "table": table}
            print_table(f"{name} ({len(asked)} questions)", table)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if len(report) > 1:
        configs = [c for c in next(iter(report.values()))["table"] if all(c in r["table"] for r in report.values())]
        pooled = {c: scores([r for rep in report.values() for r in rep["table"][c]["ranks"].values()]) for c in configs}
        print_table(f"all corpora ({sum(r['n'] for r in report.values())} questions)", pooled)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))


def print_table(title: str, table: dict) -> None:
    print(f"\n{title}")
    header = f"{'config':14}" + "".join(f" {'recall@' + str(k):>9}" for k in RECALL_AT) + "      MRR"
    print(header)
    print("-" * len(header))
    for config, row in table.items():
        print(f"{config:14}" + "".join(f" {row[f'recall@{k}']:9.0%}" for k in RECALL_AT) + f" {row['mrr']:8.3f}")


if __name__ == "__main__":
    main()
