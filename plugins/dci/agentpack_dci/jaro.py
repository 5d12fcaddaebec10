"""Jaro-Winkler similarity with the parameters the spec fixes (prefix scale 0.10, prefix up to 4).

The textbook formula, case-sensitive, with no long-string adjustment and no
transposition-cost overrides. The prefix boost is applied unconditionally; the
usual "only when Jaro > 0.7" rule cannot change a ``>= 0.90`` decision
(with Jaro <= 0.7 the boosted value is at most 0.7 + 0.4 * 0.3 = 0.82).
"""

from __future__ import annotations

from itertools import compress

PREFIX_SCALE = 0.10
MAX_PREFIX = 4
FUZZY_THRESHOLD = 0.90


def jaro(a: str, b: str) -> float:
    la, lb = len(a), len(b)
    if not la or not lb:
        return 0.0  # no characters, no matches (two empty strings included)
    if a == b:
        return 1.0
    window = max(0, max(la, lb) // 2 - 1)
    b_taken = [False] * lb
    a_matched: list[str] = []
    find = b.find
    for i, ch in enumerate(a):
        # the first untaken b[j] == ch in the window, scanned by str.find
        hi = min(i + window + 1, lb)
        j = find(ch, max(0, i - window), hi)
        while j >= 0 and b_taken[j]:
            j = find(ch, j + 1, hi)
        if j >= 0:
            b_taken[j] = True
            a_matched.append(ch)
    m = len(a_matched)
    if not m:
        return 0.0
    transpositions = sum(map(str.__ne__, a_matched, compress(b, b_taken))) // 2
    return (m / la + m / lb + (m - transpositions) / m) / 3.0


def jaro_winkler(a: str, b: str) -> float:
    """Jaro-Winkler similarity in [0, 1]."""
    j = jaro(a, b)
    prefix = 0
    for x, y in zip(a[:MAX_PREFIX], b[:MAX_PREFIX], strict=False):  # the shorter prefix ends it
        if x != y:
            break
        prefix += 1
    return j + prefix * PREFIX_SCALE * (1.0 - j)
