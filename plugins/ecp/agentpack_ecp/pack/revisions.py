"""Update ``sources[].revision`` in EXPERT.yaml without touching anything else.

A careful text edit, not a re-dump: the YAML is composed into nodes (which
carry exact character positions), each changed scalar is replaced in place by
a JSON-quoted value (valid YAML), new keys are inserted as lines with the
indentation of their siblings, and a flow-style or missing ``revision`` is
replaced or added as one flow mapping. Comments, quoting style, key order and
blank lines elsewhere survive byte for byte. The result is parsed again and
must equal the intended data, or nothing is written.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import yaml

from agentpack.io.errors import AgentpackError
from agentpack.io.fsutil import atomic_write_text

from .layout import MANIFEST_PATH

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader when PyYAML has it: the values are the same, read several times faster (the edits
need the pure-Python composer's character offsets, so ``yaml.compose`` keeps ``SafeLoader``)."""


def _load(text: str) -> Any:
    return yaml.load(text, Loader=_LOADER)  # a safe loader (C or Python)


def _scalar(value: Any) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, (int, float)):
        return json.dumps(value)
    if isinstance(value, str):  # YAML's own double-quoted escapes (JSON's surrogate pairs are not YAML)
        return yaml.safe_dump(value, default_style='"', width=float("inf"), allow_unicode=True).rstrip("\n")
    return json.dumps(value, sort_keys=True)


def _styled(value: Any, style: str | None) -> str:
    """``value`` in the quoting style of the scalar it replaces, when that style can hold it."""
    if isinstance(value, str) and value.isprintable() and value.strip() == value and value:
        if style == "'" and "'" not in value:
            return f"'{value}'"
        if style is None and ": " not in value and " #" not in value and not value.startswith(("'", '"')):
            try:
                if _load(value) == value:
                    return value
            except yaml.YAMLError:
                pass
    return _scalar(value)


def _flow(mapping: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {_scalar(v)}" for k, v in mapping.items()) + "}"


