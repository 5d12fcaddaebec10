"""The core's quick JSON Schema check decides skillctl's schemas and fixtures as jsonschema does."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from skillctl_testkit import EXAMPLES, manifest

from agentpack.io.quickschema import is_valid
from agentpack_skillctl.schemas_store import ACCESS_SCHEMA, SKILL_SCHEMA, bundled

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False) | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=10,
)

SCHEMAS = [json.loads(p.read_text()) for p in sorted(EXAMPLES.glob("*/schemas/*.schema.json"))]
SCHEMAS += [bundled(SKILL_SCHEMA), bundled(ACCESS_SCHEMA)]


def agrees(schema, instance) -> None:
    quick = is_valid(schema, instance)
    if quick is not None:
        assert quick == Draft202012Validator(schema).is_valid(instance), (schema, instance)


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(SCHEMAS), json_values)
def test_agrees_on_the_project_schemas(schema, instance):
    agrees(schema, instance)


def test_decides_the_skill_contract():
    assert is_valid(bundled(SKILL_SCHEMA), manifest()) is True
    assert is_valid(bundled(SKILL_SCHEMA), manifest(version="1.0")) is False


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*/fixtures/*.input.json")), ids=lambda p: p.name)
def test_agrees_on_every_fixture(path):
    schema = json.loads((path.parents[1] / "schemas" / "input.schema.json").read_text())
    agrees(schema, json.loads(path.read_text()))
