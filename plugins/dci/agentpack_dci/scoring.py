"""Every score of the spec for every candidate of one query, as lists (one entry per candidate).

``S_total = 0.60 S_contract + 0.20 S_desc + 0.10 S_namepath + 0.10 S_runtime``;
penalties (invalid token, unknown clause, over-claim, contract inflation) are
subtracted, then the reliability multiplier applies. Values are kept as floats;
every comparison and every reported value uses them rounded to 6 decimals with
``r6`` (Python's ``round``: the decimal nearest the binary value).
Components that are zero for most candidates (BM25, Jaccard, ``S_contract``)
are computed for the candidates that can score at all and written into lists
of zeros.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, ClassVar

from agentpack.kernel.records import Record

from .aliases import AliasResolver
from .index import Corpus, Match

W_CONTRACT, W_DESC, W_NAMEPATH, W_RUNTIME = 0.60, 0.20, 0.10, 0.10
INFLATION_PENALTY = 0.15
DIGITS = 6


def r6(value: float) -> float:
    return round(float(value), DIGITS)


def at_least(value: float, limit: float) -> bool:
    """``r6(value) >= limit`` for a ``limit`` already rounded. Rounding is monotonic: a value at or above
    the limit passes, one a millionth or more below it fails (for scores, far above a binary ulp); only
    values in between are rounded."""
    return value >= limit or (value > limit - 1e-6 and round(value, DIGITS) >= limit)


class Query(Record):
    __slots__ = ("required", "optional", "text", "terms", "mode", "runtime")
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


class ScoreTable(Record):
    """Component lists (one entry per candidate) plus per-candidate match details for touched ones."""

    __slots__ = (
        "s_contract",
        "resolved",
        "matches",
        "bm25",
        "s_desc",
        "s_namepath",
        "s_runtime",
        "unknown_runtime",
        "s_total",
        "s_skill",
        "invalid_penalty",
        "unknown_clause_penalty",
        "overclaim_penalty",
        "inflated",
        "inflation_penalty",
        "multiplier",
        "statistics",
    )
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "s_total": list,
        "s_skill": list,
        "invalid_penalty": list,
        "unknown_clause_penalty": list,
        "overclaim_penalty": list,
        "inflated": list,
        "inflation_penalty": list,
        "multiplier": list,
        "statistics": dict,
    }
    s_contract: list[float]
    resolved: list[tuple[str, ...]]
    matches: dict[int, dict[str, Match]]
    bm25: list[float]
    s_desc: list[float]
    s_namepath: list[float]
    s_runtime: list[float]
    unknown_runtime: dict[int, list[str]]
    # filled in by ``score`` once the components are known
    s_total: list[float]
    s_skill: list[float]
    invalid_penalty: list[float]
    unknown_clause_penalty: list[float]
    overclaim_penalty: list[float]
    inflated: list[bool]
    inflation_penalty: list[float]
    multiplier: list[float]
    statistics: dict

    def penalties(self, i: int) -> float:
        return (
            self.invalid_penalty[i]
            + self.unknown_clause_penalty[i]
            + self.overclaim_penalty[i]
            + self.inflation_penalty[i]
        )

    def penalized(self, i: int) -> float:
        return max(0.0, self.s_total[i] - self.penalties(i))

    def final(self, i: int) -> float:
        return self.penalized(i) * self.multiplier[i]


def resolves(match: Match, strict: bool) -> bool:
    """Whether a match counts as resolving a required capability (coverage).

    Best-effort: exact, alias or fuzzy contract matches. Strict: exact or alias
    only. Provisional matches never resolve anything.
    """
    return match.kind in ("exact", "alias") or (match.kind == "fuzzy" and not strict)


MatchCache = dict


def capability_scores(
    corpus: Corpus, query: Query, aliases: AliasResolver, parser_version: str, cache: MatchCache
) -> tuple[list[float], list[tuple[str, ...]], dict[int, dict[str, Match]]]:
    """``S_contract`` and resolved required capabilities; per-candidate results cached under the spec's key."""
    n = corpus.size
    s_contract = [0.0] * n
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
            found = {c: corpus.best_match(c, record, aliases, query.strict) for c in capabilities}
            cache[key] = found
        matches[i] = found
        s_contract[i] = sum(found[c].score for c in scored) / len(scored)
        resolved[i] = tuple(c for c in query.required if resolves(found[c], query.strict))
    return s_contract, resolved, matches


