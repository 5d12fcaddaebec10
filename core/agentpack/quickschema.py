"""A fast yes/no for the common subset of JSON Schema 2020-12, so a hot path need not import jsonschema.

Used where start-up matters (running a skill, running a manifest): importing
``jsonschema`` and building a validator costs tens of milliseconds per process.

``is_valid`` answers True or False only for schemas made of the keywords
below; for anything else (``format``, ``$dynamicRef``, older drafts, ...) it
answers None and the caller uses ``jsonschema``. Error messages always come
from ``jsonschema``: this module only decides the common "it is valid" case.
Its verdicts are tested against ``jsonschema`` (property tests).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

ANNOTATIONS = frozenset({"$schema", "$id", "$defs", "definitions", "title", "description", "default", "examples",
                         "$comment", "deprecated", "readOnly", "writeOnly"})
DIALECTS = frozenset({"https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#"})
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


class Unsupported(Exception):
    """The schema uses something this subset does not decide."""


def is_valid(schema: Any, instance: Any) -> bool | None:
    """True or False when decided here; None when only ``jsonschema`` can tell."""
    if isinstance(schema, dict):
        dialect = schema.get("$schema")
        if dialect is not None and dialect not in DIALECTS:
            return None
    try:
        return _valid(schema, instance, schema)
    except (Unsupported, re.error, RecursionError, KeyError, IndexError, TypeError, ValueError):
        return None


@lru_cache(maxsize=512)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def _is_type(value: Any, name: str) -> bool:
    if name in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return name == "number" or isinstance(value, int) or float(value).is_integer()
    expected = TYPES.get(name)
    if expected is None:
        raise Unsupported(name)
    return isinstance(value, expected) and (name == "boolean" or not isinstance(value, bool))


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) or isinstance(b, dict):
        return isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(
            _equal(a[k], b[k]) for k in a)
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and all(
            _equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _resolve(ref: str, root: Any) -> Any:
    base = root.get("$id") if isinstance(root, dict) else None
    if isinstance(base, str) and base and ref.startswith(base):
        ref = ref[len(base):] or "#"  # a reference to the schema's own $id (plus a fragment)
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        raise Unsupported(ref)
    node = root
    for token in ref[2:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def _valid(schema: Any, value: Any, root: Any) -> bool:
    if schema is True:
        return True
    if schema is False:
        return False
    if not isinstance(schema, dict):
        raise Unsupported("schema")
    for key, arg in schema.items():
        if key in ANNOTATIONS:
            if key == "$id" and schema is not root:
                raise Unsupported(key)
            continue
        check = _KEYWORDS.get(key)
        if check is None:
            if key in ("then", "else"):
                continue
            raise Unsupported(key)
        if not check(arg, value, schema, root):
            return False
    return True


def _type(arg, value, schema, root):
    return any(_is_type(value, t) for t in (arg if isinstance(arg, list) else [arg]))


def _properties(arg, value, schema, root):
    return not isinstance(value, dict) or all(_valid(arg[k], value[k], root) for k in arg if k in value)


def _pattern_properties(arg, value, schema, root):
    if not isinstance(value, dict):
        return True
    return all(_valid(sub, v, root) for p, sub in arg.items() for k, v in value.items() if _pattern(p).search(k))


def _additional(arg, value, schema, root):
    if not isinstance(value, dict):
        return True
    known = schema.get("properties", {})
    patterns = [_pattern(p) for p in schema.get("patternProperties", {})]
    extra = [k for k in value if k not in known and not any(p.search(k) for p in patterns)]
    return all(_valid(arg, value[k], root) for k in extra)


def _items(arg, value, schema, root):
    if isinstance(arg, list) or "prefixItems" in schema:
        raise Unsupported("items")
    return not isinstance(value, list) or all(_valid(arg, v, root) for v in value)


def _unique(arg, value, schema, root):
    if not arg or not isinstance(value, list):
        return True
    return not any(_equal(value[i], value[j]) for i in range(len(value)) for j in range(i + 1, len(value)))


def _num(op):
    def check(arg, value, schema, root):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return True
        return op(value, arg)
    return check


def _size(kind, op):
    def check(arg, value, schema, root):
        return not isinstance(value, kind) or op(len(value), arg)
    return check


def _if(arg, value, schema, root):
    branch = schema.get("then", True) if _valid(arg, value, root) else schema.get("else", True)
    return _valid(branch, value, root)


_KEYWORDS = {
    "type": _type,
    "enum": lambda arg, value, schema, root: any(_equal(value, e) for e in arg),
    "const": lambda arg, value, schema, root: _equal(value, arg),
    "properties": _properties,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional,
    "required": lambda arg, value, schema, root: not isinstance(value, dict) or all(k in value for k in arg),
    "minProperties": _size(dict, lambda n, a: n >= a),
    "maxProperties": _size(dict, lambda n, a: n <= a),
    "items": _items,
    "minItems": _size(list, lambda n, a: n >= a),
    "maxItems": _size(list, lambda n, a: n <= a),
    "uniqueItems": _unique,
    "minLength": _size(str, lambda n, a: n >= a),
    "maxLength": _size(str, lambda n, a: n <= a),
    "pattern": lambda arg, value, schema, root: not isinstance(value, str) or bool(_pattern(arg).search(value)),
    "minimum": _num(lambda v, a: v >= a),
    "maximum": _num(lambda v, a: v <= a),
    "exclusiveMinimum": _num(lambda v, a: v > a),
    "exclusiveMaximum": _num(lambda v, a: v < a),
    "allOf": lambda arg, value, schema, root: all(_valid(s, value, root) for s in arg),
    "anyOf": lambda arg, value, schema, root: any(_valid(s, value, root) for s in arg),
    "oneOf": lambda arg, value, schema, root: sum(_valid(s, value, root) for s in arg) == 1,
    "not": lambda arg, value, schema, root: not _valid(arg, value, root),
    "if": _if,
    "$ref": lambda arg, value, schema, root: _valid(_resolve(arg, root), value, root),
}
