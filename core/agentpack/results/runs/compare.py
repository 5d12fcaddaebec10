"""What changed between two runs: regressions first, then fixes, new and removed cases, timing and token deltas.

Rules (``docs/runs.md``): cases are matched by ``suite/id``. A case that passed
in the base run and failed or errored in the head run is a regression; the
reverse is a fix. A head run that errored or was interrupted where the base
did not is a regression of the whole run. Any regression makes the
comparison fail (``agentpack runs compare`` exits 1). Without a regression the verdict still says
what the head run is: ``still failing`` when cases failed in both runs, never a bare "no regressions".
"""

from __future__ import annotations

from typing import Any

from agentpack.kernel.runtypes import Case, Run

KINDS = ("regressed", "fixed", "new", "removed", "changed", "still_failing", "unchanged")
TITLES = {
    "regressed": "Regressions (pass → fail)",
    "fixed": "Fixed (fail → pass)",
    "new": "New cases",
    "removed": "Removed cases",
    "changed": "Other status changes",
    "still_failing": "Still failing",
}
_BROKEN = ("error", "interrupted")


def _kind(before: Case | None, after: Case | None) -> str:
    if before is None:
        return "new"
    if after is None:
        return "removed"
    if before.status == "passed" and after.failing:
        return "regressed"
    if before.failing and after.status == "passed":
        return "fixed"
    if before.status != after.status:
        return "changed"
    return "still_failing" if after.failing else "unchanged"


def _delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else round(after - before, 6)


def _entry(key: str, before: Case | None, after: Case | None) -> dict[str, Any]:
    case = after or before
    assert case is not None
    return {
        "key": key,
        "suite": case.suite,
        "id": case.id,
        "name": case.name,
        "kind": _kind(before, after),
        "before": before.status if before else None,
        "after": after.status if after else None,
        "duration_before_s": before.duration_s if before else None,
        "duration_after_s": after.duration_s if after else None,
        "duration_delta_s": _delta(before.duration_s if before else None, after.duration_s if after else None),
        "tokens_before": before.total_tokens if before else None,
        "tokens_after": after.total_tokens if after else None,
        "tokens_delta": _delta(before.total_tokens if before else None, after.total_tokens if after else None),
        "message": (after.message if after else "") or "",
    }


def _mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 6) if values else 0.0


def compare(base: Run, head: Run) -> dict[str, Any]:
    """The comparison of ``base`` (older) and ``head`` (newer) as JSON: ``ok`` is false on any regression."""
    before, after = base.case_map(), head.case_map()
    keys = list(after) + [k for k in before if k not in after]
    entries = [_entry(k, before.get(k), after.get(k)) for k in keys]
    grouped: dict[str, list[dict[str, Any]]] = {kind: [] for kind in KINDS}
    for entry in entries:
        grouped[entry["kind"]].append(entry)
    run_regressed = head.status in _BROKEN and base.status not in _BROKEN
    base_case_mean = _mean([c.duration_s for c in base.cases])
    head_case_mean = _mean([c.duration_s for c in head.cases])
    slower = sorted(
        (e for e in entries if e["duration_delta_s"] is not None and e["duration_delta_s"] > 0),
        key=lambda e: -e["duration_delta_s"],
    )
    ok = not grouped["regressed"] and not run_regressed
    return {
        "ok": ok,
        **_verdict_of(ok, len(grouped["regressed"]), len(grouped["still_failing"]), run_regressed, head),
        "base": base.summary_json(),
        "head": head.summary_json(),
        "same_input": base.input == head.input,
        "input_changed": base.input_digest != head.input_digest,
        "run_regressed": run_regressed,
        "counts": {kind: len(grouped[kind]) for kind in KINDS},
        "deltas": {
            "pass_rate": round(head.pass_rate - base.pass_rate, 4),
            "duration_s": round(head.duration_s - base.duration_s, 6),
            "mean_case_duration_s": round(head_case_mean - base_case_mean, 6),
            "total_tokens": _delta(base.total_tokens, head.total_tokens),
            "input_tokens": _delta(base.input_tokens, head.input_tokens),
            "output_tokens": _delta(base.output_tokens, head.output_tokens),
        },
        "mean_case_duration_s": {"base": base_case_mean, "head": head_case_mean},
        "slowest_changes": slower[:5],
        "changes": {kind: grouped[kind] for kind in KINDS if kind != "unchanged"},
        "unchanged": len(grouped["unchanged"]),
    }


# -- rendering ----------------------------------------------------------------------------------
def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _tokens(value: int | None) -> str:
    return "n/a" if value is None else f"{value:,}"


