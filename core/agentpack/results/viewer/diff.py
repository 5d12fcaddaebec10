"""Expected against actual as a real diff: word level for text, structural (by JSON path) for JSON values.

``diff_block(expected, actual)`` is what a failed check and a changed output show. Text is split into
words and the whitespace between them, so a change is marked whole words at a time and never inside
one; JSON (a dict or list, or a string that holds one) is compared path by path.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from difflib import SequenceMatcher
from typing import Any

from agentpack.results.viewer.html import Html, join, tag

_TOKENS = re.compile(r"\s+|\w+|[^\w\s]")
_MAX_TEXT = 20_000
"""Longer texts are diffed by line, not by word (a word diff of a long log is slow and unreadable)."""

MISSING = object()


def as_json(value: Any) -> Any:
    """``value`` as a JSON structure when it is one (a dict, a list, or a string that holds one), else ``MISSING``."""
    if isinstance(value, dict | list):
        return value
    if isinstance(value, str):
        text = value.strip()
        if text[:1] in ("{", "[") and text[-1:] in ("}", "]"):
            try:
                loaded = json.loads(text)
            except ValueError:
                return MISSING
            return loaded if isinstance(loaded, dict | list) else MISSING
    return MISSING


def text_of(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)


def word_ops(before: str, after: str) -> list[tuple[str, str]]:
    """``(op, text)`` pieces, op ``=`` (same), ``-`` (only in ``before``) or ``+`` (only in ``after``); joined
    without ``+`` pieces they give ``before``, without ``-`` pieces ``after``."""
    long = len(before) + len(after) > _MAX_TEXT
    a = before.splitlines(keepends=True) if long else _TOKENS.findall(before)
    b = after.splitlines(keepends=True) if long else _TOKENS.findall(after)
    pieces: list[tuple[str, str, str]] = []  # (kept, removed, added) per opcode
    for code, i1, i2, j1, j2 in SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if code == "equal":
            pieces.append(("".join(a[i1:i2]), "", ""))
        else:
            pieces.append(("", "".join(a[i1:i2]), "".join(b[j1:j2])))
    ops: list[tuple[str, str]] = []
    removed = added = ""
    for n, (kept, gone, new) in enumerate(pieces):
        between = 0 < n < len(pieces) - 1 and kept and not kept.strip()
        if kept and not (between and (removed or added) and not pieces[n + 1][0]):
            ops += [(op, text) for op, text in (("-", removed), ("+", added)) if text]
            removed = added = ""
            ops.append(("=", kept))
        else:  # a change, or the whitespace between two changes: one change of several words
            removed, added = removed + (gone or kept), added + (new or kept)
    ops += [(op, text) for op, text in (("-", removed), ("+", added)) if text]
    return ops


def json_changes(before: Any, after: Any, path: str = "$") -> Iterator[tuple[str, Any, Any]]:
    """``(path, expected, actual)`` for every leaf that differs; a missing side is ``MISSING``."""
    if isinstance(before, dict) and isinstance(after, dict):
        for key in [*before, *(k for k in after if k not in before)]:
            child = f"{path}.{key}" if re.fullmatch(r"[A-Za-z_]\w*", str(key)) else f"{path}[{json.dumps(key)}]"
            yield from json_changes(before.get(key, MISSING), after.get(key, MISSING), child)
    elif isinstance(before, list) and isinstance(after, list):
        for i in range(max(len(before), len(after))):
            yield from json_changes(
                before[i] if i < len(before) else MISSING, after[i] if i < len(after) else MISSING, f"{path}[{i}]"
            )
    elif before is MISSING or after is MISSING or before != after or type(before) is not type(after):
        yield path, before, after


def _shown(value: Any) -> Html:
    if value is MISSING:
        return tag("span", "(absent)", class_="muted")
    return tag("code", json.dumps(value, ensure_ascii=False, default=str))


def diff_block(expected: Any, actual: Any, *, labels: tuple[str, str] = ("expected", "actual")) -> Html:
    """A diff of ``expected`` and ``actual`` (empty when they are equal or there is nothing to compare)."""
    if expected is None or actual is None:
        return Html("")
    left, right = as_json(expected), as_json(actual)
    if left is not MISSING and right is not MISSING:
        changes = list(json_changes(left, right))
        if not changes:
            return Html("")
        rows = join(
            tag("tr", join([tag("td", tag("code", p)), tag("td", _shown(a)), tag("td", _shown(b))]))
            for p, a, b in changes
        )
        head = join(tag("th", h) for h in ("path", *labels))
        table = tag("table", Html(f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody>"), class_="json-diff")
        return tag("div", join([tag("div", f"diff: {len(changes)} changed", class_="label"), table]), class_="diff")
    before, after = text_of(expected), text_of(actual)
    if before == after:
        return Html("")
    pieces = join(
        tag("span", text) if op == "=" else tag("del" if op == "-" else "ins", text)
        for op, text in word_ops(before, after)
    )
    legend = join(["diff: ", tag("del", labels[0]), " ", tag("ins", labels[1])])
    return tag("div", join([tag("div", legend, class_="label"), tag("pre", pieces, class_="word-diff")]), class_="diff")
