"""The fuzz engine: mutate one file of an example input, run the format's commands on it, judge the outcome.

A *target* (see ``targets.py``) names example inputs (``Source``: a folder copied to a temporary
directory), the commands to run on each copy, and ``Rule`` s saying what each file of the copy is
(JSON, YAML, Markdown with frontmatter, plain text, a program) and which commands must reject it once
it is broken. A ``Mutation`` rewrites one file and says whether the result is certainly invalid for
that rule (a required key gone, NaN in a checked file, a folder where the file was...).

The verdict on every command run:

* exit 3 (the CLI's "internal error") or a traceback on stderr: a crash;
* no answer within the per-call time limit: a hang;
* exit 0 from a command that checks the file after a mutation that made it invalid: a wrong verdict.

Commands run in-process (``agentpack.cli.app.main``) for speed; a SIGALRM timer bounds each call.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import functools
import itertools
import json
import os
import re
import shutil
import signal
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from hypothesis import strategies as st

from agentpack.io import jsonio
from agentpack.testing import CliResult, run_cli

DEEP = 3000
"""Nesting depth of the deep-nesting mutation (the limit of agentpack.io.jsonio and yamlio is 256)."""
RFC3339 = re.compile(r"^\d{4}-\d\d-\d\d[Tt ]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$")


# -- what a file is --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Rule:
    """What one file (or glob of files) of a source is, and which commands must reject it once broken."""

    glob: str
    kind: str
    """``json``, ``yaml``, ``markdown`` (YAML frontmatter and a body), ``text``, ``program`` (run as a
    process), ``module`` (a Python tool binding, imported in-process) or ``agent`` (a JSON-RPC agent over
    stdio)."""
    checked_by: frozenset[str] = frozenset()
    """Names of the commands that check this file: they must not exit 0 once a mutation made it invalid."""
    read_by: frozenset[str] = frozenset()
    """Commands that only read it: they must not exit 0 once it cannot be read (not JSON, a folder...)."""
    required: tuple[str, ...] = ()
    """JSON pointers whose removal makes the file invalid."""
    types: Mapping[str, str] = field(default_factory=dict)
    """Pointer -> JSON type the value must have (string, integer, number, boolean, array, object)."""
    closed: tuple[str, ...] = ()
    """Pointers of objects where an unknown key is an error."""
    must_exist: frozenset[str] = frozenset()
    """Commands for which deleting the file makes the input invalid (for the others it is optional)."""
    strings_only: bool = False
    """Frontmatter scalars are read as strings (SKILL.md): ``.nan`` or ``7`` are valid strings there."""
    timestamps: bool = False
    """String values that are RFC 3339 timestamps must stay RFC 3339."""
    contained_by: frozenset[str] = frozenset()
    """Commands that refuse this file when it is a symbolic link out of the pack (issue 24): a subset of
    ``checked_by``; the others only have to answer without a crash or a hang."""
    stream: bool = False
    """A command reads it as a stream the user names (``--input FILE``): a pipe is fine there, so a FIFO
    waits for its writer, as ``cat`` would; the FIFO mutation leaves it alone."""

    def matches(self, relpath: str) -> bool:
        return _glob(self.glob).fullmatch(relpath) is not None


@functools.cache
def _glob(pattern: str) -> re.Pattern[str]:
    """A path glob: ``*`` stays within one folder, ``**/`` spans any number of them."""
    parts = re.split(r"(\*\*/|\*|\?)", pattern)
    tokens = {"**/": "(?:.*/)?", "*": "[^/]*", "?": "[^/]"}
    return re.compile("".join(tokens.get(p, re.escape(p)) for p in parts))


@dataclass(frozen=True)
class Command:
    """One CLI call; ``{case}`` in an argument is the copied source folder, ``{tmp}`` a scratch folder."""

    name: str
    args: tuple[str, ...]
    stdin: str | None = None
    cwd: str | None = None
    """Run in this folder (``{case}`` templates allowed); default: the scratch folder."""
    long: bool = False
    """Only in the long mode (a slow command: the CI budget cannot afford it on every case)."""

    @property
    def json(self) -> bool:
        """Whether stdout must be one strict JSON document (no NaN, no infinity)."""
        return "--json" in self.args or any(pair == ("-o", "json") for pair in itertools.pairwise(self.args))

    def render(self, case: Path, tmp: Path) -> list[str]:
        return [a.replace("{case}", str(case)).replace("{tmp}", str(tmp)) for a in self.args]


@dataclass(frozen=True)
class Source:
    """An example input: ``root`` is copied to a temporary folder; mutations touch files under ``focus``."""

    name: str
    root: Path
    commands: tuple[Command, ...]
    rules: tuple[Rule, ...]
    focus: tuple[str, ...] = ("",)
    """Relative folders (or files) of the copy whose files are mutated; ``""`` is all of it."""
    prepare: Callable[[Path, Path], None] | None = None
    """Called with the fresh copy and the scratch folder before the mutation (to add generated files)."""

    @functools.cached_property
    def template(self) -> Path:
        """A prepared copy (generated files included) that mutations are planned on; kept for the session."""
        folder = Path(tempfile.mkdtemp(prefix="agentpack-fuzz-template-"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        return materialize(self, folder)

    def original(self, rel: str) -> bytes:
        return (self.template / rel).read_bytes()

    def files(self) -> list[tuple[str, Rule]]:
        """(relative path, rule) of every file a mutation may touch, in a stable order."""
        out = []
        for path in sorted(self.template.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            rel = path.relative_to(self.template).as_posix()
            if not any(rel == f or rel.startswith(f.rstrip("/") + "/") or not f for f in self.focus):
                continue
            rule = next((r for r in self.rules if r.matches(rel)), None)
            if rule is not None:
                out.append((rel, rule))
        return out


# -- documents: parse, edit, write back ------------------------------------------------------------
class Document:
    """A JSON, YAML or frontmatter document as data, written back in the same syntax."""

    def __init__(self, kind: str, data: Any, body: str = "") -> None:
        self.kind, self.data, self.body = kind, data, body

    @classmethod
    def parse(cls, kind: str, raw: bytes) -> Document | None:
        try:
            text = raw.decode("utf-8")
            if kind == "json":
                return cls(kind, json.loads(text))
            if kind == "yaml":
                return cls(kind, yaml.safe_load(text))
            if kind == "markdown":
                match = re.match(r"---\r?\n(.*?\r?\n)?---[ \t]*(\r?\n|$)", text, re.DOTALL)
                if match is None or "---" in (match.group(1) or ""):
                    return None  # no frontmatter, or '---' inside a value (where SKILL.md readers cut differ)
                data = yaml.safe_load(match.group(1) or "")
                return cls(kind, data, text[match.end() :])
        except (UnicodeDecodeError, ValueError, yaml.YAMLError):
            return None
        return None

    def dump(self, splice: Mapping[str, str] = {}) -> bytes:
        """The document as bytes; each ``splice`` key (a marker string value) is replaced by raw text."""
        if self.kind == "json":
            text = json.dumps(self.data, indent=2, ensure_ascii=False)
        else:
            text = yaml.safe_dump(self.data, sort_keys=False, allow_unicode=True, width=10_000)
        for marker, raw in splice.items():
            text = re.sub(rf"[\"']?{re.escape(marker)}[\"']?", lambda _m, raw=raw: raw, text)
        if self.kind == "markdown":
            text = f"---\n{text}---\n{self.body}"
        return text.encode("utf-8")


def pointers(data: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every (pointer, value) of ``data``, the root first."""
    yield prefix, data
    if isinstance(data, dict):
        for key, value in data.items():
            yield from pointers(value, f"{prefix}/{str(key).replace('~', '~0').replace('/', '~1')}")
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from pointers(value, f"{prefix}/{index}")


