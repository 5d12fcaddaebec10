"""A yes/no JSON Schema check for the keywords the bundled schemas use, with no error objects.

Manifests are checked with this first; only an invalid one goes through
``jsonschema`` for located findings. That keeps ``jsonschema``'s import and its
per-node cost off the path of every run. The semantics follow draft 2020-12
for the keywords below (tests check agreement with ``jsonschema``); any other
keyword raises, so a schema change cannot silently weaken the check.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

ANNOTATIONS = {"$schema", "$id", "$defs", "title", "description", "deprecated", "default", "examples"}


def _is_type(value: Any, name: str) -> bool:
    if name == "object":
        return isinstance(value, dict)
    if name == "array":
        return isinstance(value, list)
    if name == "string":
        return isinstance(value, str)
    if name == "boolean":
        return isinstance(value, bool)
    if name == "null":
        return value is None
    if isinstance(value, bool):
        return False
    if name == "integer":
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if name == "number":
        return isinstance(value, (int, float))
    raise ValueError(f"unknown type {name!r}")


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


@lru_cache(maxsize=None)
def _regex(pattern: str) -> re.Pattern:
    return re.compile(pattern)


class Checker:
    def __init__(self, root: dict[str, Any], base: str) -> None:
        self.root = root
        self.base = base

    def _resolve(self, ref: str) -> Any:
        if ref.startswith(self.base):
            ref = ref[len(self.base):]
        if not ref.startswith("#"):
            raise ValueError(f"unsupported $ref {ref!r}")
        node: Any = self.root
        for token in filter(None, ref[1:].split("/")):
            node = node[token.replace("~1", "/").replace("~0", "~")]
        return node

    def valid(self, schema: Any, value: Any) -> bool:  # noqa: C901 - one branch per keyword
        if schema is True:
            return True
        if schema is False:
            return False
        for key, arg in schema.items():
            if key in ANNOTATIONS:
                continue
            if key == "type":
                if not any(_is_type(value, t) for t in (arg if isinstance(arg, list) else [arg])):
                    return False
            elif key == "$ref":
                if not self.valid(self._resolve(arg), value):
                    return False
            elif key == "enum":
                if not any(_equal(value, option) for option in arg):
                    return False
            elif key == "const":
                if not _equal(value, arg):
                    return False
            elif key == "allOf":
                if not all(self.valid(s, value) for s in arg):
                    return False
            elif key == "anyOf":
                if not any(self.valid(s, value) for s in arg):
                    return False
            elif key == "oneOf":
                if sum(1 for s in arg if self.valid(s, value)) != 1:
                    return False
            elif key == "if":
                branch = schema.get("then", True) if self.valid(arg, value) else schema.get("else", True)
                if not self.valid(branch, value):
                    return False
            elif key in ("then", "else"):
                continue
            elif isinstance(value, dict) and key in ("properties", "required", "additionalProperties"):
                if not self._object(key, arg, schema, value):
                    return False
            elif isinstance(value, list) and key in ("items", "minItems", "uniqueItems"):
                if key == "items" and not all(self.valid(arg, item) for item in value):
                    return False
                if key == "minItems" and len(value) < arg:
                    return False
                if key == "uniqueItems" and arg and len({repr(v) for v in value}) != len(value):
                    return False
            elif isinstance(value, str) and key in ("minLength", "pattern"):
                if key == "minLength" and len(value) < arg:
                    return False
                if key == "pattern" and not _regex(arg).search(value):
                    return False
            elif _is_type(value, "number") and key in ("minimum", "maximum", "exclusiveMinimum"):
                if (key == "minimum" and value < arg) or (key == "maximum" and value > arg) or (
                        key == "exclusiveMinimum" and value <= arg):
                    return False
            elif key not in ("properties", "required", "additionalProperties", "items", "minItems", "uniqueItems",
                             "minLength", "pattern", "minimum", "maximum", "exclusiveMinimum"):
                raise ValueError(f"fastcheck does not support the keyword {key!r}")
        return True

    def _object(self, key: str, arg: Any, schema: dict[str, Any], value: dict[str, Any]) -> bool:
        if key == "required":
            return all(name in value for name in arg)
        props = schema.get("properties", {})
        if key == "properties":
            return all(self.valid(sub, value[name]) for name, sub in props.items() if name in value)
        return all(self.valid(arg, v) for k, v in value.items() if k not in props)
