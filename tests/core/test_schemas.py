"""agentpack.kernel.schemas.SchemaStore: offline registry, findings with pointers and lines, messages, formats."""

from __future__ import annotations

import json
import socket
import urllib.request

import pytest

from agentpack.io.errors import AgentpackError
from agentpack.io.yamlio import parse_yaml
from agentpack.kernel.schemas import SchemaStore, format_checker

DIALECT = "https://json-schema.org/draft/2020-12/schema"
PACK_ID = "https://agentpack.test/schemas/pack.json"
SOURCE_ID = "https://agentpack.test/schemas/source.json"

PACK = {
    "$schema": DIALECT,
    "$id": PACK_ID,
    "type": "object",
    "required": ["name", "sources"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[a-z-]+$"},
        "created": {"type": "string", "format": "date-time"},
        "homepage": {"type": "string", "format": "uri"},
        "contact": {"type": "string", "format": "email"},
        "sources": {"type": "array", "items": {"$ref": "source.json"}},
        "mode": {"anyOf": [{"const": "fast"}, {"const": "exact"}]},
        "remote": {"$ref": "https://schemas.example.org/remote.json"},
    },
}
SOURCE = {
    "$schema": DIALECT,
    "$id": SOURCE_ID,
    "oneOf": [
        {"type": "string", "minLength": 1},
        {
            "type": "object",
            "required": ["path"],
            "additionalProperties": False,
            "properties": {"path": {"type": "string"}, "weight": {"type": "number", "minimum": 0}},
        },
    ],
}


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a connection fails the test."""

    def refuse(*args, **kwargs):
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(urllib.request, "urlopen", refuse)


@pytest.fixture
def store(tmp_path, monkeypatch, no_network) -> SchemaStore:
    """The two schemas bundled as package data of a throwaway package, loaded with ``from_package``."""
    package = tmp_path / "sample_schemas_pkg"
    (package / "schemas").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "schemas" / "pack.json").write_text(json.dumps(PACK))
    (package / "schemas" / "source.json").write_text(json.dumps(SOURCE))
    (package / "schemas" / "notes.txt").write_text("not a schema")
    monkeypatch.syspath_prepend(str(tmp_path))
    return SchemaStore.from_package("sample_schemas_pkg")


def findings(store, text, **kwargs):
    doc = parse_yaml(text, file="pack.yaml")
    return store.validate(PACK_ID, doc.data, document=doc, code="T100", **kwargs)


def test_from_package_finds_schemas_by_id(store):
    assert store.ids() == [PACK_ID, SOURCE_ID]
    assert store.schema(SOURCE_ID)["oneOf"]
    with pytest.raises(AgentpackError, match="no bundled schema"):
        store.schema("https://agentpack.test/nope.json")


def test_ref_across_bundled_schemas_resolves(store):
    assert store.is_valid(PACK_ID, {"name": "ok", "sources": ["a.md", {"path": "b.md", "weight": 1}]})
    assert not store.is_valid(PACK_ID, {"name": "ok", "sources": [""]})
    assert store.validator(PACK_ID) is store.validator(PACK_ID)  # built once


def test_unknown_remote_ref_fails_without_network(store):
    with pytest.raises(AgentpackError, match=r"remote\.json', which is not bundled") as info:
        store.validate(PACK_ID, {"name": "ok", "sources": [], "remote": 1})
    assert "never fetched" in info.value.message
    with pytest.raises(AgentpackError, match="not bundled"):
        store.is_valid(PACK_ID, {"name": "ok", "sources": [], "remote": 1})


def test_findings_carry_pointer_file_and_yaml_line(store):
    text = "name: ok\nsources:\n  - a.md\n  - path: b.md\n    weight: -1\n"
    (finding,) = findings(store, text)
    assert finding.code == "T100" and finding.severity == "error"
    assert (finding.file, finding.line, finding.pointer) == ("pack.yaml", 5, "/sources/1/weight")
    assert finding.message == "/sources/1/weight: -1 is less than the minimum of 0"


def test_one_finding_per_unknown_key(store):
    text = "name: ok\nsources: []\nzeta: 1\nalpha: 2\nbeta: 3\n"
    result = findings(store, text)
    assert [(f.pointer, f.line) for f in result] == [("/zeta", 3), ("/alpha", 4), ("/beta", 5)]
    assert [f.message for f in result] == [
        "/zeta: unknown key 'zeta'",
        "/alpha: unknown key 'alpha'",
        "/beta: unknown key 'beta'",
    ]


def test_unknown_keys_inside_ref_and_unevaluated_properties(store):
    result = findings(store, "name: ok\nsources:\n  - path: a.md\n    extra: 1\n")
    assert [(f.pointer, f.line, f.message) for f in result] == [
        ("/sources/0/extra", 4, "/sources/0/extra: unknown key 'extra'")
    ]
    composed = SchemaStore(
        [
            {
                "$id": "u",
                "type": "object",
                "allOf": [{"properties": {"a": {}}}],
                "properties": {"b": {}},
                "unevaluatedProperties": False,
            }
        ]
    )
    got = composed.validate("u", {"a": 1, "b": 2, "c": 3, "it's": 4})
    assert [f.pointer for f in got] == ["/c", "/it's"]  # 'a' is evaluated through allOf


def test_missing_required_key(store):
    (finding,) = findings(store, "name: ok\n")
    assert finding.message == "/: missing required key 'sources'" and finding.line == 1


def test_one_of_reports_the_alternative_the_value_was_meant_to_be(store):
    (finding,) = findings(store, "name: ok\nsources:\n  - path: 3\n")
    assert finding.pointer == "/sources/0/path" and finding.line == 3
    assert finding.message == "/sources/0/path: 3 is not of type 'string'"
    (finding,) = findings(store, "name: ok\nsources:\n  - weight: 1\n")
    assert finding.message == "/sources/0: missing required key 'path'"


def test_alternatives_that_all_misfit_are_listed(store):
    (finding,) = findings(store, "name: ok\nsources: []\nmode: slow\n")
    assert finding.message == "/mode: 'slow' is not allowed here; expected 'fast' or 'exact'"
    (finding,) = findings(store, "name: ok\nsources:\n  - 42\n")
    assert finding.message == "/sources/0: 42 is not allowed here; expected a string or a mapping"


@pytest.mark.parametrize(
    "field, good, bad",
    [
        ("created", "2026-01-01T00:00:00Z", "2026-02-30T00:00:00Z"),
        ("created", "2026-01-01T12:30:00.5+02:00", "yesterday"),
        ("created", "2016-12-31T23:59:60Z", "2026-01-01 00:00:00"),
        ("homepage", "https://example.org/x", "not a uri"),
        ("contact", "someone@example.org", "nobody"),
    ],
)
def test_format_checking(store, field, good, bad):
    base = {"name": "ok", "sources": []}
    assert store.is_valid(PACK_ID, {**base, field: good})
    (finding,) = store.validate(PACK_ID, {**base, field: bad})
    assert finding.pointer == f"/{field}" and "is not a" in finding.message


def test_fallback_formats():
    checker = format_checker()
    assert checker.conforms("/a/b~1c", "json-pointer") and not checker.conforms("a/b", "json-pointer")
    assert checker.conforms("12:00:00Z", "time") and not checker.conforms("25:00:00Z", "time")
    assert checker.conforms("../x.json#/a", "uri-reference") and not checker.conforms("a b", "uri-reference")
    assert checker.conforms(3, "date-time")  # formats apply to strings only


def test_findings_are_in_document_order(store):
    text = "sources:\n  - ''\nname: Bad Name\nextra: 1\n"
    assert [f.line for f in findings(store, text)] == [2, 3, 4]


def test_validation_without_document_or_with_file(store):
    (finding,) = store.validate(PACK_ID, {"name": "ok"}, file="x.json", severity="warning")
    assert (finding.file, finding.line, finding.severity) == ("x.json", None, "warning")


def test_invalid_bundled_schemas_are_reported():
    with pytest.raises(AgentpackError, match="has no '\\$id'"):
        SchemaStore([{"type": "object"}])
    broken = SchemaStore([{"$id": "b", "type": "no-such-type"}])
    with pytest.raises(AgentpackError, match="not a valid draft 2020-12 schema"):
        broken.check()


def test_adding_a_schema_resets_the_registry(store):
    store.add({"$id": "https://agentpack.test/schemas/late.json", "$ref": "source.json"})
    assert "https://agentpack.test/schemas/late.json" in store.ids()
    assert not store.is_valid("https://agentpack.test/schemas/late.json", {"weight": 1})


def test_valid_instances_take_the_quick_path_without_importing_jsonschema():
    """One schema path: quickschema decides "valid"; jsonschema is imported only to explain an error."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from agentpack.kernel.schemas import SchemaStore\n"
        "s = SchemaStore([{'$id': 'urn:t', 'type': 'object', 'required': ['a'],"
        " 'properties': {'a': {'type': 'integer'}}}])\n"
        "assert s.validate('urn:t', {'a': 1}) == [] and s.is_valid('urn:t', {'a': 1})\n"
        "print('jsonschema' in sys.modules)\n"
        "assert [f.pointer for f in s.validate('urn:t', {'a': 'x'})] == ['/a']\n"
        "print('jsonschema' in sys.modules)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True"]