def _parts(pointer: str) -> list[str]:
    return [p.replace("~1", "/").replace("~0", "~") for p in pointer.split("/")[1:]]


def _parent(data: Any, pointer: str) -> tuple[Any, Any]:
    """The container of ``pointer`` and the key or index in it."""
    parts = _parts(pointer)
    target = data
    for part in parts[:-1]:
        target = target[int(part)] if isinstance(target, list) else target[_key(target, part)]
    last = parts[-1]
    return target, int(last) if isinstance(target, list) else _key(target, last)


def _key(mapping: dict[Any, Any], part: str) -> Any:
    """The key of ``mapping`` spelt ``part`` (YAML keys may be ints or booleans)."""
    return next((k for k in mapping if str(k) == part), part)


def _set(doc: Document, pointer: str, value: Any) -> None:
    if pointer == "":
        doc.data = value
    else:
        container, key = _parent(doc.data, pointer)
        container[key] = value


JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list,),
    "object": (dict,),
}
WRONG_VALUES: list[Any] = [[1, 2], {"zz": 1}, "not-what-was-expected", 7, True, None, 2.5, datetime.date(2024, 1, 2)]
"""Values of every JSON type, and a YAML date (an unquoted ``2024-01-02`` is a date, not a string, in YAML)."""


def type_of(value: Any) -> set[str]:
    names = {name for name, kinds in JSON_TYPES.items() if isinstance(value, kinds) and not isinstance(value, bool)}
    if isinstance(value, bool):
        names = {"boolean"}
    if value is None:
        names = {"null"}
    return names


