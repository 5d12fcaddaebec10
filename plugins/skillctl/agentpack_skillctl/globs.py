"""Workspace-relative globs (``*``, ``?``, ``[...]``, ``**``) as anchored regular expressions.

``*`` and ``?`` never cross a ``/``; ``**`` crosses any number of folders
(``dir/**`` is everything under ``dir``, ``**/x`` is ``x`` in any folder).
"""

from __future__ import annotations

import re
from functools import lru_cache

_DEEP = "\x00"  # stands for '**' in a glob read as a path, so only '**' covers it


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
            out.append(f"[^/{_DEEP}]*")
            i += 1
        elif c == "?":
            out.append(f"[^/{_DEEP}]")
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
    """True when ``glob`` is no broader than one of ``ceiling`` (equal, or matched by it as a path).

    A ``**`` in ``glob`` is only covered by a ``**`` of the ceiling, so ``out/**``
    is not covered by ``out/*``.
    """
    as_path = glob.replace("**", _DEEP)
    return glob in ceiling or any(compile_glob(c).fullmatch(as_path) for c in ceiling)
