"""A fast yes/no for the common subset of JSON Schema 2020-12, so a hot path need not import jsonschema.

Used where start-up matters (running a skill, running a manifest): importing
``jsonschema`` and building a validator costs tens of milliseconds per process.

``is_valid`` answers True or False only for schemas made of the keywords
below; for anything else (``format``, ``$dynamicRef``, older drafts, ...) it
answers None and the caller uses ``jsonschema``. Error messages always come
from ``jsonschema``: this module only decides the common "it is valid" case.
Its verdicts are tested against ``jsonschema`` (property tests).

A schema is compiled once into nested closures (cached by identity), so a
manifest of a thousand steps pays the keyword dispatch once, not per node.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

ANNOTATIONS = frozenset(
    {
        "$schema",
        "$id",
        "$defs",
        "definitions",
        "title",
        "description",
        "default",
        "examples",
        "$comment",
        "deprecated",
        "readOnly",
        "writeOnly",
    }
)
DIALECTS = frozenset({"https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#"})
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool, "null": type(None)}


class Unsupported(Exception):
    """The schema uses something this subset does not decide."""


Check = Callable[[Any], bool]
_CACHE: dict[int, tuple[Any, Check]] = {}
_CACHE_SIZE = 256


def is_valid(schema: Any, instance: Any) -> bool | None:
    """True or False when decided here; None when only ``jsonschema`` can tell."""
    if isinstance(schema, dict):
        dialect = schema.get("$schema")
        if dialect is not None and dialect not in DIALECTS:
            return None
    try:
        return compiled(schema)(instance)
    except (Unsupported, re.error, RecursionError, KeyError, IndexError, TypeError, ValueError):
        return None


def compiled(schema: Any) -> Check:
    """The compiled check of ``schema``, built once per schema object.

    A part of the schema this subset does not decide compiles to a check that
    raises ``Unsupported`` if it is ever evaluated, as the interpreter it replaces did.
    """
    hit = _CACHE.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    check = _Compiler(schema).compile(schema)
    if len(_CACHE) >= _CACHE_SIZE:
        _CACHE.clear()
    _CACHE[id(schema)] = (schema, check)
    return check


@lru_cache(maxsize=512)
def _pattern(text: str) -> re.Pattern[str]:
    return re.compile(text)


def _is_type(value: Any, name: str) -> bool:
    if name in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return name == "number" or isinstance(value, int) or float(value).is_integer()
    return isinstance(value, TYPES[name]) and (name == "boolean" or not isinstance(value, bool))


def _equal(a: Any, b: Any) -> bool:
    """JSON equality: booleans are not numbers, 1 equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) or isinstance(b, dict):
        return (
            isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys() and all(_equal(a[k], b[k]) for k in a)
        )
    if isinstance(a, list) or isinstance(b, list):
        return (
            isinstance(a, list)
            and isinstance(b, list)
            and len(a) == len(b)
            and all(_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _resolve(ref: str, root: Any) -> Any:
    base = root.get("$id") if isinstance(root, dict) else None
    if isinstance(base, str) and base and ref.startswith(base):
        ref = ref[len(base) :] or "#"  # a reference to the schema's own $id (plus a fragment)
    if ref == "#":
        return root
    if not ref.startswith("#/"):
        raise Unsupported(ref)
    node = root
    for token in ref[2:].split("/"):
        token = token.replace("~1", "/").replace("~0", "~")
        node = node[int(token)] if isinstance(node, list) else node[token]
    return node


def _always(value: Any) -> bool:
    return True


def _never(value: Any) -> bool:
    return False


def _unsupported(what: str) -> Check:
    def check(value: Any) -> bool:
        raise Unsupported(what)

    return check


def _all(checks: list[Check]) -> Check:
    if not checks:
        return _always
    if len(checks) == 1:
        return checks[0]
    checks_ = tuple(checks)

    def check(value: Any) -> bool:
        for one in checks_:  # noqa: SIM110 - a plain loop is faster than all() over a generator on this hot path
            if not one(value):
                return False
        return True

    return check


class _Compiler:
    """Turns one schema (and what its ``$ref``s reach, on first use) into closures."""

    def __init__(self, root: Any) -> None:
        self.root = root
        self.refs: dict[str, Check] = {}

    def compile(self, schema: Any) -> Check:
        if schema is True:
            return _always
        if schema is False:
            return _never
        if not isinstance(schema, dict):
            return _unsupported("schema")
        checks = []
        for key, arg in schema.items():
            if key in ANNOTATIONS:
                if key == "$id" and schema is not self.root:
                    return _unsupported(key)
                continue
            make = _MAKERS.get(key)
            if make is None:
                if key in ("then", "else"):
                    continue
                return _unsupported(key)
            try:
                checks.append(make(self, arg, schema))
            except (Unsupported, re.error, KeyError, TypeError, ValueError) as exc:
                return _unsupported(f"{key}: {exc}")
        return _all(checks)

    def ref(self, ref: str) -> Check:
        if ref not in self.refs:
            self.refs[ref] = self.compile(_resolve(ref, self.root))
        return self.refs[ref]


def _type(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    names = arg if isinstance(arg, list) else [arg]
    for name in names:
        if name not in TYPES and name not in ("number", "integer"):
            raise Unsupported(name)
    if len(names) == 1 and names[0] in ("object", "array", "string"):
        kind = TYPES[names[0]]
        return lambda value: isinstance(value, kind)
    return lambda value: any(_is_type(value, name) for name in names)


def _properties(c: _Compiler, arg: dict[str, Any], schema: dict[str, Any]) -> Check:
    subs = tuple((key, c.compile(sub)) for key, sub in arg.items())

    def check(value: Any) -> bool:
        if isinstance(value, dict):
            for key, sub in subs:
                if key in value and not sub(value[key]):
                    return False
        return True

    return check


def _pattern_properties(c: _Compiler, arg: dict[str, Any], schema: dict[str, Any]) -> Check:
    subs = tuple((_pattern(p), c.compile(sub)) for p, sub in arg.items())
    return lambda value: (
        not isinstance(value, dict)
        or all(sub(v) for pattern, sub in subs for k, v in value.items() if pattern.search(k))
    )


def _additional(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    known = set(schema.get("properties", {}))
    patterns = tuple(_pattern(p) for p in schema.get("patternProperties", {}))
    sub = c.compile(arg)

    def check(value: Any) -> bool:
        if isinstance(value, dict):
            for key in value:
                if key not in known and not any(p.search(key) for p in patterns) and not sub(value[key]):
                    return False
        return True

    return check


def _items(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    if isinstance(arg, list) or "prefixItems" in schema:
        raise Unsupported("items")
    sub = c.compile(arg)

    def check(value: Any) -> bool:
        if isinstance(value, list):
            for item in value:
                if not sub(item):
                    return False
        return True

    return check


def _unique(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    if not arg:
        return _always
    return lambda value: (
        not isinstance(value, list)
        or not any(_equal(value[i], value[j]) for i in range(len(value)) for j in range(i + 1, len(value)))
    )


def _num(op: Callable[[Any, Any], bool]) -> Maker:
    def make(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
        return lambda value: isinstance(value, bool) or not isinstance(value, (int, float)) or op(value, arg)

    return make


def _size(kind: type, op: Callable[[int, Any], bool]) -> Maker:
    def make(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
        return lambda value: not isinstance(value, kind) or op(len(value), arg)  # type: ignore[arg-type]  # kind: str, list or dict

    return make


def _string_pattern(c: _Compiler, arg: str, schema: dict[str, Any]) -> Check:
    pattern = _pattern(arg)
    return lambda value: not isinstance(value, str) or bool(pattern.search(value))


def _required(c: _Compiler, arg: list[Any], schema: dict[str, Any]) -> Check:
    keys = tuple(arg)
    return lambda value: not isinstance(value, dict) or all(k in value for k in keys)


def _enum(c: _Compiler, arg: list[Any], schema: dict[str, Any]) -> Check:
    if all(type(e) is str for e in arg):  # the common case, by set membership (same verdicts as _equal)
        members = frozenset(arg)
        return lambda value: type(value) is str and value in members
    return lambda value: any(_equal(value, e) for e in arg)


def _const(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    if type(arg) is str:
        return lambda value: type(value) is str and value == arg
    return lambda value: _equal(value, arg)


def _all_of(c: _Compiler, arg: list[Any], schema: dict[str, Any]) -> Check:
    return _all([c.compile(s) for s in arg])


def _any_of(c: _Compiler, arg: list[Any], schema: dict[str, Any]) -> Check:
    subs = tuple(c.compile(s) for s in arg)
    return lambda value: any(sub(value) for sub in subs)


def _one_of(c: _Compiler, arg: list[Any], schema: dict[str, Any]) -> Check:
    subs = tuple(c.compile(s) for s in arg)
    return lambda value: sum(sub(value) for sub in subs) == 1


def _not(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    sub = c.compile(arg)
    return lambda value: not sub(value)


def _if(c: _Compiler, arg: Any, schema: dict[str, Any]) -> Check:
    test, then, else_ = c.compile(arg), c.compile(schema.get("then", True)), c.compile(schema.get("else", True))
    return lambda value: then(value) if test(value) else else_(value)


def _ref(c: _Compiler, arg: str, schema: dict[str, Any]) -> Check:
    target: list[Check] = []

    def check(value: Any) -> bool:
        if not target:
            target.append(c.ref(arg))
        return target[0](value)

    return check


Maker = Callable[[_Compiler, Any, dict[str, Any]], Check]

_MAKERS: dict[str, Maker] = {
    "type": _type,
    "enum": _enum,
    "const": _const,
    "properties": _properties,
    "patternProperties": _pattern_properties,
    "additionalProperties": _additional,
    "required": _required,
    "minProperties": _size(dict, lambda n, a: n >= a),
    "maxProperties": _size(dict, lambda n, a: n <= a),
    "items": _items,
    "minItems": _size(list, lambda n, a: n >= a),
    "maxItems": _size(list, lambda n, a: n <= a),
    "uniqueItems": _unique,
    "minLength": _size(str, lambda n, a: n >= a),
    "maxLength": _size(str, lambda n, a: n <= a),
    "pattern": _string_pattern,
    "minimum": _num(lambda v, a: v >= a),
    "maximum": _num(lambda v, a: v <= a),
    "exclusiveMinimum": _num(lambda v, a: v > a),
    "exclusiveMaximum": _num(lambda v, a: v < a),
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "not": _not,
    "if": _if,
    "$ref": _ref,
}