# -- mutations -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Applied:
    """What a mutation did, and whether the file is now certainly invalid (for the commands checking it)."""

    description: str
    invalid: bool
    unreadable: bool = False
    """The file cannot be read at all any more (not its syntax, not UTF-8, not a file...), not just invalid."""
    only: frozenset[str] | None = None
    """When set, the input is invalid only for these commands (a deleted optional file, say)."""

    def rejected_by(self, command: str, rule: Rule) -> bool:
        """Whether ``command`` must reject the input (not exit 0)."""
        readers = rule.checked_by | (rule.read_by if self.unreadable else frozenset())
        return self.invalid and command in readers and (self.only is None or command in self.only)


Draw = Callable[[st.SearchStrategy[Any]], Any]


@dataclass(frozen=True)
class Mutation:
    name: str
    kinds: frozenset[str]
    apply: Callable[[Path, Rule, Draw], Applied | None]
    """Rewrite the file at the path (or replace it); None when it does not apply to this file."""
    needs_document: bool = False
    streams: bool = True
    """Whether it applies to a file read as a stream (``Rule.stream``)."""

    def applies(self, rule: Rule, raw: bytes) -> bool:
        if rule.kind not in self.kinds or (rule.stream and not self.streams):
            return False
        return not self.needs_document or Document.parse(rule.kind, raw) is not None


def _doc(path: Path, rule: Rule) -> Document | None:
    return Document.parse(rule.kind, path.read_bytes())


def truncate(path: Path, rule: Rule, draw: Draw) -> Applied:
    raw = path.read_bytes()
    cut = draw(st.integers(0, max(len(raw) - 1, 0)))
    path.write_bytes(raw[:cut])
    invalid = False
    text = raw.decode("utf-8", "replace")
    if rule.kind == "json":
        invalid = cut <= len(raw.rstrip()) - 1
    elif rule.kind == "markdown" and rule.required:  # a frontmatter cut short is not closed
        closing = re.match(r"---\r?\n.*?^---[ \t]*$", text, re.DOTALL | re.MULTILINE)
        invalid = closing is not None and cut < len(text[: closing.end()].encode())
    return Applied(f"truncated to {cut} of {len(raw)} bytes", invalid, unreadable=invalid)


