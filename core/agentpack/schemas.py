"""An offline registry of bundled JSON Schemas (draft 2020-12) that validates into findings.

Schemas are found by their ``$id``; ``$ref`` between bundled schemas resolves
through ``referencing`` with no retrieval, so nothing is ever fetched.
"""

from __future__ import annotations

import json
import re
from functools import cached_property
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable

from .errors import AgentpackError
from .yamlio import join_pointer

if TYPE_CHECKING:
    import jsonschema
    import referencing

    from .models import Finding
    from .yamlio import YamlDocument


class SchemaStore:
    """Bundled schemas by ``$id``; validators are built once and cached."""

    def __init__(self, schemas: Iterable[dict[str, Any]] = ()) -> None:
        self._schemas: dict[str, dict[str, Any]] = {}
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        for schema in schemas:
            self.add(schema)

    @classmethod
    def from_package(cls, package: str, folder: str = "schemas") -> SchemaStore:
        """Every ``*.json`` schema in ``package``'s ``folder`` (a package-data directory)."""
        store = cls()
        store.add_directory(resources.files(package).joinpath(folder))
        return store

    def add(self, schema: dict[str, Any]) -> None:
        schema_id = schema.get("$id")
        if not isinstance(schema_id, str) or not schema_id:
            raise AgentpackError("a bundled schema has no '$id'")
        self._schemas[schema_id] = schema
        self._validators.clear()
        self.__dict__.pop("registry", None)

    def add_directory(self, folder: Traversable | Path) -> None:
        for entry in sorted(folder.iterdir(), key=lambda e: e.name):
            if entry.name.endswith(".json"):
                self.add(json.loads(entry.read_text(encoding="utf-8")))

    def ids(self) -> list[str]:
        return sorted(self._schemas)

    def schema(self, schema_id: str) -> dict[str, Any]:
        try:
            return self._schemas[schema_id]
        except KeyError:
            raise AgentpackError(f"no bundled schema with $id '{schema_id}'") from None

    @cached_property
    def registry(self) -> referencing.Registry:
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012

        return Registry().with_resources(
            (sid, Resource.from_contents(s, default_specification=DRAFT202012)) for sid, s in self._schemas.items()
        )

    def validator(self, schema_id: str) -> jsonschema.protocols.Validator:
        if schema_id not in self._validators:
            from jsonschema import Draft202012Validator

            schema = self.schema(schema_id)
            Draft202012Validator.check_schema(schema)
            self._validators[schema_id] = Draft202012Validator(
                schema, registry=self.registry, format_checker=Draft202012Validator.FORMAT_CHECKER
            )
        return self._validators[schema_id]

    def is_valid(self, schema_id: str, instance: Any) -> bool:
        return self.validator(schema_id).is_valid(instance)

    def validate(
        self,
        schema_id: str,
        instance: Any,
        *,
        document: YamlDocument | None = None,
        file: str | None = None,
        code: str = "SCHEMA",
        severity: str = "error",
    ) -> list[Finding]:
        """Validate ``instance``; each error becomes a ``Finding`` with pointer, file and line."""
        errors = sorted(self.validator(schema_id).iter_errors(instance), key=lambda e: list(map(str, e.absolute_path)))
        return [f for error in errors for f in error_findings(error, document=document, file=file, code=code,
                                                                  severity=severity)]


def _pointer(path: Iterable[Any]) -> str:
    pointer = ""
    for token in path:
        pointer = join_pointer(pointer, token)
    return pointer


def _unexpected_keys(error: jsonschema.ValidationError) -> list[str]:
    instance, schema = error.instance, error.schema
    if not isinstance(instance, dict):
        return []
    known = set(schema.get("properties", {}))
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    return sorted(k for k in instance if k not in known and not any(p.search(k) for p in patterns))


def error_findings(
    error: jsonschema.ValidationError,
    *,
    document: YamlDocument | None = None,
    file: str | None = None,
    code: str = "SCHEMA",
    severity: str = "error",
) -> list[Finding]:
    """Turn one jsonschema error into findings (one per unexpected key for ``additionalProperties``)."""
    from jsonschema.exceptions import best_match

    from .models import Finding

    if error.context and error.validator in ("anyOf", "oneOf"):
        deepest = best_match(error.context)
        if deepest is not None and len(deepest.absolute_path) > len(error.absolute_path):
            error = deepest
    base = _pointer(error.absolute_path)
    file = file or (document.file if document else None)

    def make(pointer: str, message: str) -> Finding:
        line = document.line_of(pointer) if document else None
        where = pointer or "/"
        return Finding(severity=severity, code=code, message=f"{where}: {message}", file=file, line=line,
                       pointer=pointer or None)

    if error.validator in ("additionalProperties", "unevaluatedProperties") and error.schema.get(error.validator) is False:
        extras = _unexpected_keys(error)
        if extras:
            return [make(join_pointer(base, key), f"unknown key '{key}'") for key in extras]
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return [make(base, f"missing required key '{missing}'")]
    return [make(base, error.message)]


_CORE_STORE: SchemaStore | None = None


def core_schemas() -> SchemaStore:
    """The schemas the core itself bundles (the report envelope)."""
    global _CORE_STORE
    if _CORE_STORE is None:
        _CORE_STORE = SchemaStore.from_package("agentpack")
    return _CORE_STORE
