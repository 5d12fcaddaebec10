"""Workspace-relative globs (``*``, ``?``, ``[...]``, ``**``): parsed into segments, matched as regular expressions.

``*`` and ``?`` never cross a ``/``; ``**`` crosses any number of folders
(``dir/**`` is everything under ``dir``, ``**/x`` is ``x`` in any folder).
A glob is parsed once into its ``/``-separated segments (``segments``), which
refuses control characters, a backslash, an absolute path, and empty, ``.`` and
``..`` segments; every check (schema messages, the access manifest's cap, the
mounts) works on those segments, never on the raw text.
"""

from __future__ import annotations

import re
from functools import lru_cache

WILDCARDS = frozenset("*?[")


class GlobError(ValueError):
    """A declared path or glob that is not a plain workspace-relative one (the message says why)."""


@lru_cache(maxsize=1024)
def segments(glob: str) -> tuple[str, ...]:
    """The segments of a workspace-relative ``glob``; GlobError when it is empty, absolute, holds a control
    character or a backslash, or has an empty, ``.`` or ``..`` segment."""
    if not glob:
        raise GlobError("an empty glob")
    bad = next((c for c in glob if c < " " or c == "\x7f"), None)
    if bad is not None:
        raise GlobError(f"a control character (U+{ord(bad):04X})")
    if "\\" in glob:
        raise GlobError("a backslash")
    if glob.startswith("/") or re.match(r"[A-Za-z]:", glob):
        raise GlobError("an absolute path")
    parts = tuple(glob.split("/"))
    for part in parts:
        if part in ("", ".", ".."):
            raise GlobError(f"a '{part}' segment" if part else "an empty segment ('//' or a '/' at an end)")
    return parts


def problem(glob: str) -> str | None:
    """Why ``glob`` is not a plain workspace-relative glob, or None."""
    try:
        segments(glob)
    except GlobError as exc:
        return str(exc)
    return None


@lru_cache(maxsize=1024)
def compile_glob(glob: str) -> re.Pattern[str]:
    out: list[str] = []
    i, n = 0, len(glob)
    while i < n:
        c = glob[i]
        if glob.startswith("**", i):
            at_start = i == 0 or glob[i - 1] == "/"
            if at_start and glob.startswith("**/", i):
                out.append("(?:.*/)?")
                i += 3
                continue
            out.append(".*" if not (at_start and i + 2 == n and i > 0) else ".+")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = glob.find("]", i + 2 if glob.startswith("[!", i) or glob.startswith("[^", i) else i + 1)
            if end == -1:
                out.append(re.escape(c))
                i += 1
                continue
            body = glob[i + 1 : end]
            if body[:1] in ("!", "^"):
                body = "^" + body[1:]
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out), re.DOTALL)


def matches(path: str, globs: list[str] | tuple[str, ...]) -> bool:
    """True when the POSIX relative ``path`` matches any of ``globs``."""
    return any(compile_glob(g).fullmatch(path) for g in globs)


def covered(glob: str, ceiling: list[str] | tuple[str, ...]) -> bool:
    """True when ``glob`` is no broader than one of ``ceiling``, compared segment by segment.

    A glob that does not parse (``segments``) is covered by nothing. A segment holding ``**``
    is only covered by a ``**`` segment, so ``out/**`` is not covered by ``out/*``.
    """
    try:
        parts = segments(glob)
    except GlobError:
        return False
    for cap in ceiling:
        try:
            cap_parts = segments(cap)
        except GlobError:
            continue
        if _covers(cap_parts, parts):
            return True
    return False


def _covers(cap: tuple[str, ...], parts: tuple[str, ...]) -> bool:
    if not cap:
        return not parts
    if cap[0] == "**":  # any number of segments; a final '**' at least one, as in ``compile_glob``
        least = 1 if len(cap) == 1 else 0
        return any(_covers(cap[1:], parts[i:]) for i in range(least, len(parts) + 1))
    if not parts or not _segment_covered(parts[0], cap[0]):
        return False
    return _covers(cap[1:], parts[1:])


def _segment_covered(part: str, cap: str) -> bool:
    """Whether every name ``part`` matches is matched by the one-segment pattern ``cap``."""
    if part == cap or cap == "*":
        return "**" not in part
    if "**" in part:
        return False
    if not WILDCARDS & set(part):
        return compile_glob(cap).fullmatch(part) is not None
    # a '*'-only pattern covers a '*'-only segment it matches as text: its literals meet the segment's literals
    return not set("?[") & set(part + cap) and compile_glob(cap).fullmatch(part) is not None