def havoc(path: Path, rule: Rule, draw: Draw) -> Applied:
    raw = bytearray(path.read_bytes())
    edits = draw(
        st.lists(
            st.tuples(st.integers(0, 1 << 20), st.sampled_from(list(b"{}[]:,\"'\n-#&*!|>%@\\ \t`?"))),
            min_size=1,
            max_size=4,
        )
    )
    done = []
    for position, byte in edits:
        position %= len(raw) + 1
        raw[position:position] = bytes([byte])
        done.append((position, chr(byte)))
    path.write_bytes(bytes(raw))
    return Applied(f"inserted (offset, character) {done}", False)


def invalid_utf8(path: Path, rule: Rule, draw: Draw) -> Applied:
    raw = path.read_bytes()
    at = draw(st.integers(0, len(raw)))
    bad = draw(st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf0\x28\x8c\x28"]))
    path.write_bytes(raw[:at] + bad + raw[at:])
    return Applied(f"invalid UTF-8 {bad!r} at byte {at}", True, unreadable=True)


def bom(path: Path, rule: Rule, draw: Draw) -> Applied:
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())
    return Applied("UTF-8 byte order mark added", False)


def binary(path: Path, rule: Rule, draw: Draw) -> Applied:
    tail = draw(st.binary(min_size=0, max_size=64))
    path.write_bytes(b"\x00\xff\xfe\x7fELF\x00" + tail)
    return Applied("replaced by binary bytes", True, unreadable=True)


def empty(path: Path, rule: Rule, draw: Draw) -> Applied:
    path.write_bytes(b"")
    invalid = rule.kind == "json" or (rule.kind in ("yaml", "markdown") and bool(rule.required))
    return Applied("emptied", invalid, unreadable=rule.kind == "json")


def folder(path: Path, rule: Rule, draw: Draw) -> Applied:
    path.unlink()
    path.mkdir()
    (path / "inner.txt").write_text("a folder where a file was\n")
    return Applied("replaced by a folder", True, unreadable=True)


def dangling_symlink(path: Path, rule: Rule, draw: Draw) -> Applied:
    path.unlink()
    path.symlink_to(path.with_name(path.name + ".missing-target"))
    return Applied("replaced by a dangling symbolic link", True, unreadable=True)


def looping_symlink(path: Path, rule: Rule, draw: Draw) -> Applied:
    path.unlink()
    other = path.with_name(path.name + ".loop")
    other.symlink_to(path.name)
    path.symlink_to(other.name)
    return Applied("replaced by a symbolic link loop", True, unreadable=True)


def fifo(path: Path, rule: Rule, draw: Draw) -> Applied:
    path.unlink()
    os.mkfifo(path)
    return Applied("replaced by a FIFO (a reader that opens it waits for a writer forever)", True, unreadable=True)


def delete(path: Path, rule: Rule, draw: Draw) -> Applied:
    path.unlink()
    return Applied("deleted", True, unreadable=True, only=rule.must_exist)


def symlink_out(path: Path, rule: Rule, draw: Draw) -> Applied:
    """The file becomes a link to a copy of itself outside the case (a host file, say): what it says stays
    valid, where it lives does not."""
    scratch = next(p.parent for p in path.parents if p.name == "case")
    outside = scratch / "outside"
    outside.mkdir(exist_ok=True)
    target = outside / f"{len(list(outside.iterdir()))}-{path.name}"
    shutil.move(path, target)
    path.symlink_to(target)
    return Applied(f"moved out of the pack, a symbolic link to {target} in its place", True, only=rule.contained_by)


CONTROL_TEXT = ["\n", "\r", "\x00", "\x1b]0;fuzz\x07", "\x1b[2J", "\x7f", "\t/../", "\x9b"]
"""Control characters as they reach a path, a glob or a name: newline, NUL, OSC and CSI sequences, DEL."""


def _strings(doc: Document) -> list[str]:
    return [p for p, v in pointers(doc.data) if p and isinstance(v, str)]


