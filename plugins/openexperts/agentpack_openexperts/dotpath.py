"""Dot-notation payload paths with list indexes: ``messages[0].id``, ``a.b[2][1].c``."""

from __future__ import annotations

import re
from typing import Any

from agentpack.io.errors import AgentpackError

MISSING: Any = object()
_SEGMENT = re.compile(r"([^.\[\]]+)?((?:\[\d+\])*)")
_INDEX = re.compile(r"\[(\d+)\]")


class PathSyntaxError(AgentpackError, ValueError):
    """A path that does not follow ``name(.name|[index])*`` (a ``ValueError`` too, for callers that parse values)."""


def parse_path(path: object) -> list[str | int]:
    """Tokens of ``path``: strings are keys, ints are list indexes."""
    if not isinstance(path, str) or not path:
        raise PathSyntaxError(f"{path!r} is not a path; expected dot notation such as 'messages[0].id'")
    tokens: list[str | int] = []
    for number, part in enumerate(path.split(".")):
        match = _SEGMENT.fullmatch(part)
        if (
            not part
            or match is None
            or (match.group(1) is None and number > 0)
            or not (match.group(1) or match.group(2))
        ):
            raise PathSyntaxError(
                f"'{path}' is not a valid path: segment {number + 1} ('{part}') must be a key "
                "optionally followed by [index], e.g. 'messages[0].id'"
            )
        if match.group(1) is not None:
            tokens.append(match.group(1))
        tokens.extend(int(i) for i in _INDEX.findall(match.group(2)))
    return tokens


def resolve(payload: Any, path: str) -> Any:
    """The value at ``path`` in ``payload``, or ``MISSING``."""
    value = payload
    for token in parse_path(path):
        if isinstance(token, int):
            if not isinstance(value, list) or token >= len(value):
                return MISSING
            value = value[token]
        else:
            if not isinstance(value, dict) or token not in value:
                return MISSING
            value = value[token]
    return value
