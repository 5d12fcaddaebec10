"""Validators for a skill's own input and output schemas, which explain what ``quickschema`` rejected.

A skill's schema is user content, not one of the plugin's bundled schemas: it
may name any dialect in ``$schema`` and has no ``$id`` to register, so it gets
the validator class of its dialect with an empty registry (no remote ``$ref``
is ever fetched). Validators are cached by the schema's content.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .manifest import JsonSchema

_VALIDATORS: dict[str, Any] = {}


def _jsonschema() -> ModuleType:
    import jsonschema

    return jsonschema


def _validator_class(schema: JsonSchema) -> Any:
    jsonschema = _jsonschema()
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def schema_problem(schema: JsonSchema) -> tuple[str, str] | None:
    """Why ``schema`` is not a valid schema of its dialect, as ``(JSON pointer, message)``; None when it is."""
    try:
        _validator_class(schema).check_schema(schema)
    except _jsonschema().exceptions.SchemaError as exc:
        return "/" + "/".join(str(p) for p in exc.absolute_path), exc.message
    return None


def user_validator(schema: JsonSchema) -> Any:
    """A cached ``jsonschema`` validator for ``schema`` (draft 2020-12 unless its ``$schema`` says otherwise)."""
    from agentpack.io.hashing import sha256_json

    key = sha256_json(schema)
    validator = _VALIDATORS.get(key)
    if validator is None:
        from referencing import Registry

        cls = _validator_class(schema)
        validator = cls(schema, registry=Registry(), format_checker=cls.FORMAT_CHECKER)
        if len(_VALIDATORS) > 256:
            _VALIDATORS.clear()
        _VALIDATORS[key] = validator
    return validator