def _rewrite_string(path: Path, rule: Rule, draw: Draw, edit: Callable[[str], str], what: str) -> Applied | None:
    doc = _doc(path, rule)
    if doc is None:
        return None
    strings = _strings(doc)
    if not strings:
        return None
    pathlike = [p for p in strings if re.search(r"[/*]|\.(md|json|ya?ml|py|sqlite|txt)$", dict(pointers(doc.data))[p])]
    pointer = draw(st.sampled_from(pathlike * 3 + strings))  # paths and globs more often
    old = dict(pointers(doc.data))[pointer]
    new = edit(old)
    _set(doc, pointer, new)
    path.write_bytes(doc.dump())
    return Applied(f"{pointer}: {old!r} -> {new!r} ({what})", False)


def control_characters(path: Path, rule: Rule, draw: Draw) -> Applied | None:
    text = draw(st.sampled_from(CONTROL_TEXT))
    at = draw(st.integers(0, 1 << 16))
    return _rewrite_string(
        path, rule, draw, lambda v: v[: at % (len(v) + 1)] + text + v[at % (len(v) + 1) :], "control characters"
    )


PERCENT = ["%2e%2e/%2e%2e/", "%2F..%2F", "?mode=rw", "#frag", "%00", "%25"]
"""Percent-encoding and URI syntax that a URI parser (SQLite's, urllib's) would decode or act on."""


def percent_encoding(path: Path, rule: Rule, draw: Draw) -> Applied | None:
    text = draw(st.sampled_from(PERCENT))
    prefix = draw(st.booleans())
    return _rewrite_string(path, rule, draw, lambda v: text + v if prefix else v + text, "percent-encoding")


REDOS = ["(a|aa)+$", "(a+)+$", "^(\\w+\\s?)*$", "(x+x+)+y", "(.*a){25}"]
"""Patterns that backtrack for minutes in a backtracking engine on a long run of one character."""


def pathological_regex(path: Path, rule: Rule, draw: Draw) -> Applied | None:
    doc = _doc(path, rule)
    if doc is None:
        return None
    keys = [p for p, v in pointers(doc.data) if isinstance(v, str) and _parts(p)[-1:] in (["pattern"], ["regex"])]
    strings = keys or _strings(doc)
    if not strings:
        return None
    pointer = draw(st.sampled_from(strings))
    pattern = draw(st.sampled_from(REDOS))
    _set(doc, pointer, pattern)
    path.write_bytes(doc.dump())
    return Applied(f"{pointer} = {pattern!r} (a pathological regular expression)", False)


def _leaf_pointers(doc: Document) -> list[str]:
    return [p for p, v in pointers(doc.data) if p and not isinstance(v, (dict, list))]


def non_finite(path: Path, rule: Rule, draw: Draw) -> Applied | None:
    doc = _doc(path, rule)
    if doc is None:
        return None
    leaves = _leaf_pointers(doc)
    numeric = [p for p, v in pointers(doc.data) if isinstance(v, (int, float)) and not isinstance(v, bool)]
    candidates = numeric or leaves
    if not candidates:
        return None
    pointer = draw(st.sampled_from(candidates))
    value = draw(st.sampled_from([float("nan"), float("inf"), float("-inf")]))
    _set(doc, pointer, value)
    path.write_bytes(doc.dump())
    return Applied(f"{pointer} = {value}", not rule.strings_only, unreadable=not rule.strings_only)


def deep(path: Path, rule: Rule, draw: Draw) -> Applied | None:
    doc = _doc(path, rule)
    if doc is None:
        return None
    pointer = draw(st.sampled_from([p for p, _ in pointers(doc.data)]))
    mapping = draw(st.booleans())
    raw = ('{"a": ' * DEEP + "1" + "}" * DEEP) if mapping else ("[" * DEEP + "]" * DEEP)
    marker = "@@deep-nesting@@"
    _set(doc, pointer, marker)
    path.write_bytes(doc.dump({marker: raw}))
    what = f"{pointer or '(root)'} nested {DEEP} {'objects' if mapping else 'arrays'} deep"
    return Applied(what, True, unreadable=True)


