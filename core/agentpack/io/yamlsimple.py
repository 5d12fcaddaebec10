"""The usual shape of SKILL.md frontmatter, read without composing YAML.

Most frontmatter is a flat mapping of one-line scalars, sometimes with one
nested mapping (``metadata:``). This reader accepts only that shape, in a
subset whose meaning is the same in every YAML parser: keys of letters,
digits, ``_``, ``.`` and ``-``; values that are plain one-line scalars with no
indicator first and no ``: `` or `` #`` inside, or quoted one-line scalars
without escapes; no comments, tabs, flow style, anchors, tags or special line
breaks; one indentation for every nested mapping, and no empty value. For
anything else it returns None and the caller composes the YAML as usual. What
it returns (data, lines, columns) equals what ``yamlio.parse_yaml(text,
strings_only=True, strict=True)`` builds, which a property test checks; it is
several times faster, which counts when a scan reads thousands of skills.

With ``typed=True`` it reads the values as PyYAML's ``safe_load`` does (YAML 1.1: ``1.0`` a
number, ``yes`` true, ``2024-01-31`` a date), rendered as JSON (a date as its ISO text): what MCP
skill entries carry as frontmatter. A plain scalar whose typed reading is not one of the plain cases
(a decimal integer or fraction, ``null``, a boolean word, a ``YYYY-MM-DD`` date) returns None, and
the caller asks PyYAML; a property test checks the agreement.
"""

from __future__ import annotations

import re

from agentpack.io.yamldoc import YamlDocument

# what YAML does not print (controls, surrogates, U+FFFE/F), tab, CR, the line breaks YAML 1.1 and 1.2 disagree
# on (NEL, LS, PS) and the BOM: a small class, quick to compile, instead of the large one of what it prints
_UNUSUAL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")
_KEY = r"[A-Za-z0-9][A-Za-z0-9_.-]*"
# plain: no indicator or space first; then no ": ", no " #", no ':' last; trailing spaces are not part of it.
# Possessive (Python 3.11): runs of ordinary characters are never split again when a line fails to match
_PLAIN = r"""[^\s\-?:,\[\]{}#&*!|>'"%@`](?:[^\s:#]++|:(?! |$)|(?<! )#| +(?=[^ #]))*+"""
_DOUBLE = r'"[^"\\]*"'
_SINGLE = r"'(?:[^']|'')*'"
_LINE = re.compile(rf"( *)({_KEY}):(?: +({_PLAIN}|{_DOUBLE}|{_SINGLE}))? *")


def parse_simple(text: str, file: str | None = None, *, typed: bool = False) -> YamlDocument | None:
    """``text`` as the strings-only strict parse reads it, or None when it is not of the simple shape.

    ``typed``: values as ``safe_load`` types them, in JSON form (see the module docstring).
    """
    scalar = _typed if typed else _scalar
    if _UNUSUAL.search(text):
        return None
    data: dict[str, object] = {}
    lines: dict[str, int] = {}
    columns: dict[str, int] = {}
    nested: dict[str, object] | None = None  # the nested mapping being filled, under top-level key `opened`
    opened = ""
    indent = 0  # the one indentation of nested mappings
    for number, line in enumerate(text.split("\n"), 1):
        if not line.strip(" "):
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            return None
        lead, key, raw = match.groups()
        if lead:  # a key of the nested mapping opened by the last top-level key
            if nested is None or raw is None or len(lead) != (indent or len(lead)) or key in nested:
                return None
            indent = len(lead)
            value = nested[key] = scalar(raw)
            pointer = f"/{opened}/{key}"  # keys hold no '~' or '/': nothing to escape
        else:
            if (nested is not None and not nested) or key in data:
                return None  # an empty value, or a duplicate key (YAML reports it)
            if raw is None:
                value = data[key] = nested = {}
                opened = key
            else:
                value = data[key] = scalar(raw)
                nested = None
            pointer = "/" + key
            if not lines:
                lines[""], columns[""] = number, 1
        if typed and (value is _UNSURE or _resolve(key) != key):
            return None  # a value only PyYAML can type, or a key YAML reads as another type
        lines[pointer], columns[pointer] = number, len(lead) + 1
    if not data or (nested is not None and not nested):
        return None
    return YamlDocument(data=data, file=file, lines=lines, columns=columns)


def _scalar(raw: str) -> str:
    if raw[0] == '"':
        return raw[1:-1]
    if raw[0] == "'":
        return raw[1:-1].replace("''", "'")
    return raw


_UNSURE = object()
_BOOL = {
    **dict.fromkeys(("yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"), True),
    **dict.fromkeys(("no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"), False),
}
_NULL = ("~", "null", "Null", "NULL")
_INT = re.compile(r"[-+]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[-+]?[0-9]+\.[0-9]*")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_NUMERIC_START = frozenset("-+.0123456789=<")
"""Where YAML 1.1 may read a number, a timestamp, ``=`` (value) or ``<<`` (merge)."""


def _typed(raw: str) -> object:
    if raw[0] in "\"'":
        return _scalar(raw)
    return _resolve(raw)


def _resolve(plain: str) -> object:
    """A plain scalar as ``safe_load`` reads it (JSON form), the string itself, or ``_UNSURE``."""
    if plain in _BOOL:
        return _BOOL[plain]
    if plain in _NULL:
        return None
    if plain[0] not in _NUMERIC_START:
        return plain
    if _INT.fullmatch(plain):
        return int(plain)
    if _FLOAT.fullmatch(plain):
        return float(plain)
    if _DATE.fullmatch(plain):
        from datetime import date

        try:
            return date.fromisoformat(plain).isoformat()
        except ValueError:
            return _UNSURE
    return _UNSURE
