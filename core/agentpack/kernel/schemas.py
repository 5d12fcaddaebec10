"""An offline registry of bundled JSON Schemas (draft 2020-12) that validates into findings.

Schemas are found by their ``$id``; ``$ref`` between bundled schemas resolves
through ``referencing`` with no retrieval, so nothing is ever fetched.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable
from datetime import datetime
from functools import cached_property
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentpack.io.console import debug
from agentpack.io.errors import AgentpackError
from agentpack.io.yamldoc import join_pointer

if TYPE_CHECKING:
    import jsonschema
    import referencing

    from agentpack.io.yamldoc import YamlDocument
    from agentpack.kernel.models import Finding, Severity


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

    def check(self) -> None:
        """Check every schema against the draft 2020-12 meta-schema (tests do this for bundled schemas;
        it costs tens of milliseconds, so validation at run time skips it)."""
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        for schema_id, schema in self._schemas.items():
            try:
                Draft202012Validator.check_schema(schema)
            except SchemaError as exc:
                raise AgentpackError(
                    f"bundled schema '{schema_id}' is not a valid draft 2020-12 schema: {exc.message}"
                ) from None

    def validator(self, schema_id: str) -> jsonschema.protocols.Validator:
        if schema_id not in self._validators:
            from jsonschema import Draft202012Validator

            schema = self.schema(schema_id)
            self._validators[schema_id] = Draft202012Validator(
                schema, registry=self.registry, format_checker=format_checker()
            )
        return self._validators[schema_id]

    def quick_is_valid(self, schema_id: str, instance: Any) -> bool | None:
        """``quickschema``'s verdict for ``instance`` (``None``: only ``jsonschema`` can tell)."""
        from agentpack.io.quickschema import is_valid

        return is_valid(self.schema(schema_id), instance)

    def is_valid(self, schema_id: str, instance: Any) -> bool:
        quick = self.quick_is_valid(schema_id, instance)
        if quick is not None:
            return quick
        with _unresolvable_as_error(schema_id):
            return bool(self.validator(schema_id).is_valid(instance))

    def validate(
        self,
        schema_id: str,
        instance: Any,
        *,
        document: YamlDocument | None = None,
        file: str | None = None,
        code: str = "SCHEMA",
        severity: Severity = "error",
    ) -> list[Finding]:
        """Validate ``instance``; each error becomes a ``Finding`` with pointer, file and line.

        The one schema path of agentpack: ``quickschema`` decides the common
        "valid" case without importing ``jsonschema``; anything else (an
        invalid instance, a keyword the subset does not decide, a ``$ref`` to
        another bundled schema) goes to ``jsonschema``, which also writes the
        messages. Findings come in document order (by line, then pointer). A
        ``$ref`` to a schema that is not bundled raises ``AgentpackError``;
        nothing is fetched.
        """
        if self.quick_is_valid(schema_id, instance):
            return []
        with _unresolvable_as_error(schema_id):
            errors = list(self.validator(schema_id).iter_errors(instance))
        debug(__name__, "schema %s: %s has %d error(s)", schema_id, file or (document and document.file), len(errors))
        findings = [
            f
            for error in errors
            for f in error_findings(error, document=document, file=file, code=code, severity=severity)
        ]
        return sorted(findings, key=lambda f: (f.line or 0, f.pointer or ""))


class _unresolvable_as_error:
    """Turn an unresolvable ``$ref`` (a schema that is not bundled) into an ``AgentpackError``."""

    def __init__(self, schema_id: str) -> None:
        self.schema_id = schema_id

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type | None, exc: BaseException | None, tb: object) -> Literal[False]:
        from referencing.exceptions import Unresolvable

        if isinstance(exc, Unresolvable):
            ref = getattr(exc, "ref", None) or str(exc)
            raise AgentpackError(
                f"schema '{self.schema_id}' refers to '{ref}', which is not bundled "
                "(schemas are never fetched from the network)"
            ) from None
        return False