def drop_key(path: Path, rule: Rule, draw: Draw) -> Applied | None:
    doc = _doc(path, rule)
    if doc is None:
        return None
    present = [p for p, _ in pointers(doc.data) if p and isinstance(_parent(doc.data, p)[0], dict)]
    if not present:
        return None
    required = [p for p in rule.required if p in present]
    pointer = draw(st.sampled_from(present + required * 3))  # required keys more often
    container, key = _parent(doc.data, pointer)
    del container[key]
    path.write_bytes(doc.dump())
    return Applied(f"removed {pointer}", pointer in rule.required)


def wrong_type(path: Path, rule: Rule, draw: Draw) -> Applied | None:
    doc = _doc(path, rule)
    if doc is None:
        return None
    all_pointers = [p for p, _ in pointers(doc.data)]
    typed = [p for p in rule.types if p in all_pointers]
    pointer = draw(st.sampled_from(typed * 3 + all_pointers))  # typed fields more often
    expected = rule.types.get(pointer)
    choices = WRONG_VALUES
    if expected is not None:
        choices = [v for v in WRONG_VALUES if expected not in type_of(v)]
        if rule.strings_only:  # scalars are strings there: only a list or a mapping is a wrong type
            choices = [v for v in choices if isinstance(v, (list, dict))]
    if rule.kind == "json":
        choices = [v for v in choices if not isinstance(v, datetime.date)]
    value = draw(st.sampled_from(choices))
    _set(doc, pointer, value)
    path.write_bytes(doc.dump())
    return Applied(f"{pointer or '(root)'} = {value!r}", expected is not None)


def unknown_key(path: Path, rule: Rule, draw: Draw) -> Applied | None:
    doc = _doc(path, rule)
    if doc is None:
        return None
    objects = [p for p, v in pointers(doc.data) if isinstance(v, dict)]
    if not objects:
        return None
    closed = [p for p in rule.closed if p in objects]
    pointer = draw(st.sampled_from(closed * 3 + objects))  # closed objects more often
    target = dict(pointers(doc.data))[pointer]
    target["zz_fuzz_unknown_key"] = draw(st.sampled_from([1, "x", [1], {"a": 1}]))
    path.write_bytes(doc.dump())
    return Applied(f"unknown key under {pointer or '(root)'}", pointer in rule.closed)


def bad_timestamp(path: Path, rule: Rule, draw: Draw) -> Applied | None:
    doc = _doc(path, rule)
    if doc is None:
        return None
    stamps = [p for p, v in pointers(doc.data) if isinstance(v, str) and RFC3339.match(v)]
    if not stamps:
        return None
    pointer = draw(st.sampled_from(stamps))
    value = draw(st.sampled_from(["2024-02-30T25:61:00Z", "yesterday", "2024-01-01", "2024-01-01T00:00:00"]))
    _set(doc, pointer, value)
    path.write_bytes(doc.dump())
    return Applied(f"{pointer} = {value!r}", rule.timestamps)


HOSTILE_OUTPUTS: dict[str, bytes] = {
    "deep": b"[" * DEEP + b"]" * DEEP,
    "deep-object": b'{"a": ' * DEEP + b"1" + b"}" * DEEP,
    "nan": b'{"ok": NaN}',
    "infinity": b'{"ok": Infinity, "files": [], "count": -Infinity}',
    "not-json": b"this is not json",
    "truncated": b'{"ok": true, "files": [',
    "not-utf8": b'{"ok": "\xff\xfe"}',
    "empty": b"",
    "scalar": b"42",
}


def hostile_program(path: Path, rule: Rule, draw: Draw) -> Applied:
    """Replace a program by one that prints a hostile answer on stdout."""
    name = draw(st.sampled_from(sorted(HOSTILE_OUTPUTS)))
    payload = HOSTILE_OUTPUTS[name]
    path.write_text(f"import sys\nsys.stdin.buffer.read()\nsys.stdout.buffer.write({payload!r})\nsys.stdout.flush()\n")
    return Applied(f"program prints {name} output", True)


