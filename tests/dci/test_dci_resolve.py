"""Resolution end to end through the library: scores, gates, selection, on-missing-required, probes, hooks."""

from __future__ import annotations

from pathlib import Path

import pytest
from dci_helpers import write_skill

from agentpack import hookimpl
from agentpack.io.clock import FixedClock, sequential_ids
from agentpack.io.errors import AgentpackError
from agentpack_dci import schemas_store
from agentpack_dci.artifacts import require_valid
from agentpack_dci.grammar import parse_contract
from agentpack_dci.probes import Probe
from agentpack_dci.report import build_report
from agentpack_dci.resolve import Resolver, ResolveRequest
from agentpack_dci.selection import id_hash


def resolver(root: Path, **kwargs) -> Resolver:
    kwargs.setdefault("ephemeral_history", True)
    return Resolver(root, clock=FixedClock("2026-01-01T00:00:00Z"), run_ids=sequential_ids("run-"), **kwargs)


def run(root: Path, **request) -> dict:
    r = resolver(
        root, **{k: request.pop(k) for k in ("probes", "aliases_file", "skills_roots", "host") if k in request}
    )
    report = build_report(r.resolve(ResolveRequest(**request)))
    assert schemas_store.store().validate(schemas_store.REPORT, report) == []
    return report


def by_id(report: dict) -> dict[str, dict]:
    return {c["id"]: c for c in report["candidates"]}


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    write_skill(
        tmp_path,
        "skills/web-search",
        description="Search the web and return ranked results.",
        contract="DCI/1^strict P(web-search) E(query-text)",
        compatibility="cli, copilot",
    )
    write_skill(
        tmp_path,
        "skills/summarizer",
        description="Summarize long documents into short briefs.",
        contract="DCI/1 P(summarize)",
    )
    write_skill(
        tmp_path, "skills/reasoner", description="Careful basic reasoning.", contract="DCI/1 P(reasoning-basic)"
    )
    write_skill(tmp_path, "skills/plain-search", description="Web search helper without a contract.")
    return tmp_path


def test_exact_alias_fuzzy_and_provisional_scores(ws):
    report = run(ws, required=["web-search", "summarization", "web-searching"], decision="continue-with-partial")
    c = by_id(report)
    web = {m["capability"]: m for m in c["web-search::skills/web-search"]["matches"]}
    assert web["web-search"]["kind"] == "exact" and web["web-searching"]["kind"] == "fuzzy"
    assert web["web-searching"]["score"] == 0.33 and web["web-searching"]["similarity"] == 0.953846
    summary = {m["capability"]: m for m in c["summarizer::skills/summarizer"]["matches"]}
    assert summary["summarization"] == {
        "capability": "summarization",
        "kind": "alias",
        "score": 0.8,
        "token": "summarize",
    }
    plain = {m["capability"]: m for m in c["plain-search::skills/plain-search"]["matches"]}
    assert plain["web-search"]["kind"] == "none"
    assert c["web-search::skills/web-search"]["scores"]["s_contract"] == round((1 + 0 + 0.33) / 3, 6)


def test_a_skill_without_contract_is_capped_at_025_and_never_selected_with_default_gates(tmp_path):
    write_skill(tmp_path, "skills/searcher", description="Search anything.")
    report = run(tmp_path, required=["search"], decision="abort")
    candidate = report["candidates"][0]
    assert candidate["matches"][0]["kind"] == "provisional" and candidate["scores"]["s_contract"] == 0.25
    assert any("min-contract-score 0.3" in r for r in candidate["rejection_reasons"])
    assert report["selected_candidates"] == []
    # lowering the gate through the consumer policy makes it selectable
    # provisional matches never resolve a capability, so coverage must be relaxed too
    report = run(
        tmp_path,
        required=["search"],
        policy={"min-contract-score": "0.2", "min-total-score": "0.3", "min-required-coverage": "0"},
        decision="continue-with-partial",
    )
    assert report["selected_candidates"] == ["searcher::skills/searcher"]
    assert report["unresolved_required_capabilities"] == ["search"] and report["status"] == "degraded"


