"""Every score of the spec for every candidate of one query, as arrays.

``S_total = 0.60 S_contract + 0.20 S_desc + 0.10 S_namepath + 0.10 S_runtime``;
penalties (invalid token, unknown clause, over-claim, contract inflation) are
subtracted, then the reliability multiplier applies. Values are kept as floats;
every comparison and every reported value uses them rounded to 6 decimals.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .aliases import AliasResolver
from .index import Corpus, Match, best_match

W_CONTRACT, W_DESC, W_NAMEPATH, W_RUNTIME = 0.60, 0.20, 0.10, 0.10
INFLATION_PENALTY = 0.15
DIGITS = 6


def r6(value: float) -> float:
    return round(float(value), DIGITS)


@dataclass
class Query:
    required: tuple[str, ...]
    optional: tuple[str, ...]
    text: str
    terms: list[str]
    mode: str
    runtime: str

    @property
    def strict(self) -> bool:
        return self.mode == "strict"

    @property
    def capabilities(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*self.required, *self.optional)))

    @property
    def scored(self) -> tuple[str, ...]:
        """The capabilities ``S_contract`` averages over: the required ones, else the optional ones."""
        return self.required or self.optional


def _unset() -> np.ndarray:
    return np.empty(0)


@dataclass
class ScoreTable:
    """Component arrays (one entry per candidate) plus per-candidate match details for touched ones."""

    s_contract: np.ndarray
    resolved: list[tuple[str, ...]]
    matches: dict[int, dict[str, Match]]
    bm25: np.ndarray
    s_desc: np.ndarray
    s_namepath: np.ndarray
    s_runtime: np.ndarray
    unknown_runtime: dict[int, list[str]]
    # filled in by ``score`` once the components are known
    s_total: np.ndarray = field(default_factory=_unset)
    s_skill: np.ndarray = field(default_factory=_unset)
    invalid_penalty: np.ndarray = field(default_factory=_unset)
    unknown_clause_penalty: np.ndarray = field(default_factory=_unset)
    overclaim_penalty: np.ndarray = field(default_factory=_unset)
    inflated: np.ndarray = field(default_factory=_unset)
    inflation_penalty: np.ndarray = field(default_factory=_unset)
    multiplier: np.ndarray = field(default_factory=_unset)
    statistics: dict = field(default_factory=dict)

    def penalties(self, i: int) -> float:
        return float(
            self.invalid_penalty[i]
            + self.unknown_clause_penalty[i]
            + self.overclaim_penalty[i]
            + self.inflation_penalty[i]
        )

    def penalized(self, i: int) -> float:
        return max(0.0, float(self.s_total[i]) - self.penalties(i))

    def final(self, i: int) -> float:
        return self.penalized(i) * float(self.multiplier[i])


def resolves(match: Match, strict: bool) -> bool:
    """Whether a match counts as resolving a required capability (coverage).

    Best-effort: exact, alias or fuzzy contract matches. Strict: exact or alias
    only. Provisional matches never resolve anything.
    """
    return match.kind in ("exact", "alias") or (match.kind == "fuzzy" and not strict)


MatchCache = dict


def capability_scores(
    corpus: Corpus, query: Query, aliases: AliasResolver, parser_version: str, cache: MatchCache
) -> tuple[np.ndarray, list[tuple[str, ...]], dict[int, dict[str, Match]]]:
    """``S_contract`` and resolved required capabilities; per-candidate results cached under the spec's key."""
    n = corpus.size
    s_contract = np.zeros(n)
    resolved: list[tuple[str, ...]] = [()] * n
    matches: dict[int, dict[str, Match]] = {}
    capabilities = query.capabilities
    if not capabilities:
        return s_contract, resolved, matches
    touched: set[int] = set()
    for capability in capabilities:
        touched |= corpus.touched(capability, aliases)
    query_key = (query.required, query.optional, query.mode)
    scored = query.scored
    for i in sorted(touched):
        record = corpus.records[i]
        key = (query_key, record.id, parser_version, aliases.version_key, record.metadata_hash)
        found = cache.get(key)
        if found is None:
            found = {c: best_match(c, record, aliases, query.strict) for c in capabilities}
            cache[key] = found
        matches[i] = found
        s_contract[i] = sum(found[c].score for c in scored) / len(scored)
        resolved[i] = tuple(c for c in query.required if resolves(found[c], query.strict))
    return s_contract, resolved, matches