_RFC3339_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_RFC3339_TIME = re.compile(r"^(\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:[^\s]*$")
_URI_REFERENCE = re.compile(r"^[^\s]*$")
_JSON_POINTER = re.compile(r"^(/([^~/]|~[01])*)*$")


def _date_time(value: str) -> bool:
    if not _RFC3339_DATE_TIME.match(value):
        return False
    text = value.upper().replace("Z", "+00:00")
    try:
        datetime.fromisoformat(text[:17] + "59" + text[19:] if text[17:19] == "60" else text)  # leap second
    except ValueError:
        return False
    return True


def _time(value: str) -> bool:
    match = _RFC3339_TIME.match(value)
    return match is not None and int(match[1]) < 24 and int(match[2]) < 60 and int(match[3]) <= 60


_FALLBACK_FORMATS = {
    "date-time": _date_time,
    "time": _time,
    "uri": lambda v: bool(_URI.match(v)),
    "uri-reference": lambda v: bool(_URI_REFERENCE.match(v)),
    "json-pointer": lambda v: bool(_JSON_POINTER.match(v)),
}
_FORMAT_CHECKER = None


def format_checker() -> jsonschema.FormatChecker:
    """jsonschema's draft 2020-12 format checker, plus stdlib checks for the formats it only checks
    when optional packages are installed (date-time, time, uri, uri-reference, json-pointer)."""
    global _FORMAT_CHECKER
    if _FORMAT_CHECKER is None:
        from jsonschema import Draft202012Validator, FormatChecker

        checker = FormatChecker(formats=())
        checker.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)
        for name, check in _FALLBACK_FORMATS.items():
            if name not in checker.checkers:
                checker.checks(name)(lambda value, check=check: not isinstance(value, str) or check(value))
        _FORMAT_CHECKER = checker
    return _FORMAT_CHECKER


def _pointer(path: Iterable[Any]) -> str:
    pointer = ""
    for token in path:
        pointer = join_pointer(pointer, token)
    return pointer


_UNEXPECTED = re.compile(r"\((.*) (?:was|were) unexpected\)$", re.S)


def _unexpected_keys(error: jsonschema.ValidationError) -> list[str]:
    """Keys an ``additionalProperties: false`` / ``unevaluatedProperties: false`` error is about."""
    instance, schema = error.instance, error.schema
    if not isinstance(instance, dict) or not isinstance(schema, dict):
        return []
    if error.validator == "unevaluatedProperties":  # evaluated keys may come from allOf/$ref/if: trust jsonschema
        match = _UNEXPECTED.search(error.message)
        names = ast.literal_eval(f"({match[1]},)") if match else ()
        return sorted(k for k in names if k in instance)
    known = set(schema.get("properties", {}))
    patterns = [re.compile(p) for p in schema.get("patternProperties", {})]
    return sorted(k for k in instance if k not in known and not any(p.search(k) for p in patterns))


def error_findings(
    error: jsonschema.ValidationError,
    *,
    document: YamlDocument | None = None,
    file: str | None = None,
    code: str = "SCHEMA",
    severity: Severity = "error",
) -> list[Finding]:
    """Turn one jsonschema error into findings (one per unexpected key for ``additionalProperties``)."""
    from agentpack.kernel.models import Finding

    error, message = _explain(error)
    base = _pointer(error.absolute_path)
    file = file or (document.file if document else None)

    def make(pointer: str, message: str, hint: str | None = None) -> Finding:
        line = document.line_of(pointer) if document else None
        where = pointer or "/"
        return Finding(
            severity=severity,
            code=code,
            message=f"{where}: {message}",
            file=file,
            line=line,
            pointer=pointer or None,
            hint=hint,
        )

    if (
        error.validator in ("additionalProperties", "unevaluatedProperties")
        and isinstance(error.schema, dict)
        and error.schema.get(str(error.validator)) is False
    ):
        extras = _unexpected_keys(error)
        if extras:
            known = _known_keys(error.schema)
            return [make(join_pointer(base, key), f"unknown key '{key}'", _did_you_mean(key, known)) for key in extras]
    if error.validator == "required":
        missing = error.message.split("'")[1] if "'" in error.message else error.message
        return [make(base, f"missing required key '{missing}'")]
    return [make(base, message, _did_you_mean(error.instance, _choices(error)))]


