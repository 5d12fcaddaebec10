"""The ``capability_resolution_report`` (JSON) and its text renderings (``resolve`` and ``explain``).

``build_report`` gives the full report: every field of the origin's schema plus
agentpack's extension fields, listed in ``EXTENSION_KEYS`` / ``CANDIDATE_EXTENSION_KEYS``.
The origin's schema allows no other field, so what is written for others
(``resolve -o json``'s ``report``, ``resolve --report FILE``) is ``split_report``'s
first half, valid against it; the extensions travel beside it and ``join_report``
puts them back (``explain --from-report``).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator
from typing import Any

from .grammar import PARSER_VERSION
from .index import Match
from .model import Resolution
from .reliability import STATE_FILE
from .scoring import at_least, r6
from .selection import TIE_BREAKERS, id_hash

EXTENSION_KEYS = (
    "status",
    "contract_parser_version",
    "query",
    "runtime",
    "alias_tables",
    "decision",
    "probes",
    "statistics",
    "discovery_roots",
    "candidate_listing",
    "top_candidate",
    "history_note",
)
CANDIDATE_EXTENSION_KEYS = (
    "name",
    "path",
    "source",
    "contract",
    "matches",
    "optional_matches",
    "resolved_required",
    "flags",
    "ranking",
    "policy_hints",
    "selected",
)


LEXICAL_LISTED = 20
"""Candidates listed by default with only a lexical signal (BM25 or name/path overlap): the best ones."""


def _relevant(res: Resolution) -> list[int]:
    """Candidates the report lists, best first: all with ``--all-candidates``; by default every candidate
    with a capability match, every ranked, selected or probed one, and the best ``LEXICAL_LISTED`` of the
    candidates with only a lexical signal (the rest score 0 on ``S_contract`` and fail its gate)."""
    t, sel = res.table, res.selection
    key = res.selector.key
    if res.request.listing == "all":
        wanted = set(range(res.corpus.size))
    else:
        wanted = {*t.matches, *sel.ranked, *sel.selected, *sel.probe_rejected}
        lexical = [
            i
            for i, (d, p) in enumerate(zip(t.s_desc, t.s_namepath, strict=True))
            if (d > 0 or p > 0) and i not in wanted
        ]
        if len(lexical) > LEXICAL_LISTED:  # only the candidates whose rounded final score can make the cut
            # rounding is monotonic: the rounded LEXICAL_LISTED-th best is the LEXICAL_LISTED-th best rounded
            cut = r6(heapq.nlargest(LEXICAL_LISTED, (sel.final[i] for i in lexical))[-1])
            lexical = [i for i in lexical if at_least(sel.final[i], cut)]
        wanted |= set(sorted(lexical, key=lambda i: key(i, sel.final))[:LEXICAL_LISTED])
    ranked = {i: n for n, i in enumerate(sel.ranked)}
    return sorted(wanted, key=lambda i: (i not in ranked, ranked.get(i, 0), key(i, sel.final)))


def _candidate(res: Resolution, i: int) -> dict[str, Any]:
    t, sel, q = res.table, res.selection, res.query
    record = res.corpus.records[i]
    history = res.history.history(record.id)
    final = sel.final
    reasons = res.selector.reasons(i, final)
    if i in sel.probe_rejected:
        reasons.append(sel.probe_rejected[i])
    elif q.strict and t.inflated[i] and i not in sel.probe_cleared:
        reasons.append("contract-inflated; strict mode excludes it unless a probe passes")
    if i in sel.beyond_limit:
        reasons.append(f"not among the top max-candidates={res.policy.effective['max-candidates']}")
    matches = t.matches.get(i, {})

    def match(c: str) -> dict:
        return matches.get(c, Match(c, "none")).to_json()

    flags = []
    if t.inflated[i]:
        flags.append("contract-inflated")
    if i in sel.probe_cleared:
        flags.append("probe-passed")
    if t.overclaim_penalty[i] > 0:
        flags.append("overclaim")
    if t.s_runtime[i] == 0:
        flags.append("runtime-incompatible")
    if record.contract_error is not None:
        flags.append("contract-parse-error")
    if record.contract is not None and record.contract.invalid_tokens():
        flags.append("invalid-tokens")
    if record.contract is not None and record.contract.unknown:
        flags.append("unknown-clauses")
    contract: dict[str, Any] = {"declared": record.contract is not None or record.contract_error is not None}
    if record.contract is not None:
        contract.update(mode=record.contract.mode, canonical=record.contract.canonical())
    if record.contract_error is not None:
        contract["error"] = f"column {record.contract_error.column}: {record.contract_error.message}"
    tie: dict[str, Any] = {"applied": i in sel.tie_steps}
    if i in sel.tie_steps:
        tie["applied_step"] = sel.tie_steps[i]
    tie.update(hash_algorithm="sha256", hash_input=record.id.lower(), hash_hex=id_hash(record.id))
    required_total = len(q.required)
    resolved = len(t.resolved[i])
    provides = len(record.contract.provides) if record.contract is not None else 0
    penalties = {
        "invalid_token_penalty": r6(t.invalid_penalty[i]),
        "unknown_clause_penalty": r6(t.unknown_clause_penalty[i]),
        "overclaim_penalty": r6(t.overclaim_penalty[i]),
        "inflation_penalty": r6(t.inflation_penalty[i]),
        "total_penalty": r6(t.penalties(i)),
    }
    entry = {
        "id": record.id,
        "scores": {
            "s_contract": r6(t.s_contract[i]),
            "s_desc": r6(t.s_desc[i]),
            "s_namepath": r6(t.s_namepath[i]),
            "s_runtime": r6(t.s_runtime[i]),
            "s_total": r6(t.s_total[i]),
            "s_total_penalized": r6(t.penalized(i)),
            "history_multiplier": r6(t.multiplier[i]),
            "s_total_final": r6(final[i]),
        },
        "coverage": {
            "required_total": required_total,
            "required_resolved": resolved,
            "required_ratio": r6(resolved / required_total) if required_total else 1.0,
        },
        "reliability": {
            "sample_size": history.sample_size,
            "success_rate_last_20": r6(history.success_rate),
            "outcomes_last_20": list(history.outcomes),
            "last_used_at": history.last_used_at,
        },
        "penalties": penalties,
        "tie_break": tie,
        "rejection_reasons": reasons,
        "name": record.name,
        "path": record.path,
        "source": record.source,
        "contract": contract,
        "matches": [match(c) for c in q.scored],
        "optional_matches": [match(c) for c in q.optional] if q.required else [],
        "resolved_required": list(t.resolved[i]),
        "flags": flags,
        "ranking": {
            "rank": sel.rank_of(i),
            "s_skill": r6(t.s_skill[i]),
            "s_specificity": r6(resolved / max(1, provides)),
            "unresolved_required": required_total - resolved,
            "bm25": r6(t.bm25[i]),
            "delta": r6(t.s_contract[i] - t.s_skill[i]),
        },
        "selected": i in res.selected,
    }
    hints = sel.hints.get(i)
    if hints is not None:
        entry["policy_hints"] = {"applied": hints.applied, "ignored": hints.ignored}
    return entry


class Listing:
    """The listed candidates' report entries, made each time they are read and never held: what a streamed
    report (``build_report(..., stream=True)``) carries as ``candidates``. Iterable any number of times,
    sized, and sliced (a list of the entries in the slice)."""

    __slots__ = ("res", "listed")

    def __init__(self, res: Resolution, listed: list[int]) -> None:
        self.res, self.listed = res, listed

    def __len__(self) -> int:
        return len(self.listed)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return (_candidate(self.res, i) for i in self.listed)

    def __getitem__(self, part: slice) -> list[dict[str, Any]]:
        return [_candidate(self.res, i) for i in self.listed[part]]


def build_report(res: Resolution, *, stream: bool = False) -> dict[str, Any]:
    """The run artifact in full: the origin's fields and agentpack's extensions (valid against agentpack's
    ``capability-resolution-report.v1.schema.json``; ``split_report`` gives the origin's form).

    ``stream``: ``candidates`` is a ``Listing`` (its entries made when read), for a report written once as
    it is produced (``split_report`` then gives ``envelope.Streamed`` halves); else a list."""
    q, sel, out, d = res.query, res.selection, res.outcome, res.discovery
    store = res.history
    aliases = res.aliases
    primary = aliases.primary
    listed = _relevant(res)
    reliability: dict[str, Any] = {"mode": store.mode, "schema_version": "1", "updated_at": store.updated_at}
    if store.mode == "persistent":
        reliability["path"] = STATE_FILE.as_posix()
    action: dict[str, Any] = {"policy": out.policy, "outcome": out.outcome}
    if out.user_decision is not None:
        action["user_decision"] = out.user_decision
    unknown_runtime = [
        {"id": res.corpus.records[i].id, "tokens": tokens} for i, tokens in sorted(res.table.unknown_runtime.items())
    ]
    top = listed[0] if listed else None
    report: dict[str, Any] = {
        "schema_version": "1",
        "run_id": res.run_id,
        "mode": q.mode,
        "history_state": store.mode,
        "alias_resolution": {"source": primary.source, "alias_table_version": primary.version},
        "reliability": reliability,
        "query_capabilities": list(q.capabilities),
        "policy": {
            "defaults": res.policy.defaults,
            "effective": res.policy.effective,
            "override_source": res.policy.source,
        },
        "discovery": {"sources_scanned": d.sources_scanned, "counts": d.counts},
        "selection": {
            "mode": res.policy.effective["selection-mode"],
            "max_providers": res.policy.effective["max-providers"]
            if res.policy.effective["selection-mode"] == "cover"
            else 1,
            "selected_count": len(res.selected),
        },
        "candidates": Listing(res, listed) if stream else [_candidate(res, i) for i in listed],
        "selected_candidates": [res.corpus.records[i].id for i in res.selected],
        "unresolved_required_capabilities": list(sel.unresolved),
        "on_missing_required_action": action,
        "degraded_mode": out.degraded,
        "emulated_capabilities": list(out.emulated),
        "rejections": [{"id": r.id, "reason": r.reason} for r in d.rejections],
        "generated_at": res.generated_at,
        # -- agentpack extensions --
        "status": out.status,
        "contract_parser_version": PARSER_VERSION,
        "query": {
            "required": list(q.required),
            "optional": list(q.optional),
            "text": q.text,
            "terms": q.terms,
            "text_source": res.query_source,
            "runtime_overrides": dict(res.request.policy),
        },
        "runtime": {"host": q.runtime, "unknown_compatibility_tokens": unknown_runtime},
        "alias_tables": aliases.describe(),
        "decision": {"source": out.decision_source} if out.decision_source else {},
        "probes": [run.to_json() for run in res.probes.runs],
        "statistics": res.table.statistics,
        "discovery_roots": d.roots,
        "candidate_listing": {
            "listing": res.request.listing,
            "listed": len(listed),
            "omitted": res.corpus.size - len(listed),
        },
        "top_candidate": res.corpus.records[top].id if top is not None else None,
    }
    if store.reason and store.reason != "requested":
        report["history_note"] = store.reason
    return report


def split_report(full: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The origin's report (valid against its schema) and agentpack's extensions apart: the top-level
    extension fields, and under ``candidates`` each listed candidate's, with its ``id``, in report order.
    A streamed report's ``Listing`` gives two ``envelope.Streamed`` arrays, each making the entries anew."""
    report = {key: value for key, value in full.items() if key not in EXTENSION_KEYS}
    extensions = {key: full[key] for key in EXTENSION_KEYS if key in full}
    candidates = full["candidates"]
    report["candidates"] = _each(candidates, _origin_part)
    extensions["candidates"] = _each(candidates, _extension_part)
    return report, extensions


def _each(candidates: Any, part: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
    if isinstance(candidates, Listing):
        from agentpack.io.envelope import Streamed

        return Streamed(map(part, candidates))
    return [part(c) for c in candidates]


def _origin_part(candidate: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in candidate.items() if key not in CANDIDATE_EXTENSION_KEYS}


def _extension_part(candidate: dict[str, Any]) -> dict[str, Any]:
    return {"id": candidate["id"], **{key: candidate[key] for key in CANDIDATE_EXTENSION_KEYS if key in candidate}}


def writable(full: dict[str, Any]) -> dict[str, Any]:
    """``full`` as ``envelope.write`` takes it: a streamed report's ``Listing`` as an ``envelope.Streamed`` array."""
    candidates = full["candidates"]
    if isinstance(candidates, Listing):
        from agentpack.io.envelope import Streamed

        return {**full, "candidates": Streamed(candidates)}
    return full


def join_report(report: dict[str, Any], extensions: dict[str, Any]) -> dict[str, Any]:
    """``split_report`` undone: the full report."""
    full = {**report, **{key: value for key, value in extensions.items() if key != "candidates"}}
    by_id = {c["id"]: c for c in extensions.get("candidates", [])}
    full["candidates"] = [
        {**c, **{key: value for key, value in by_id.get(c["id"], {}).items() if key != "id"}}
        for c in report["candidates"]
    ]
    return full


# -- text ---------------------------------------------------------------------------------------------
def render_text(report: dict[str, Any]) -> str:
    lines = [
        f"status: {report['status']}  (mode {report['mode']}, selection {report['selection']['mode']}, "
        f"runtime {report['runtime']['host']})"
    ]
    lines.append(
        f"required: {', '.join(report['query']['required']) or '-'}"
        + (f"   optional: {', '.join(report['query']['optional'])}" if report["query"]["optional"] else "")
    )
    selected = report["selected_candidates"]
    lines.append(f"selected: {', '.join(selected) if selected else '(none)'}")
    if report["unresolved_required_capabilities"]:
        lines.append(f"unresolved: {', '.join(report['unresolved_required_capabilities'])}")
    action = report["on_missing_required_action"]
    if action["outcome"] != "not-needed":
        decision = (
            f", decision {action['user_decision']} ({report['decision'].get('source')})"
            if "user_decision" in action
            else ""
        )
        lines.append(f"on-missing-required: {action['policy']} -> {action['outcome']}{decision}")
    if report["degraded_mode"]:
        lines.append(f"degraded mode; emulated: {', '.join(report['emulated_capabilities']) or '-'}")
    counts = report["discovery"]["counts"]
    lines.append(
        f"discovery: {counts['included']} included, {counts['excluded']} excluded "
        f"({', '.join(report['discovery']['sources_scanned']) or 'no sources'}); "
        f"history {report['history_state']}"
    )
    lines.append("")
    lines.append(f"{'rank':>4}  {'final':>6}  {'contract':>8}  {'desc':>5}  {'path':>5}  {'rt':>3}  candidate")
    for c in report["candidates"][:10]:
        s = c["scores"]
        rank = c["ranking"]["rank"] or "-"
        mark = "*" if c["selected"] else " "
        lines.append(
            f"{rank:>4}{mark} {s['s_total_final']:>6.3f}  {s['s_contract']:>8.3f}  {s['s_desc']:>5.2f}  "
            f"{s['s_namepath']:>5.2f}  {s['s_runtime']:>3.0f}  {c['id']}"
        )
    if len(report["candidates"]) > 10:
        lines.append(f"      ... {len(report['candidates']) - 10} more (use -o json or explain)")
    return "\n".join(lines) + "\n"


def explained(report: dict[str, Any], candidate: str | None = None, limit: int = 5) -> list[dict[str, Any]]:
    """The report's entries ``explain`` shows: the one ``candidate`` (id or name), else the first ``limit``."""
    chosen = [c for c in report["candidates"] if candidate in (None, c["id"], c["name"])]
    return chosen[: None if candidate else limit]


def render_explain(report: dict[str, Any], candidate: str | None = None, limit: int = 5) -> str:
    """Every score of the chosen candidates, the gates they failed, and which tie-break decided."""
    lines = [render_text(report).split("\n\n")[0], ""]
    stats = report["statistics"]
    inflation = stats["inflation"]
    lines.append(
        f"over-claim limit: P count > {stats['overclaim_limit']} (median {stats['p_median']}); "
        f"inflation rule: {inflation['rule']}"
    )
    chosen = explained(report, candidate, limit)
    if candidate is not None and not chosen:
        return "\n".join(lines) + f"\nno listed candidate matches '{candidate}'\n"
    for c in chosen:
        s, p = c["scores"], c["penalties"]
        lines.append("")
        lines.append(
            f"{c['id']}  [{c['source']}]"
            + ("  SELECTED" if c["selected"] else "")
            + (f"  rank {c['ranking']['rank']}" if c["ranking"]["rank"] else "")
        )
        if c["contract"].get("canonical"):
            lines.append(f"  contract: {c['contract']['canonical']}")
        elif c["contract"].get("error"):
            lines.append(f"  contract error: {c['contract']['error']}")
        else:
            lines.append("  no contract: provisional capabilities from name + description (capped at 0.25)")
        for m in c["matches"] + c["optional_matches"]:
            detail = f" via '{m['token']}'" if "token" in m else ""
            sim = f" (Jaro-Winkler {m['similarity']})" if "similarity" in m else ""
            lines.append(f"    {m['capability']}: {m['kind']} {m['score']}{detail}{sim}")
        lines.append(f"  S_contract {s['s_contract']} = mean of the best match per capability")
        lines.append(
            f"  S_desc {s['s_desc']} (BM25 {c['ranking']['bm25']} / max)   S_namepath {s['s_namepath']}"
            f"   S_runtime {s['s_runtime']}"
        )
        lines.append(
            f"  S_total {s['s_total']} = 0.60*{s['s_contract']} + 0.20*{s['s_desc']} + "
            f"0.10*{s['s_namepath']} + 0.10*{s['s_runtime']}"
        )
        lines.append(
            f"  penalties {p['total_penalty']} (invalid {p['invalid_token_penalty']}, unknown clause "
            f"{p['unknown_clause_penalty']}, over-claim {p['overclaim_penalty']}, inflation "
            f"{p['inflation_penalty']}; delta {c['ranking']['delta']})"
        )
        r = c["reliability"]
        lines.append(
            f"  S_total_final {s['s_total_final']} = {s['s_total_penalized']} * {s['history_multiplier']}"
            f" (success {r['success_rate_last_20']} over {r['sample_size']} runs)"
        )
        lines.append(
            f"  coverage {c['coverage']['required_resolved']}/{c['coverage']['required_total']}"
            f"  specificity {c['ranking']['s_specificity']}  S_skill {c['ranking']['s_skill']}"
        )
        if c["flags"]:
            lines.append(f"  flags: {', '.join(c['flags'])}")
        for reason in c["rejection_reasons"]:
            lines.append(f"  rejected: {reason}")
        tie = c["tie_break"]
        if tie["applied"]:
            step = tie["applied_step"]
            lines.append(
                f"  ranked above the next candidate by tie-break {step}: {TIE_BREAKERS[step - 1]}"
                + (f" (sha256 {tie['hash_hex'][:12]}...)" if step == 6 else "")
            )
    return "\n".join(lines) + "\n"