def test_strict_fuzzy_does_not_resolve_and_best_effort_does(ws):
    strict = run(ws, required=["reasoning-basics"], mode="strict")
    assert strict["status"] == "failed" and strict["unresolved_required_capabilities"] == ["reasoning-basics"]
    assert strict["on_missing_required_action"] == {"policy": "hard-fail", "outcome": "failed"}
    loose = run(ws, required=["reasoning-basics"], decision="abort")
    assert by_id(loose)["reasoner::skills/reasoner"]["resolved_required"] == ["reasoning-basics"]


def test_reasoning_advanced_does_not_match_reasoning_basic(ws):
    report = run(ws, required=["reasoning-advanced"], decision="abort")
    assert by_id(report)["reasoner::skills/reasoner"]["matches"][0]["kind"] == "none"


def test_strict_cover_selects_partial_providers(ws):
    report = run(ws, required=["web-search", "summarize"], mode="strict", policy={"selection-mode": "cover"})
    assert report["status"] == "resolved"
    assert report["selected_candidates"] == ["web-search::skills/web-search", "summarizer::skills/summarizer"]
    assert report["selection"] == {"mode": "cover", "max_providers": 3, "selected_count": 2}
    single = run(ws, required=["web-search", "summarize"], mode="strict")
    assert single["status"] == "failed" and single["selected_candidates"] == []


def test_cover_stops_at_max_providers(ws):
    report = run(
        ws,
        required=["web-search", "summarize"],
        policy={"selection-mode": "cover", "max-providers": "1"},
        decision="emulate",
    )
    assert len(report["selected_candidates"]) == 1
    assert report["degraded_mode"] is True and report["emulated_capabilities"] == ["summarize"]
    assert report["on_missing_required_action"] == {
        "policy": "offer-emulation",
        "outcome": "emulated",
        "user_decision": "emulate",
    }


def test_auto_emulate_and_default_abort(ws):
    auto = run(ws, required=["translation"], policy={"on-missing-required": "auto-emulate"})
    assert auto["status"] == "degraded" and auto["emulated_capabilities"] == ["translation"]
    assert "user_decision" not in auto["on_missing_required_action"]
    aborted = run(ws, required=["translation"])
    assert aborted["status"] == "aborted" and aborted["decision"] == {"source": "default (no decision available)"}
    assert aborted["on_missing_required_action"]["user_decision"] == "abort"


def test_decision_hook_answers_offer_emulation(ws, register_plugin, agentpack_host):
    class Decider:
        @hookimpl
        def agentpack_dci_emulation_decision(self, request):
            assert request.unresolved == ("translation",)
            return "continue-with-partial"

    register_plugin(Decider())
    report = run(
        ws, required=["web-search", "translation"], policy={"min-required-coverage": "0.5"}, host=agentpack_host
    )
    assert report["on_missing_required_action"]["user_decision"] == "continue-with-partial"
    assert report["decision"] == {"source": "hook"} and report["status"] == "degraded"
    assert report["selected_candidates"] == ["web-search::skills/web-search"]


def test_unresolved_invalid_query_capability_is_a_usage_error(ws):
    with pytest.raises(AgentpackError, match="Web Search"):
        resolver(ws).resolve(ResolveRequest(required=["Web Search"]))
    with pytest.raises(AgentpackError, match="nothing to resolve"):
        resolver(ws).resolve(ResolveRequest())


def test_tie_break_by_hash_and_by_specificity(tmp_path):
    for name in ("alpha", "beta"):
        write_skill(tmp_path, f"skills/{name}", description="Same words.", contract="DCI/1 P(translate-text)")
    report = run(tmp_path, required=["translate-text"], query="unrelated")
    first, second = report["candidates"][:2]
    assert first["tie_break"]["applied"] and first["tie_break"]["applied_step"] == 6
    assert id_hash(first["id"]) < id_hash(second["id"]) and first["id"] == report["selected_candidates"][0]
    write_skill(tmp_path, "skills/alpha", description="Same words.", contract="DCI/1 P(translate-text,extra-thing)")
    report = run(tmp_path, required=["translate-text"], query="unrelated")
    # equal S_total_final; beta provides fewer capabilities -> higher specificity (step 4)
    assert report["selected_candidates"] == ["beta::skills/beta"]
    assert report["candidates"][0]["tie_break"]["applied_step"] == 4


