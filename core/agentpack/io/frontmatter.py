"""Markdown files with a YAML frontmatter block (SKILL.md, openexperts components, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentpack.io.errors import PackError, YamlError
from agentpack.io.yamldoc import YamlDocument
from agentpack.io.yamlsimple import parse_simple

_YAML11_BREAKS = {ord("\x85"): "\ufdd0", ord("\u2028"): "\ufdd1", ord("\u2029"): "\ufdd2"}
"""NEL, LS and PS are line breaks to PyYAML (YAML 1.1) but ordinary characters to the reference
parser (YAML 1.2); they are swapped for Unicode noncharacters while parsing, then swapped back."""
_RESTORE = {ord(v): chr(k) for k, v in _YAML11_BREAKS.items()}


@dataclass
class MarkdownDocument:
    """A markdown file split into its frontmatter (with line numbers) and body."""

    path: Path
    display: str
    frontmatter: YamlDocument
    body: str
    body_line: int

    @property
    def meta(self) -> dict[str, Any]:
        data = self.frontmatter.data
        return data if isinstance(data, dict) else {}


def split_frontmatter(text: str, *, file: str | None = None) -> tuple[str, str, int]:
    """Split ``---``-delimited frontmatter from the body.

    Follows the Agent Skills reference: the text must start with ``---`` and
    the frontmatter runs to the next ``---``. Frontmatter line numbers equal
    file line numbers. Returns ``(frontmatter, body, body_line)``.
    """
    if text.startswith("\ufeff"):
        raise PackError(
            "file starts with a byte-order mark; it must start with '---'",
            file=file,
            line=1,
            hint="save the file as UTF-8 without BOM",
        )
    if not text.startswith("---"):
        raise PackError("missing YAML frontmatter: the file must start with '---'", file=file, line=1)
    parts = text.split("---", 2)
    if len(parts) < 3:
        raise PackError("frontmatter is not closed with a second '---'", file=file, line=1)
    front, body = parts[1], parts[2]
    body_line = 1 + text[: len(parts[0]) + 3 + len(front) + 3].count("\n")
    return front, body.strip(), body_line


def _swap(value: Any, table: dict[int, str]) -> Any:
    if isinstance(value, str):
        return value.translate(table)
    if isinstance(value, dict):
        return {_swap(k, table): _swap(v, table) for k, v in value.items()}
    if isinstance(value, list):
        return [_swap(item, table) for item in value]
    return value


def parse_frontmatter_text(front: str, *, file: str | None = None, strings_only: bool = False) -> YamlDocument:
    """Parse frontmatter YAML. ``strings_only`` reads it as the Agent Skills reference does:
    every scalar a string, StrictYAML's rules (no flow style, anchors, aliases, tags; sibling
    mappings indented alike), and NEL/LS/PS kept as characters, not line breaks (YAML 1.2).
    Frontmatter of the usual shape is read by ``yamlsimple`` without importing PyYAML."""
    if strings_only:
        simple = parse_simple(front, file)
        if simple is not None:
            return simple
    from agentpack.io.yamlio import parse_yaml

    if not strings_only:
        return parse_yaml(front, file=file)
    protect = any(chr(c) in front for c in _YAML11_BREAKS) and not any(chr(c) in front for c in _RESTORE)
    if not protect:
        if "\t" in front:
            _refuse_tabs(front, file)
        return parse_yaml(front, file=file, strings_only=True, strict=True)
    swapped = _swap(front, _YAML11_BREAKS)
    if "\t" in swapped:
        _refuse_tabs(swapped, file)
    document = parse_yaml(swapped, file=file, strings_only=True, strict=True)
    return YamlDocument(
        data=_swap(document.data, _RESTORE),
        file=document.file,
        lines={_swap(k, _RESTORE): v for k, v in document.lines.items()},
        columns={_swap(k, _RESTORE): v for k, v in document.columns.items()},
        merged={_swap(k, _RESTORE) for k in document.merged},
    )


def _refuse_tabs(front: str, file: str | None) -> None:
    """Refuse a tab where the reference parser does: anywhere but in quoted scalars, block scalar
    content and comments (``description: a<TAB>b`` included).

    The reference parser (ruamel) shares that rule with PyYAML's pure-Python scanner, while libyaml
    reads tabs inside plain scalars; so frontmatter holding a tab (rare) is also scanned in Python,
    and only a stop at a tab counts: every other syntax error is left to the parse.
    """
    import yaml  # already imported by yamlio

    try:
        for _ in yaml.scan(front, Loader=yaml.SafeLoader):
            pass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        if mark is not None and front[mark.index : mark.index + 1] == "\t":
            raise YamlError(
                "invalid YAML: a tab character is not allowed here; the Agent Skills reference parser "
                "accepts tabs only inside quoted or block scalars and comments",
                file=file,
                line=mark.line + 1,
                column=mark.column + 1,
                hint="replace the tab with spaces, or quote the value",
            ) from None
    except yaml.YAMLError:
        pass  # not a tab: the parse reports it with libyaml's message


def read_markdown(
    path: str | Path, *, display: str | None = None, strings_only: bool = False, text: str | None = None
) -> MarkdownDocument:
    """Read a markdown file with frontmatter; raises ``PackError`` with file:line on any problem.

    ``text`` is the file's content when the caller has already read it (as ``open(path,
    encoding="utf-8").read()`` reads it: universal newlines); the file is then not opened.
    """
    path = path if isinstance(path, Path) else Path(path)
    name = display or str(path)
    if text is None:
        from agentpack.io.userfiles import read_text

        text = read_text(path, display=name, expected="a Markdown file")
    front, body, body_line = split_frontmatter(text, file=name)
    document = parse_frontmatter_text(front, file=name, strings_only=strings_only)
    return MarkdownDocument(path=path, display=name, frontmatter=document, body=body, body_line=body_line)


def frontmatter_json(front: str, *, file: str | None = None) -> dict[str, Any]:
    """Frontmatter as a standard YAML parser reads it (PyYAML ``safe_load``), in JSON form.

    What MCP skill entries carry (SEP-2640: the frontmatter verbatim as a JSON object): numbers,
    booleans and nulls typed as YAML 1.1 types them, a date or time as its ISO text. Raises
    ``PackError`` for YAML that does not parse, a frontmatter that is not a mapping, or a value
    JSON cannot hold (``.nan``, ``.inf``, binary).
    """
    simple = parse_simple(front, file, typed=True)
    if simple is not None:
        data: Any = simple.data
    else:
        import yaml

        try:
            data = yaml.safe_load(front)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise PackError(f"invalid YAML: {exc}", file=file, line=mark.line + 1 if mark else None) from None
        data = _json_form(data, file)
    if not isinstance(data, dict):
        raise PackError("frontmatter must be a YAML mapping", file=file, line=1)
    return data


def _json_form(value: Any, file: str | None) -> Any:
    """``value`` from ``safe_load`` as JSON holds it: dates as ISO text, keys as JSON writes them."""
    import datetime
    import math

    if isinstance(value, dict):
        return {_json_key(k, file): _json_form(v, file) for k, v in value.items()}
    if isinstance(value, list):
        return [_json_form(v, file) for v in value]
    if isinstance(value, (datetime.date, datetime.datetime)):
        return value.isoformat()
    if isinstance(value, float) and not math.isfinite(value):
        raise PackError(f"the value {value} has no JSON form", file=file)
    if value is None or isinstance(value, (str, int, float)):
        return value
    raise PackError(f"a {type(value).__name__} value has no JSON form", file=file)


def _json_key(key: Any, file: str | None) -> str:
    if isinstance(key, str):
        return key
    import json

    if isinstance(key, bool) or key is None:
        return json.dumps(key)
    form = _json_form(key, file)
    if isinstance(form, (str, int, float)):
        return str(form)
    raise PackError(f"a {type(key).__name__} key has no JSON form", file=file)
