"""The history of one input: pass-rate slope (a CI gate on a falling pass rate) and per-case flakiness.

The slope is the least-squares fit of the pass rate against the run's place
in the history (0, 1, 2...), so it reads as "pass rate per run". It is a
regression when at least ``min_runs`` runs exist and the slope is below
``-threshold``.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from agentpack.kernel.runtypes import Run

DEFAULT_THRESHOLD = 0.01
"""A fall of more than one percentage point of pass rate per run."""
DEFAULT_MIN_RUNS = 3


def slope(values: list[float]) -> float:
    """Least-squares slope of ``values`` against 0, 1, 2... (0 for fewer than two values)."""
    n = len(values)
    if n < 2:
        return 0.0
    mean_x = (n - 1) / 2
    mean_y = sum(values) / n
    num = sum((i - mean_x) * (v - mean_y) for i, v in enumerate(values))
    den = sum((i - mean_x) ** 2 for i in range(n))
    return round(num / den, 6)


def flakiness(runs: list[Run]) -> list[dict[str, Any]]:
    """Per case: how often it passed and failed over ``runs`` and how often it flipped; flakiest first.

    Skipped cases and runs without the case are left out of its sequence. A flip is a change
    between passing and failing from one run of the case to its next.
    """
    seen: dict[str, dict[str, Any]] = {}
    for run in runs:
        for case in run.cases:
            if case.status == "skipped":
                continue
            row = seen.setdefault(
                case.key, {"key": case.key, "suite": case.suite, "id": case.id, "name": case.name, "history": []}
            )
            row["history"].append({"run": run.id, "status": case.status})
    rows = []
    for row in seen.values():
        states = [h["status"] == "passed" for h in row["history"]]
        flips = sum(1 for a, b in pairwise(states) if a != b)
        runs_seen = len(states)
        rows.append(
            {
                **row,
                "runs": runs_seen,
                "passed": sum(states),
                "failed": runs_seen - sum(states),
                "flips": flips,
                "flip_rate": round(flips / (runs_seen - 1), 4) if runs_seen > 1 else 0.0,
                "flaky": flips > 0,
                "last": row["history"][-1]["status"],
            }
        )
    rows.sort(key=lambda r: (-r["flip_rate"], -r["failed"], r["key"]))
    return rows


def percentile(values: list[float], p: int) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[max(1, -(-p * len(ordered) // 100)) - 1]


def trend(runs: list[Run], *, threshold: float = DEFAULT_THRESHOLD, min_runs: int = DEFAULT_MIN_RUNS) -> dict[str, Any]:
    """The trend over ``runs`` (oldest first, with cases): ``ok`` is false on a falling pass rate."""
    rates = [r.pass_rate for r in runs]
    fitted = slope(rates)
    enough = len(runs) >= min_runs
    regression = enough and fitted < -threshold
    cases = flakiness(runs)
    return {
        "ok": not regression,
        "input": runs[-1].input if runs else None,
        "runs": len(runs),
        "enough_history": enough,
        "min_runs": min_runs,
        "threshold": threshold,
        "slope": fitted,
        "regression": regression,
        "first_pass_rate": rates[0] if rates else None,
        "last_pass_rate": rates[-1] if rates else None,
        "points": [
            {
                "id": r.id,
                "started_at": r.started_at,
                "status": r.status,
                "pass_rate": r.pass_rate,
                "passed": r.passed,
                "total": r.total,
                "duration_s": r.duration_s,
                "total_tokens": r.total_tokens,
                "commit": r.git_commit,
                "dirty": r.git_dirty,
                "case_p50_s": percentile([c.duration_s for c in r.cases], 50),
                "case_p95_s": percentile([c.duration_s for c in r.cases], 95),
            }
            for r in runs
        ],
        "flaky": [c for c in cases if c["flaky"]],
        "cases": cases,
    }


def _verdict(result: dict[str, Any]) -> str:
    if not result["enough_history"]:
        return f"not enough history ({result['runs']} of {result['min_runs']} runs)"
    if result["regression"]:
        return f"REGRESSION: pass rate falling {-result['slope'] * 100:.2f} pts per run"
    return f"no regression (slope {result['slope'] * 100:+.2f} pts per run)"


def render_text(result: dict[str, Any]) -> str:
    lines = [f"trend of {result['input']} over {result['runs']} runs: {_verdict(result)}"]
    for p in result["points"]:
        bar = "#" * round(p["pass_rate"] * 20)
        tokens = f"  {p['total_tokens']:,} tokens" if p["total_tokens"] is not None else ""
        lines.append(
            f"  #{p['id']:<5} {p['started_at'][:19]}  {p['pass_rate'] * 100:5.1f}% {bar:<20}  "
            f"{p['passed']}/{p['total']}  {p['duration_s']:.2f} s{tokens}"
        )
    if result["flaky"]:
        lines.append(f"flaky cases: {len(result['flaky'])}")
        for c in result["flaky"]:
            lines.append(
                f"  {c['key']}  flipped {c['flips']}x in {c['runs']} runs "
                f"({c['passed']} passed, {c['failed']} failed; last {c['last']})"
            )
    return "\n".join(lines) + "\n"


def render_markdown(result: dict[str, Any]) -> str:
    lines = [
        f"### agentpack runs trend: `{result['input']}`",
        "",
        f"**{_verdict(result)}**",
        "",
        "| run | started | status | pass rate | passed | duration | tokens |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| #{p['id']} | {p['started_at'][:19]} | {p['status']} | {p['pass_rate'] * 100:.1f}% | "
        f"{p['passed']}/{p['total']} | {p['duration_s']:.2f} s | "
        f"{'' if p['total_tokens'] is None else format(p['total_tokens'], ',')} |"
        for p in result["points"]
    ]
    if result["flaky"]:
        lines += ["", f"#### Flaky cases: {len(result['flaky'])}", "", "| case | runs | flips | passed | failed |"]
        lines.append("|---|---|---|---|---|")
        lines += [
            f"| `{c['key']}` | {c['runs']} | {c['flips']} | {c['passed']} | {c['failed']} |" for c in result["flaky"]
        ]
    return "\n".join(lines) + "\n"
