"""YAML loading for packs: C loader when present, duplicate keys rejected, line numbers kept.

``load_yaml`` returns a ``YamlDocument``: the data plus a map from JSON pointer
to line, so findings can point at ``file:line``. Safety limits stop oversized
files, alias bombs and runaway nesting before they cost memory or time.
``strict=True`` adds the rules of the Agent Skills reference parser
(StrictYAML): no flow style, anchors, aliases or tags, and sibling mappings
indented alike.
"""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any, cast

from agentpack.io.errors import YamlError
from agentpack.io.yamldoc import YamlDocument, escape_pointer, join_pointer

__all__ = ["YamlDocument", "escape_pointer", "join_pointer", "load_yaml", "parse_yaml"]


class _LazyPattern:
    """A regular expression compiled on first use."""

    def __init__(self, compile_: Callable[[str, int], re.Pattern[str]], pattern: str, flags: int) -> None:
        self._compile, self._args = compile_, (pattern, flags)
        self._compiled: re.Pattern[str] | None = None

    def __getattr__(self, name: str) -> Any:
        if self._compiled is None:
            self._compiled = self._compile(*self._args)
        return getattr(self._compiled, name)


_IMPORT_LOCK = threading.Lock()


def _import_pyyaml() -> ModuleType:
    """``import yaml``, leaving ``yaml.reader.Reader.NON_PRINTABLE`` to compile on first use.

    That one character class costs about 5 ms to compile, a tenth of a short
    command's start-up, and only PyYAML's pure-Python reader uses it; the C
    loader (libyaml) checks characters itself and never touches it.
    """
    if "yaml" in sys.modules:
        return sys.modules["yaml"]
    with _IMPORT_LOCK:
        compile_ = re.compile

        def compile_lazily(pattern: Any, flags: int = 0) -> Any:
            if isinstance(pattern, str) and pattern.startswith("[^\x09\x0a\x0d\x20-\x7e\x85"):
                return _LazyPattern(compile_, pattern, flags)
            return compile_(pattern, flags)

        re.compile = compile_lazily  # only while PyYAML's modules are imported
        try:
            import yaml
        finally:
            re.compile = compile_
    return yaml


if TYPE_CHECKING:
    import yaml
else:
    yaml = _import_pyyaml()

try:  # the libyaml-backed loader is several times faster
    _BaseLoader: type = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the build of PyYAML
    _BaseLoader = yaml.SafeLoader

MAX_BYTES = 16 * 1024 * 1024
MAX_NODES = 1_000_000
"""Most nodes a document may expand to, aliases counted each time they are used."""
MAX_DEPTH = 256
"""Deepest nesting of collections a document may have."""

MERGE_TAG = "tag:yaml.org,2002:merge"
_STR_TAG, _SEQ_TAG, _MAP_TAG = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_FLOAT_TAG = "tag:yaml.org,2002:float"
_INF = float("inf")
_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}" for name in ("null", "bool", "int", "float", "binary", "timestamp")
)

_STRICT_DISALLOWED = {
    "FlowMappingStartToken": "flow-style mappings ({...}) are not allowed; use block style",
    "FlowSequenceStartToken": "flow-style lists ([...]) are not allowed; use block style",
    "AnchorToken": "YAML anchors (&) are not allowed",
    "AliasToken": "YAML aliases (*) are not allowed",
    "TagToken": "YAML tags (!) are not allowed",
}


def _merge_sources(node: yaml.Node) -> list[yaml.MappingNode] | None:
    """The mappings a ``<<`` value merges (a mapping or a list of them), or None if it is neither."""
    if isinstance(node, yaml.MappingNode):
        return [node]
    if isinstance(node, yaml.SequenceNode) and all(isinstance(n, yaml.MappingNode) for n in node.value):
        return list(node.value)
    return None


class _Unusual(Exception):
    """A node the one-pass ``_Walker.build`` leaves to PyYAML's constructor: merge keys, tags it does not know."""


