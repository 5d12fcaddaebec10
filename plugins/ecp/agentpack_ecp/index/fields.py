"""Code-aware fields of a chunk: its file path (module), the names it defines, its headings, its docstrings.

Each field is a set of terms of the canonical tokenizer (identifiers split, whole token kept), so a query
term matches a field the same way it matches the body. ``FIELD_WEIGHTS`` are the bonus a field gives
for the share of the query's terms it holds (decided on the tuning half of ``bench/ecp_retrieval.py``).
"""

from __future__ import annotations

import re

from .tokenize import tokenize

FIELD_WEIGHTS = {"path": 0.5, "names": 0.3, "headings": 0.3, "docstrings": 0.2}

_NAME_RE = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)
_MD_HEADING_RE = re.compile(r"^#{1,6}[ \t]+(.+)$", re.M)
_RST_HEADING_RE = re.compile(r"^(\S[^\n]*)\n([=\-~^\"'`#*+])\2{2,}[ \t]*$", re.M)
_ROFF_HEADING_RE = re.compile(r"^\.(?:TH|SH|SS)[ \t]+(.+)$", re.M)
_ROFF_NAME_RE = re.compile(r"^\.SH[ \t]+\"?NAME\"?[ \t]*\n(?:\.[^\n]*\n)*([^\n]+)", re.M)
"""The line under a man page's NAME heading: the page's one-line summary."""
_DOCSTRING_RE = re.compile(r"(?:\"\"\"|''')(.*?)(?:\"\"\"|''')", re.S)


def chunk_fields(path: str, text: str) -> dict[str, set[str]]:
    """The terms of each field of the chunk ``text`` of the file ``path``."""
    headings = _MD_HEADING_RE.findall(text) + [m[0] for m in _RST_HEADING_RE.findall(text)]
    headings += _ROFF_HEADING_RE.findall(text) + _ROFF_NAME_RE.findall(text)
    return {
        "path": set(tokenize(path.replace(".", " "))),
        "names": set(tokenize(" ".join(_NAME_RE.findall(text)))),
        "headings": set(tokenize(" ".join(headings))),
        "docstrings": set(tokenize(" ".join(_DOCSTRING_RE.findall(text)))),
    }


def field_bonus(terms: list[str], path: str, text: str | None) -> float:
    """Weighted share of the query ``terms`` each field of the chunk holds."""
    if not terms:
        return 0.0
    query = set(terms)
    fields = chunk_fields(path, text or "")
    return sum(weight * len(query & fields[name]) / len(query) for name, weight in FIELD_WEIGHTS.items())