def _dense(size: int, sparse: dict[int, float]) -> list[float]:
    values = [0.0] * size
    for i, value in sparse.items():
        values[i] = value
    return values


def score(
    corpus: Corpus,
    query: Query,
    aliases: AliasResolver,
    *,
    parser_version: str,
    cache: MatchCache,
    known_runtimes: frozenset[str],
    multipliers: list[float],
) -> ScoreTable:
    """Components, penalties and final scores for every candidate."""
    n = corpus.size
    s_contract, resolved, matches = capability_scores(corpus, query, aliases, parser_version, cache)
    bm25 = corpus.bm25(query.terms)
    top = max(bm25.values(), default=0.0)  # BM25 is positive wherever a term occurs
    desc = {i: value / top for i, value in bm25.items()} if top > 0 else {}
    namepath = corpus.namepath(query.terms)
    s_runtime, unknown = corpus.runtime_scores(query.runtime, known_runtimes | {query.runtime})
    s_desc, s_namepath = _dense(n, desc), _dense(n, namepath)
    table = ScoreTable(s_contract, resolved, matches, _dense(n, bm25), s_desc, s_namepath, s_runtime, unknown)
    # a candidate without contract, description or name signal has S_total = W_RUNTIME * S_runtime exactly
    s_total = [W_RUNTIME * r for r in s_runtime]
    s_skill = [0.0] * n
    for i in {*matches, *desc, *namepath}:
        s_total[i] = (
            W_CONTRACT * s_contract[i] + W_DESC * s_desc[i] + W_NAMEPATH * s_namepath[i] + W_RUNTIME * s_runtime[i]
        )
        s_skill[i] = 0.7 * s_desc[i] + 0.3 * s_namepath[i]
    table.s_total, table.s_skill = s_total, s_skill
    _penalties(table, corpus, query)
    table.multiplier = multipliers
    return table


def inflation_rule(deltas: list[float]) -> tuple[str, float | None, dict]:
    """Which divergence rule applies to this population of deltas, and its threshold."""
    n = len(deltas)
    if n <= 1:
        return "skipped (one candidate)", None, {"n": n}
    mu = math.fsum(deltas) / n
    sigma = math.sqrt(math.fsum((d - mu) ** 2 for d in deltas) / n)  # population standard deviation
    stats = {"n": n, "mu_delta": r6(mu), "sigma_delta": r6(sigma)}
    if n < 5:
        return "absolute (fewer than 5 candidates): delta > 0.35", 0.35, stats
    if r6(sigma) == 0.0:
        return "sigma is 0: delta > mu + 0.15", mu + 0.15, stats
    return "statistical: delta > mu + 2 sigma", mu + 2.0 * sigma, stats


def _capped(counts: list[int]) -> list[float]:
    """0.02 per token or clause, at most 0.20."""
    return [min(0.20, 0.02 * k) if k else 0.0 for k in counts]


def _penalties(table: ScoreTable, corpus: Corpus, query: Query) -> None:
    n = corpus.size
    table.invalid_penalty = [0.0] * n if query.strict else _capped(corpus.invalid_count)
    table.unknown_clause_penalty = _capped(corpus.unknown_count)
    table.overclaim_penalty = corpus.overclaim
    population = corpus.contract_rows
    deltas = [table.s_contract[i] - table.s_skill[i] for i in population]
    rule, threshold, stats = inflation_rule(deltas)
    table.inflated, table.inflation_penalty = [False] * n, [0.0] * n
    if threshold is not None:
        limit = r6(threshold)
        for i, delta in zip(population, deltas, strict=True):
            if delta > limit and r6(delta) > limit:  # a value at or below the limit cannot round above it
                table.inflated[i] = True
                table.inflation_penalty[i] = 0.0 if query.strict else INFLATION_PENALTY
    table.statistics = {
        "p_median": r6(corpus.p_median),
        "overclaim_limit": r6(corpus.overclaim_limit),
        "inflation": {"rule": rule, **stats, **({"threshold": r6(threshold)} if threshold is not None else {})},
    }
