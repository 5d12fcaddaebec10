"""Gates, ranking with the six ordered tie-breakers, ``single`` and greedy ``cover`` selection, probes.

Gates compare values rounded to 6 decimals (the values the report shows), with
``scoring.r6`` everywhere, so a gate, a tie-break and a reported value never
disagree on a value that lies near a half of the sixth decimal.
In ``cover`` mode the coverage gate applies to the selected set, not to each
candidate (each candidate must resolve at least one required capability);
otherwise no partial provider could ever reach the cover step in strict mode.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from itertools import pairwise
from typing import Any, ClassVar

from agentpack.kernel.records import Record

from .discovery import SkillRecord
from .index import Corpus
from .policy import NO_HINTS, EffectivePolicy, Hints, provider_hints
from .probes import ProbeRunner
from .scoring import Query, ScoreTable, at_least, r6

TIE_BREAKERS = (
    "higher S_contract",
    "higher required-capability coverage",
    "fewer unresolved required capabilities",
    "higher capability specificity",
    "higher S_skill",
    "lower SHA-256 of the canonical candidate id",
)


def id_hash(candidate_id: str) -> str:
    return hashlib.sha256(candidate_id.lower().encode("utf-8")).hexdigest()


class Selection(Record):
    __slots__ = (
        "final",
        "coverage",
        "ranked",
        "selected",
        "unresolved",
        "hints",
        "probe_rejected",
        "probe_cleared",
        "tie_steps",
        "beyond_limit",
    )
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "probe_rejected": dict,
        "probe_cleared": set,
        "tie_steps": dict,
        "beyond_limit": set,
    }
    final: list[float]
    coverage: list[float]
    ranked: list[int]
    """Gated candidates, best first, after probes and the ``max-candidates`` cut."""
    selected: list[int]
    unresolved: list[str]
    hints: dict[int, Hints]
    probe_rejected: dict[int, str]
    probe_cleared: set[int]
    tie_steps: dict[int, int]
    """Candidate -> the tie-breaker step that placed it above the next ranked candidate."""
    beyond_limit: set[int]

    def rank_of(self, i: int) -> int | None:
        try:
            return self.ranked.index(i) + 1
        except ValueError:
            return None


class Selector:
    def __init__(
        self, corpus: Corpus, query: Query, table: ScoreTable, policy: EffectivePolicy, probes: ProbeRunner
    ) -> None:
        self.corpus, self.query, self.table, self.policy, self.probes = corpus, query, table, policy, probes
        self.effective = policy.effective
        self.cover = self.effective["selection-mode"] == "cover"
        required = len(query.required)
        counts = [len(r) for r in table.resolved]
        self.coverage = [k / required for k in counts] if required else [1.0] * corpus.size
        self.resolved_count = counts
        self.hints: dict[int, Hints] = {}
        for i in corpus.hinted:
            contract = corpus.records[i].contract
            if contract is not None:  # hinted candidates are those whose contract has Pol(...)
                self.hints[i] = provider_hints(contract.policy, self.effective)

    # -- scores ------------------------------------------------------------------------------
    def final_scores(self) -> list[float]:
        t = self.table
        return [
            max(0.0, total - (a + b + c + d)) * m
            for total, a, b, c, d, m in zip(
                t.s_total,
                t.invalid_penalty,
                t.unknown_clause_penalty,
                t.overclaim_penalty,
                t.inflation_penalty,
                t.multiplier,
                strict=True,
            )
        ]

    def key(self, i: int, final: list[float]) -> tuple:
        """Sort key: S_total_final, then the six tie-breakers (all ascending-is-better)."""
        t = self.table
        return (
            -r6(final[i]),
            -r6(t.s_contract[i]),
            -r6(self.coverage[i]),
            len(self.query.required) - self.resolved_count[i],
            -r6(self.specificity(i)),
            -r6(t.s_skill[i]),
            id_hash(self.corpus.records[i].id),
        )

    def specificity(self, i: int) -> float:
        record = self.corpus.records[i]
        provides = len(record.contract.provides) if record.contract is not None else 0
        return self.resolved_count[i] / max(1, provides)

    # -- gates -------------------------------------------------------------------------------
    def thresholds(self, i: int) -> dict[str, float]:
        hints = self.hints.get(i, NO_HINTS)
        return {
            k: hints.thresholds.get(k, self.effective[k])
            for k in ("min-total-score", "min-contract-score", "min-required-coverage")
        }

    def reasons(self, i: int, final: list[float]) -> list[str]:
        """Every gate candidate ``i`` fails (empty when it passes them all)."""
        t, q = self.table, self.query
        record: SkillRecord = self.corpus.records[i]
        limits = self.thresholds(i)
        out = []
        if q.strict and record.contract_error is not None:
            out.append(f"contract-parse-error: {record.contract_error.message} (column {record.contract_error.column})")
        if q.strict and t.s_runtime[i] == 0.0:
            out.append(f"runtime-incompatible: '{q.runtime}' is not in compatibility '{record.compatibility}'")
        if r6(final[i]) < r6(limits["min-total-score"]):
            out.append(f"S_total_final {r6(final[i])} < min-total-score {limits['min-total-score']}")
        if r6(t.s_contract[i]) < r6(limits["min-contract-score"]):
            out.append(f"S_contract {r6(t.s_contract[i])} < min-contract-score {limits['min-contract-score']}")
        if self.cover:
            if q.required and not t.resolved[i]:
                out.append("resolves no required capability (cover mode)")
        elif r6(self.coverage[i]) < r6(limits["min-required-coverage"]):
            out.append(
                f"required coverage {r6(self.coverage[i])} < min-required-coverage {limits['min-required-coverage']}"
            )
        return out

    def _gated(self, final: list[float]) -> list[int]:
        e, t, q = self.effective, self.table, self.query
        total, contract = r6(e["min-total-score"]), r6(e["min-contract-score"])
        coverage = r6(e["min-required-coverage"])
        # a millionth below a limit cannot round up to it (``at_least``): most candidates stop here
        near = [
            i
            for i, (score, s_contract) in enumerate(zip(final, t.s_contract, strict=True))
            if score > total - 1e-6 and s_contract > contract - 1e-6
        ]
        gated = []
        for i in near:
            if not (at_least(t.s_contract[i], contract) and at_least(final[i], total)):
                continue
            if self.cover:
                if q.required and not self.resolved_count[i]:
                    continue
            elif not at_least(self.coverage[i], coverage):
                continue
            if q.strict and (t.s_runtime[i] <= 0 or self.corpus.has_error[i]):
                continue
            if i not in self.hints or not self.reasons(i, final):
                gated.append(i)
        return gated

    # -- the algorithm -----------------------------------------------------------------------
    def run(self) -> Selection:
        final = self.final_scores()
        cleared: set[int] = set()
        if not self.query.strict:
            final = self._best_effort_probe(final, cleared)
        gated = sorted(self._gated(final), key=lambda i: self.key(i, final))
        probe_rejected: dict[int, str] = {}
        ranked: list[int] = []
        beyond: set[int] = set()
        limit = self.effective["max-candidates"]
        for i in gated:
            if len(ranked) >= limit:
                beyond.add(i)
                continue
            if self.query.strict and self.table.inflated[i]:
                verdict = self.probes.check(self.corpus.records[i], self.table.resolved[i])
                if not verdict:
                    probe_rejected[i] = (
                        "contract-inflated; no probe exists to clear it"
                        if verdict is None
                        else "contract-inflated; probe failed"
                    )
                    continue
                cleared.add(i)
            ranked.append(i)
        selected = self._select(ranked, probe_rejected)
        ranked = [i for i in ranked if i not in probe_rejected]
        covered = {c for i in selected for c in self.table.resolved[i]}
        unresolved = [c for c in self.query.required if c not in covered]
        selection = Selection(
            final, self.coverage, ranked, selected, unresolved, self.hints, probe_rejected, cleared, beyond_limit=beyond
        )
        selection.tie_steps = self._tie_steps(ranked, final)
        return selection

    def _probe_ok(self, i: int, probe_rejected: dict[int, str]) -> bool:
        """Strict mode runs the probes of the required capabilities a chosen provider resolves."""
        if not self.query.strict:
            return True
        verdict = self.probes.check(self.corpus.records[i], self.table.resolved[i])
        if verdict is False:
            probe_rejected[i] = "probe failed"
            return False
        return True

    def _select(self, ranked: list[int], probe_rejected: dict[int, str]) -> list[int]:
        required = self.query.required
        if not self.cover or not required:
            for i in ranked:
                if i not in probe_rejected and self._probe_ok(i, probe_rejected):
                    return [i]
            return []
        selected: list[int] = []
        uncovered = set(required)
        pool = [i for i in ranked if i not in probe_rejected]
        while uncovered and len(selected) < self.effective["max-providers"]:
            best, gain = None, 0
            for i in pool:  # ranked order breaks gain ties by S_total_final, then the tie-breakers
                g = len(uncovered.intersection(self.table.resolved[i]))
                if g > gain:
                    best, gain = i, g
            if best is None:
                break
            pool.remove(best)
            if not self._probe_ok(best, probe_rejected):
                continue
            selected.append(best)
            uncovered.difference_update(self.table.resolved[best])
        return selected

    def _best_effort_probe(self, final: list[float], cleared: set[int]) -> list[float]:
        """Best-effort: probe the top-ranked candidate when it is contract-inflated; a pass lifts the penalty."""
        if not any(self.table.inflated):
            return final
        best = r6(max(final))  # rounding is monotonic: the best rounded score is the best score rounded
        leaders = [i for i, value in enumerate(final) if value > best - 1e-6 and at_least(value, best)]
        top = min(leaders, key=lambda i: self.key(i, final))
        if not self.table.inflated[top]:
            return final
        if self.probes.check(self.corpus.records[top], self.table.resolved[top]):
            self.table.inflation_penalty[top] = 0.0
            cleared.add(top)
            return self.final_scores()
        return final

    def _tie_steps(self, ranked: list[int], final: list[float]) -> dict[int, int]:
        steps: dict[int, int] = {}
        for a, b in pairwise(ranked):
            ka, kb = self.key(a, final), self.key(b, final)
            if ka[0] != kb[0]:
                continue
            steps[a] = next(n for n in range(1, 7) if ka[n] != kb[n])
        return steps