def test_schemas_the_quick_path_cannot_decide_still_validate(store):
    schema = {"$id": "urn:fmt", "type": "string", "format": "date-time"}
    fmt = SchemaStore([schema])
    assert fmt.quick_is_valid("urn:fmt", "2026-01-01T00:00:00Z") is None
    assert fmt.validate("urn:fmt", "2026-01-01T00:00:00Z") == []
    assert fmt.validate("urn:fmt", "yesterday")


def test_an_unknown_key_close_to_a_known_one_gets_did_you_mean(store):
    (near, far) = findings(store, "name: ok\nsources: []\nhomepge: x\nzzz: 1\n")
    assert (near.message, near.hint) == ("/homepge: unknown key 'homepge'", "did you mean 'homepage'?")
    assert far.hint is None
    composed = SchemaStore([{"$id": "u", "allOf": [{"properties": {"timeout": {}}}], "unevaluatedProperties": False}])
    (finding,) = composed.validate("u", {"timout": 1})
    assert finding.hint == "did you mean 'timeout'?"  # a key named by an allOf branch


@pytest.mark.parametrize(
    ("schema", "value", "hint"),
    [
        ({"enum": ["parallel", "serial", "serial_per_key"]}, "serial-per-key", "did you mean 'serial_per_key'?"),
        ({"enum": ["contains", "equals", "regex"]}, "containz", "did you mean 'contains'?"),
        ({"const": "contains"}, "contain", "did you mean 'contains'?"),
        ({"anyOf": [{"const": "fast"}, {"const": "exact"}]}, "exakt", "did you mean 'exact'?"),
        ({"enum": ["contains", "equals"]}, "zzzz", None),
        ({"enum": [1, 2]}, 3, None),
    ],
)
def test_an_unknown_enum_value_gets_did_you_mean(schema, value, hint):
    (finding,) = SchemaStore([{"$id": "e", **schema}]).validate("e", value)
    assert finding.hint == hint


def test_vv_logs_the_schema_and_error_count(store, monkeypatch, caplog):
    from agentpack.io import console

    monkeypatch.setattr(console, "VERBOSE", 2)
    with caplog.at_level("DEBUG", logger="agentpack.kernel.schemas"):
        findings(store, "name: ok\nsources: []\nzeta: 1\n")
    assert f"schema {PACK_ID}: pack.yaml has 1 error(s)" in caplog.text
    monkeypatch.setattr(console, "VERBOSE", 1)
    caplog.clear()
    with caplog.at_level("DEBUG", logger="agentpack.kernel.schemas"):
        findings(store, "name: ok\nsources: []\nzeta: 1\n")
    assert caplog.text == ""