def _known_keys(schema: dict[str, Any]) -> list[str]:
    """The keys ``schema`` names (``properties``, and the ``properties`` of its ``allOf``/``anyOf``/``oneOf``
    branches, which ``unevaluatedProperties`` sees)."""
    keys = list(schema.get("properties", {}))
    for branch in (b for k in ("allOf", "anyOf", "oneOf") for b in schema.get(k, [])):
        if isinstance(branch, dict):
            keys += branch.get("properties", {})
    return keys


def _choices(error: jsonschema.ValidationError) -> list[str]:
    """The strings an ``enum`` or ``const`` error allowed (or those of the alternatives of an ``anyOf``/``oneOf``
    the value fits none of)."""
    if error.validator in ("anyOf", "oneOf"):
        return [c for sub in error.context or () if not sub.relative_path for c in _choices(sub)]
    allowed = error.validator_value if error.validator == "enum" else [error.validator_value]
    if error.validator not in ("enum", "const") or not isinstance(allowed, list):
        return []
    return [a for a in allowed if isinstance(a, str)]


def _did_you_mean(value: Any, choices: list[str]) -> str | None:
    """``did you mean 'x'?`` for the closest of ``choices`` to a string ``value``, or None."""
    import difflib

    if not isinstance(value, str) or not choices:
        return None
    close = difflib.get_close_matches(value, choices, n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'?" if close else None


_ROOT_MISMATCH = ("type", "const", "enum")
_TYPE_NAMES = {
    "string": "a string",
    "object": "a mapping",
    "array": "a list",
    "integer": "an integer",
    "number": "a number",
    "boolean": "true or false",
    "null": "null",
}


def _expected(error: jsonschema.ValidationError) -> str:
    value: Any = error.validator_value
    if error.validator == "type":
        return " or ".join(_TYPE_NAMES.get(t, str(t)) for t in (value if isinstance(value, list) else [value]))
    if error.validator == "const":
        return repr(value)
    return "one of " + ", ".join(map(repr, value))


def _explain(error: jsonschema.ValidationError) -> tuple[jsonschema.ValidationError, str]:
    """The error to report and its message. For ``anyOf``/``oneOf``: the best error of the alternatives
    the value has the right shape for (type, const, enum), or the list of what was expected when the
    value fits none."""
    from jsonschema.exceptions import best_match

    while error.context and error.validator in ("anyOf", "oneOf"):
        branches: dict[Any, list[jsonschema.ValidationError]] = {}
        for sub in error.context:
            branches.setdefault(sub.relative_schema_path[0], []).append(sub)
        misfits = {
            key: [e for e in errs if e.validator in _ROOT_MISMATCH and not e.relative_path]
            for key, errs in branches.items()
        }
        fitting = [e for key, errs in branches.items() if not misfits[key] for e in errs]
        if not fitting:
            expected = dict.fromkeys(_expected(e) for errs in misfits.values() for e in errs)
            shown = repr(error.instance)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            return error, f"{shown} is not allowed here; expected {' or '.join(expected)}"
        error = best_match(fitting)
    return error, error.message


_CORE_STORE: SchemaStore | None = None


def core_schemas() -> SchemaStore:
    """The schemas the core itself bundles (the report envelope)."""
    global _CORE_STORE
    if _CORE_STORE is None:
        _CORE_STORE = SchemaStore.from_package("agentpack.kernel")
    return _CORE_STORE