class _Walker:
    """Builds the pointer-to-line map, checks keys, nesting and indentation, and counts expansion."""

    def __init__(self, file: str | None, strict: bool) -> None:
        self.file = file
        self.strict = strict
        self.lines: dict[str, int] = {}
        self.columns: dict[str, int] = {}
        self.merged: set[str] = set()
        self.sizes: dict[int, int] = {}
        self.active: set[int] = set()
        self.memo: dict[int, list[tuple[yaml.ScalarNode, yaml.Node, bool]]] = {}
        self.built: dict[int, Any] = {}
        self.constructor: Any = None

    def error(self, message: str, node: yaml.Node) -> YamlError:
        return YamlError(message, file=self.file, line=node.start_mark.line + 1, column=node.start_mark.column + 1)

    def mark(self, pointer: str, node: yaml.Node) -> None:
        self.lines.setdefault(pointer, node.start_mark.line + 1)
        self.columns.setdefault(pointer, node.start_mark.column + 1)

    def size(self, node: yaml.Node, depth: int = 0) -> int:
        """Nodes ``node`` expands to, aliases counted each time; each distinct node is counted once,
        so an alias bomb is refused in time linear in the text."""
        key = id(node)
        if key in self.sizes:
            return self.sizes[key]
        if depth > MAX_DEPTH:
            raise self.error(f"document nests deeper than {MAX_DEPTH} levels", node)
        if key in self.active:
            raise self.error("recursive alias: a collection contains itself", node)
        self.active.add(key)
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = node.value
        else:
            children = []
        total = 1 + sum(self.size(child, depth + 1) for child in children)
        self.active.discard(key)
        if total > MAX_NODES:
            raise self.error(f"document expands to more than {MAX_NODES} nodes (alias bomb?)", node)
        self.sizes[key] = total
        return total

    def walk(self, node: yaml.Node, pointer: str, depth: int = 0) -> None:
        """Record lines and columns of every pointer. With aliases, call ``size`` first: it bounds this walk."""
        if depth > MAX_DEPTH:
            raise self.error(f"document nests deeper than {MAX_DEPTH} levels", node)
        self.mark(pointer, node)
        if isinstance(node, yaml.MappingNode):
            if self.strict:
                self.check_indent(node)
            for key_node, value_node, merged in self.pairs(node):
                child = join_pointer(pointer, key_node.value)
                if merged:
                    self.merged.add(child)
                self.mark(child, key_node)
                self.walk(value_node, child, depth + 1)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.walk(item, join_pointer(pointer, index), depth + 1)
        elif node.tag == _FLOAT_TAG:
            self.scalar(cast("yaml.ScalarNode", node))  # the two-pass way constructs later: check the number here

    def build(self, node: yaml.Node, pointer: str, depth: int = 0) -> Any:
        """``walk`` and construct the data in the same pass, as PyYAML's safe constructor would.

        One pass instead of two, and no generic constructor machinery: about
        twice as fast on a long manifest. Raises ``_Unusual`` for what only
        the constructor handles; the caller then takes the two-pass way.
        """
        if depth > MAX_DEPTH:
            raise self.error(f"document nests deeper than {MAX_DEPTH} levels", node)
        self.lines.setdefault(pointer, node.start_mark.line + 1)
        self.columns.setdefault(pointer, node.start_mark.column + 1)
        kind = type(node)
        if kind is yaml.ScalarNode:
            return node.value if node.tag == _STR_TAG else self.scalar(cast("yaml.ScalarNode", node))
        if node.tag != (_MAP_TAG if kind is yaml.MappingNode else _SEQ_TAG):
            raise _Unusual
        key = id(node)
        if key in self.built:  # an alias: the same object, its lines recorded under this pointer too
            self.walk(node, pointer, depth)
            return self.built[key]
        depth += 1
        if kind is yaml.SequenceNode:
            items: list[Any] = []
            self.built[key] = items
            for index, item in enumerate(node.value):
                items.append(self.build(item, f"{pointer}/{index}", depth))
            return items
        mapping: dict[Any, Any] = {}
        self.built[key] = mapping
        node = cast("yaml.MappingNode", node)  # type identity above, which mypy does not narrow on
        if self.strict:
            self.check_indent(node)
        for key_node, value_node, merged in self.pairs(node):
            if merged:  # PyYAML orders merged keys first; its constructor keeps that order
                raise _Unusual
            name = key_node.value
            child = f"{pointer}/{name.replace('~', '~0').replace('/', '~1')}"
            self.lines.setdefault(child, key_node.start_mark.line + 1)
            self.columns.setdefault(child, key_node.start_mark.column + 1)
            if key_node.tag != _STR_TAG:
                name = self.scalar(key_node)
            mapping[name] = self.build(value_node, child, depth)
        return mapping

    def scalar(self, node: yaml.ScalarNode) -> Any:
        """A scalar of a tag other than str (null, bool, int, float, binary, timestamp)."""
        if node.tag not in _SCALAR_TAGS:
            raise _Unusual
        if self.constructor is None:
            self.constructor = yaml.constructor.SafeConstructor()
        try:
            value = self.constructor.yaml_constructors[node.tag](self.constructor, node)
        except yaml.MarkedYAMLError as exc:
            raise _marked_error(exc, self.file) from None
        except (ValueError, TypeError, OverflowError) as exc:  # e.g. 2001-02-30 or !!int x
            raise YamlError(
                f"invalid YAML value: {exc}",
                file=self.file,
                line=node.start_mark.line + 1,
                column=node.start_mark.column + 1,
            ) from None
        if type(value) is float and (value != value or value in (_INF, -_INF)):
            raise YamlError(
                f"'{node.value}' is not a finite number: no field of any format accepts NaN or infinity",
                file=self.file,
                line=node.start_mark.line + 1,
                column=node.start_mark.column + 1,
            )
        return value

    def pairs(self, node: yaml.MappingNode) -> list[tuple[yaml.ScalarNode, yaml.Node, bool]]:
        """``(key, value, merged)``: own pairs, then pairs merged with ``<<`` (own and earlier keys win)."""
        if id(node) in self.memo:
            return self.memo[id(node)]
        pairs: list[tuple[yaml.ScalarNode, yaml.Node, bool]] = []
        merges: list[yaml.MappingNode] = []
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            if not isinstance(key_node, yaml.ScalarNode):
                raise self.error("mapping keys must be plain scalars", key_node)
            is_merge = key_node.tag == MERGE_TAG
            ident = MERGE_TAG if is_merge else key_node.value
            if ident in seen:
                label = "merge key '<<'" if is_merge else f"key '{key_node.value}'"
                raise self.error(f"duplicate {label} (first defined on line {seen[ident]})", key_node)
            seen[ident] = key_node.start_mark.line + 1
            if not is_merge:
                pairs.append((key_node, value_node, False))
                continue
            sources = _merge_sources(value_node)
            if sources is None:
                raise self.error("merge key '<<' needs a mapping or a list of mappings", value_node)
            merges.extend(sources)
        for source in merges:
            for key_node, value_node, _ in self.pairs(source):
                if key_node.value not in seen:
                    seen[key_node.value] = key_node.start_mark.line + 1
                    pairs.append((key_node, value_node, True))
        self.memo[id(node)] = pairs
        return pairs

    def check_indent(self, node: yaml.MappingNode) -> None:
        """StrictYAML's rule: the mappings that are values of one mapping start in the same column."""
        column: int | None = None
        for key_node, value_node in node.value:
            if isinstance(value_node, yaml.MappingNode) and key_node.tag != MERGE_TAG:
                if column is None:
                    column = value_node.start_mark.column
                elif value_node.start_mark.column != column:
                    raise self.error(
                        f"the mapping under '{key_node.value}' is indented differently from the "
                        "mappings before it; indent sibling mappings alike",
                        value_node,
                    )

    def strings(self, node: yaml.Node) -> Any:
        """Construct with every scalar read as a string (the Agent Skills convention); merges applied."""
        if isinstance(node, yaml.MappingNode):
            return {key.value: self.strings(value) for key, value, _ in self.pairs(node)}
        if isinstance(node, yaml.SequenceNode):
            return [self.strings(item) for item in node.value]
        return node.value


