"""The DCI contract grammar: ``DCI/<version>[^mode] P(..) E(..) A(k=v) R(..) O(..) Pol(k=v)``.

``parse_contract`` decodes escapes, trims unescaped surrounding whitespace,
normalises long clause names to short ones and validates capability tokens
without rewriting them (invalid tokens are kept, flagged). Grammar errors raise
``ContractParseError`` with a 1-based column. ``serialize_contract`` writes the
canonical form; parsing it gives back an equal ``Contract``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from sys import intern
from typing import NamedTuple

from agentpack.io.errors import AgentpackError

from .tokens import token_problem

PARSER_VERSION = "agentpack-dci-parser/2"
"""Part of every cache key: bump it whenever parsing could give a different value."""

MODES = ("strict", "best-effort")
DEFAULT_MODE = "best-effort"
CAPABILITY_CLAUSES = ("P", "E", "R", "O")
KV_CLAUSES = ("A", "Pol")
CLAUSE_ORDER = ("P", "E", "A", "R", "O", "Pol")
LONG_FORMS = {
    "Provides": "P",
    "Expects": "E",
    "Accepts": "A",
    "Requires": "R",
    "Required": "R",
    "Optional": "O",
    "Policy": "Pol",
}
"""Long clause names: the origin's current text (pax dff1667) spells R's ``Requires``, the first revision
``Required``; both are accepted (docs/dci.md, "Spec revisions")."""
ESCAPABLE = frozenset(",()=\\ ")


class ContractParseError(AgentpackError):
    """A contract that breaks the grammar; ``column`` is 1-based in the contract text."""

    column: int

    def __init__(self, message: str, column: int, *, hint: str | None = None) -> None:
        super().__init__(message, column=column, hint=hint)


class Capability(NamedTuple):
    """One capability value as written (escapes decoded, edges trimmed), and whether it is valid.
    Equality ignores the column. A NamedTuple, not a dataclass: a contract has a few of these per skill
    and a scan builds thousands, and a frozen dataclass sets each field through ``object.__setattr__``."""

    value: str
    problem: str | None = None
    column: int = 0

    @property
    def valid(self) -> bool:
        return self.problem is None

    def __eq__(self, other: object) -> bool:  # False, not NotImplemented: a plain tuple would compare fields
        return isinstance(other, Capability) and self.value == other.value and self.problem == other.problem

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((self.value, self.problem))


class Contract(NamedTuple):
    """A parsed contract. Equality ignores columns, ``mode_declared`` and notes (they describe the source
    text). A NamedTuple, as ``Capability`` is."""

    version: int
    mode: str
    provides: tuple[Capability, ...] = ()
    expects: tuple[Capability, ...] = ()
    required: tuple[Capability, ...] = ()
    optional: tuple[Capability, ...] = ()
    accepts: tuple[tuple[str, str], ...] = ()
    policy: tuple[tuple[str, str], ...] = ()
    unknown: tuple[tuple[str, str], ...] = ()
    """Clauses with names the grammar does not define: ``(name, raw content)``, kept for round trips."""
    mode_declared: bool = False
    notes: tuple[tuple[str, str, int], ...] = ()
    """``(code, message, column)`` for lint: long forms, merged clauses, duplicates, unknown clauses."""

    def capabilities(self, clause: str) -> tuple[Capability, ...]:
        return {"P": self.provides, "E": self.expects, "R": self.required, "O": self.optional}[clause]

    def pairs(self, clause: str) -> tuple[tuple[str, str], ...]:
        return {"A": self.accepts, "Pol": self.policy}[clause]

    def invalid_tokens(self) -> list[tuple[str, Capability]]:
        return [(c, cap) for c in CAPABILITY_CLAUSES for cap in self.capabilities(c) if not cap.valid]

    def canonical(self) -> str:
        return serialize_contract(self)

    def _compared(self) -> tuple:
        return self[:9]  # version ... unknown: not mode_declared, not notes

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Contract) and self._compared() == other._compared()

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._compared())


# -- scanning ----------------------------------------------------------------------------------
_SPECIAL = re.compile(r"[\\,()]")


@dataclass
class _Piece:
    """A run of characters of one value: plain text, or one escaped character. ``column`` is 1-based."""

    text: str
    escaped: bool
    column: int


def _trim(pieces: list[_Piece]) -> list[_Piece]:
    """Drop unescaped whitespace at both ends (escaped characters are never trimmed)."""
    out = list(pieces)
    while out and not out[0].escaped:
        stripped = out[0].text.lstrip()
        if stripped:
            out[0] = _Piece(stripped, False, out[0].column + len(out[0].text) - len(stripped))
            break
        out.pop(0)
    while out and not out[-1].escaped:
        stripped = out[-1].text.rstrip()
        if stripped:
            out[-1] = _Piece(stripped, False, out[-1].column)
            break
        out.pop()
    return out


def _text(pieces: list[_Piece]) -> str:
    return "".join(p.text for p in pieces)


def _chars(pieces: list[_Piece]):
    """``(character, escaped, column)`` for every character of ``pieces``."""
    for piece in pieces:
        for offset, ch in enumerate(piece.text):
            yield ch, piece.escaped, piece.column + offset


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def error(self, message: str, index: int | None = None, hint: str | None = None) -> ContractParseError:
        return ContractParseError(message, (self.i if index is None else index) + 1, hint=hint)

    def at_end(self) -> bool:
        return self.i >= len(self.text)

    def skip_space(self) -> int:
        return len(self.word(_SPACE))

    def word(self, pattern: re.Pattern) -> str:
        """The run of ``pattern`` at the cursor (the patterns match the empty string too), consumed."""
        match = pattern.match(self.text, self.i)
        found = match.group() if match else ""
        self.i += len(found)
        return found

    def clause_body(self, open_index: int, name: str) -> tuple[list[list[_Piece]], str]:
        """Pieces up to the unescaped ``)``, split on unescaped commas; also the raw text."""
        items: list[list[_Piece]] = [[]]
        start = self.i
        text = self.text
        while True:
            found = _SPECIAL.search(text, self.i)
            if found is None:
                raise self.error(
                    f"clause '{name}(' is not closed with ')'",
                    open_index,
                    hint="escape a literal parenthesis as \\( or \\)",
                )
            at = found.start()
            if at > self.i:
                items[-1].append(_Piece(text[self.i : at], False, self.i + 1))
            self.i = at
            ch = text[at]
            if ch == "\\":
                if at + 1 >= len(text):
                    raise self.error("a backslash at the end of the contract escapes nothing")
                nxt = text[at + 1]
                if nxt not in ESCAPABLE:
                    raise self.error(f"invalid escape '\\{nxt}'", hint="valid escapes: \\, \\( \\) \\= \\\\ and '\\ '")
                items[-1].append(_Piece(nxt, True, at + 2))
                self.i = at + 2
            elif ch == ")":
                self.i = at + 1
                return items, text[start:at]
            elif ch == "(":
                raise self.error(f"unescaped '(' inside clause '{name}'", hint="write a literal parenthesis as \\(")
            else:
                items.append([])
                self.i = at + 1


_SPACE = re.compile(r"\s*")
_DIGITS = re.compile(r"[0-9]*")
_MODE = re.compile(r"[A-Za-z0-9-]*")
_CLAUSE_NAME = re.compile(r"[A-Za-z0-9_-]*")


def _is_key_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c in "-_")


_SAFE_RUN = re.compile(r"[A-Za-z0-9\-_.:/@=]+")
"""Unescaped value characters: safe-char, plus '=' (the key/value split is at the first '=' only)."""


# -- parsing -----------------------------------------------------------------------------------
def parse_contract(text: str) -> Contract:
    """Parse one contract string; raises ``ContractParseError`` (with a column) on a grammar error."""
    if not isinstance(text, str):
        raise ContractParseError(f"a contract must be a string, not {type(text).__name__}", 1)
    control = CONTROL_CHARACTERS.search(text)
    if control is not None:
        raise ContractParseError(
            f"the contract contains the control character {control.group()!r}", control.start() + 1
        )
    return _parse_plain(text) or _parse_general(text)


CONTROL_CHARACTERS = re.compile(r"[\x00-\x08\x0e-\x1b\x7f-\x84\x86-\x9f]")
"""Control characters no contract holds: those Python does not count as whitespace (tab, LF, VT, FF, CR,
the separators 0x1c-0x1f and NEL are whitespace to the grammar)."""


_PLAIN = re.compile(r"DCI/([0-9]+)(?:\^(strict|best-effort))?((?: +(?:[PERO]|A|Pol)\([^()\\\s]+\))+)")
_PLAIN_CLAUSE = re.compile(r" +([PERO]|A|Pol)\(([^()\\\s]+)\)")
_PLAIN_KEY = re.compile(r"[A-Za-z0-9_-]+")


@lru_cache(maxsize=65536)
def _problem(value: str) -> str | None:
    return token_problem(value)


def _parse_plain(text: str) -> Contract | None:
    """The common case without escapes, whitespace inside clauses, long or unknown names, repeated
    clauses, duplicate values, invalid tokens or errors, read with a few regular expressions; ``None``
    for anything else, which ``_parse_general`` reads. Both give the same ``Contract``, columns included
    (a property test compares them)."""
    head = _PLAIN.fullmatch(text)
    if head is None:
        return None
    caps: dict[str, tuple[Capability, ...]] = {}
    kvs: dict[str, tuple[tuple[str, str], ...]] = {}
    for clause in _PLAIN_CLAUSE.finditer(text, head.start(3)):
        name, body = clause.group(1), clause.group(2)
        if name in caps or name in kvs:
            return None
        items = body.split(",")
        column = clause.start(2) + 1
        if name in KV_CLAUSES:
            pairs: dict[str, str] = {}
            for item in items:
                key, equals, value = item.partition("=")
                if (
                    not equals
                    or not value
                    or key in pairs
                    or not _PLAIN_KEY.fullmatch(key)
                    or not _SAFE_RUN.fullmatch(value)
                ):
                    return None
                pairs[key] = value
            kvs[name] = tuple(pairs.items())
            continue
        if len(set(items)) != len(items):
            return None
        values = []
        for item in items:
            if not item or _problem(item) is not None:
                return None
            values.append(Capability(intern(item), None, column))  # one string per token in a corpus
            column += len(item) + 1
        caps[name] = tuple(values)
    mode = head.group(2)
    return Contract(
        version=int(head.group(1)),
        mode=mode or DEFAULT_MODE,
        mode_declared=mode is not None,
        provides=caps.get("P", ()),
        expects=caps.get("E", ()),
        required=caps.get("R", ()),
        optional=caps.get("O", ()),
        accepts=kvs.get("A", ()),
        policy=kvs.get("Pol", ()),
    )


def _parse_general(text: str) -> Contract:
    """The whole grammar, character by character where it has to be."""
    s = _Scanner(text)
    s.skip_space()
    if not text.startswith("DCI/", s.i):
        raise s.error("a contract must start with 'DCI/<version>'", hint="for example: DCI/1 P(web-search)")
    s.i += 4
    digits_at = s.i
    digits = s.word(_DIGITS)
    if not digits:
        raise s.error("expected a version number after 'DCI/'", digits_at)
    mode, declared = DEFAULT_MODE, False
    if not s.at_end() and text[s.i] == "^":
        s.i += 1
        mode_at = s.i
        mode = s.word(_MODE)
        if mode not in MODES:
            raise s.error(f"unknown mode '{mode}'; expected 'strict' or 'best-effort'", mode_at)
        declared = True
    caps: dict[str, list[Capability]] = {c: [] for c in CAPABILITY_CLAUSES}
    kvs: dict[str, dict[str, str]] = {c: {} for c in KV_CLAUSES}
    unknown: list[tuple[str, str]] = []
    notes: list[tuple[str, str, int]] = []
    seen: dict[str, int] = {}
    count = 0
    while True:
        at_clause_end = s.i
        spaces = s.skip_space()
        if s.at_end():
            break
        if not spaces:
            raise s.error("expected a space before the next clause", at_clause_end)
        name_at = s.i
        written = s.word(_CLAUSE_NAME)
        if not written or s.at_end() or text[s.i] != "(":
            shown = written or text[s.i]
            raise s.error(
                f"expected a clause such as P(...), found '{shown}'",
                name_at,
                hint="clauses: P E A R O Pol (long forms Provides Expects Accepts Requires Optional Policy)",
            )
        s.i += 1
        items, raw = s.clause_body(name_at, written)
        count += 1
        name = LONG_FORMS.get(written, written)
        if name != written:
            notes.append(
                ("long-form", f"long clause name '{written}' is written '{name}' in canonical form", name_at + 1)
            )
        if name not in CLAUSE_ORDER:
            unknown.append((written, raw))
            notes.append(("unknown-clause", f"unknown clause '{written}'", name_at + 1))
            continue
        if name in seen:
            notes.append(
                ("merged-clause", f"clause '{name}' appears more than once; its values are merged", name_at + 1)
            )
        seen[name] = name_at
        if len(items) == 1 and not _trim(items[0]):
            raise s.error(f"clause '{written}()' is empty", name_at, hint="remove it, or list at least one value")
        if name in CAPABILITY_CLAUSES:
            for item in items:
                pieces = _trim(item)
                value = _text(pieces)
                column = pieces[0].column if pieces else (item[0].column if item else name_at + 1)
                caps[name].append(Capability(value, token_problem(value), column))
        else:
            for item in items:
                key, value = _parse_pair(s, item, written, name_at)
                if key in kvs[name]:
                    raise s.error(f"key '{key}' appears twice in '{name}(...)'", _first_column(item) - 1)
                kvs[name][key] = value
    if count == 0:
        raise s.error(
            "a contract needs at least one clause", len(text.rstrip()), hint="for example: DCI/1 P(web-search)"
        )
    for clause, values in caps.items():
        seen_values: set[str] = set()
        for cap in values:
            if cap.value in seen_values:
                notes.append(("duplicate-token", f"'{cap.value}' appears more than once in {clause}(...)", cap.column))
            seen_values.add(cap.value)
    return Contract(
        version=int(digits),
        mode=mode,
        mode_declared=declared,
        provides=tuple(caps["P"]),
        expects=tuple(caps["E"]),
        required=tuple(caps["R"]),
        optional=tuple(caps["O"]),
        accepts=tuple(kvs["A"].items()),
        policy=tuple(kvs["Pol"].items()),
        unknown=tuple(unknown),
        notes=tuple(notes),
    )


def _first_column(item: list[_Piece]) -> int:
    pieces = _trim(item)
    return pieces[0].column if pieces else (item[0].column if item else 1)


def _split_pair(pieces: list[_Piece]) -> tuple[list[_Piece], list[_Piece], int] | None:
    """Split at the first unescaped ``=``: key pieces, value pieces, and the column of the ``=``."""
    for n, piece in enumerate(pieces):
        if piece.escaped or "=" not in piece.text:
            continue
        cut = piece.text.index("=")
        before = [*pieces[:n], _Piece(piece.text[:cut], False, piece.column)] if cut else pieces[:n]
        rest = piece.text[cut + 1 :]
        after = ([_Piece(rest, False, piece.column + cut + 1)] if rest else []) + pieces[n + 1 :]
        return before, after, piece.column + cut
    return None


def _parse_pair(s: _Scanner, item: list[_Piece], clause: str, clause_at: int) -> tuple[str, str]:
    pieces = _trim(item)
    if not pieces:
        raise s.error(f"empty entry in '{clause}(...)'; expected key=value", clause_at)
    split = _split_pair(pieces)
    if split is None:
        raise s.error(
            f"expected key=value in '{clause}(...)'",
            pieces[0].column - 1,
            hint="a literal '=' in a value is written \\=",
        )
    key_pieces, value_pieces, equals = _trim(split[0]), _trim(split[1]), split[2]
    if not key_pieces:
        raise s.error("missing key before '='", equals - 1)
    for ch, escaped, column in _chars(key_pieces):
        if escaped or not _is_key_char(ch):
            raise s.error(f"character {ch!r} is not allowed in a key (letters, digits, '-', '_')", column - 1)
    if not value_pieces:
        raise s.error(f"missing value after '{_text(key_pieces)}='", equals - 1)
    for piece in value_pieces:
        if piece.escaped or _SAFE_RUN.fullmatch(piece.text):
            continue
        for ch, _, column in _chars([piece]):
            if not _SAFE_RUN.fullmatch(ch):
                hint = "escape it as '\\ '" if ch == " " else "allowed: letters, digits, - _ . / : @ or an escape"
                raise s.error(f"character {ch!r} is not allowed in a value", column - 1, hint=hint)
    return _text(key_pieces), _text(value_pieces)


# -- serialising ---------------------------------------------------------------------------------
def escape(value: str) -> str:
    """Escape the characters the grammar reserves: ``\\ , ( ) =`` and space."""
    return "".join("\\" + ch if ch in ESCAPABLE else ch for ch in value)


def serialize_contract(contract: Contract) -> str:
    """The canonical form: explicit mode, short clause names in the order P E A R O Pol, then unknown clauses."""
    parts = [f"DCI/{contract.version}^{contract.mode}"]
    for clause in CLAUSE_ORDER:
        if clause in CAPABILITY_CLAUSES:
            values = [escape(c.value) for c in contract.capabilities(clause)]
        else:
            values = [f"{k}={escape(v)}" for k, v in contract.pairs(clause)]
        if values:
            parts.append(f"{clause}({','.join(values)})")
    parts.extend(f"{name}({raw})" for name, raw in contract.unknown)
    return " ".join(parts)


def contract_to_json(contract: Contract) -> dict:
    """A JSON view of a contract (the ``parse --json`` payload)."""

    def caps(values):
        return [{"value": c.value, "valid": c.valid, **({"problem": c.problem} if c.problem else {})} for c in values]

    return {
        "version": contract.version,
        "mode": contract.mode,
        "mode_declared": contract.mode_declared,
        "provides": caps(contract.provides),
        "expects": caps(contract.expects),
        "accepts": dict(contract.accepts),
        "required": caps(contract.required),
        "optional": caps(contract.optional),
        "policy": dict(contract.policy),
        "unknown_clauses": [{"name": n, "raw": r} for n, r in contract.unknown],
        "canonical": serialize_contract(contract),
    }
