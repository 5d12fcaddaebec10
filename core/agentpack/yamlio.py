"""YAML loading for packs: C loader when present, duplicate keys rejected, line numbers kept.

``load_yaml`` returns a ``YamlDocument``: the data plus a map from JSON pointer
to line, so findings can point at ``file:line``. Safety limits stop oversized
files and alias bombs before they cost memory or time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import YamlError

try:  # the libyaml-backed loader is several times faster
    _BaseLoader: type = yaml.CSafeLoader  # type: ignore[attr-defined]
except AttributeError:  # pragma: no cover - depends on the build of PyYAML
    _BaseLoader = yaml.SafeLoader

MAX_BYTES = 16 * 1024 * 1024
MAX_NODES = 1_000_000
"""Most nodes a document may expand to, aliases counted each time they are used."""


def escape_pointer(token: Any) -> str:
    return str(token).replace("~", "~0").replace("/", "~1")


def join_pointer(pointer: str, token: Any) -> str:
    return f"{pointer}/{escape_pointer(token)}"


@dataclass
class YamlDocument:
    data: Any
    file: str | None = None
    lines: dict[str, int] = field(default_factory=dict)
    columns: dict[str, int] = field(default_factory=dict)

    def line_of(self, pointer: str = "") -> int | None:
        """Line (1-based) of the field at ``pointer``, or of its nearest parent that has one."""
        while True:
            if pointer in self.lines:
                return self.lines[pointer]
            if not pointer:
                return None
            pointer = pointer.rsplit("/", 1)[0]

    def where(self, pointer: str = "") -> dict[str, Any]:
        """``file``, ``line`` and ``pointer`` keyword arguments for a ``Finding``."""
        return {"file": self.file, "line": self.line_of(pointer), "pointer": pointer or None}


class _Walker:
    """Builds the pointer-to-line map, checks duplicate keys and counts expansion."""

    def __init__(self, file: str | None, strings_only: bool) -> None:
        self.file = file
        self.strings_only = strings_only
        self.lines: dict[str, int] = {}
        self.columns: dict[str, int] = {}
        self.count = 0

    def error(self, message: str, node: yaml.Node) -> YamlError:
        return YamlError(message, file=self.file, line=node.start_mark.line + 1, column=node.start_mark.column + 1)

    def walk(self, node: yaml.Node, pointer: str) -> None:
        self.count += 1
        if self.count > MAX_NODES:
            raise self.error(f"document expands to more than {MAX_NODES} nodes (alias bomb?)", node)
        self.lines.setdefault(pointer, node.start_mark.line + 1)
        self.columns.setdefault(pointer, node.start_mark.column + 1)
        if isinstance(node, yaml.MappingNode):
            seen: dict[str, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    self.walk(value_node, pointer)
                    continue
                if not isinstance(key_node, yaml.ScalarNode):
                    raise self.error("mapping keys must be plain scalars", key_node)
                key = key_node.value
                if key in seen:
                    raise self.error(
                        f"duplicate key '{key}' (first defined on line {seen[key]})", key_node
                    )
                seen[key] = key_node.start_mark.line + 1
                child = join_pointer(pointer, key)
                self.lines.setdefault(child, key_node.start_mark.line + 1)
                self.columns.setdefault(child, key_node.start_mark.column + 1)
                self.walk(value_node, child)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                self.walk(item, join_pointer(pointer, index))

    def strings(self, node: yaml.Node) -> Any:
        """Construct with every scalar read as a string (the Agent Skills convention)."""
        if isinstance(node, yaml.MappingNode):
            return {k.value: self.strings(v) for k, v in node.value}
        if isinstance(node, yaml.SequenceNode):
            return [self.strings(item) for item in node.value]
        return node.value


def _compose(text: str, file: str | None) -> yaml.Node | None:
    loader = _BaseLoader(text)
    try:
        return loader.get_single_node()
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or str(exc)
        if exc.context:
            problem = f"{exc.context}, {problem}"
        raise YamlError(
            f"invalid YAML: {problem}",
            file=file,
            line=mark.line + 1 if mark else None,
            column=mark.column + 1 if mark else None,
        ) from None
    except yaml.YAMLError as exc:
        raise YamlError(f"invalid YAML: {exc}", file=file) from None
    finally:
        loader.dispose()


def parse_yaml(text: str, *, file: str | None = None, strings_only: bool = False) -> YamlDocument:
    """Parse one YAML document from ``text``; see ``load_yaml``."""
    if len(text) > MAX_BYTES:
        raise YamlError(f"YAML document is larger than {MAX_BYTES} bytes", file=file)
    node = _compose(text, file)
    if node is None:
        return YamlDocument(data=None, file=file)
    walker = _Walker(file, strings_only)
    walker.walk(node, "")
    if strings_only:
        data = walker.strings(node)
    else:
        constructor = _BaseLoader("")
        try:
            data = constructor.construct_document(node)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark
            raise YamlError(f"invalid YAML: {exc.problem}", file=file,
                            line=mark.line + 1 if mark else None) from None
        finally:
            constructor.dispose()
    return YamlDocument(data=data, file=file, lines=walker.lines, columns=walker.columns)


def load_yaml(path: str | Path, *, display: str | None = None, strings_only: bool = False) -> YamlDocument:
    """Load a YAML file. ``display`` is the name findings use (default: the path as given).

    Raises ``YamlError`` with file, line and column on a syntax error, a
    duplicate key, an oversized file or an alias bomb; I/O errors become
    ``YamlError`` too, so callers need catch one thing.
    """
    path = Path(path)
    name = display or str(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise YamlError(f"YAML file is {size} bytes, more than the limit of {MAX_BYTES}", file=name)
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        raise YamlError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", file=name) from None
    except OSError as exc:
        raise YamlError(f"cannot read: {exc.strerror or exc}", file=name) from None
    return parse_yaml(text, file=name, strings_only=strings_only)
