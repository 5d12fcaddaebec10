"""Validation of skill folders, trees and access manifests: every rule, with file, line and pointer."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from skillctl_testkit import EXAMPLES, REFERENCE, manifest, write_skill

from agentpack_skillctl.access import AccessManifest, grants, load_access
from agentpack_skillctl.globs import covered, matches
from agentpack_skillctl.manifest import load_skill
from agentpack_skillctl.validation import validate_skill, validate_tree


def codes(findings, severity="error"):
    return sorted({f.code for f in findings if f.severity == severity})


def check(path: Path, **kw):
    return validate_skill(load_skill(path), **kw)


def test_valid_skill_has_no_errors(make_skill):
    assert codes(check(make_skill())) == []


@pytest.mark.parametrize(
    "key",
    [
        "apiVersion",
        "kind",
        "id",
        "name",
        "version",
        "description",
        "governance",
        "runtime",
        "io",
        "determinism",
        "security",
        "observability",
    ],
)
def test_every_required_field(make_skill, key):
    findings = check(make_skill(data=manifest(**{key: None})))
    assert any(f.code == "SKC100" and f"'{key}'" in f.message for f in findings)


def test_unknown_keys_rejected_but_x_extensions_allowed(make_skill):
    skill = make_skill(data=manifest(**{"x-owner": {"team": "a"}, "prompt": "be nice"}))
    errors = [f for f in check(skill) if f.severity == "error"]
    assert [(f.code, f.pointer) for f in errors] == [("SKC100", "/prompt")]
    text = (skill / "skill.yaml").read_text().splitlines()
    assert text[errors[0].line - 1].startswith("prompt:")


@pytest.mark.parametrize(
    "field,value",
    [
        ("runtime__command", ["/usr/bin/python3", "impl/run.py"]),
        ("runtime__command", ["python3", "../impl/run.py"]),
        ("runtime__cwd", "impl/.."),
        ("io__inputSchema", "/etc/input.json"),
        ("io__outputSchema", "schemas/../../out.json"),
    ],
)
def test_absolute_and_dotdot_paths_rejected(make_skill, field, value):
    findings = check(make_skill(data=manifest(**{field: value})))
    pointer = "/" + field.replace("__", "/")
    hits = [f for f in findings if f.code == "SKC100" and (f.pointer or "").startswith(pointer)]
    assert hits and "relative to the skill folder" in hits[0].message and hits[0].line


def test_symlink_escape_of_the_command(make_skill, tmp_path):
    skill = make_skill()
    (tmp_path / "evil.py").write_text("print(1)")
    (skill / "impl" / "run.py").unlink()
    os.symlink(tmp_path / "evil.py", skill / "impl" / "run.py")
    assert "SKC120" in codes(check(skill))


def test_missing_files_named_by_the_contract(make_skill):
    skill = make_skill(data=manifest(runtime__command=["python3", "impl/missing.py"], runtime__cwd="nowhere"))
    missing = [f.pointer for f in check(skill) if f.code == "SKC121"]
    assert missing == ["/runtime/command/1", "/runtime/cwd"]


def test_transport_must_be_stdin_stdout_json(make_skill):
    data = manifest(
        io__input={"transport": "file", "encoding": "json"}, io__output={"transport": "stdout", "encoding": "text"}
    )
    pointers = {f.pointer for f in check(make_skill(data=data)) if f.code == "SKC100"}
    assert pointers == {"/io/input/transport", "/io/output/encoding"}


def test_network_rule_needs_access_and_approval(make_skill):
    bare = check(make_skill(data=manifest(determinism__network="allowed")))
    messages = " ".join(f.message for f in bare if f.code == "SKC100")
    assert "x-securityApprovalId" in messages and "must be true" in messages
    approved = manifest(
        determinism__network="allowed", security__access__network__allowed=True, **{"x-securityApprovalId": "SEC-9"}
    )
    assert codes(check(make_skill("net-ok", data=approved))) == []
    sneaky = manifest(security__access__network__allowed=True)
    assert any(f.pointer == "/security/access/network/allowed" for f in check(make_skill("sneaky", data=sneaky)))


@pytest.mark.parametrize(
    "spec_id,ok",
    [
        ("6f34688b-a76e-46b8-8d2d-8ffe5c88f9c6", True),
        ("SPEC-42", True),
        ("SPEC-skill.lib_v1", True),
        ("spec 42", False),
        ("42", False),
        ("SPEC-", False),
    ],
)
def test_spec_id_form(make_skill, spec_id, ok):
    findings = check(make_skill(data=manifest(governance__specId=spec_id)))
    assert ("SKC110" not in codes(findings)) is ok


def test_placeholder_spec_id_is_a_warning(make_skill):
    assert "SKC111" in codes(check(make_skill(data=manifest(governance__specId="SPEC-TODO"))), "warning")


def test_io_schemas_are_real_json_schemas(make_skill):
    skill = make_skill(
        input_schema={"type": "object", "properties": {"a": {"type": "nonsense"}}},
        output_schema={"type": "array"},
        fixtures={},
    )
    findings = check(skill)
    assert "SKC131" in codes(findings) and "SKC133" in codes(findings, "warning")
    (skill / "schemas" / "input.schema.json").write_text('{"type": "object",\n  "x": }')
    broken = [f for f in check(skill) if f.code == "SKC130"]
    assert broken and broken[0].line == 2 and broken[0].file.endswith("input.schema.json")


def test_input_schema_must_be_an_object_and_local(make_skill):
    skill = make_skill(input_schema={"type": "string"}, fixtures={})
    assert "SKC132" in codes(check(skill))
    remote = make_skill("remote", input_schema={"type": "object", "$ref": "https://example.com/s.json"}, fixtures={})
    assert "SKC134" in codes(check(remote))


def test_layout_and_fixtures(make_skill):
    skill = make_skill(fixtures={"bad": ({"value": 1}, {"nope": 1})})
    assert [f.code for f in check(skill) if f.severity == "error"] == ["SKC141"]
    (skill / "fixtures" / "bad.status").write_text("exploded\n")
    assert "SKC141" in codes(check(skill))
    for name in ("tests", "fixtures"):
        for child in (skill / name).iterdir():
            child.unlink()
        (skill / name).rmdir()
    assert [f.message.split(" (")[0] for f in check(skill) if f.code == "SKC140" and f.severity == "error"] == [
        "the skill folder has no tests/",
        "the skill folder has no fixtures/",
    ]
    (skill / "README.md").unlink()
    assert "SKC140" in codes(check(skill, strict=True))


def test_folder_name_must_be_kebab_case(make_skill):
    assert "SKC160" in codes(check(make_skill("Bad_Name")))


def test_tree_duplicate_ids_and_stray_folders(tmp_path):
    tree = tmp_path / "skills"
    write_skill(tree, "one")
    write_skill(tree, "two")
    (tree / "notes").mkdir()
    (tree / "_template").mkdir()
    findings = validate_tree(tree)
    dup = [f for f in findings if f.code == "SKC161"]
    assert len(dup) == 1 and dup[0].pointer == "/id" and "one/skill.yaml" in dup[0].message
    assert "SKC162" in codes(findings, "warning") and "SKC156" in codes(findings, "info")


ACCESS = {
    "env": {"read": ["LANG_HINT"]},
    "filesystem": {"read": ["**"], "write": ["out/**"]},
    "subprocess": {"allowed": False},
    "network": {"approvals": [{"id": "SEC-1", "skills": ["demo.net"]}]},
}


def test_access_manifest_caps_each_declaration(tmp_path):
    tree = tmp_path / "skills"
    data = manifest(
        security__access__env__read=["LANG_HINT", "AWS_SECRET"],
        security__access__filesystem__write=["out/*.json", "**"],
        security__access__subprocess__allowed=True,
    )
    skill = write_skill(tree, "greedy", data=data, access=ACCESS)
    findings = [f for f in check(skill) if f.code.startswith("SKC15")]
    assert [(f.code, f.pointer) for f in findings] == [
        ("SKC150", "/security/access/env/read/1"),
        ("SKC151", "/security/access/filesystem/write/1"),
        ("SKC152", "/security/access/subprocess/allowed"),
    ]
    assert all(f.line for f in findings)


def test_network_approval_must_be_listed_for_the_skill(tmp_path):
    tree = tmp_path / "skills"
    net = dict(determinism__network="allowed", security__access__network__allowed=True)
    ok = write_skill(tree, "net", data=manifest("demo.net", **net, **{"x-securityApprovalId": "SEC-1"}), access=ACCESS)
    assert codes(check(ok)) == []
    other = write_skill(tree, "other", data=manifest("demo.other", **net, **{"x-securityApprovalId": "SEC-1"}))
    assert "SKC153" in codes(check(other))
    unknown = write_skill(tree, "unknown", data=manifest("demo.unknown", **net, **{"x-securityApprovalId": "SEC-2"}))
    assert "SKC153" in codes(check(unknown))


def test_invalid_access_manifest_is_located(tmp_path):
    tree = tmp_path / "skills"
    skill = write_skill(tree, "one", access={"env": {"read": "HOME"}})
    findings = [f for f in check(skill) if f.code == "SKC155"]
    assert findings and findings[0].file.endswith("_access.yaml") and findings[0].pointer == "/env/read"


def test_grants_are_the_intersection(tmp_path):
    tree = tmp_path / "skills"
    data = manifest(
        security__access__env__read=["LANG_HINT", "AWS_SECRET"],
        security__access__filesystem__write=["out/a.json", "tmp/**"],
    )
    skill = load_skill(write_skill(tree, "g", data=data, access=ACCESS))
    access, _ = load_access(tree / "_access.yaml")
    g = grants(skill, access)
    assert g.env == ["LANG_HINT"] and g.withheld_env == ["AWS_SECRET"]
    assert g.write_globs == ["out/a.json"] and not g.network and not g.subprocess
    assert isinstance(access, AccessManifest)


def test_yaml_errors_are_pack_errors_with_lines(tmp_path, agentpack_cli):
    skill = write_skill(tmp_path / "skills", "dup")
    (skill / "skill.yaml").write_text("apiVersion: skill/v1\nkind: Skill\nkind: Again\n")
    result = agentpack_cli("validate", "-o", "json", str(skill))
    finding = result.json()["items"][0]["findings"][0]
    assert result.exit_code == 1 and finding["line"] == 3 and "duplicate key" in finding["message"]


def test_examples_tree_is_valid_in_strict_mode():
    findings = validate_tree(EXAMPLES, strict=True)
    assert [f for f in findings if f.severity != "info"] == []


# -- globs ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "path,glob,ok",
    [
        ("a/b/c", "a/**", True),
        ("a", "a/**", False),
        ("x.py", "**/*.py", True),
        ("d/e/x.py", "**/*.py", True),
        ("a/b", "a/*", True),
        ("a/b/c", "a/*", False),
        ("f1", "f[0-9]", True),
        ("fa", "f[!a]", False),
    ],
)
def test_glob_matching(path, glob, ok):
    assert matches(path, [glob]) is ok


segment = st.text(alphabet="abc.", min_size=1, max_size=4).filter(lambda s: s not in (".", ".."))


@given(st.lists(segment, min_size=1, max_size=4))
def test_glob_property_a_literal_path_matches_itself_and_double_star(parts):
    path = "/".join(parts)
    assert matches(path, [path.replace("[", "[[]")]) or "[" in path
    assert matches(path, ["**"]) and covered(path, ["**"])
    assert covered(parts[0] + "/**", [parts[0] + "/**"]) and not covered("**", [parts[0] + "/*"])


# -- robustness: arbitrary manifests never crash the validator ------------------------------------------
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.dictionaries(st.sampled_from([*manifest(), "x-a", "zz"]), json_values, max_size=6))
def test_property_any_mapping_gives_findings_not_crashes(tmp_path, overrides):
    data = {**manifest(), **overrides}
    skill = write_skill(tmp_path / "fuzz", "fuzz-skill", data=data)
    for f in check(skill):
        assert f.code.startswith("SKC") and f.file


# -- agreement with the origin's schema --------------------------------------------------------------
def _reference_validator():
    path = REFERENCE / "skill.schema.json"
    if not path.is_file():
        pytest.skip(f"reference schema not found at {path} (../shared/reference is absent)")
    from jsonschema import Draft202012Validator

    return Draft202012Validator(json.loads(path.read_text()))


CORPUS = {
    "valid": manifest(),
    "unknown key": manifest(prompt="x"),
    "x extension": manifest(**{"x-notes": {}}),
    "bad id": manifest(id="Bad.Id"),
    "bad version": manifest(version="1.0"),
    "absolute command": manifest(runtime__command=["/bin/sh"]),
    "dotdot schema": manifest(io__inputSchema="../x.json"),
    "file transport": manifest(io__input={"transport": "file", "encoding": "json"}),
    "network no approval": manifest(determinism__network="allowed", security__access__network__allowed=True),
    "network approved": manifest(
        determinism__network="allowed", security__access__network__allowed=True, **{"x-securityApprovalId": "SEC-1"}
    ),
    "forbidden but allowed": manifest(security__access__network__allowed=True),
    "time input_only": manifest(determinism__time="input_only"),
    "randomness seeded": manifest(determinism__randomness="seeded"),
    "runtime node": manifest(runtime__type="node", runtime__command=["node", "impl/run.js"]),
    "runtime wasm": manifest(runtime__type="wasm"),
    "run report off": manifest(observability__runReport={"enabled": False}),
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_same_verdict_as_the_origin_schema(name):
    from agentpack_skillctl.schemas_store import SKILL_SCHEMA, store

    ours = store().is_valid(SKILL_SCHEMA, CORPUS[name])
    assert ours == _reference_validator().is_valid(CORPUS[name]), name


def test_documented_differences_from_the_origin_schema():
    """We reject '..' as a path segment (not anywhere in a string) and make oneSkillPerCommit optional."""
    from agentpack_skillctl.schemas_store import SKILL_SCHEMA, store

    reference = _reference_validator()
    dotted_arg = manifest(runtime__command=["python3", "impl/run.py", "a..b"])
    assert store().is_valid(SKILL_SCHEMA, dotted_arg) and not reference.is_valid(dotted_arg)
    no_flag = manifest()
    del no_flag["governance"]["oneSkillPerCommit"]
    assert store().is_valid(SKILL_SCHEMA, no_flag) and not reference.is_valid(no_flag)
