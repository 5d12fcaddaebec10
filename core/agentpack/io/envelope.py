"""The versioned JSON envelope every ``--json`` command prints, without click.

``agentpack.clikit`` re-exports these; a click-free fast path (``skillctl run``)
imports them from here so that asking for JSON does not import click.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from json.encoder import encode_basestring
from typing import Any

SCHEMA_VERSION = 1

_flat = json.JSONEncoder(ensure_ascii=False, default=str).encode
"""One-line JSON (``, `` and ``: `` separators) by the C encoder: ``json`` has no C path for indented output."""
_flat_sorted = json.JSONEncoder(ensure_ascii=False, default=str, sort_keys=True).encode
_SCALARS = frozenset({str, int, float, bool, type(None)})


class Streamed:
    """A JSON array whose items are made while it is written (``write``), not held: a long report's entries
    are encoded one at a time. Iterated once; ``dumps`` of a value holding one gives the text the list of
    its items would give."""

    __slots__ = ("items",)

    def __init__(self, items: Iterable[Any]) -> None:
        self.items = items


def envelope(command: str, ok: bool, **fields: Any) -> dict[str, Any]:
    """The versioned JSON envelope every ``--json`` command prints."""
    return {"schema_version": SCHEMA_VERSION, "command": command, "ok": ok, **fields}


def dumps(value: Any) -> str:
    """``value`` as the CLI prints JSON: indented, UTF-8, unknown types as strings.

    The text of ``json.dumps(value, indent=2, ensure_ascii=False, default=str)`` (a property test
    compares them) in about two thirds of its time on a large report: a mapping of plain scalars is encoded in
    one C call and then broken into lines at ``, "``, which in that text only ever separates items
    (an encoded string escapes every ``"`` in it, and one that ends in ``, `` takes the slow way).
    """
    parts: list[str] = []
    _encode(value, "", parts.append)
    return "".join(parts)


def write(value: Any, add: Callable[[str], Any], *, sort_keys: bool = False) -> None:
    """``dumps(value)``'s text passed to ``add`` piece by piece as it is produced (a ``Streamed`` array's
    items are made then): the whole text is never held. ``sort_keys``: mappings in key order, the text of
    ``json.dumps(..., sort_keys=True)`` (``fsutil.atomic_write_json``'s)."""
    _encode(value, "", add, sort_keys)


def write_chunks(value: Any, out: Callable[[str], Any], *, sort_keys: bool = False, size: int = 65536) -> None:
    """``write`` with its pieces joined into chunks of about ``size`` characters for ``out`` (a file's or the
    terminal's write: one call per chunk, not per piece)."""
    pending: list[str] = []
    held = 0

    def add(piece: str) -> None:
        nonlocal held
        pending.append(piece)
        held += len(piece)
        if held >= size:
            out("".join(pending))
            pending.clear()
            held = 0

    _encode(value, "", add, sort_keys)
    if pending:
        out("".join(pending))


def _one_line(mapping: dict[Any, Any]) -> bool:
    """Whether ``mapping``'s one-line text can be broken at every ``, "``."""
    for key, item in mapping.items():
        kind = type(item)
        if kind not in _SCALARS or type(key) is not str or key.endswith(", "):
            return False
        if kind is str and item.endswith(", "):
            return False
    return True


def _encode(value: Any, indent: str, add: Callable[[str], Any], sort: bool = False) -> None:
    if isinstance(value, dict):
        if not value:
            add("{}")
            return
        inner = indent + "  "
        if _one_line(value):
            text = _flat_sorted(value) if sort else _flat(value)
            add("{\n" + inner + text[1:-1].replace(', "', ",\n" + inner + '"') + "\n" + indent + "}")
            return
        separator = "{\n" + inner
        for key, item in sorted(value.items()) if sort else value.items():
            add(separator)
            separator = ",\n" + inner
            add(encode_basestring(key) if type(key) is str else _flat({key: 0})[1:-4])  # json's text of a non-str key
            add(": ")
            _encode(item, inner, add, sort)
        add("\n" + indent + "}")
    elif isinstance(value, (list, tuple, Streamed)):
        inner = indent + "  "
        first = separator = "[\n" + inner
        for item in value.items if isinstance(value, Streamed) else value:
            add(separator)
            separator = ",\n" + inner
            _encode(item, inner, add, sort)
        add("[]" if separator is first else "\n" + indent + "]")
    elif type(value) is str:
        add(encode_basestring(value))
    else:
        add(_flat(value))


__all__ = ["SCHEMA_VERSION", "Streamed", "dumps", "envelope", "write", "write_chunks"]
