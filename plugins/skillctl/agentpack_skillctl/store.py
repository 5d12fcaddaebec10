"""The bundled JSON Schemas of the plugin (skill.yaml, access manifest, run report), loaded once."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentpack.schemas import SchemaStore

BASE = "https://agentpack.dev/schemas/skillctl/"
SKILL_SCHEMA = BASE + "skill.schema.json"
ACCESS_SCHEMA = BASE + "access-manifest.schema.json"
REPORT_SCHEMA = BASE + "run-report.schema.json"


@lru_cache(maxsize=1)
def schemas() -> SchemaStore:
    from agentpack.schemas import SchemaStore

    return SchemaStore.from_package("agentpack_skillctl", "schemas")


@lru_cache(maxsize=8)
def bundled(schema_id: str) -> dict[str, Any]:
    """A bundled schema by ``$id``, read straight from package data (no validator machinery)."""
    import json
    from importlib import resources

    name = schema_id.rsplit("/", 1)[-1]
    return json.loads(resources.files("agentpack_skillctl").joinpath("schemas", name).read_text(encoding="utf-8"))


@lru_cache(maxsize=8)
def bundled_validator(schema_id: str):
    """A validator for a bundled schema, built without re-checking it against its meta-schema (tests do)."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(bundled(schema_id))


_VALIDATORS: dict[str, Any] = {}


def user_validator(schema: dict[str, Any]):
    """A cached draft 2020-12 validator for a skill's own input or output schema (no remote refs)."""
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
