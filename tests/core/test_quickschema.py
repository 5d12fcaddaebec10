"""The quick JSON Schema subset never disagrees with jsonschema (property tests on random schemas)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from agentpack.io.quickschema import is_valid

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=10,
)

leaf_schemas = st.sampled_from(
    [
        {"type": "string"},
        {"type": ["integer", "null"]},
        {"type": "number", "minimum": 0},
        {"const": 1},
        {"enum": [True, 1, "a", None]},
        {"minLength": 2},
        {"pattern": "^a"},
        {"type": "array", "uniqueItems": True},
        {"maxItems": 2},
        {"exclusiveMaximum": 1},
        {"type": "boolean"},
        True,
        False,
        {"format": "email"},
        {"enum": ["a", "", "ab"]},
        {"const": "a"},
        {"type": "object"},
        {"type": "array"},
    ]
)
schemas = st.recursive(
    leaf_schemas,
    lambda inner: st.one_of(
        st.builds(
            lambda p, r, a: {"type": "object", "properties": p, "required": r, "additionalProperties": a},
            st.dictionaries(st.sampled_from("abc"), inner, max_size=3),
            st.lists(st.sampled_from("abc"), max_size=2, unique=True),
            st.booleans() | inner,
        ),
        st.builds(lambda i: {"items": i}, inner),
        st.builds(lambda xs: {"anyOf": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda xs: {"oneOf": xs}, st.lists(inner, min_size=1, max_size=3)),
        st.builds(lambda x: {"not": x}, inner),
        st.builds(lambda c, t, e: {"if": c, "then": t, "else": e}, inner, inner, inner),
    ),
    max_leaves=6,
)


@settings(max_examples=200, deadline=None)
@given(schemas, json_values)
def test_agrees_with_jsonschema_or_defers(schema, instance):
    quick = is_valid(schema, instance)
    if quick is not None:
        assert quick == Draft202012Validator(schema).is_valid(instance), (schema, instance)


def test_decides_what_it_knows_and_defers_the_rest():
    assert is_valid({"format": "email"}, "x") is None
    assert is_valid({"$schema": "http://json-schema.org/draft-07/schema#", "type": "string"}, "x") is None
    assert is_valid({"$ref": "https://example.com/x"}, 1) is None
    assert is_valid({"type": "integer"}, 1.0) is True and is_valid({"type": "integer"}, True) is False
    assert is_valid({"enum": [1]}, True) is False and is_valid({"const": [1, {"a": 1.0}]}, [1.0, {"a": 1}]) is True


def test_references_to_the_schema_own_id_resolve():
    schema = {
        "$id": "https://x.test/s.json",
        "$defs": {"n": {"type": "integer"}},
        "properties": {"a": {"$ref": "https://x.test/s.json#/$defs/n"}, "b": {"$ref": "#/$defs/n"}},
    }
    assert is_valid(schema, {"a": 1, "b": 2}) is True
    assert is_valid(schema, {"a": "x"}) is False
    assert is_valid(schema, {"b": "x"}) is False


def test_a_part_it_cannot_decide_defers_only_when_it_is_reached():
    schema = {"anyOf": [{"type": "string"}, {"format": "email"}]}
    assert is_valid(schema, "x") is True
    assert is_valid(schema, 1) is None
    assert is_valid({"properties": {"a": {"type": "uuid"}}}, {"b": 1}) is True
    assert is_valid({"properties": {"a": {"type": "uuid"}}}, {"a": 1}) is None


def test_a_schema_is_compiled_once_and_recursive_references_work():
    from agentpack.io.quickschema import compiled

    tree = {
        "$defs": {"node": {"type": "object", "properties": {"kids": {"items": {"$ref": "#/$defs/node"}}}}},
        "$ref": "#/$defs/node",
    }
    assert compiled(tree) is compiled(tree)
    assert is_valid(tree, {"kids": [{"kids": []}, {"kids": [{}]}]}) is True
    assert is_valid(tree, {"kids": [{"kids": [1]}]}) is False
