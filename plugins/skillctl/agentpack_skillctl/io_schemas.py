"""Validators for a skill's own input and output schemas, which explain what ``quickschema`` rejected.

A skill's schema is user content, not one of the plugin's bundled schemas: it
may name any dialect in ``$schema`` and has no ``$id`` to register, so it gets
the validator class of its dialect with an empty registry (no remote ``$ref``
is ever fetched). Validators are cached by the schema's content.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import jsonschema

_VALIDATORS: dict[str, jsonschema.protocols.Validator] = {}


def user_validator(schema: dict[str, Any]) -> jsonschema.protocols.Validator:
    """A cached validator for ``schema`` (draft 2020-12 unless its ``$schema`` says otherwise)."""
    from agentpack.hashing import sha256_json

    key = sha256_json(schema)
    validator = _VALIDATORS.get(key)
    if validator is None:
        from jsonschema import Draft202012Validator, validators
        from referencing import Registry

        cls = validators.validator_for(schema, default=Draft202012Validator)
        validator = cls(schema, registry=Registry(), format_checker=cls.FORMAT_CHECKER)
        if len(_VALIDATORS) > 256:
            _VALIDATORS.clear()
        _VALIDATORS[key] = validator
    return validator
