"""The history of one input: pass-rate slope (a CI gate on a falling pass rate) and per-case flakiness.

The slope is the least-squares fit of the pass rate against the run's place
in the history (0, 1, 2...), so it reads as "pass rate per run". It is a
regression when at least ``min_runs`` runs exist and the slope is below
``-threshold``. The verdict (``agentpack.results.status``) says more than the slope: an input whose
every run failed is ``still failing``, never "no regression"; a case is ``flaky`` only when it
flipped both ways, a single pass -> fail is ``regressed``.
"""

from __future__ import annotations

from itertools import pairwise
from typing import Any

from agentpack.kernel.runtypes import Run
from agentpack.results.status import case_history, of_run

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
    between passing and failing from one run of the case to its next; ``trend`` is the case's
    history word (``passing``, ``still failing``, ``regressed``, ``fixed``, ``flaky``).
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
                "trend": case_history(h["status"] for h in row["history"]),
                "last": row["history"][-1]["status"],
            }
        )
    for row in rows:
        row["flaky"] = row["trend"] == "flaky"
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
    status, text = _verdict_of(runs, enough, regression, fitted, cases, min_runs)
    return {
        "ok": not regression,
        "verdict": status,
        "verdict_text": text,
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
                "verdict": of_run(r)["verdict"],
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
        "flaky": [c for c in cases if c["trend"] == "flaky"],
        "regressed": [c for c in cases if c["trend"] == "regressed"],
        "still_failing": [c for c in cases if c["trend"] == "still failing"],
        "cases": cases,
    }


def _verdict_of(
    runs: list[Run], enough: bool, regression: bool, fitted: float, cases: list[dict[str, Any]], min_runs: int
) -> tuple[str, str]:
    """``(verdict, sentence)``: ``regression``, ``still failing``, ``failing``, ``flaky``, ``no regression`` or
    ``not enough history``; only ``no regression`` is good news."""
    slope_text = f"slope {fitted * 100:+.2f} points per run" if enough else f"{len(runs)} of {min_runs} runs"
    if regression:
        return "regression", f"regression: the pass rate falls {-fitted * 100:.2f} points per run"
    if runs and all(not r.ok for r in runs) and len(runs) > 1:
        return "still failing", f"still failing: every one of the {len(runs)} runs did not pass"
    regressed = sum(1 for c in cases if c["trend"] == "regressed")
    if runs and not runs[-1].ok:
        cases_text = f"; {regressed} case{'s' if regressed != 1 else ''} regressed" if regressed else ""
        history = "" if enough else ", not enough history for a trend"
        return "failing", f"the latest run {runs[-1].status}{cases_text} ({slope_text}{history})"
    if not enough:
        return "not enough history", f"not enough history ({len(runs)} of {min_runs} runs)"
    flaky = sum(1 for c in cases if c["trend"] == "flaky")
    if flaky:
        return "flaky", f"no regression, but {flaky} flaky case{'s' if flaky != 1 else ''} ({slope_text})"
    return "no regression", f"no regression ({slope_text})"


def _verdict(result: dict[str, Any]) -> str:
    text: str = result["verdict_text"]
    word, _, rest = text.partition(":")
    return f"{word.upper()}:{rest}" if result["verdict"] in ("regression", "still failing") else text


def render_text(result: dict[str, Any]) -> str:
    lines = [f"trend of {result['input']} over {result['runs']} runs: {_verdict(result)}"]
    for p in result["points"]:
        bar = "#" * round(p["pass_rate"] * 20)
        tokens = f"  {p['total_tokens']:,} tokens" if p["total_tokens"] is not None else ""
        lines.append(
            f"  #{p['id']:<5} {p['started_at'][:19]}  {p['pass_rate'] * 100:5.1f}% {bar:<20}  "
            f"{p['passed']}/{p['total']}  {p['duration_s']:.2f} s{tokens}"
        )
    for kind in ("regressed", "flaky", "still_failing"):
        if result[kind]:
            lines.append(f"{kind.replace('_', ' ')} cases: {len(result[kind])}")
            for c in result[kind]:
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
        f"| #{p['id']} | {p['started_at'][:19]} | {p['verdict']} | {p['pass_rate'] * 100:.1f}% | "
        f"{p['passed']}/{p['total']} | {p['duration_s']:.2f} s | "
        f"{'' if p['total_tokens'] is None else format(p['total_tokens'], ',')} |"
        for p in result["points"]
    ]
    for kind in ("regressed", "flaky", "still_failing"):
        if result[kind]:
            title = kind.replace("_", " ").capitalize()
            lines += ["", f"#### {title} cases: {len(result[kind])}", "", "| case | runs | flips | passed | failed |"]
            lines.append("|---|---|---|---|---|")
            lines += [
                f"| `{c['key']}` | {c['runs']} | {c['flips']} | {c['passed']} | {c['failed']} |" for c in result[kind]
            ]
    return "\n".join(lines) + "\n"
