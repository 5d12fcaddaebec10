"""Golden vectors for the decisions the spec leaves open (each one is documented in docs/dci.md)."""

from __future__ import annotations

import math
import statistics
import subprocess
import sys
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentpack_dci.aliases import AliasResolver, flatten, table_from_data
from agentpack_dci.index import may_reach_threshold, overclaim
from agentpack_dci.jaro import FUZZY_THRESHOLD, jaro, jaro_winkler
from agentpack_dci.policy import PolicyError, defaults, parse_value, provider_hints, resolve_policy
from agentpack_dci.reliability import History
from agentpack_dci.scoring import at_least, inflation_rule, r6
from agentpack_dci.text import joined_stem, stem, stopwords, tokenize


# -- stemmer: the original Porter algorithm -----------------------------------------------------
@pytest.mark.parametrize(
    "word, expected",
    [
        ("dying", "dy"),
        ("lying", "ly"),
        ("skies", "ski"),
        ("news", "new"),  # NLTK's default mode gives die/lie/sky/news
        ("generously", "gener"),
        ("caresses", "caress"),
        ("relational", "relat"),
        ("summarization", "summar"),
    ],
)
def test_original_porter_stemmer(word, expected):
    assert stem(word) == expected


def test_porter_stemmer_loads_without_the_other_languages():
    """Only porter_stemmer and its two helpers load (not snowballstemmer's __init__), and the class is the
    one the plain import gives when the package is already loaded."""
    script = (
        "import sys\n"
        "from agentpack_dci.text import _porter_class, stem\n"
        "assert stem('generously') == 'gener'\n"
        "assert 'snowballstemmer' not in sys.modules, 'the package __init__ ran'\n"
        "assert not [m for m in sys.modules if m.endswith(('english_stemmer', 'arabic_stemmer'))]\n"
        "import snowballstemmer.porter_stemmer as real\n"
        "assert _porter_class() is real.PorterStemmer\n"
        "assert real.PorterStemmer().stemWord('generously') == 'gener'\n"
    )
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True)


def test_tokenizer_splits_on_hyphen_underscore_slash_and_drops_stopwords():
    assert tokenize("The Web-Search_tool/paths for AGENTS, and 3D") == ["web", "search", "tool", "path", "agent", "3d"]
    assert joined_stem("summarization-tools") == "summar-tool"


def test_stopword_list_is_our_own_fixed_list():
    words = stopwords()
    assert {"the", "and", "would", "about"} <= words and "done" not in words
    assert all(w == w.lower() and w.isalpha() for w in words)


# -- Jaro-Winkler ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "a, b, expected",
    [
        ("martha", "marhta", 0.961111),
        ("dixon", "dicksonx", 0.813333),
        ("reasoning-advanced", "reasoning-basic", 0.893333),  # below 0.90 (the long-string variant gives 0.920988)
        ("web-search", "web-searching", 0.953846),
        ("", "", 0.0),
        ("abc", "abc", 1.0),
    ],
)
def test_jaro_winkler_golden(a, b, expected):
    assert round(jaro_winkler(a, b), 6) == expected


def test_reasoning_advanced_is_not_a_fuzzy_match_for_reasoning_basic():
    assert jaro_winkler("reasoning-advanced", "reasoning-basic") < FUZZY_THRESHOLD


def test_jaro_winkler_agrees_with_jellyfish_when_installed():
    jellyfish = pytest.importorskip("jellyfish", reason="jellyfish is only an optional cross-check")
    import random

    rng = random.Random(3)
    for _ in range(3000):
        a = "".join(rng.choice("abcd-") for _ in range(rng.randint(1, 14)))
        b = "".join(rng.choice("abcd-") for _ in range(rng.randint(1, 14)))
        ours, theirs = jaro_winkler(a, b), jellyfish.jaro_winkler_similarity(a, b)
        assert (ours >= FUZZY_THRESHOLD) == (theirs >= FUZZY_THRESHOLD)
        if jaro(a, b) > 0.7:
            assert ours == pytest.approx(theirs, abs=1e-12)


@settings(max_examples=2000, deadline=None)
@given(st.text("abcde-", max_size=16), st.text("abcde-", max_size=16))
def test_length_prefilter_never_drops_a_fuzzy_match(a, b):
    if jaro_winkler(a, b) >= FUZZY_THRESHOLD:
        assert may_reach_threshold(a, b)


