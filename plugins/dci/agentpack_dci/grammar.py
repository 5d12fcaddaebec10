"""The DCI contract grammar: ``DCI/<version>[^mode] P(..) E(..) A(k=v) R(..) O(..) Pol(k=v)``.

``parse_contract`` decodes escapes, trims unescaped surrounding whitespace,
normalises long clause names to short ones and validates capability tokens
without rewriting them (invalid tokens are kept, flagged). Grammar errors raise
``ContractParseError`` with a 1-based column. ``serialize_contract`` writes the
canonical form; parsing it gives back an equal ``Contract``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from agentpack.errors import AgentpackError

from .tokens import token_problem

PARSER_VERSION = "agentpack-dci-parser/1"
"""Part of every cache key: bump it whenever parsing could give a different value."""

MODES = ("strict", "best-effort")
DEFAULT_MODE = "best-effort"
CAPABILITY_CLAUSES = ("P", "E", "R", "O")
KV_CLAUSES = ("A", "Pol")
CLAUSE_ORDER = ("P", "E", "A", "R", "O", "Pol")
LONG_FORMS = {"Provides": "P", "Expects": "E", "Accepts": "A", "Required": "R", "Optional": "O", "Policy": "Pol"}
ESCAPABLE = frozenset(",()=\\ ")
SAFE_VALUE_EXTRA = frozenset("-_.:/@")


class ContractParseError(AgentpackError):
    """A contract that breaks the grammar; ``column`` is 1-based in the contract text."""

    def __init__(self, message: str, column: int, *, hint: str | None = None) -> None:
        super().__init__(message, column=column, hint=hint)


@dataclass(frozen=True)
class Capability:
    """One capability value as written (escapes decoded, edges trimmed), and whether it is valid."""

    value: str
    problem: str | None = None
    column: int = field(default=0, compare=False)

    @property
    def valid(self) -> bool:
        return self.problem is None


@dataclass(frozen=True)
class Contract:
    """A parsed contract. Equality ignores columns and notes (they describe the source text)."""

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
    mode_declared: bool = field(default=False, compare=False)
    notes: tuple[tuple[str, str, int], ...] = field(default=(), compare=False)
    """``(code, message, column)`` for lint: long forms, merged clauses, duplicates, unknown clauses."""

    def capabilities(self, clause: str) -> tuple[Capability, ...]:
        return {"P": self.provides, "E": self.expects, "R": self.required, "O": self.optional}[clause]

    def pairs(self, clause: str) -> tuple[tuple[str, str], ...]:
        return {"A": self.accepts, "Pol": self.policy}[clause]

    def invalid_tokens(self) -> list[tuple[str, Capability]]:
        return [(c, cap) for c in CAPABILITY_CLAUSES for cap in self.capabilities(c) if not cap.valid]

    def canonical(self) -> str:
        return serialize_contract(self)


# -- scanning ----------------------------------------------------------------------------------
@dataclass
class _Char:
    ch: str
    escaped: bool
    column: int


def _trim(chars: list[_Char]) -> list[_Char]:
    start, end = 0, len(chars)
    while start < end and not chars[start].escaped and chars[start].ch.isspace():
        start += 1
    while end > start and not chars[end - 1].escaped and chars[end - 1].ch.isspace():
        end -= 1
    return chars[start:end]


def _text(chars: list[_Char]) -> str:
    return "".join(c.ch for c in chars)


class _Scanner:
    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def error(self, message: str, index: int | None = None, hint: str | None = None) -> ContractParseError:
        return ContractParseError(message, (self.i if index is None else index) + 1, hint=hint)

    def at_end(self) -> bool:
        return self.i >= len(self.text)

    def skip_space(self) -> int:
        start = self.i
        while not self.at_end() and self.text[self.i].isspace():
            self.i += 1
        return self.i - start

    def word(self, allowed) -> str:
        start = self.i
        while not self.at_end() and allowed(self.text[self.i]):
            self.i += 1
        return self.text[start:self.i]

    def clause_body(self, open_index: int, name: str) -> tuple[list[list[_Char]], str]:
        """Characters up to the unescaped ``)``, split on unescaped commas; also the raw text."""
        items: list[list[_Char]] = [[]]
        start = self.i
        text = self.text
        while True:
            if self.at_end():
                raise self.error(f"clause '{name}(' is not closed with ')'", open_index,
                                 hint="escape a literal parenthesis as \\( or \\)")
            ch = text[self.i]
            if ch == "\\":
                if self.i + 1 >= len(text):
                    raise self.error("a backslash at the end of the contract escapes nothing")
                nxt = text[self.i + 1]
                if nxt not in ESCAPABLE:
                    raise self.error(f"invalid escape '\\{nxt}'", hint="valid escapes: \\, \\( \\) \\= \\\\ and '\\ '")
                items[-1].append(_Char(nxt, True, self.i + 1))
                self.i += 2
                continue
            if ch == ")":
                raw = text[start:self.i]
                self.i += 1
                return items, raw
            if ch == "(":
                raise self.error(f"unescaped '(' inside clause '{name}'", hint="write a literal parenthesis as \\(")
            if ch == ",":
                items.append([])
            else:
                items[-1].append(_Char(ch, False, self.i + 1))
            self.i += 1


def _is_clause_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c in "-_")


def _is_key_char(c: str) -> bool:
    return c.isascii() and (c.isalnum() or c in "-_")


def _is_safe(c: _Char) -> bool:
    """A value character: safe-char, an escape, or '=' (the key/value split is at the first '=' only)."""
    return c.escaped or c.ch == "=" or (c.ch.isascii() and (c.ch.isalnum() or c.ch in SAFE_VALUE_EXTRA))


# -- parsing -----------------------------------------------------------------------------------
def parse_contract(text: str) -> Contract:
    """Parse one contract string; raises ``ContractParseError`` (with a column) on a grammar error."""
    if not isinstance(text, str):
        raise ContractParseError(f"a contract must be a string, not {type(text).__name__}", 1)
    s = _Scanner(text)
    s.skip_space()
    if not text.startswith("DCI/", s.i):
        raise s.error("a contract must start with 'DCI/<version>'", hint="for example: DCI/1 P(web-search)")
    s.i += 4
    digits_at = s.i
    digits = s.word(lambda c: c in "0123456789")
    if not digits:
        raise s.error("expected a version number after 'DCI/'", digits_at)
    mode, declared = DEFAULT_MODE, False
    if not s.at_end() and text[s.i] == "^":
        s.i += 1
        mode_at = s.i
        mode = s.word(lambda c: c.isascii() and (c.isalnum() or c == "-"))
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
        written = s.word(_is_clause_char)
        if not written or s.at_end() or text[s.i] != "(":
            shown = written or text[s.i]
            raise s.error(f"expected a clause such as P(...), found '{shown}'", name_at,
                          hint="clauses: P E A R O Pol (long forms Provides Expects Accepts Required Optional Policy)")
        s.i += 1
        items, raw = s.clause_body(name_at, written)
        count += 1
        name = LONG_FORMS.get(written, written)
        if name != written:
            notes.append(("long-form", f"long clause name '{written}' is written '{name}' in canonical form",
                          name_at + 1))
        if name not in CLAUSE_ORDER:
            unknown.append((written, raw))
            notes.append(("unknown-clause", f"unknown clause '{written}'", name_at + 1))
            continue
        if name in seen:
            notes.append(("merged-clause", f"clause '{name}' appears more than once; its values are merged",
                          name_at + 1))
        seen[name] = name_at
        if len(items) == 1 and not _trim(items[0]):
            raise s.error(f"clause '{written}()' is empty", name_at, hint="remove it, or list at least one value")
        if name in CAPABILITY_CLAUSES:
            for item in items:
                chars = _trim(item)
                value = _text(chars)
                column = chars[0].column if chars else (item[0].column if item else name_at + 1)
                caps[name].append(Capability(value, token_problem(value), column))
        else:
            for item in items:
                key, value = _parse_pair(s, item, written, name_at)
                if key in kvs[name]:
                    raise s.error(f"key '{key}' appears twice in '{name}(...)'", _first_column(item) - 1)
                kvs[name][key] = value
    if count == 0:
        raise s.error("a contract needs at least one clause", len(text.rstrip()),
                      hint="for example: DCI/1 P(web-search)")
    for clause, values in caps.items():
        seen_values: set[str] = set()
        for cap in values:
            if cap.value in seen_values:
                notes.append(("duplicate-token", f"'{cap.value}' appears more than once in {clause}(...)",
                              cap.column))
            seen_values.add(cap.value)
    return Contract(
        version=int(digits), mode=mode, mode_declared=declared,
        provides=tuple(caps["P"]), expects=tuple(caps["E"]), required=tuple(caps["R"]),
        optional=tuple(caps["O"]), accepts=tuple(kvs["A"].items()), policy=tuple(kvs["Pol"].items()),
        unknown=tuple(unknown), notes=tuple(notes),
    )


def _first_column(item: list[_Char]) -> int:
    chars = _trim(item)
    return chars[0].column if chars else (item[0].column if item else 1)


def _parse_pair(s: _Scanner, item: list[_Char], clause: str, clause_at: int) -> tuple[str, str]:
    chars = _trim(item)
    if not chars:
        raise s.error(f"empty entry in '{clause}(...)'; expected key=value", clause_at)
    split = next((n for n, c in enumerate(chars) if c.ch == "=" and not c.escaped), None)
    if split is None:
        raise s.error(f"expected key=value in '{clause}(...)'", chars[0].column - 1,
                      hint="a literal '=' in a value is written \\=")
    key_chars, value_chars = _trim(chars[:split]), _trim(chars[split + 1:])
    if not key_chars:
        raise s.error("missing key before '='", chars[split].column - 1)
    for c in key_chars:
        if c.escaped or not _is_key_char(c.ch):
            raise s.error(f"character {c.ch!r} is not allowed in a key (letters, digits, '-', '_')", c.column - 1)
    if not value_chars:
        raise s.error(f"missing value after '{_text(key_chars)}='", chars[split].column - 1)
    for c in value_chars:
        if not _is_safe(c):
            hint = "escape it as '\\ '" if c.ch == " " else "allowed: letters, digits, - _ . / : @ or an escape"
            raise s.error(f"character {c.ch!r} is not allowed in a value", c.column - 1, hint=hint)
    return _text(key_chars), _text(value_chars)


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
        return [{"value": c.value, "valid": c.valid, **({"problem": c.problem} if c.problem else {})}
                for c in values]

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
