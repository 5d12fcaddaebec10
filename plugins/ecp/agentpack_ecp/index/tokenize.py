"""The canonical ECP tokenizer (spec 6.1.1.2) with recorded identifier-split variants.

Base tokens: regex ``[A-Za-z0-9_]+``, lower-cased, stopwords removed, tokens of
length < 2 dropped. Variants (recorded in ``config.tokenizer``): the parts of
snake_case, CamelCase and letter/digit boundaries, each counted as often as the
whole token occurs, so term frequencies stay true.

``TOKENIZER_ID`` names the effective tokenizer; indexes record it and queries
against an index must use the same one.
"""

from __future__ import annotations

import re
from collections import Counter

TOKENIZER_ID = "regex[A-Za-z0-9_]+;lower;stopwords=agentpack-en-v1;len>=2;split_snake;split_camel;split_digits"

TOKEN_RE = re.compile(r"\w+", re.ASCII)
"""``[A-Za-z0-9_]+`` (ASCII ``\\w`` is exactly that class, and the regex engine runs it faster)."""
WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
"""The characters of ``TOKEN_RE``'s class."""
_PART_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

STOPWORDS = frozenset(
    [
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "am",
        "an",
        "and",
        "any",
        "are",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "could",
        "did",
        "do",
        "does",
        "doing",
        "done",
        "down",
        "during",
        "each",
        "else",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "in",
        "into",
        "is",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "off",
        "on",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "out",
        "over",
        "own",
        "please",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "under",
        "until",
        "up",
        "upon",
        "very",
        "was",
        "we",
        "were",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "would",
        "yet",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
        "tell",
        "explain",
        "describe",
    ]
)


def raw_variants(raw: str) -> tuple[str, ...]:
    """Normalised forms of one raw token: the whole token first, then its parts (not memoised: callers
    that meet a token again keep their own memo)."""
    whole = raw.lower()
    keep_whole = len(whole) >= 2 and whole not in STOPWORDS
    if "_" not in raw and (raw.islower() or raw.isupper()) and (raw.isalpha() or raw.isdigit()):
        return (whole,) if keep_whole else ()  # one word: nothing to split
    out = dict.fromkeys((whole,) if keep_whole else ())
    for part in _PART_RE.findall(raw):  # parts never span an underscore: the same as per piece
        p = part.lower()
        if len(p) >= 2 and p not in STOPWORDS:
            out.setdefault(p)
    return tuple(out)


_MEMO: dict[str, tuple[str, ...]] = {}


def term_counts(text: str) -> Counter:
    """Term frequencies of ``text``: whole tokens plus identifier parts, each counted per occurrence."""
    counts: Counter = Counter()
    memo = _MEMO
    for raw, n in Counter(TOKEN_RE.findall(text)).items():
        terms = memo.get(raw)
        if terms is None:
            terms = raw_variants(raw)
            if len(memo) < 2_000_000:
                memo[raw] = terms
        for term in terms:
            counts[term] += n
    return counts


def tokenize(text: str, remember: bool = True) -> list[str]:
    """The distinct terms of ``text`` in first-seen order (what a query looks up); ``remember=False``
    leaves the raw tokens out of the memo (a build would fill it with every path's)."""
    seen: dict[str, None] = {}
    memo = _MEMO if remember else {}
    for raw in TOKEN_RE.findall(text):
        terms = memo.get(raw)
        if terms is None:
            terms = raw_variants(raw)
            if len(memo) < 2_000_000:
                memo[raw] = terms
        for term in terms:
            seen.setdefault(term, None)
    return list(seen)