@settings(max_examples=2000, deadline=None)
@given(
    st.text("ab", min_size=1, max_size=12).flatmap(
        lambda a: st.tuples(st.just(a), st.lists(st.sampled_from(["keep", "swap", "drop", "add"]), max_size=3))
    )
)
def test_prefilter_never_drops_a_near_match(case):
    """Near-identical pairs sit at the 0.90 boundary, where the bound must never round the wrong way."""
    a, edits = case
    b = list(a)
    for n, edit in enumerate(edits):
        k = n % len(b) if b else 0
        if edit == "swap" and len(b) > k + 1:
            b[k], b[k + 1] = b[k + 1], b[k]
        elif edit == "drop" and b:
            del b[k]
        elif edit == "add":
            b.insert(k, "c")
    b = "".join(b)
    if jaro_winkler(a, b) >= FUZZY_THRESHOLD:
        assert may_reach_threshold(a, b)


def _bound_with_counters(a: str, b: str) -> bool:
    """The prefilter as first written: the common characters from a multiset intersection per pair."""
    la, lb = len(a), len(b)
    if not la or not lb or min(la, lb) / max(la, lb) < (0.5 if a[0] == b[0] else 0.7):
        return False
    common = sum((Counter(a) & Counter(b)).values())
    jaro_max = (common / la + common / lb + 1.0) / 3.0
    prefix = next((k for k, (x, y) in enumerate(zip(a[:4], b[:4], strict=False)) if x != y), min(4, la, lb))
    return jaro_max + prefix * 0.1 * (1.0 - jaro_max) >= FUZZY_THRESHOLD - 1e-9


@settings(max_examples=3000, deadline=None)
@given(st.text("aab-é1", max_size=20), st.text("abb-é2", max_size=20))
def test_prefilter_with_memoised_character_counts_is_the_multiset_bound(a, b):
    """Per-token character counts, memoised across pairs, give the same decision as a fresh multiset
    intersection, in either order and on a second call (a memo hit)."""
    expected = _bound_with_counters(a, b)
    assert may_reach_threshold(a, b) == expected == may_reach_threshold(a, b)
    assert may_reach_threshold(b, a) == _bound_with_counters(b, a)


def test_prefilter_rejects_pairs_without_enough_common_characters():
    assert not may_reach_threshold("search-web", "summarize-document-1234")
    assert may_reach_threshold("reasoning-advanced", "reasoning-advance")


# -- BM25 idf (Lucene form) ----------------------------------------------------------------------
def _corpus(descriptions, names=None):
    from agentpack_dci.discovery import SkillRecord
    from agentpack_dci.index import Corpus

    records = []
    for n, text in enumerate(descriptions):
        tokens = tokenize(text)
        records.append(
            SkillRecord(
                id=f"s{n}::p{n}",
                source="workspace-local",
                directory=f"p{n}",
                compatibility=None,
                contract=None,
                contract_error=None,
                terms=tuple(tokens),
                name_terms=0,
                path_terms=tuple(tokenize(names[n])) if names else (),
                runtime_tokens=(),
                metadata_hash=bytes([n]),
            )
        )
    return Corpus(records, "x")


def test_bm25_idf_is_positive_for_a_term_in_one_of_two_documents():
    corpus = _corpus(["search web", "translate text"])
    scores = corpus.bm25(["search"])
    # classic idf log((N - n + 0.5) / (n + 0.5)) would be 0 here; Lucene's log(1 + ...) is log(2)
    tf_part = 1 * 2.2 / (1 + 1.2 * (1 - 0.75 + 0.75 * 2 / 2))
    assert scores[0] == pytest.approx(math.log(2) * tf_part) and 1 not in scores  # sparse: no term, no entry


def test_bm25_idf_is_positive_with_one_document():
    corpus = _corpus(["search web"])
    assert corpus.bm25(["search"])[0] == pytest.approx(math.log(1 + 0.5 / 1.5) * 1.0)


def test_bm25_counts_each_distinct_query_term_once():
    corpus = _corpus(["search web", "translate text"])
    assert corpus.bm25(["search", "search"]) == corpus.bm25(["search"])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.sampled_from(["search", "web", "code", "review", "plan", "7"]), max_size=8), min_size=1),
    st.lists(st.sampled_from(["search", "web", "code", "nothing"]), min_size=1, max_size=4),
)
def test_sparse_bm25_and_jaccard_equal_the_formulas_per_candidate(docs, query):
    """Postings in plain lists: every candidate that shares a term scores exactly what the formula gives
    for it alone (same operations in the same order), and the others have no entry (they score 0)."""
    corpus = _corpus([" ".join(d) for d in docs], names=[" ".join(d[:2]) for d in docs])
    terms = tokenize(" ".join(query))
    docs = [tokenize(" ".join(d)) for d in docs]
    n, avgdl = len(docs), sum(len(d) for d in docs) / len(docs)
    expected: dict[int, float] = {}
    for term in dict.fromkeys(terms):
        df = sum(term in d for d in docs)
        for i, d in enumerate(docs):
            if term in d and avgdl:
                tf = d.count(term)
                norm = 1.2 * (1.0 - 0.75 + 0.75 * len(d) / avgdl)
                idf = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
                expected[i] = expected.get(i, 0.0) + idf * tf * 2.2 / (tf + norm)
    assert corpus.bm25(terms) == expected
    jaccard = {}
    for i, d in enumerate(docs):
        mine, theirs = set(terms), set(d[:2])
        if mine & theirs:
            jaccard[i] = len(mine & theirs) / len(mine | theirs)
    assert corpus.namepath(terms) == jaccard


