"""The local answer: the most relevant lines of the top chunks, each with its citation number."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..index.tokenize import tokenize

MAX_EVIDENCE = 3


@lru_cache(maxsize=65536)
def _stem(term: str) -> str:
    """A light suffix strip so 'constituents' and 'constituent' meet when picking answer lines."""
    for suffix in ("ies", "es", "s", "ing", "ed"):
        if len(term) > len(suffix) + 3 and term.endswith(suffix):
            return term[: -len(suffix)]
    return term


def extractive_answer(
    question: str, chunks: list[dict[str, Any]], max_evidence: int = MAX_EVIDENCE
) -> tuple[str, dict[str, Any]]:
    """A local answer: the (up to two) most relevant lines of each top chunk, with its citation number."""
    synthesis = {"provider": "local", "method": "extractive", "model": None, "max_evidence_chunks": max_evidence}
    if not chunks:
        return "No indexed material matches the question.", synthesis
    terms = {_stem(t) for t in tokenize(question)}
    needles = {t[:4] for t in terms}
    parts = []
    for n, chunk in enumerate(chunks[:max_evidence], 1):
        lines = [line.strip() for line in chunk["snippet"].split("\n")]
        scored = []
        for i, line in enumerate(lines):
            if line:
                lower = line.lower()
                hit = any(x in lower for x in needles)
                scored.append((len(terms.intersection(map(_stem, tokenize(line)))) if hit else 0, -i))
        scored.sort(reverse=True)
        picked = sorted(-i for score, i in scored[:2] if score > 0) or ([-scored[0][1]] if scored else [])
        best = " ... ".join(lines[i] for i in picked)
        if len(best) > 300:
            best = best[:297].rstrip() + "..."
        where = chunk["citation"]["artifact_path"]
        loc = chunk["citation"]["loc"]
        parts.append(f"- {best} [{n}] ({where}:{loc['start_line']}-{loc['end_line']})")
    count = min(len(chunks), max_evidence)
    head = f"From {count} cited excerpt{'s' if count != 1 else ''}:"
    return head + "\n" + "\n".join(parts), synthesis
