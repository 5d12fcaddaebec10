"""Benchmark: each hand-written fast path of the core beside the plain library it stands in for.

A fast path stays only where this table shows what it buys (CONTRIBUTING.md, "Fast paths"). Each row
times the same work both ways in this process (CPU time, the median of ``--rounds`` rounds, the two
sides alternated) and, where the gain is start-up, the import in a fresh interpreter (CPU time of the
child, median of ``--rounds``). Prints figures; asserts nothing.

    .venv/bin/python bench/fastpaths.py [--rounds 7] [--quick]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _cpu(fn: Callable[[], object], repeat: int) -> float:
    start = time.process_time()
    for _ in range(repeat):
        fn()
    return (time.process_time() - start) / repeat


def _pair(fast: Callable[[], object], plain: Callable[[], object], repeat: int, rounds: int) -> tuple[float, float]:
    fast_t, plain_t = [], []
    for _ in range(rounds):
        fast_t.append(_cpu(fast, repeat))
        plain_t.append(_cpu(plain, repeat))
    return statistics.median(fast_t), statistics.median(plain_t)


def _child_cpu(code: str, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-c", code], check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        times.append((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime))
    return statistics.median(times)


def _frontmatters() -> list[str]:
    texts = []
    for path in sorted(ROOT.glob("examples/**/SKILL.md")) + sorted(ROOT.glob("tests/**/SKILL.md")):
        text = path.read_text(encoding="utf-8", errors="replace")
        if text.startswith("---\n") and "\n---" in text[4:]:
            texts.append(text[4 : text.index("\n---", 4) + 1])
    return texts


def rows(rounds: int, quick: bool) -> list[tuple[str, str, float, float, str]]:
    out = []
    scale = 1 if quick else 10

    # 1. SKILL.md frontmatter: yamlsimple beside the strings-only PyYAML parse (the one entry: frontmatter/yamlio)
    from agentpack.io.yamlio import parse_yaml
    from agentpack.io.yamlsimple import parse_simple

    texts = [t for t in _frontmatters() if parse_simple(t) is not None] or ["name: a\ndescription: b\n"]
    fast, plain = _pair(
        lambda: [parse_simple(t) for t in texts],
        lambda: [parse_yaml(t, strings_only=True, strict=True) for t in texts],
        20 * scale,
        rounds,
    )
    out.append(("SKILL.md frontmatter", f"{len(texts)} files, per file", fast / len(texts), plain / len(texts), "s"))
    fast = _child_cpu("import agentpack.io.yamlsimple", rounds)
    plain = _child_cpu("import agentpack.io.yamlsimple, yaml", rounds)
    out.append(("  + import on a scan", "yamlsimple vs + PyYAML", fast, plain, "s"))

    # 2. schema checks on run paths: quickschema beside jsonschema (the one entry: SchemaStore.validate)
    import jsonschema

    schema = json.loads((ROOT / "core/agentpack/kernel/schemas/report.v1.json").read_text(encoding="utf-8"))
    finding = {"severity": "error", "code": "X1", "message": "m", "file": "f", "line": 3}
    instance = {
        "schema_version": 1,
        "command": "validate",
        "items": [{"path": "p", "ok": False, "findings": [finding] * 20}],
    }
    from agentpack.io.quickschema import is_valid

    validator = jsonschema.Draft202012Validator(schema)
    fast, plain = _pair(lambda: is_valid(schema, instance), lambda: validator.is_valid(instance), 50 * scale, rounds)
    out.append(("schema check", "a 20-finding report", fast, plain, "s"))
    fast = _child_cpu("import agentpack.io.quickschema", rounds)
    plain = _child_cpu("import jsonschema", rounds)
    out.append(("  + import on a run path", "quickschema vs jsonschema", fast, plain, "s"))

    # 3. entry points: the agentpack group read from dist-info files beside importlib.metadata
    fast = _child_cpu("from agentpack.kernel.entrypoints import entry_points; entry_points('agentpack')", rounds)
    plain = _child_cpu("from importlib.metadata import entry_points; entry_points(group='agentpack')", rounds)
    out.append(("entry points", "cold process", fast, plain, "s"))

    # 4. the JSON envelope: envelope.dumps beside json.dumps(indent=2)
    from agentpack.io.envelope import dumps

    findings = [dict(finding, line=i) for i in range(5000)]
    report = {"schema_version": 1, "command": "x", "ok": False, "items": [{"path": "p", "findings": findings}]}
    fast, plain = _pair(
        lambda: dumps(report),
        lambda: json.dumps(report, indent=2, ensure_ascii=False, default=str),
        scale,
        rounds,
    )
    out.append(("JSON envelope", "a 5,000-finding report", fast, plain, "s"))

    # 5. `skillctl run`: the console script's argv fast path beside the click group
    try:
        import agentpack_skillctl  # noqa: F401
    except ImportError:
        out.append(("skillctl run start-up", "plugin not installed", float("nan"), float("nan"), "s"))
    else:
        fast = _child_cpu("import agentpack_skillctl.script", rounds)
        plain = _child_cpu("import agentpack_skillctl.script, agentpack_skillctl.cli", rounds)
        out.append(("skillctl run start-up", "script vs + click group", fast, plain, "s"))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--quick", action="store_true", help="a short run (CI keeps the script from rotting)")
    args = parser.parse_args()
    rounds = 3 if args.quick else args.rounds
    print(f"{'fast path':28} {'work':28} {'fast':>10} {'plain':>10} {'plain/fast':>10}")
    for name, work, fast, plain, _unit in rows(rounds, args.quick):
        ratio = plain / fast if fast else float("nan")
        print(f"{name:28} {work:28} {fast * 1e3:9.3f}ms {plain * 1e3:9.3f}ms {ratio:9.1f}x")


if __name__ == "__main__":
    main()