# -- rounding ----------------------------------------------------------------------------------
@settings(max_examples=3000, deadline=None)
@given(
    st.integers(0, 10**6).flatmap(
        lambda k: st.tuples(
            st.just(k / 10**6),
            st.sampled_from([k / 10**6, k / 10**6 + 5e-7, k / 10**6 - 5e-7, k / 10**6 + 1e-6, k / 10**6 - 1e-6]),
            st.integers(-3, 3),
        )
    )
)
def test_at_least_is_the_rounded_comparison(case):
    """``at_least`` skips rounding far from the limit; it always answers like ``r6(value) >= limit``,
    around half a millionth below the limit included (0.4499995 is 0.449999 rounded, not 0.45)."""
    limit, value, ulps = case
    for _ in range(abs(ulps)):
        value = math.nextafter(value, math.inf if ulps > 0 else -math.inf)
    assert at_least(value, r6(limit)) == (r6(value) >= r6(limit))


# -- penalties ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "p_count, median, expected",
    [
        (20, 0, 0.0),
        (21, 0, 0.05),
        (25, 0, 0.05),
        (26, 0, 0.10),
        (45, 2, 0.25),
        (100, 0, 0.25),
        (24, 8, 0.0),
        (25, 8, 0.05),
        (30, 8, 0.10),  # the limit is max(20, 3 * 8) = 24; ceil((30 - 24) / 5) = 2
        (2.5 * 4, 2.5, 0.0),  # an even population's median is the mean of the middle two
    ],
)
def test_overclaim_formula(p_count, median, expected):
    assert overclaim(p_count, median) == pytest.approx(expected)


@pytest.mark.parametrize(
    "deltas, rule, threshold",
    [
        ([0.9], "skipped", None),
        ([0.9, 0.1], "absolute", 0.35),
        ([0.1, 0.2, 0.3, 0.4], "absolute", 0.35),
        ([0.2] * 5, "sigma is 0", 0.35),
        ([0.0, 0.0, 0.0, 0.0, 1.0], "statistical", 0.2 + 2 * 0.4),
    ],
)
def test_inflation_rule_edge_cases(deltas, rule, threshold):
    name, value, stats = inflation_rule(deltas)
    assert name.startswith(rule)
    assert value == (None if threshold is None else pytest.approx(threshold))
    if len(deltas) >= 2:
        assert stats["sigma_delta"] == pytest.approx(statistics.pstdev(deltas), abs=1e-6)  # population deviation


# -- reliability ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "outcomes, rate, multiplier",
    [
        ((), 1.0, 1.0),
        ((1, 1, 0, 0), 0.5, 0.85),
        ((0,) * 20, 0.0, 0.70),
        ((1,) * 20, 1.0, 1.0),
    ],
)
def test_history_multiplier(outcomes, rate, multiplier):
    h = History(outcomes, None)
    assert h.success_rate == rate and h.multiplier == pytest.approx(multiplier)


# -- policy ----------------------------------------------------------------------------------------
def test_policy_defaults_per_mode_and_precedence():
    assert (
        defaults("strict")["min-required-coverage"] == 1.0 and defaults("strict")["on-missing-required"] == "hard-fail"
    )
    assert defaults("best-effort")["min-required-coverage"] == 0.6
    p = resolve_policy("best-effort", {"max-candidates": 2, "selection-mode": "cover"}, {"max-candidates": 4})
    assert p.effective["max-candidates"] == 4 and p.effective["selection-mode"] == "cover"
    assert p.source == "consumer+runtime"
    assert resolve_policy("strict", {}, {}).source == "defaults"