def _key_node(mapping: yaml.MappingNode, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    for k, v in mapping.value:
        if isinstance(k, yaml.ScalarNode) and k.value == key:
            return k, v
    return None


def _line_end(text: str, index: int) -> int:
    end = text.find("\n", index)
    return len(text) if end < 0 else end


class _Edits:
    """Non-overlapping (start, end, replacement) edits applied from the end."""

    def __init__(self) -> None:
        self.items: list[tuple[int, int, str]] = []

    def replace(self, start: int, end: int, text: str) -> None:
        self.items.append((start, end, text))

    def apply(self, text: str) -> str:
        for start, end, new in sorted(self.items, key=lambda e: (e[0], e[1]), reverse=True):
            text = text[:start] + new + text[end:]
        return text


def _last_content_line_end(text: str, node: yaml.Node) -> int:
    """Offset of the end of the last line holding ``node``'s content (after any comment on it).

    Block collections end where the next token starts (possibly lines later),
    so follow the last value down to a scalar or flow node, whose end is exact.
    """
    while isinstance(node, (yaml.MappingNode, yaml.SequenceNode)) and not node.flow_style and node.value:
        node = node.value[-1][1] if isinstance(node, yaml.MappingNode) else node.value[-1]
    end = node.end_mark.index
    if end > 0 and text[end - 1] == "\n":
        end -= 1
    return _line_end(text, end)


def _edit_source(text: str, source: yaml.MappingNode, revision: dict[str, Any], edits: _Edits) -> None:
    found = _key_node(source, "revision")
    if found is None:
        first_key = source.value[0][0]
        indent = " " * first_key.start_mark.column
        at = _last_content_line_end(text, source)
        edits.replace(at, at, f"\n{indent}revision: {_flow(revision)}")
        return
    _, node = found
    if not isinstance(node, yaml.MappingNode) or node.flow_style or not node.value:
        current: Any = {}
        if isinstance(node, yaml.MappingNode):
            current = _load(text[node.start_mark.index : node.end_mark.index]) or {}
        merged = {**current, **revision} if isinstance(current, dict) else dict(revision)
        edits.replace(node.start_mark.index, node.end_mark.index, _flow(merged))
        return
    indent = " " * node.value[0][0].start_mark.column
    missing: list[str] = []
    for key, value in revision.items():
        pair = _key_node(node, key)
        if pair is None:
            missing.append(key)
        elif isinstance(pair[1], yaml.ScalarNode):
            if _load(text[pair[1].start_mark.index : pair[1].end_mark.index] or "null") != value:
                edits.replace(pair[1].start_mark.index, pair[1].end_mark.index, _styled(value, pair[1].style))
        else:
            edits.replace(pair[1].start_mark.index, pair[1].end_mark.index, _scalar(value))
    if missing:
        at = _last_content_line_end(text, node)
        edits.replace(at, at, "".join(f"\n{indent}{key}: {_scalar(revision[key])}" for key in missing))


def update_text(text: str, revisions: dict[str, dict[str, Any]], *, file: str = MANIFEST_PATH) -> str:
    """``text`` with ``sources[source_id].revision`` updated from ``revisions`` (keys set, none removed)."""
    return _updated(text, json.dumps(revisions, sort_keys=True), file)


@functools.lru_cache(maxsize=2)
def _updated(text: str, revisions_json: str, file: str) -> str:
    """``update_text``, remembered: a publish checks the edit before writing its journal, then makes it."""
    revisions: dict[str, dict[str, Any]] = json.loads(revisions_json)
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)  # pure-Python marks: character offsets
        data = _load(text)
    except yaml.YAMLError as exc:
        raise AgentpackError(f"cannot parse EXPERT.yaml to update revisions: {exc}", file=file) from None
    sources = _key_node(root, "sources") if isinstance(root, yaml.MappingNode) else None
    if sources is None or not isinstance(sources[1], yaml.SequenceNode):
        raise AgentpackError("EXPERT.yaml has no sources list", file=file)
    edits = _Edits()
    expected = copy.deepcopy(data)
    seen = set()
    for i, node in enumerate(sources[1].value):
        sid = _key_node(node, "source_id") if isinstance(node, yaml.MappingNode) else None
        if sid is None or sid[1].value not in revisions:
            continue
        if isinstance(node, yaml.MappingNode) and node.flow_style:
            raise AgentpackError(
                f"sources[{i}] is a flow mapping; write it in block style to let refresh update its revision",
                file=file,
                line=node.start_mark.line + 1,
            )
        seen.add(sid[1].value)
        new = revisions[sid[1].value]
        _edit_source(text, node, new, edits)
        old = expected["sources"][i].get("revision")
        expected["sources"][i]["revision"] = {**(old if isinstance(old, dict) else {}), **new}
    unknown = set(revisions) - seen
    if unknown:
        raise AgentpackError(f"no source with source_id {', '.join(sorted(unknown))} in EXPERT.yaml", file=file)
    result = edits.apply(text)
    if _load(result) != expected:
        raise AgentpackError(
            "could not update the revisions in EXPERT.yaml without changing its meaning; nothing was written",
            file=file,
            hint="please report this with the file",
        )
    return result


def update_manifest(root: Path, revisions: dict[str, dict[str, Any]]) -> bool:
    """Update ``expert/EXPERT.yaml`` atomically; returns whether it changed."""
    path = Path(root) / MANIFEST_PATH
    text = path.read_text(encoding="utf-8")
    new = update_text(text, revisions, file=str(path))
    if new != text:
        atomic_write_text(path, new, mode=path.stat().st_mode & 0o777)  # the user's file keeps its mode
    return new != text


def current_revisions(manifest: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``{source_id: revision}`` as declared in a loaded manifest."""
    out: dict[str, dict[str, Any]] = {}
    for source in manifest.get("sources") or []:
        if isinstance(source, dict) and isinstance(source.get("source_id"), str):
            rev = source.get("revision")
            out[source["source_id"]] = dict(rev) if isinstance(rev, dict) else {}
    return out