def _verdict_of(ok: bool, regressed: int, still: int, run_regressed: bool, head: Run) -> dict[str, str]:
    """``verdict`` (``regressed``, ``still failing``, ``failing`` or ``no regressions``) and its sentence."""
    if not ok:
        parts = [f"{regressed} regression{'s' if regressed != 1 else ''}"] if regressed else []
        if run_regressed:
            parts.append(f"the run {head.status}")
        return {"verdict": "regressed", "verdict_text": ", ".join(parts)}
    if still:
        text = f"no regressions, but {still} case{'s' if still != 1 else ''} still failing"
        return {"verdict": "still failing", "verdict_text": text}
    if not head.ok:
        return {"verdict": "failing", "verdict_text": f"no regressions, but the head run {head.status}"}
    return {"verdict": "no regressions", "verdict_text": "no regressions"}


def _verdict(result: dict[str, Any]) -> str:
    text: str = result["verdict_text"]
    return f"REGRESSED: {text}" if result["verdict"] == "regressed" else text


def render_text(result: dict[str, Any]) -> str:
    base, head, deltas = result["base"], result["head"], result["deltas"]
    lines = [
        f"compare #{base['id']} -> #{head['id']} ({head['input']}): {_verdict(result)}",
        f"  status     {base['status']} -> {head['status']}",
        f"  pass rate  {_pct(base['totals']['pass_rate'])} -> {_pct(head['totals']['pass_rate'])} "
        f"({deltas['pass_rate'] * 100:+.1f} pts)",
        f"  duration   {base['duration_s']:.2f} s -> {head['duration_s']:.2f} s ({deltas['duration_s']:+.2f} s)",
        f"  tokens     {_tokens(base['usage']['total_tokens'])} -> {_tokens(head['usage']['total_tokens'])}"
        + (f" ({deltas['total_tokens']:+,.0f})" if deltas["total_tokens"] is not None else ""),
    ]
    if not result["same_input"]:
        lines.append(f"  note: different inputs ({base['input']} vs {head['input']})")
    elif result["input_changed"]:
        lines.append("  note: the input changed between the runs (digest differs)")
    for kind, title in TITLES.items():
        entries = result["changes"][kind]
        if not entries:
            continue
        lines.append(f"{title}: {len(entries)}")
        for e in entries:
            status = f"{e['before'] or '-'} -> {e['after'] or '-'}"
            lines.append(f"  {e['key']}  {status}" + (f"  {e['message']}" if e["message"] else ""))
    lines.append(f"unchanged: {result['unchanged']}")
    return "\n".join(lines) + "\n"


def _md(text: Any) -> str:
    return str(text if text is not None else "").replace("|", "\\|").replace("\n", " ")


def render_markdown(result: dict[str, Any]) -> str:
    """Markdown for a GitHub step summary (``>> $GITHUB_STEP_SUMMARY``)."""
    base, head, deltas = result["base"], result["head"], result["deltas"]
    lines = [
        f"### agentpack runs compare: #{base['id']} → #{head['id']} `{_md(head['input'])}`",
        "",
        f"**{_verdict(result)}**",
        "",
        f"| | base #{base['id']} | head #{head['id']} | change |",
        "|---|---|---|---|",
        f"| status | {base['status']} | {head['status']} | |",
        f"| pass rate | {_pct(base['totals']['pass_rate'])} | {_pct(head['totals']['pass_rate'])} "
        f"| {deltas['pass_rate'] * 100:+.1f} pts |",
        f"| cases | {base['totals']['total']} | {head['totals']['total']} | |",
        f"| duration | {base['duration_s']:.2f} s | {head['duration_s']:.2f} s | {deltas['duration_s']:+.2f} s |",
        f"| tokens | {_tokens(base['usage']['total_tokens'])} | {_tokens(head['usage']['total_tokens'])} | "
        + (f"{deltas['total_tokens']:+,.0f}" if deltas["total_tokens"] is not None else "")
        + " |",
        f"| commit | {_md((base['git']['commit'] or '')[:10])} | {_md((head['git']['commit'] or '')[:10])} | |",
    ]
    for kind, title in TITLES.items():
        entries = result["changes"][kind]
        if not entries:
            continue
        lines += ["", f"#### {title}: {len(entries)}", "", "| case | before | after | message |", "|---|---|---|---|"]
        lines += [
            f"| `{_md(e['key'])}` | {e['before'] or '–'} | {e['after'] or '–'} | {_md(e['message'])} |" for e in entries
        ]
    return "\n".join(lines) + "\n"