@pytest.mark.parametrize(
    "key, raw",
    [
        ("min-total-score", "1.5"),
        ("min-total-score", "nan"),
        ("max-candidates", "0"),
        ("max-providers", "2.0"),
        ("selection-mode", "many"),
        ("color", "red"),
    ],
)
def test_policy_values_are_checked(key, raw):
    with pytest.raises(PolicyError):
        parse_value(key, raw)


def test_provider_hints_only_tighten():
    effective = defaults("best-effort")
    hints = provider_hints(
        (
            ("min-total-score", "0.6"),
            ("min-contract-score", "0.1"),
            ("max-candidates", "1"),
            ("on-missing-required", "hard-fail"),
            ("min-required-coverage", "x"),
        ),
        effective,
    )
    assert hints.thresholds == {"min-total-score": 0.6}
    assert hints.on_missing == "hard-fail"
    assert set(hints.ignored) == {"min-contract-score", "max-candidates", "min-required-coverage"}
    loose = provider_hints((("on-missing-required", "auto-emulate"),), effective)
    assert loose.on_missing is None and "on-missing-required" in loose.ignored


# -- aliases -------------------------------------------------------------------------------------
def test_alias_cycles_flatten_to_the_first_key():
    canonical, _ = flatten({"b": ["a"], "a": ["b", "c"], "d": ["e"]})
    assert canonical == {"a": "b", "b": "b", "c": "b", "d": "d", "e": "d"}


def test_alias_chain_keeps_canonical_keys():
    canonical, _ = flatten({"a": ["b"], "b": ["c"]})
    assert canonical == {"a": "a", "b": "b", "c": "b"}


def test_alias_precedence_is_table_by_table():
    def table(source, aliases):
        return table_from_data({"schema_version": "1", "alias_table_version": source, "aliases": aliases}, source)

    resolver = AliasResolver(
        [
            table("builtin", {"search": ["lookup"]}),
            table("runtime-user", {"lookup": ["find"]}),
            table("workspace", {"query": ["lookup"]}),
        ]
    )
    assert [t.source for t in resolver.tables] == ["runtime-user", "workspace", "builtin"]
    assert resolver.canonical("lookup") == "lookup"  # a canonical key of the runtime table wins
    assert resolver.canonical("find") == "lookup"
    assert resolver.canonical("search") == "search"
    assert resolver.canonical("unknown-token") == "unknown-token"
    assert "runtime-user:runtime-user@" in resolver.version_key


def _textbook_jaro(a: str, b: str) -> float:
    """The character-by-character formulation, to check the str.find scan against."""
    la, lb = len(a), len(b)
    if not la or not lb:
        return 0.0
    if a == b:
        return 1.0
    window = max(0, max(la, lb) // 2 - 1)
    taken = [False] * lb
    matched = []
    for i, ch in enumerate(a):
        for j in range(max(0, i - window), min(i + window + 1, lb)):
            if not taken[j] and b[j] == ch:
                taken[j] = True
                matched.append(ch)
                break
    m = len(matched)
    if not m:
        return 0.0
    t = sum(x != y for x, y in zip(matched, [b[j] for j in range(lb) if taken[j]], strict=True)) // 2
    return (m / la + m / lb + (m - t) / m) / 3.0


@settings(max_examples=500, deadline=None)
@given(st.text("abcab-", max_size=20), st.text("abcba-", max_size=20))
def test_jaro_scan_equals_the_textbook_formulation(a, b):
    assert jaro(a, b) == _textbook_jaro(a, b)


def test_numbers_are_their_own_porter_stem():
    from snowballstemmer.porter_stemmer import PorterStemmer

    from agentpack_dci.text import tokenize

    porter = PorterStemmer()
    for word in [*map(str, range(0, 20000, 7)), "0" * 30, "9" * 30, "2026", "007"]:
        assert porter.stemWord(word) == word
    assert tokenize("v2 2026 ３") == ["v2", "2026", porter.stemWord("３")]


def test_the_bundled_alias_table_is_valid():
    import json
    from importlib import resources

    from agentpack_dci import schemas_store
    from agentpack_dci.aliases import builtin_table

    text = resources.files("agentpack_dci").joinpath("data", "builtin-aliases.v1.json").read_text(encoding="utf-8")
    assert schemas_store.store().validate(schemas_store.ALIASES, json.loads(text)) == []
    assert builtin_table().canonical_of  # not empty


def test_prefilter_never_drops_a_match_exhaustively():
    from itertools import product

    words = ["".join(p) for n in range(1, 6) for p in product("ab-", repeat=n)]
    dropped = [
        (a, b) for a in words for b in words if not may_reach_threshold(a, b) and jaro_winkler(a, b) >= FUZZY_THRESHOLD
    ]
    assert dropped == []