def score(
    corpus: Corpus,
    query: Query,
    aliases: AliasResolver,
    *,
    parser_version: str,
    cache: MatchCache,
    known_runtimes: frozenset[str],
    multipliers: np.ndarray,
) -> ScoreTable:
    """Components, penalties and final scores for every candidate."""
    s_contract, resolved, matches = capability_scores(corpus, query, aliases, parser_version, cache)
    bm25 = corpus.bm25(query.terms)
    top = float(bm25.max()) if bm25.size else 0.0
    s_desc = bm25 / top if top > 0 else np.zeros(corpus.size)
    s_namepath = corpus.namepath(query.terms)
    s_runtime, unknown = corpus.runtime_scores(query.runtime, known_runtimes | {query.runtime})
    table = ScoreTable(s_contract, resolved, matches, bm25, s_desc, s_namepath, s_runtime, unknown)
    table.s_total = W_CONTRACT * s_contract + W_DESC * s_desc + W_NAMEPATH * s_namepath + W_RUNTIME * s_runtime
    table.s_skill = 0.7 * s_desc + 0.3 * s_namepath
    _penalties(table, corpus, query)
    table.multiplier = multipliers
    return table


def overclaim(p_count: float, p_median: float) -> float:
    """The over-claim penalty of one candidate (``Corpus.overclaim`` holds it for every candidate)."""
    limit = max(20.0, 3.0 * p_median)
    if p_count <= limit:
        return 0.0
    return min(0.25, 0.05 * math.ceil((p_count - limit) / 5.0))


def inflation_rule(deltas: np.ndarray) -> tuple[str, float | None, dict]:
    """Which divergence rule applies to this population of deltas, and its threshold."""
    n = int(deltas.size)
    if n <= 1:
        return "skipped (one candidate)", None, {"n": n}
    mu = float(deltas.mean())
    sigma = float(deltas.std())  # population standard deviation
    stats = {"n": n, "mu_delta": r6(mu), "sigma_delta": r6(sigma)}
    if n < 5:
        return "absolute (fewer than 5 candidates): delta > 0.35", 0.35, stats
    if r6(sigma) == 0.0:
        return "sigma is 0: delta > mu + 0.15", mu + 0.15, stats
    return "statistical: delta > mu + 2 sigma", mu + 2.0 * sigma, stats


def _penalties(table: ScoreTable, corpus: Corpus, query: Query) -> None:
    n = corpus.size
    table.invalid_penalty = np.zeros(n) if query.strict else np.minimum(0.20, 0.02 * corpus.invalid_count)
    table.unknown_clause_penalty = np.minimum(0.20, 0.02 * corpus.unknown_count)
    table.overclaim_penalty = corpus.overclaim
    population = np.flatnonzero(corpus.has_contract)
    deltas = table.s_contract[population] - table.s_skill[population]
    rule, threshold, stats = inflation_rule(deltas)
    inflated = np.zeros(n, dtype=bool)
    if threshold is not None:
        rounded = np.round(deltas, DIGITS)
        inflated[population[rounded > r6(threshold)]] = True
    table.inflated = inflated
    table.inflation_penalty = np.where(inflated, 0.0 if query.strict else INFLATION_PENALTY, 0.0)
    table.statistics = {
        "p_median": r6(corpus.p_median),
        "overclaim_limit": r6(corpus.overclaim_limit),
        "inflation": {"rule": rule, **stats, **({"threshold": r6(threshold)} if threshold is not None else {})},
    }