def test_over_claimer_is_penalised_and_excluded_in_strict(tmp_path):
    for n in range(5):
        write_skill(
            tmp_path,
            f"skills/honest-{n}",
            description=f"Translate text number {n}.",
            contract=f"DCI/1 P(translate-text,cap-{n})",
        )
    claims = ",".join(["translate-text", *[f"claim-{i}" for i in range(40)]])
    write_skill(tmp_path, "skills/greedy", description="Misc.", contract=f"DCI/1 P({claims})")
    report = run(tmp_path, required=["translate-text"], query="translate text")
    greedy = by_id(report)["greedy::skills/greedy"]
    assert greedy["penalties"]["overclaim_penalty"] == 0.25 and "overclaim" in greedy["flags"]
    assert "greedy::skills/greedy" not in report["selected_candidates"]
    strict = run(tmp_path, required=["translate-text"], query="translate text", mode="strict")
    reasons = by_id(strict)["greedy::skills/greedy"]["rejection_reasons"]
    assert "contract-inflated" in by_id(strict)["greedy::skills/greedy"]["flags"]
    assert any(r.startswith("contract-inflated") for r in reasons)


def test_strict_probe_failure_moves_to_the_next_candidate_and_inflated_is_cleared(tmp_path):
    write_skill(tmp_path, "skills/fast", description="Translate text quickly.", contract="DCI/1 P(translate-text)")
    write_skill(tmp_path, "skills/slow", description="Translate text slowly.", contract="DCI/1 P(translate-text)")
    probe = Probe("translate-text", "no-fast", lambda target: target.name != "fast")
    base = run(tmp_path, required=["translate-text"], query="translate text quickly", mode="strict")
    assert base["selected_candidates"] == ["fast::skills/fast"]
    report = run(tmp_path, required=["translate-text"], query="translate text quickly", mode="strict", probes=[probe])
    assert report["selected_candidates"] == ["slow::skills/slow"]
    assert {p["candidate"]: p["passed"] for p in report["probes"]} == {
        "fast::skills/fast": False,
        "slow::skills/slow": True,
    }
    assert "probe failed" in by_id(report)["fast::skills/fast"]["rejection_reasons"]


def test_probes_come_from_the_hook(tmp_path, register_plugin, agentpack_host):
    write_skill(tmp_path, "skills/fast", description="Translate.", contract="DCI/1 P(translate-text)")

    class Probes:
        @hookimpl
        def agentpack_dci_register_probes(self, register):
            register(Probe("translate-text", "always-fails", lambda target: False))

    register_plugin(Probes())
    report = run(tmp_path, required=["translate-text"], mode="strict", host=agentpack_host)
    assert report["status"] == "failed" and report["probes"][0]["probe"] == "always-fails"


def test_runtime_compatibility(tmp_path):
    write_skill(
        tmp_path,
        "skills/copilot-only",
        description="Search.",
        contract="DCI/1 P(web-search)",
        compatibility="Copilot , universal",
    )
    write_skill(
        tmp_path,
        "skills/prose",
        description="Search.",
        contract="DCI/1 P(web-search)",
        compatibility="Requires git and network access",
    )
    report = run(tmp_path, required=["web-search"], runtime="cli", decision="abort")
    c = by_id(report)
    assert c["copilot-only::skills/copilot-only"]["scores"]["s_runtime"] == 0.0
    assert c["prose::skills/prose"]["scores"]["s_runtime"] == 1.0  # only unknown tokens -> runtime-agnostic
    assert {"id": "copilot-only::skills/copilot-only", "tokens": ["universal"]} in report["runtime"][
        "unknown_compatibility_tokens"
    ]
    strict = run(tmp_path, required=["web-search"], runtime="cli", mode="strict")
    assert any(
        r.startswith("runtime-incompatible")
        for r in by_id(strict)["copilot-only::skills/copilot-only"]["rejection_reasons"]
    )
    assert run(tmp_path, required=["web-search"], runtime="copilot", mode="strict")["status"] == "resolved"


def test_provider_hints_tighten_only_their_own_gates(tmp_path):
    write_skill(
        tmp_path,
        "skills/picky",
        description="Translate text.",
        contract="DCI/1 P(translate-text) Pol(min-total-score=0.99,max-candidates=1)",
    )
    write_skill(tmp_path, "skills/easy", description="Translate text.", contract="DCI/1 P(translate-text)")
    report = run(tmp_path, required=["translate-text"])
    picky = by_id(report)["picky::skills/picky"]
    assert picky["policy_hints"]["applied"] == {"min-total-score": 0.99}
    assert "max-candidates" in picky["policy_hints"]["ignored"]
    assert report["selected_candidates"] == ["easy::skills/easy"]
    assert report["policy"]["effective"]["min-total-score"] == 0.45


