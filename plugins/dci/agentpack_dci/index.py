"""The corpus index built once per candidate set: postings for BM25 and Jaccard, capability vocabularies.

Every query touches only the candidates that share a term or a capability
token with it, found through inverted indexes; the others score zero on those
components without being visited.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from typing import NamedTuple

from .aliases import AliasResolver
from .discovery import SkillRecord
from .jaro import FUZZY_THRESHOLD, MAX_PREFIX, PREFIX_SCALE, jaro_winkler
from .text import joined_stem

K1, B = 1.2, 0.75
SCORES = {"exact": 1.0, "alias": 0.8, "fuzzy": 0.33, "provisional": 0.25, "none": 0.0}


class Match(NamedTuple):
    """The best match of one query capability in one candidate."""

    capability: str
    kind: str
    token: str | None = None
    similarity: float | None = None

    @property
    def score(self) -> float:
        return SCORES[self.kind]

    def to_json(self) -> dict:
        out = {"capability": self.capability, "kind": self.kind, "score": self.score}
        if self.token is not None:
            out["token"] = self.token
        if self.similarity is not None:
            out["similarity"] = round(self.similarity, 6)
        return out


_JW: dict[tuple[str, str], float] = {}


def similarity(a: str, b: str) -> float:
    """Memoised Jaro-Winkler (the same pairs recur across queries and candidates)."""
    key = (a, b)
    found = _JW.get(key)
    if found is None:
        found = jaro_winkler(a, b)
        if len(_JW) > 500_000:
            _JW.clear()
        _JW[key] = found
    return found


def forget_similarities() -> None:
    """Empty the Jaro-Winkler memo (a cold start, for benchmarks)."""
    _JW.clear()


def may_reach_threshold(a: str, b: str) -> bool:
    """A cheap necessary condition for Jaro-Winkler >= 0.90 (see docs/dci.md): the length ratio, then the
    Jaro-Winkler the pair would have if every common character matched without transpositions."""
    return reach_filter(a)(b)


def reach_filter(a: str) -> Callable[[str], bool]:
    """``may_reach_threshold(a, b)`` as a function of ``b``, with what depends on ``a`` computed once (a
    query capability meets every token of a vocabulary)."""
    la = len(a)
    counts = tuple(Counter(a).items())
    first, head = a[:1], a[:MAX_PREFIX]

    def may_reach(b: str) -> bool:
        lb = len(b)
        if not la or not lb:
            return False
        if (la / lb if la < lb else lb / la) < (0.5 if b[0] == first else 0.7):  # the shorter over the longer
            return False
        common = 0  # matches can only pair equal characters: at most the smaller count of each character
        other = b.count  # counted in C, not memoised: a vocabulary holds a token per skill name
        for char, count in counts:
            found = other(char)
            if found:
                common += count if count < found else found
        jaro_max = (common / la + common / lb + 1.0) / 3.0
        prefix = 0
        for x, y in zip(head, b[:MAX_PREFIX], strict=False):  # the shorter prefix ends it
            if x != y:
                break
            prefix += 1
        return jaro_max + prefix * PREFIX_SCALE * (1.0 - jaro_max) >= FUZZY_THRESHOLD - 1e-9

    return may_reach


def _inverted(rows: list) -> dict[str, Sequence[int]]:
    """Term -> the rows that hold it, in ascending order."""
    index: dict[str, list[int]] = defaultdict(list)
    for i, row in enumerate(rows):
        for term in row:
            index[term].append(i)
    return _tuples(index)


def _tuples(index: dict[str, list[int]]) -> dict[str, Sequence[int]]:
    """``index`` (a plain dict) with its lists made tuples, one at a time: a grown list keeps spare room, and
    most terms of a large corpus are rare (a one-row tuple takes half the memory of a one-row list)."""
    out: dict[str, Sequence[int]] = dict(index)
    index.clear()
    for key, rows in out.items():
        out[key] = tuple(rows)
    return out


def _median(values: list[int]) -> float:
    """The median (of an even count, the mean of the middle two)."""
    ordered = sorted(values)
    mid = len(ordered) // 2
    return float(ordered[mid]) if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def overclaim(p_count: float, p_median: float) -> float:
    """The over-claim penalty of one candidate: 0.05 per 5 tokens beyond max(20, 3 x median), at most 0.25."""
    limit = max(20.0, 3.0 * p_median)
    if p_count <= limit:
        return 0.0
    return min(0.25, 0.05 * math.ceil((p_count - limit) / 5.0))


class Corpus:
    """Inverted indexes over one discovery result, and the per-candidate values scoring reads (lists, one
    entry per candidate)."""

    def __init__(self, records: list[SkillRecord], fingerprint: str) -> None:
        self.records = records
        self.fingerprint = fingerprint
        n = len(records)
        self.size = n
        ptokens: dict[str, list[int]] = defaultdict(list)
        provisional: dict[str, list[int]] = defaultdict(list)
        postings: dict[str, tuple[Sequence[int], Sequence[int]]] = {}
        self.p_count, self.invalid_count, self.unknown_count = [0] * n, [0] * n, [0] * n
        self.has_contract = [False] * n
        self.hinted: list[int] = []
        doc_length = self.doc_length = [0] * n
        for i, r in enumerate(records):
            terms = r.terms
            doc_length[i] = len(terms)
            for term, tf in Counter(terms).items():
                entry = postings.get(term)
                if entry is None:
                    entry = postings[term] = ([], [])
                entry[0].append(i)  # type: ignore[attr-defined]  # lists while building, tuples after
                entry[1].append(tf)  # type: ignore[attr-defined]
            c = r.contract
            if c is not None:
                self.has_contract[i] = True
                self.p_count[i] = len(c.provides)
                self.invalid_count[i] = sum(
                    cap.problem is not None
                    for clause in (c.provides, c.expects, c.required, c.optional)
                    for cap in clause
                )
                self.unknown_count[i] = len(c.unknown)
                if c.policy:
                    self.hinted.append(i)
                for cap in c.provides:
                    ptokens[cap.value].append(i)
            else:
                for token in r.provisional:
                    provisional[token].append(i)
        for term, (docs, counts) in postings.items():  # in place: tuples take no spare room
            postings[term] = (tuple(docs), tuple(counts))
        self.postings: dict[str, tuple[Sequence[int], Sequence[int]]] = postings
        """Description term -> its candidates (ascending) and its count in each (two tuples: a third of the
        memory of one pair per entry)."""
        namepath = [r.namepath_tokens for r in records]
        self.name_postings = _inverted(namepath)
        self.namepath_size = [len(tokens) for tokens in namepath]
        self.contract_rows = [i for i, has in enumerate(self.has_contract) if has]
        self.has_error = [r.contract_error is not None for r in records]
        self.ptokens = _tuples(ptokens)
        self.provisional = _tuples(provisional)
        self.avgdl = sum(self.doc_length) / n if n else 0.0  # integer lengths: the sum is exact
        avgdl = self.avgdl or 1.0  # every length is 0 when the average is: bm25 scores nothing then
        self.length_norm = [K1 * (1.0 - B + B * dl / avgdl) for dl in self.doc_length]
        """BM25's ``k1 (1 - b + b |d| / avgdl)`` per candidate."""
        with_contract = [self.p_count[i] for i in self.contract_rows]
        self.p_median = _median(with_contract) if with_contract else 0.0
        self.overclaim_limit = max(20.0, 3.0 * self.p_median)
        self.overclaim = [overclaim(p, self.p_median) if p > self.overclaim_limit else 0.0 for p in self.p_count]
        self._runtime: dict[tuple, tuple[list[float], dict[int, list[str]]]] = {}
        self._term_bm25: dict[str, list[float]] = {}
        self._canon: dict[str, dict[str, list[int]]] = {}
        self._vocab_hits: dict[tuple, dict[str, float]] = {}

    # -- lexical components ----------------------------------------------------------------
    def bm25(self, terms: list[str]) -> dict[int, float]:
        """Raw BM25 (k1=1.2, b=0.75, Lucene idf) of the distinct query terms, for the candidates that hold
        one of them (the others score 0)."""
        scores: dict[int, float] = {}
        if not self.size or self.avgdl == 0:
            return scores
        get = scores.get
        for term in dict.fromkeys(terms):
            hits = self.postings.get(term)
            if hits is None:
                continue
            values = self._term_bm25.get(term) or self._term_scores(term, *hits)
            for i, value in zip(hits[0], values, strict=True):
                scores[i] = get(i, 0.0) + value
        return scores

    def _term_scores(self, term: str, docs: Sequence[int], counts: Sequence[int]) -> list[float]:
        """One term's BM25 contribution to each candidate that holds it, memoised (a corpus constant)."""
        idf = math.log(1.0 + (self.size - len(docs) + 0.5) / (len(docs) + 0.5))
        norm = self.length_norm
        found = [idf * tf * (K1 + 1.0) / (tf + norm[i]) for i, tf in zip(docs, counts, strict=True)]
        self._term_bm25[term] = found
        return found

    def namepath(self, terms: list[str]) -> dict[int, float]:
        """Jaccard between the query's token set and each candidate's name + path token set, for the
        candidates that share a token with the query (the others score 0)."""
        query = set(terms)
        inter: dict[int, int] = {}
        for term in query:
            for i in self.name_postings.get(term, ()):
                inter[i] = inter.get(i, 0) + 1
        size = self.namepath_size
        return {i: k / (len(query) + size[i] - k) for i, k in inter.items()}

    # -- capability matching ----------------------------------------------------------------
    def _canonical_index(self, aliases: AliasResolver) -> dict[str, list[int]]:
        index = self._canon.get(aliases.version_key)
        if index is None:
            index = defaultdict(list)
            for token, docs in self.ptokens.items():
                index[aliases.canonical(token)].extend(docs)
            self._canon[aliases.version_key] = index = dict(index)
        return index

    def _fuzzy_vocab(self, query: str, vocab: dict[str, Sequence[int]], kind: str) -> dict[str, float]:
        """The vocabulary's tokens within Jaro-Winkler 0.90 of ``query``, with their similarity (memoised)."""
        key = (kind, query)
        hits = self._vocab_hits.get(key)
        if hits is None:
            hits = {}
            may_reach = reach_filter(query)
            for token in vocab:
                if may_reach(token):
                    sim = similarity(query, token)
                    if sim >= FUZZY_THRESHOLD:
                        hits[token] = sim
            self._vocab_hits[key] = hits
        return hits

    def touched(self, capability: str, aliases: AliasResolver) -> set[int]:
        """Candidates that can match ``capability`` at all (a superset; ``best_match`` decides)."""
        docs: set[int] = set(self.ptokens.get(capability, ()))
        docs.update(self._canonical_index(aliases).get(aliases.canonical(capability), ()))
        for token in self._fuzzy_vocab(capability, self.ptokens, "p"):
            docs.update(self.ptokens[token])
        for token in self._fuzzy_vocab(joined_stem(capability), self.provisional, "provisional"):
            docs.update(self.provisional[token])
        return docs

    def best_match(self, capability: str, record: SkillRecord, aliases: AliasResolver, strict: bool) -> Match:
        """Exact 1.0 > alias 0.8 > fuzzy 0.33 over ``P`` tokens; provisional 0.25 without a contract.

        Ties keep the first token in declaration order. In strict mode invalid
        tokens take no part (they are unresolved); in best-effort they can match
        fuzzily, as written. Fuzzy and provisional similarities come from the
        vocabulary scan ``touched`` made for the capability: every token of a
        candidate of this corpus is in its vocabulary.
        """
        if record.contract is None:
            near = self._fuzzy_vocab(joined_stem(capability), self.provisional, "provisional")
            best: Match | None = None
            best_sim = 0.0
            for token in sorted(record.provisional):
                sim = near.get(token)
                if sim is not None and (best is None or sim > best_sim):
                    best, best_sim = Match(capability, "provisional", token, sim), sim
            return best or Match(capability, "none")
        near = self._fuzzy_vocab(capability, self.ptokens, "p")
        canonical = aliases.canonical(capability)
        best = None
        for cap in record.contract.provides:
            if strict and not cap.valid:
                continue
            token = cap.value
            if token == capability:
                return Match(capability, "exact", token)
            if best is not None and best.kind == "alias":
                continue
            if cap.valid and aliases.canonical(token) == canonical:
                best = Match(capability, "alias", token)
            elif best is None:
                sim = near.get(token)
                if sim is not None:
                    best = Match(capability, "fuzzy", token, sim)
        return best or Match(capability, "none")

    def runtime_scores(self, host: str, known: frozenset[str]) -> tuple[list[float], dict[int, list[str]]]:
        """``S_runtime`` per candidate and, per candidate, the unknown compatibility tokens (logged)."""
        key = (host, known)
        if key in self._runtime:
            return self._runtime[key]
        scores = [1.0] * self.size
        unknown: dict[int, list[str]] = {}
        for i, r in enumerate(self.records):
            if not r.runtime_tokens:
                continue
            listed = [t for t in r.runtime_tokens if t in known]
            strange = [t for t in r.runtime_tokens if t not in known]
            if strange:
                unknown[i] = strange
            if listed and "all" not in listed and host not in listed:
                scores[i] = 0.0
        self._runtime[key] = (scores, unknown)
        return scores, unknown