def _check_strict_tokens(text: str, file: str | None) -> None:
    loader = _BaseLoader(text)
    try:
        while (token := loader.get_token()) is not None:
            reason = _STRICT_DISALLOWED.get(type(token).__name__)
            if reason:
                mark = token.start_mark
                raise YamlError(f"invalid YAML: {reason}", file=file, line=mark.line + 1, column=mark.column + 1)
    except yaml.YAMLError:
        return  # composing reports syntax errors with a better message
    finally:
        loader.dispose()


_DOCUMENT_END = re.compile(r"^\.\.\.(?:[ \t].*)?$", re.M)


def _check_single_document_end(text: str, file: str | None) -> None:
    """The reference parser reads a second ``...`` marker as a second (empty) document and refuses it."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # every YAML line break
    ends = list(_DOCUMENT_END.finditer(text))
    if len(ends) > 1:
        line = text.count("\n", 0, ends[1].start()) + 1
        raise YamlError(
            "invalid YAML: expected a single document in the stream, but found a second document end marker '...'",
            file=file,
            line=line,
            column=1,
        )


def _reader_error(exc: yaml.reader.ReaderError, text: str, file: str | None) -> YamlError:
    """A ``ReaderError`` (bad character) with the line and column of that character."""
    index = text.find(chr(exc.character)) if isinstance(exc.character, int) else -1
    if index < 0:
        return YamlError(f"invalid YAML: {exc.reason}", file=file)
    line = text.count("\n", 0, index) + 1
    column = index - (text.rfind("\n", 0, index) + 1) + 1
    return YamlError(
        f"invalid YAML: character U+{exc.character:04X} is not allowed ({exc.reason})",
        file=file,
        line=line,
        column=column,
    )


def _marked_error(exc: yaml.MarkedYAMLError, file: str | None) -> YamlError:
    mark = exc.problem_mark or exc.context_mark
    problem = exc.problem or str(exc)
    if "maximum nesting depth" in problem:  # PyYAML >= 6.0.3 refuses deep nesting in its scanner: say it as we do
        problem = f"document nests deeper than {MAX_DEPTH} levels"
    elif exc.context:
        problem = f"{exc.context}, {problem}"
    return YamlError(
        f"invalid YAML: {problem}",
        file=file,
        line=mark.line + 1 if mark else None,
        column=mark.column + 1 if mark else None,
    )


class _StringsLoader(_BaseLoader):  # type: ignore[misc]  # the base is chosen at import time (C or Python loader)
    """For ``strings_only``: the only scalar tag ever read is the merge key's, so implicit resolution
    is reduced to what the YAML 1.1 resolvers give a plain ``<<`` (merge) and any other scalar (str, as
    it is read). It skips a regular-expression scan per scalar; the data is the same."""

    def resolve(self, kind: type, value: str, implicit: tuple[bool, bool]) -> str:
        if kind is yaml.ScalarNode:
            return MERGE_TAG if implicit[0] and value == "<<" else self.DEFAULT_SCALAR_TAG
        return super().resolve(kind, value, implicit)  # type: ignore[no-any-return]  # PyYAML is untyped here


def _compose(text: str, file: str | None, strings_only: bool = False) -> yaml.Node | None:
    try:
        loader = (_StringsLoader if strings_only else _BaseLoader)(text)
    except yaml.reader.ReaderError as exc:
        raise _reader_error(exc, text, file) from None
    try:
        node: yaml.Node | None = loader.get_single_node()
        return node
    except yaml.reader.ReaderError as exc:
        raise _reader_error(exc, text, file) from None
    except yaml.MarkedYAMLError as exc:
        raise _marked_error(exc, file) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {exc}", file=file) from None
    finally:
        loader.dispose()


def _construct(node: yaml.Node, file: str | None) -> Any:
    constructor = _BaseLoader("")
    try:
        return constructor.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        raise _marked_error(exc, file) from None
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. 2001-02-30 or !!int x
        where = _scalar_hint(node)
        raise YamlError(f"invalid YAML value: {exc}", file=file, line=where[0], column=where[1]) from None
    finally:
        constructor.dispose()


def _scalar_hint(node: yaml.Node) -> tuple[int | None, int | None]:
    """Line and column of the first scalar that fails to construct on its own (for value errors)."""
    constructor = _BaseLoader("")
    stack = [node]
    try:
        while stack:
            current = stack.pop()
            if isinstance(current, yaml.ScalarNode):
                try:
                    constructor.construct_object(current)
                except Exception:
                    return current.start_mark.line + 1, current.start_mark.column + 1
            elif isinstance(current, yaml.MappingNode):
                stack.extend(v for pair in reversed(current.value) for v in reversed(pair))
            elif isinstance(current, yaml.SequenceNode):
                stack.extend(reversed(current.value))
    finally:
        constructor.dispose()
    return None, None


def parse_yaml(text: str, *, file: str | None = None, strings_only: bool = False, strict: bool = False) -> YamlDocument:
    """Parse one YAML document from ``text``; see ``load_yaml``.

    ``strings_only`` reads every scalar as a string; ``strict`` applies the
    StrictYAML rules the Agent Skills reference parser uses.
    """
    if len(text) > MAX_BYTES:
        raise YamlError(f"YAML document is larger than {MAX_BYTES} bytes", file=file)
    if strict and any(c in text for c in "[{&*!"):  # no such character, no disallowed token: skip the scan
        _check_strict_tokens(text, file)
    if strict and text.count("...") > 1:
        _check_single_document_end(text, file)
    node = _compose(text, file, strings_only)
    if node is None:
        return YamlDocument(data=None, file=file)
    walker = _Walker(file, strict)
    if "*" in text:  # only aliases make a document expand beyond its text
        walker.size(node)
    if strings_only:
        walker.walk(node, "")
        data = walker.strings(node)
    else:
        try:
            data = walker.build(node, "")
        except _Unusual:
            walker = _Walker(file, strict)
            walker.walk(node, "")
            data = _construct(node, file)
    return YamlDocument(data=data, file=file, lines=walker.lines, columns=walker.columns, merged=walker.merged)


def load_yaml(path: str | Path, *, display: str | None = None, strings_only: bool = False) -> YamlDocument:
    """Load a YAML file. ``display`` is the name findings use (default: the path as given).

    Raises ``YamlError`` with file, line and column on a syntax error, a
    duplicate key, an oversized file or an alias bomb; I/O errors become
    ``YamlError`` too, so callers need catch one thing.
    """
    from agentpack.io.userfiles import read_text

    name = display or str(path)
    text = read_text(
        path, display=name, error=YamlError, expected="a YAML file", max_bytes=MAX_BYTES, encoding="utf-8-sig"
    )
    return parse_yaml(text, file=name, strings_only=strings_only)