def test_consumer_contract_supplies_requirements_mode_and_policy(ws):
    consumer = parse_contract("DCI/1^strict R(web-search) O(summarize) Pol(selection-mode=cover,max-providers=2)")
    report = run(ws, consumer=consumer, policy={"max-providers": "1"})
    assert report["mode"] == "strict" and report["query_capabilities"] == ["web-search", "summarize"]
    assert report["policy"]["effective"]["selection-mode"] == "cover"
    assert (
        report["policy"]["effective"]["max-providers"] == 1
        and report["policy"]["override_source"] == "consumer+runtime"
    )
    with pytest.raises(AgentpackError, match="Pol"):
        resolver(ws).resolve(ResolveRequest(consumer=parse_contract("DCI/1 R(a) Pol(max-candidates=0)")))


def test_reliability_history_lowers_the_final_score(ws):
    r = Resolver(ws, clock=FixedClock("2026-01-01T00:00:00Z"))
    for outcome in (False, False, True, False):
        r.history.record("web-search::skills/web-search", outcome)
    report = build_report(Resolver(ws, clock=FixedClock()).resolve(ResolveRequest(required=["web-search"])))
    web = by_id(report)["web-search::skills/web-search"]
    assert web["reliability"]["outcomes_last_20"] == [0, 0, 1, 0]
    assert web["scores"]["history_multiplier"] == 0.775
    assert web["scores"]["s_total_final"] == round(web["scores"]["s_total_penalized"] * 0.775, 6)
    assert report["history_state"] == "persistent"
    assert report["reliability"]["path"] == ".dci/state/reliability.v1.json"


def test_unusable_state_falls_back_to_ephemeral(ws):
    state = ws / ".dci" / "state" / "reliability.v1.json"
    state.parent.mkdir(parents=True)
    state.write_text('{"schema_version": "2"}')
    report = build_report(Resolver(ws, clock=FixedClock()).resolve(ResolveRequest(required=["web-search"])))
    assert report["history_state"] == "ephemeral" and "path" not in report["reliability"]
    assert "unusable state file" in report["history_note"]
    with pytest.raises(AgentpackError, match="invalid reliability state"):
        Resolver(ws).history.record("web-search::skills/web-search", True)


def test_record_keeps_the_last_twenty(ws):
    r = Resolver(ws, clock=FixedClock())
    for n in range(25):
        entry = r.history.record("web-search::skills/web-search", n % 5 != 0)
    assert entry["sample_size"] == 20 and entry["success_rate_last_20"] == 0.8
    require_valid(r.history.path, schemas_store.RELIABILITY, code="X", what="state")


def test_cache_never_changes_a_result_and_is_invalidated(ws):
    r = resolver(ws)
    request = ResolveRequest(required=["web-search", "summarization"], decision="abort")
    cold = build_report(r.resolve(request))
    warm = build_report(r.resolve(request))
    cold.pop("run_id"), warm.pop("run_id")
    assert cold == warm and r.match_cache
    fresh = build_report(resolver(ws).resolve(request))
    fresh.pop("run_id")
    assert fresh == cold
    # metadata change: the skill's hash changes, its cached match is not reused
    write_skill(
        ws,
        "skills/summarizer",
        description="Summarize long documents into short briefs.",
        contract="DCI/1 P(summarization)",
    )
    before = dict(r.skill_cache.entries)
    r.refresh()
    changed = by_id(build_report(r.resolve(request)))["summarizer::skills/summarizer"]
    assert changed["matches"][1]["kind"] == "exact"
    # the parse cache keeps this scan's entries only: the edited skill's old record is gone, the others are reused
    after = r.skill_cache.entries
    assert len(after) == len(before) == 4 and len(after.keys() & before.keys()) == 3
    # alias change: a workspace alias table changes the version key
    (ws / ".dci").mkdir(exist_ok=True)
    (ws / ".dci" / "aliases.v1.json").write_text(
        '{"schema_version": "1", "alias_table_version": "ws-1", "aliases": {"web-search": ["net-lookup"]}}'
    )
    write_skill(ws, "skills/looker", description="Looks things up.", contract="DCI/1 P(net-lookup)")
    r2 = resolver(ws)
    report = build_report(r2.resolve(ResolveRequest(required=["web-search"])))
    assert by_id(report)["looker::skills/looker"]["matches"][0]["kind"] == "alias"
    assert report["alias_resolution"] == {"source": "workspace", "alias_table_version": "ws-1"}


