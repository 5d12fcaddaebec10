"""A skill folder: its ``skill.yaml`` (with line numbers) and the files it names."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from agentpack.io import jsonio
from agentpack.io.errors import PackError, PathEscapeError
from agentpack.io.paths import check_inside
from agentpack.io.userfiles import check_file
from agentpack.kernel.records import Record

if TYPE_CHECKING:
    from agentpack.io.yamldoc import YamlDocument

MANIFEST = "skill.yaml"
ID_RE = re.compile(r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$")
SLUG_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
DEFAULT_TIMEOUT_MS = 60_000
JsonSchema = dict[str, Any] | bool
"""A JSON Schema: an object, or ``true``/``false``."""


def is_skill_dir(path: Path) -> bool:
    """A folder with something at ``skill.yaml``: a folder or a link there is the skill's error, not another format."""
    return path.is_dir() and os.path.lexists(path / MANIFEST)


def tree_skill_dirs(tree: Path) -> list[Path]:
    """Skill folders directly under a ``skills/`` tree (``_``- and dot-prefixed folders are infrastructure)."""
    return sorted(p for p in tree.iterdir() if p.is_dir() and p.name[:1] not in "._" and is_skill_dir(p))


class SkillManifest(Record):
    """A loaded ``skill.yaml`` (``directory``, ``doc``); ``data`` is the raw mapping (it may be invalid)."""

    __slots__ = ("directory", "doc", "_schemas")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"_schemas": dict}
    directory: Path
    doc: YamlDocument
    _schemas: dict[str, JsonSchema]

    @property
    def data(self) -> dict[str, Any]:
        return self.doc.data

    @property
    def file(self) -> str:
        return self.doc.file or str(self.directory / MANIFEST)

    def get(self, *keys: str, default: Any = None) -> Any:
        value: Any = self.data
        for key in keys:
            if not isinstance(value, dict) or key not in value:
                return default
            value = value[key]
        return value

    @property
    def id(self) -> str:
        value = self.get("id")
        return value if isinstance(value, str) else self.directory.name

    @property
    def version(self) -> str:
        value = self.get("version")
        return value if isinstance(value, str) else "0.0.0"

    @property
    def description(self) -> str:
        value = self.get("description")
        return value.strip() if isinstance(value, str) else ""

    @property
    def name(self) -> str:
        value = self.get("name")
        return value if isinstance(value, str) else self.id

    @property
    def command(self) -> list[str]:
        return list(self.get("runtime", "command", default=[]) or [])

    @property
    def timeout_ms(self) -> int:
        value = self.get("runtime", "timeoutMs")
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else DEFAULT_TIMEOUT_MS

    def access(self, *keys: str, default: Any = None) -> Any:
        return self.get("security", "access", *keys, default=default)

    def where(self, pointer: str = "") -> dict[str, Any]:
        return {"file": self.file, "line": self.doc.line_of(pointer), "pointer": pointer or None}

    def resolve(self, relative: str) -> Path:
        """A path of the contract, resolved under the skill folder (PathEscapeError when it escapes)."""
        from agentpack.io.paths import resolve_under

        return resolve_under(self.directory, relative)

    def io_schema(self, which: str) -> JsonSchema:
        """The loaded ``io.inputSchema`` (``which="input"``) or ``io.outputSchema``; PackError when unreadable."""
        if which in self._schemas:
            return self._schemas[which]
        key = f"{which}Schema"
        relative = self.get("io", key)
        pointer = f"/io/{key}"
        if not isinstance(relative, str):
            raise PackError(f"io.{key} is not set", **_loc(self, pointer))
        try:
            path = self.resolve(relative)
        except PathEscapeError as exc:
            raise PackError(f"io.{key}: {exc.message}", **_loc(self, pointer)) from None
        if not os.path.lexists(path):
            raise PackError(f"io.{key}: '{relative}' does not exist in the skill folder", **_loc(self, pointer))
        try:
            schema = jsonio.load_file(path, display=_display(self, relative))
        except jsonio.JsonError as exc:
            raise PackError(exc.message, file=exc.file, line=exc.line, column=exc.column) from None
        if not isinstance(schema, (dict, bool)):
            raise PackError("a JSON Schema must be an object or a boolean", file=_display(self, relative), line=1)
        self._schemas[which] = schema
        return schema


def schema_refs(node: Any) -> list[str]:
    """Every ``$ref`` string in a JSON Schema."""
    if isinstance(node, dict):
        found = [node["$ref"]] if isinstance(node.get("$ref"), str) else []
        return found + [r for v in node.values() for r in schema_refs(v)]
    if isinstance(node, list):
        return [r for v in node for r in schema_refs(v)]
    return []


def _display(skill: SkillManifest, relative: str) -> str:
    return str(Path(skill.file).parent / relative)


def _loc(skill: SkillManifest, pointer: str) -> dict[str, Any]:
    return {"file": skill.file, "line": skill.doc.line_of(pointer)}


def load_skill(directory: str | Path, *, display: str | None = None) -> SkillManifest:
    """Read ``directory/skill.yaml``. PackError (with file and line) when it is missing or not a YAML mapping."""
    from agentpack.io.yamlio import load_yaml

    directory = Path(directory)
    manifest = directory / MANIFEST
    name = display or str(manifest)
    if not os.path.lexists(manifest):
        raise PackError(
            f"no {MANIFEST} in {directory}",
            file=name,
            hint="a skill folder holds skill.yaml, README.md, schemas/, impl/, tests/ and fixtures/",
        )
    check_inside(directory, manifest, display=name, what="the skill folder", error=PackError)
    check_file(manifest, display=name, error=PackError, expected="a YAML file")
    doc = load_yaml(manifest, display=name)
    if not isinstance(doc.data, dict):
        raise PackError(f"{MANIFEST} must be a YAML mapping, not {type(doc.data).__name__}", file=name, line=1)
    return SkillManifest(directory=directory, doc=doc)
