"""JSON request bodies parsed with a nesting limit checked before parsing, not left to the recursion limit.

The nesting is measured in linear time at C speed: string literals are cut out
(an unterminated one runs to the end, so the pattern never backtracks), the
brackets that remain become +1/-1 steps, and their running sum is the depth.
"""

from __future__ import annotations

import json
import re
from array import array
from itertools import accumulate
from typing import Any

MAX_DEPTH = 64
_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*+"?', re.DOTALL)
_NOT_BRACKETS = re.compile(rb"[^\[\]{}]+")
_STEPS = bytes.maketrans(b"[{]}", b"\x01\x01\xff\xff")


class BodyError(ValueError):
    """The body is not acceptable JSON; the message says why."""


def nesting(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in ``raw`` (JSON text)."""
    brackets = _NOT_BRACKETS.sub(b"", _STRINGS.sub(b"", raw)).translate(_STEPS)
    return max(accumulate(array("b", brackets)), default=0)


def loads(raw: bytes, *, max_depth: int = MAX_DEPTH) -> Any:
    """``raw`` parsed as JSON (an empty body is ``{}``); ``BodyError`` when it is not JSON or nests too deep."""
    if not raw.strip():
        return {}
    if nesting(raw) > max_depth:
        raise BodyError(f"body nests deeper than {max_depth} levels")
    try:
        return json.loads(raw)
    except ValueError as exc:
        raise BodyError(f"body is not JSON: {exc}") from None
