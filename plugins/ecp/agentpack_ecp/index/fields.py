"""Code-aware fields of a chunk: its file path (module), the names it defines, its headings, its docstrings.

Each field is a set of terms of the canonical tokenizer (identifiers split, whole token kept), so a query
term matches a field the same way it matches the body. ``FIELD_WEIGHTS`` are the bonus a field gives
for the share of the query's terms it holds (decided on the tuning half of ``bench/ecp_retrieval.py``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from .tokenize import tokenize

FIELD_WEIGHTS = {"path": 1.6, "names": 0.3, "headings": 0.3, "docstrings": 0.4}

_NAME_RE = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)
_MD_HEADING_RE = re.compile(r"^#{1,6}[ \t]+(.+)$", re.M)
_RST_HEADING_RE = re.compile(r"^(\S[^\n]*)\n([=\-~^\"'`#*+])\2{2,}[ \t]*$", re.M)
_RST_MARKS = tuple("\n" + c * 3 for c in "=-~^\"'`#*+")
_ROFF_HEADING_RE = re.compile(r"^\.(?:TH|SH|SS)[ \t]+(.+)$", re.M)
_ROFF_NAME_RE = re.compile(r"^\.SH[ \t]+\"?NAME\"?[ \t]*\n(?:\.[^\n]*\n)*([^\n]+)", re.M)
"""The line under a man page's NAME heading: the page's one-line summary."""
_DOCSTRING_RE = re.compile(r"(?:\"\"\"|''')(.*?)(?:\"\"\"|''')", re.S)


@lru_cache(maxsize=8192)
def chunk_fields(path: str, text: str) -> dict[str, frozenset[str]]:
    """The terms of each field of the chunk ``text`` of the file ``path`` (kept for the chunks asked again).

    A pattern runs only when the text holds the mark it needs, which skips most of them on most chunks.
    """
    headings: list[str] = []
    if "#" in text:
        headings += _MD_HEADING_RE.findall(text)
    if any(mark in text for mark in _RST_MARKS):
        headings += [m[0] for m in _RST_HEADING_RE.findall(text)]
    if text.startswith(".") or "\n." in text:
        headings += _ROFF_HEADING_RE.findall(text) + _ROFF_NAME_RE.findall(text)
    names = _NAME_RE.findall(text) if "def " in text or "class " in text else []
    docstrings = _DOCSTRING_RE.findall(text) if '"""' in text or "'''" in text else []
    return {
        "path": frozenset(tokenize(path.replace(".", " "))),
        "names": frozenset(tokenize(" ".join(names))),
        "headings": frozenset(tokenize(" ".join(headings))),
        "docstrings": frozenset(tokenize(" ".join(docstrings))),
    }


def field_bonuses(terms: list[str], path: str, text: str | None) -> dict[str, float]:
    """Weighted share of the query ``terms`` each field of the chunk holds, by field (those above 0)."""
    if not terms:
        return {}
    query = set(terms)
    fields = chunk_fields(path, text or "")
    shares = {name: round(weight * len(query & fields[name]) / len(query), 6) for name, weight in FIELD_WEIGHTS.items()}
    return {name: share for name, share in shares.items() if share}
