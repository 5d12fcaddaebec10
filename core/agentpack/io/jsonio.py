"""JSON from outside (files, agents' replies, skills' output, request bodies), read with limits.

``loads`` is ``json.loads`` with two guards every reader of untrusted JSON needs:

* a nesting limit (``MAX_DEPTH``), checked before parsing, so a reply of ten
  thousand ``[`` is a clear error instead of a ``RecursionError`` from deep in
  the parser (or a crashed process with a raised recursion limit);
* no ``NaN``, ``Infinity`` or ``-Infinity``: they are not JSON (RFC 8259), and
  Python's parser accepts them by default.

The check costs two ``str.count`` calls for a document with fewer brackets than
the limit, and otherwise two regular-expression substitutions (strings removed,
then all but brackets) and a running sum, all in C loops.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from agentpack.io.errors import AgentpackError

MAX_DEPTH = 256
"""Deepest nesting of arrays and objects accepted (YAML documents have the same limit)."""

_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}]')
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?')
"""A string token of ``_TOKENS``, written so that runs of plain characters are one loop of the engine."""
_OTHER = re.compile(r"[^\[\]{}]+")
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


class JsonError(AgentpackError, ValueError):
    """Not JSON, nested too deep, or holding a number JSON does not have. ``line`` and ``column`` when known."""


def loads(text: str | bytes, *, file: str | None = None, max_depth: int = MAX_DEPTH) -> Any:
    """Parse ``text`` as strict JSON with a nesting limit; ``JsonError`` (file, line, column) otherwise."""
    if isinstance(text, (bytes, bytearray)):
        try:
            text = bytes(text).decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise JsonError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", file=file) from None
    check_depth(text, file=file, max_depth=max_depth)
    try:
        return _decode(text)
    except json.JSONDecodeError as exc:
        raise JsonError(f"not valid JSON: {exc.msg}", file=file, line=exc.lineno, column=exc.colno) from None
    except _Constant as exc:
        raise JsonError(f"{exc.args[0]} is not a JSON number (RFC 8259 has no NaN or infinity)", file=file) from None
    except RecursionError:  # pragma: no cover - check_depth stops this first
        raise JsonError(f"JSON nests deeper than {max_depth} levels", file=file) from None


def check_depth(text: str, *, file: str | None = None, max_depth: int = MAX_DEPTH) -> None:
    """``JsonError`` when ``text`` nests arrays and objects deeper than ``max_depth`` (strings are skipped)."""
    if text.count("[") + text.count("{") <= max_depth:
        return
    # the brackets outside strings, found by C loops (no Python step per token), then their running depth
    brackets = _OTHER.sub("", _STRING.sub("", text))
    if brackets.count("[") + brackets.count("{") <= max_depth:
        return
    if max(itertools.accumulate(map(_STEP.__getitem__, brackets))) <= max_depth:
        return
    at = _too_deep_at(text, max_depth)
    line = text.count("\n", 0, at) + 1 if at is not None else None
    raise JsonError(f"JSON nests deeper than {max_depth} levels", file=file, line=line)


def _too_deep_at(text: str, max_depth: int) -> int | None:
    """Where ``text``'s nesting first exceeds ``max_depth`` (the token walk ``check_depth`` stands for)."""
    depth = 0
    for match in _TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > max_depth:
                return match.start()
        elif token in "]}":
            depth -= 1
    return None


def load_file(path: Any, *, display: str | None = None, max_bytes: int = 64 * 1024 * 1024) -> Any:
    """Read and parse a JSON file: not a regular file, too large, unreadable or not UTF-8 are ``JsonError`` too."""
    from agentpack.io.userfiles import read_bytes

    name = display or str(path)
    return loads(
        read_bytes(path, display=name, error=JsonError, expected="a JSON file", max_bytes=max_bytes), file=name
    )


class _Constant(Exception):
    pass


def _no_constant(name: str) -> Any:
    raise _Constant(name)


_decode = json.JSONDecoder(parse_constant=_no_constant).decode
"""One decoder for every call: ``json.loads`` with an argument builds a new one each time (2 us per reply)."""


__all__ = ["MAX_DEPTH", "JsonError", "check_depth", "load_file", "loads"]
