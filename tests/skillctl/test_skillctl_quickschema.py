"""The quick JSON Schema subset never disagrees with jsonschema (property tests on real and random schemas)."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agentpack_skillctl.quickschema import is_valid
from agentpack_skillctl.store import ACCESS_SCHEMA, SKILL_SCHEMA, bundled
from skillctl_testkit import EXAMPLES, manifest

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=10)

SCHEMAS = [json.loads(p.read_text()) for p in sorted(EXAMPLES.glob("*/schemas/*.schema.json"))]
SCHEMAS += [bundled(SKILL_SCHEMA), bundled(ACCESS_SCHEMA)]

leaf_schemas = st.sampled_from([
    {"type": "string"}, {"type": ["integer", "null"]}, {"type": "number", "minimum": 0}, {"const": 1},
    {"enum": [True, 1, "a", None]}, {"minLength": 2}, {"pattern": "^a"}, {"type": "array", "uniqueItems": True},
    {"maxItems": 2}, {"exclusiveMaximum": 1}, {"type": "boolean"}, True, False, {"format": "email"},
])
schemas = st.recursive(leaf_schemas, lambda inner: st.one_of(
    st.builds(lambda p, r, a: {"type": "object", "properties": p, "required": r, "additionalProperties": a},
              st.dictionaries(st.sampled_from("abc"), inner, max_size=3), st.lists(st.sampled_from("abc"),
                                                                                   max_size=2, unique=True),
              st.booleans() | inner),
    st.builds(lambda i: {"items": i}, inner),
    st.builds(lambda xs: {"anyOf": xs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda xs: {"oneOf": xs}, st.lists(inner, min_size=1, max_size=3)),
    st.builds(lambda x: {"not": x}, inner),
    st.builds(lambda c, t, e: {"if": c, "then": t, "else": e}, inner, inner, inner),
), max_leaves=6)


def agrees(schema, instance) -> None:
    quick = is_valid(schema, instance)
    if quick is not None:
        assert quick == Draft202012Validator(schema).is_valid(instance), (schema, instance)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SCHEMAS), json_values)
def test_agrees_on_the_project_schemas(schema, instance):
    agrees(schema, instance)


@settings(max_examples=150, deadline=None)
@given(schemas, json_values)
def test_agrees_on_random_schemas(schema, instance):
    agrees(schema, instance)


def test_decides_real_inputs_and_defers_what_it_does_not_know():
    assert is_valid(bundled(SKILL_SCHEMA), manifest()) is True
    assert is_valid(bundled(SKILL_SCHEMA), manifest(version="1.0")) is False
    assert is_valid({"format": "email"}, "x") is None
    assert is_valid({"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"}, "x") is None
    assert is_valid({"$ref": "https://example.com/x"}, 1) is None
    assert is_valid({"type": "integer"}, 1.0) is True and is_valid({"type": "integer"}, True) is False
    assert is_valid({"enum": [1]}, True) is False and is_valid({"const": [1, {"a": 1.0}]}, [1.0, {"a": 1}]) is True


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*/fixtures/*.input.json")), ids=lambda p: p.name)
def test_agrees_on_every_fixture(path):
    schema = json.loads((path.parents[1] / "schemas" / "input.schema.json").read_text())
    agrees(schema, json.loads(path.read_text()))