def hostile_agent(path: Path, rule: Rule, draw: Draw) -> Applied:
    """Replace a JSON-RPC agent (stdio) by one that answers every request with a hostile line: the hostile
    output alone (not JSON-RPC: skipped, so the call times out) or as the ``result`` of a reply to it."""
    name = draw(st.sampled_from(sorted(HOSTILE_OUTPUTS)))
    wrapped = draw(st.booleans(), label="as a JSON-RPC result")
    path.write_text(
        textwrap.dedent(f"""\
            import re, sys
            PAYLOAD, WRAPPED = {HOSTILE_OUTPUTS[name]!r}, {wrapped!r}
            for request in sys.stdin.buffer:
                found = re.search(rb'"id": *(\\d+)', request)
                head = b'{{"jsonrpc": "2.0", "id": ' + (found.group(1) if found else b"0") + b', "result": '
                sys.stdout.buffer.write((head + PAYLOAD + b"}}" if WRAPPED else PAYLOAD) + b"\\n")
                sys.stdout.flush()
            """)
    )
    return Applied(f"agent replies {name}" + (" as a JSON-RPC result" if wrapped else ""), True)


HOSTILE_VALUES: dict[str, str] = {
    "nan": "float('nan')",
    "infinity": "{'total': float('inf')}",
    "deep": "_deep()",
    "set": "{1, 2}",
    "bytes": "b'\\xff\\xfe'",
    "object": "object()",
    "self-referencing": "_loop()",
    "raises": "_raise()",
}


def hostile_binding(path: Path, rule: Rule, draw: Draw) -> Applied:
    """Replace a Python tool binding by one whose every operation returns a hostile value (or raises)."""
    name = draw(st.sampled_from(sorted(HOSTILE_VALUES)))
    path.write_text(
        "def _deep():\n"
        "    value = []\n"
        "    for _ in range(5000):\n"
        "        value = [value]\n"
        "    return value\n\n"
        "def _loop():\n"
        "    value = {}\n"
        "    value['self'] = value\n"
        "    return value\n\n"
        "def _raise():\n"
        "    raise RuntimeError('the tool failed')\n\n"
        "class Hostile:\n"
        "    def __getattr__(self, operation):\n"
        "        if operation.startswith('__'):\n"
        "            raise AttributeError(operation)\n"
        f"        return lambda **arguments: {HOSTILE_VALUES[name]}\n\n"
        "Helpdesk = Crm = Hostile\n"
    )
    return Applied(f"every tool operation returns {name}", False)


STRUCTURED = frozenset({"json", "yaml", "markdown"})
TEXT = frozenset({"json", "yaml", "markdown", "text"})
FILES = frozenset({"json", "yaml", "markdown", "text", "program", "module"})

MUTATIONS: dict[str, Mutation] = {
    m.name: m
    for m in (
        Mutation("truncate", TEXT, truncate),
        Mutation("havoc", TEXT, havoc),
        Mutation("invalid-utf8", TEXT, invalid_utf8),
        Mutation("bom", TEXT, bom),
        Mutation("binary", FILES, binary),
        Mutation("empty", FILES, empty),
        Mutation("folder", FILES, folder),
        Mutation("dangling-symlink", FILES, dangling_symlink),
        Mutation("looping-symlink", FILES, looping_symlink),
        Mutation("fifo", FILES, fifo, streams=False),
        Mutation("delete", FILES, delete),
        Mutation("nan", STRUCTURED, non_finite, needs_document=True),
        Mutation("deep-nesting", STRUCTURED, deep, needs_document=True),
        Mutation("drop-key", STRUCTURED, drop_key, needs_document=True),
        Mutation("wrong-type", STRUCTURED, wrong_type, needs_document=True),
        Mutation("unknown-key", STRUCTURED, unknown_key, needs_document=True),
        Mutation("bad-timestamp", STRUCTURED, bad_timestamp, needs_document=True),
        Mutation("symlink-out", FILES, symlink_out),
        Mutation("control-characters", STRUCTURED, control_characters, needs_document=True),
        Mutation("percent-encoding", STRUCTURED, percent_encoding, needs_document=True),
        Mutation("pathological-regex", STRUCTURED, pathological_regex, needs_document=True),
        Mutation("hostile-output", frozenset({"program"}), hostile_program),
        Mutation("hostile-binding", frozenset({"module"}), hostile_binding),
        Mutation("hostile-replies", frozenset({"agent"}), hostile_agent),
    )
}


