"""Reading the pack's own JSON and YAML files (policy, suites, descriptors, payloads) as untrusted input.

``read_json_doc`` and ``read_yaml_doc`` return a ``YamlDocument`` (data plus the line of every
field) or raise ``PackError`` naming the file: something that is not a regular file (a folder,
a dangling or looping symbolic link), binary or undecodable text, nesting deeper than 256
levels, ``NaN``/``Infinity`` (JSON) or ``.nan``/``.inf`` (YAML), or a file over the size limit.
``file_kind`` names what a path is when it is not a regular file; ``open_regular`` (the core's
``agentpack.io.userfiles.open_regular``, imported here for the pack's readers) is how every reader of the
pack's files opens them, so a FIFO or a device in their place never blocks a command.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError, PackError, YamlError, reading
from agentpack.io.userfiles import open_regular, what_is
from agentpack.io.yamlio import YamlDocument, join_pointer, load_yaml, parse_yaml

if TYPE_CHECKING:
    import sqlite3

LINE_MAP_LIMIT = 2_000_000
"""JSON documents up to this many characters also get a pointer-to-line map (for findings)."""


def file_kind(path: Path) -> str | None:
    """``None`` for a regular file (through symbolic links), else what ``path`` is, for a message."""
    found = what_is(path)
    return None if found == "a file" else found


def read_regular(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a file of the pack (see ``open_regular``)."""
    with open_regular(path) as handle:
        return handle.read()


URI_CHARACTERS = "%?#"
"""Characters an index path may not hold: SQLite's URI parser gives them meaning (``%2e%2e``, ``?mode=rw``)."""


def check_uri_safe(rel: str) -> None:
    """``PackError`` when the pack-relative ``rel`` holds a character of ``URI_CHARACTERS``."""
    found = sorted({c for c in rel if c in URI_CHARACTERS})
    if found:
        raise PackError(f"'{rel}' contains {' '.join(repr(c) for c in found)}: index paths may not hold % ? or #")


def connect_readonly(path: Path, **kwargs: Any) -> sqlite3.Connection:
    """The SQLite file at ``path`` opened read-only by its real path: the URI is pathlib's encoding of that path
    (every ``%``, ``?`` and ``#`` escaped), never text of the pack, so nothing in it is decoded or read as a
    parameter."""
    import sqlite3  # only for SQLite indexes and database sources

    return sqlite3.connect(Path(os.path.realpath(path)).as_uri() + "?mode=ro", uri=True, **kwargs)


def read_json_state(path: Path, *, problem: str, hint: str) -> Any:
    """The JSON of one of the pack's own state files (publish journal, lifecycle state); ``None`` when there
    is none; ``AgentpackError`` naming ``path`` (``problem: why``) when it cannot be read."""
    try:
        return jsonio.loads(read_regular(path))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise AgentpackError(f"{problem}: {exc}", file=str(path), hint=hint) from None


def _expect_file(path: Path, display: str, what: str) -> None:
    kind = file_kind(path)
    if kind is not None:
        raise PackError(f"expected a {what} file, found {kind}", file=display)


def read_json_doc(path: Path, display: str, *, max_bytes: int = 64 * 1024 * 1024) -> YamlDocument:
    """A JSON file as a ``YamlDocument`` (strict JSON, see the module docstring); ``PackError`` otherwise."""
    _expect_file(path, display, "JSON")
    with reading(display):
        size = path.stat().st_size
        if size > max_bytes:
            raise PackError(f"JSON file is {size} bytes, more than the limit of {max_bytes}", file=display)
        raw = read_regular(path)
    try:
        data = jsonio.loads(raw, file=display)
    except jsonio.JsonError as exc:
        raise PackError(exc.message, file=display, line=exc.line, column=exc.column) from None
    pointer = non_finite(data)
    if pointer is not None:  # 1e999 parses as infinity
        raise PackError(f"{pointer or '/'}: the number is too large to be finite", file=display)
    lines: dict[str, int] = {}
    if len(raw) < LINE_MAP_LIMIT:
        try:  # JSON is YAML: reuse the YAML walker for line numbers
            lines = parse_yaml(raw.decode("utf-8-sig"), file=display).lines
        except AgentpackError:
            lines = {}
    return YamlDocument(data=data, file=display, lines=lines)


def read_yaml_doc(path: Path, display: str) -> YamlDocument:
    """A YAML file as a ``YamlDocument``; ``YamlError`` (a ``PackError``) naming the file otherwise."""
    try:
        _expect_file(path, display, "YAML")
    except PackError as exc:
        raise YamlError(exc.message, file=display) from None
    return load_yaml(path, display=display)


def non_finite(value: Any, pointer: str = "") -> str | None:
    """The JSON pointer of the first infinite or NaN number in ``value`` (``None`` when there is none)."""
    if isinstance(value, float):
        return None if math.isfinite(value) else pointer
    if isinstance(value, dict):
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = non_finite(item, join_pointer(pointer, key))
        if found is not None:
            return found
    return None


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"the number {text} is too large to be finite")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number (RFC 8259 has no NaN or infinity)")


def load_json_payload(path: Path, display: str) -> Any:
    """A large JSON payload (an index's ``index_data.json``), read with the guarantees of
    ``read_json_doc`` (no NaN or infinity, bounded nesting, a regular file) but without its line map
    or size limit; ``PackError`` naming the file otherwise."""
    _expect_file(path, display, "JSON")
    try:
        with open_regular(path) as handle:
            return json.load(handle, parse_constant=_no_constant, parse_float=_finite)
    except OSError as exc:
        raise PackError(f"cannot read: {exc.strerror or exc}", file=display) from None
    except RecursionError:
        raise PackError("JSON nests too deep", file=display) from None
    except json.JSONDecodeError as exc:
        raise PackError(f"not valid JSON: {exc.msg}", file=display, line=exc.lineno, column=exc.colno) from None
    except ValueError as exc:  # not UTF-8, NaN, a number too large
        raise PackError(f"not valid JSON: {exc}", file=display) from None
