"""Markdown files with a YAML frontmatter block (SKILL.md, openexperts components, ...)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .errors import PackError, YamlError
from .yamlio import YamlDocument, _BaseLoader, parse_yaml

_STRICT_DISALLOWED = {
    "FlowMappingStartToken": "flow-style mappings ({...}) are not allowed; use block style",
    "FlowSequenceStartToken": "flow-style lists ([...]) are not allowed; use block style",
    "AnchorToken": "YAML anchors (&) are not allowed",
    "AliasToken": "YAML aliases (*) are not allowed",
    "TagToken": "YAML tags (!) are not allowed",
}


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
        raise PackError("file starts with a byte-order mark; it must start with '---'", file=file, line=1,
                        hint="save the file as UTF-8 without BOM")
    if not text.startswith("---"):
        raise PackError("missing YAML frontmatter: the file must start with '---'", file=file, line=1)
    parts = text.split("---", 2)
    if len(parts) < 3:
        raise PackError("frontmatter is not closed with a second '---'", file=file, line=1)
    front, body = parts[1], parts[2]
    body_line = 1 + text[: len(parts[0]) + 3 + len(front) + 3].count("\n")
    return front, body.strip(), body_line


def _check_strict_tokens(text: str, file: str | None) -> None:
    loader = _BaseLoader(text)
    try:
        while (token := loader.get_token()) is not None:
            reason = _STRICT_DISALLOWED.get(type(token).__name__)
            if reason:
                mark = token.start_mark
                raise YamlError(f"invalid frontmatter: {reason}", file=file, line=mark.line + 1,
                                column=mark.column + 1)
    except yaml.MarkedYAMLError:
        return  # the parser reports syntax errors with a better message
    finally:
        loader.dispose()


def parse_frontmatter_text(front: str, *, file: str | None = None, strings_only: bool = False) -> YamlDocument:
    """Parse frontmatter YAML. ``strings_only`` reads it as the Agent Skills reference does:
    every scalar a string, and no flow style, anchors, aliases or tags."""
    if strings_only:
        _check_strict_tokens(front, file)
    return parse_yaml(front, file=file, strings_only=strings_only)


def read_markdown(path: str | Path, *, display: str | None = None, strings_only: bool = False) -> MarkdownDocument:
    """Read a markdown file with frontmatter; raises ``PackError`` with file:line on any problem."""
    path = Path(path)
    name = display or str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise PackError(f"not UTF-8 text: {exc.reason} at byte {exc.start}", file=name) from None
    except OSError as exc:
        raise PackError(f"cannot read: {exc.strerror or exc}", file=name) from None
    front, body, body_line = split_frontmatter(text, file=name)
    document = parse_frontmatter_text(front, file=name, strings_only=strings_only)
    return MarkdownDocument(path=path, display=name, frontmatter=document, body=body, body_line=body_line)
