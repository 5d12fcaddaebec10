"""``hash-embedding-v1``: the offline hashing embedder of the reference runtime (``ecpctl``), so that
vector indexes built by either tool answer in the other.

The recipe (tested to agree with ``ecp-reference==1.0.0`` on the same text):

* terms: ``[A-Za-z0-9_]+`` runs, lower-cased, each kept once in order of first appearance, with
  the parts of snake_case and of CamelCase/letter-digit runs added after their whole token; a
  term shorter than 2 characters or in ``STOPWORDS`` is dropped;
* features: ``tok:<term>`` with weight 1, and for each term of at least ``char_ngram``
  characters every ``chr:<n-gram>`` with weight ``char_ngram_weight`` (when ``include_char_ngrams``);
* each feature is hashed as SHA-256 of ``<salt>:<feature>``: the first four bytes (little-endian)
  modulo ``dimensions`` give the slot, the lowest bit of the fifth the sign (set: negative);
* the summed vector is L2-normalised.

``params`` (``salt``, ``include_char_ngrams``, ``char_ngram``, ``char_ngram_weight``) default to
``hash-embed-v1``, true, 3 and 0.5.
"""

from __future__ import annotations

import hashlib
import math
import re
from functools import lru_cache
from typing import Any

from agentpack.io.errors import AgentpackError

from ..pack.spec import MAX_DIMENSIONS

MODEL = "hash-embedding-v1"
PROVIDERS = ("local", "poc", "hash", "hashing")
"""Provider names the reference accepts for this model (any other needs a caller-given query vector)."""
DEFAULT_PARAMS: dict[str, Any] = {
    "salt": "hash-embed-v1",
    "include_char_ngrams": True,
    "char_ngram": 3,
    "char_ngram_weight": 0.5,
}
# fmt: off
STOPWORDS = frozenset({
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "can", "class", "const", "could", "def", "describe",
    "did", "do", "does", "explain", "export", "false", "final", "for", "from", "function", "has", "have", "how",
    "implement", "implementation", "implemented", "import", "in", "into", "is", "it", "let", "located", "location",
    "may", "might", "must", "nil", "none", "null", "of", "on", "or", "our", "please", "private", "protected",
    "public", "reference", "referenced", "references", "return", "s", "should", "static", "such", "summarize", "t",
    "that", "the", "their", "then", "there", "these", "they", "this", "to", "true", "var", "void", "was", "we",
    "what", "when", "where", "which", "who", "whom", "whose", "why", "will", "with", "without", "would", "you",
    "your",
})
# fmt: on
"""The stopwords of the recipe (English function words, question words and common code keywords)."""

_WORD = re.compile(r"[A-Za-z0-9_]+")
_PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def terms(text: str) -> list[str]:
    """The recipe's terms of ``text``, each once, in order of first appearance."""
    out: list[str] = []
    seen: set[str] = set()

    def keep(term: str) -> None:
        term = term.strip().lower()
        if len(term) >= 2 and term not in STOPWORDS and term not in seen:
            seen.add(term)
            out.append(term)

    for word in _WORD.findall(text):
        keep(word)
        if "_" in word:
            for part in word.split("_"):
                keep(part)
        parts = _PART.findall(word)
        if len(parts) > 1:
            for part in parts:
                keep(part)
    return out


@lru_cache(maxsize=65536)
def _slot(salt: str, feature: str, dims: int) -> tuple[int, float]:
    digest = hashlib.sha256(f"{salt}:{feature}".encode()).digest()
    return int.from_bytes(digest[:4], "little") % dims, -1.0 if digest[4] & 1 else 1.0


class ReferenceHashEmbedder:
    """``hash-embedding-v1`` (see the module docstring); ``embed_texts`` returns a dense float32 matrix."""

    model = MODEL
    provider = "local"

    def __init__(self, dimensions: int, params: dict[str, Any] | None = None, provider: str = "local") -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or not 1 <= dimensions <= MAX_DIMENSIONS:
            raise AgentpackError(
                f"embedding.dimensions must be from 1 to {MAX_DIMENSIONS} for {MODEL} (got {dimensions!r})"
            )
        given = params or {}
        self.dimensions = dimensions
        self.provider = provider
        self.salt = str(given.get("salt") or DEFAULT_PARAMS["salt"])
        self.include_char_ngrams = bool(given.get("include_char_ngrams", True))
        self.char_ngram = _number(given, "char_ngram", int)
        self.char_ngram_weight = _number(given, "char_ngram_weight", float)

    def config(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "dimensions": self.dimensions,
            "provider": self.provider,
            "params": {
                "salt": self.salt,
                "include_char_ngrams": self.include_char_ngrams,
                "char_ngram": self.char_ngram,
                "char_ngram_weight": self.char_ngram_weight,
            },
        }

    def sparse(self, text: str) -> list[tuple[int, float]]:
        """The normalised ``(slot, value)`` pairs of ``text``, slots ascending (the reference's sparse form)."""
        dims, salt, n, weight = self.dimensions, self.salt, self.char_ngram, self.char_ngram_weight
        acc: dict[int, float] = {}
        for term in terms(text):
            features = [(f"tok:{term}", 1.0)]
            if self.include_char_ngrams and n > 0 and len(term) >= n:
                features += [(f"chr:{term[k : k + n]}", weight) for k in range(len(term) - n + 1)]
            for feature, w in features:
                slot, sign = _slot(salt, feature, dims)
                acc[slot] = acc.get(slot, 0.0) + sign * w
        pairs = sorted(acc.items())
        norm = 0.0
        for _, value in pairs:
            norm += value * value
        if norm <= 0.0:
            return []
        inv = 1.0 / math.sqrt(norm)
        return [(slot, value * inv) for slot, value in pairs]

    def embed_texts(self, texts: list[str]):
        import numpy as np

        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for row, text in enumerate(texts):
            for slot, value in self.sparse(text):
                out[row, slot] = value
        return out


def _number(params: dict[str, Any], key: str, kind: type) -> Any:
    """``params[key]`` as ``kind`` (the default when absent or not a number, as the reference does)."""
    value = params.get(key, DEFAULT_PARAMS[key])
    try:
        number = kind(value)
    except (TypeError, ValueError, OverflowError):
        return DEFAULT_PARAMS[key]
    if isinstance(number, float) and not math.isfinite(number):
        return DEFAULT_PARAMS[key]
    return number