def test_invalid_alias_table_points_at_file_and_line(ws):
    (ws / ".dci").mkdir()
    (ws / ".dci" / "aliases.v1.json").write_text(
        '{\n  "schema_version": "1",\n  "alias_table_version": "v",\n  "aliases": {"Bad Key": ["x"]}\n}\n'
    )
    with pytest.raises(AgentpackError) as info:
        resolver(ws)
    assert info.value.file == ".dci/aliases.v1.json" and info.value.line == 4


def test_golden_report(tmp_path):
    """A whole report for a fixed workspace, clock and run id (regenerate with DCI_UPDATE_GOLDEN=1)."""
    import json
    import os

    write_skill(
        tmp_path,
        "skills/web-search",
        description="Search the web and return ranked results.",
        contract="DCI/1^strict P(web-search) E(query-text)",
        compatibility="cli, copilot",
    )
    write_skill(
        tmp_path,
        "skills/summarizer",
        description="Summarize long documents.",
        contract="DCI/1 P(summarize) Pol(min-total-score=0.5)",
    )
    write_skill(tmp_path, "skills/plain", description="Web search helper.")
    report = run(
        tmp_path,
        required=["web-search", "summarization"],
        optional=["critical-thinking"],
        policy={"selection-mode": "cover"},
    )
    golden = Path(__file__).parent / "golden" / "report-cover.json"
    if os.environ.get("DCI_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(json.dumps(report, indent=2, sort_keys=True) + "\n")
    assert report == json.loads(golden.read_text())


def test_only_provides_matches_and_expects_does_not(tmp_path):
    write_skill(tmp_path, "skills/needs-search", description="x", contract="DCI/1 P(other) E(web-search) R(web-search)")
    report = run(tmp_path, required=["web-search"], decision="abort")
    assert report["candidates"][0]["matches"][0]["kind"] == "none"


def test_gates_compare_rounded_values(tmp_path):
    """0.7 - 0.25 is 0.44999999999999996 in floating point; rounded to 6 decimals it meets 0.45."""
    claims = ",".join(["web-search", *[f"claim-{i}" for i in range(29)]])  # 30 tokens: over-claim 0.10
    write_skill(tmp_path, "skills/big", description="General helper.", contract=f"DCI/1 P({claims})")
    for n in range(3):  # the median P count stays 1, so the over-claim limit stays 20
        write_skill(tmp_path, f"skills/other-{n}", description="Other.", contract=f"DCI/1 P(other-{n})")
    assert 0.7 - 0.25 < 0.45
    report = run(tmp_path, required=["web-search"])
    big = by_id(report)["big::skills/big"]
    assert big["penalties"]["total_penalty"] == 0.25  # over-claim 0.10 + inflation 0.15 (absolute rule, n < 5)
    assert big["scores"]["s_total_final"] == 0.45 and big["rejection_reasons"] == []
    assert report["selected_candidates"] == ["big::skills/big"]


@pytest.mark.parametrize(("final", "passes"), [(0.4499995, False), (0.44999950000000005, True), (0.45, True)])
def test_gates_and_reasons_round_alike_half_a_millionth_below_a_limit(ws, final, passes):
    """The double nearest 0.4499995 lies just below it: Python's round (the report's value) gives 0.449999,
    a scaled round-half-even (numpy's ``round``, once used by the gates) gave 0.45. The gate, the rejection
    reasons and the reported value must agree."""
    resolution = resolver(ws).resolve(ResolveRequest(required=["web-search"]))
    selector = resolution.selector
    i = next(n for n, r in enumerate(resolution.corpus.records) if r.name == "web-search")
    finals = list(resolution.selection.final)
    finals[i] = final
    assert (i in selector._gated(finals)) is passes
    assert (selector.reasons(i, finals) == []) is passes