# -- running and judging ------------------------------------------------------------------------
class Hang(BaseException):
    """A command ran past its time limit (a BaseException, so no ``except Exception`` swallows it)."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``Hang`` in the main thread after ``seconds``; restores an outer timer (pytest-timeout's)."""

    def expire(signum: int, frame: Any) -> None:
        raise Hang(f"no answer within {seconds:.0f} s")

    previous = signal.signal(signal.SIGALRM, expire)
    outer, _ = signal.setitimer(signal.ITIMER_REAL, seconds)
    started = time.monotonic()
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 0.001))


@dataclass
class Outcome:
    command: Command
    argv: list[str]
    result: CliResult | None
    hang: str | None = None

    def problem(self, applied: Applied | None, rule: Rule | None) -> str | None:
        """Why this outcome is a finding, or None."""
        if self.hang:
            return f"hang: {self.hang}"
        assert self.result is not None
        if self.result.exit_code not in (0, 1, 2):
            return f"exit {self.result.exit_code} (internal error)"
        if "Traceback (most recent call last)" in self.result.stderr:
            return f"exit {self.result.exit_code} with a traceback on stderr"
        if self.command.json and self.result.stdout.strip():
            try:
                jsonio.loads(self.result.stdout)
            except jsonio.JsonError as exc:
                return f"exit {self.result.exit_code} and --json printed something that is not strict JSON: {exc}"
        if (
            applied is not None
            and rule is not None
            and applied.rejected_by(self.command.name, rule)
            and not self.result.exit_code
        ):
            return "exit 0 on an input the mutation made invalid"
        return None

    def report(self) -> str:
        if self.result is None:
            return f"$ agentpack {' '.join(self.argv)}\n  {self.hang}"
        out = self.result.stdout[-1500:]
        err = self.result.stderr[-2500:]
        return f"$ agentpack {' '.join(self.argv)}\n  exit {self.result.exit_code}\n  stdout: {out}\n  stderr: {err}"


def run_command(command: Command, case: Path, tmp: Path, *, timeout: float, env: dict[str, str]) -> Outcome:
    argv = command.render(case, tmp)
    cwd = Path(command.cwd.replace("{case}", str(case))) if command.cwd else tmp
    try:
        with contextlib.chdir(cwd), time_limit(timeout):
            result = run_cli(argv, input=command.stdin, env=env)
    except Hang as exc:
        return Outcome(command, argv, None, hang=str(exc))
    return Outcome(command, argv, result)


def materialize(source: Source, tmp: Path) -> Path:
    """A fresh copy of ``source`` under ``tmp`` (its folder name kept: some formats check it)."""
    case = tmp / "case" / source.root.name
    shutil.copytree(source.root, case, symlinks=True, ignore=shutil.ignore_patterns("__pycache__", ".openexperts"))
    if source.prepare is not None:
        source.prepare(case, tmp)
    return case


def command_env(tmp: Path) -> dict[str, str]:
    """Environment of the command runs: caches and homes inside the scratch folder, no debug tracebacks."""
    return {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",  # `python` is this one
        "AGENTPACK_DEBUG": "",
        "AGENTPACK_SKILLCTL_CACHE_DIR": str(tmp / "skillctl-cache"),
        "XDG_CACHE_HOME": str(tmp / "cache"),
        "NO_COLOR": "1",
    }
