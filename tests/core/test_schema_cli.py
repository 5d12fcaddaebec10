"""``agentpack schema list/export``: every bundled schema, exported so a standard validator reads the examples."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"

# (schema name, example files): every example a user copies, against the schema of its kind
CASES = [
    ("ecp/ecp-manifest", ["ecp/conformance-pack/expert/EXPERT.yaml"]),
    (
        "ecp/ecp-eval-suite",
        ["ecp/conformance-pack/expert/evals/conformance.yaml", "ecp/conformance-pack/expert/evals/retrieval.yaml"],
    ),
    ("ecp/ecp-policy", ["ecp/conformance-pack/expert/maintenance/policy.json"]),
    ("agent-rpc/manifest", ["agent_rpc/manifest.yaml", "ecp/agent-manifest.yaml"]),
    ("openexperts/expert", ["openexperts/acme-support/expert.yaml"]),
    ("openexperts/tool", ["openexperts/acme-support/tools/crm.yaml", "openexperts/acme-support/tools/helpdesk.yaml"]),
    ("openexperts/bindings", ["openexperts/bindings.yaml"]),
    ("skillctl/skill", [str(p.relative_to(EXAMPLES)) for p in sorted(EXAMPLES.glob("skills/*/skill.yaml"))]),
    ("skillctl/access-manifest", ["skills/_access.yaml"]),
]


def test_list_names_every_bundled_schema(agentpack_cli):
    listed = agentpack_cli("schema", "list", "--json").json()["schemas"]
    names = {s["name"] for s in listed}
    bundled = {p.name for p in ROOT.glob("plugins/*/agentpack_*/schemas/*.json")}
    bundled |= {p.name for p in ROOT.glob("core/agentpack/kernel/schemas/*.json")}
    assert {s["file"] for s in listed} == bundled
    assert {name for name, _ in CASES} <= names
    text = agentpack_cli("schema", "list").stdout
    assert "ecp/ecp-manifest" in text and "ECP v1.0 manifest (expert/EXPERT.yaml)" in text


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    from agentpack.testing import run_cli

    folder = tmp_path_factory.mktemp("exported")
    result = run_cli(["schema", "export", "-o", str(folder)])
    assert result.exit_code == 0, result.stderr
    return folder


def _registry(folder: Path) -> Registry:
    resources = []
    for path in folder.rglob("*.json"):
        contents = json.loads(path.read_text(encoding="utf-8"))
        resources.append((contents["$id"], Resource.from_contents(contents)))
    return Registry().with_resources(resources)


@pytest.mark.parametrize("name,examples", CASES, ids=[name for name, _ in CASES])
def test_each_example_validates_against_the_exported_schema(exported, name, examples):
    """A standard validator (jsonschema, with the exported files as its only registry) accepts every example."""
    plugin, _ = name.split("/", 1)
    (path,) = [
        p
        for p in (exported / plugin).glob("*.json")
        if p.name.removesuffix(".json").removesuffix(".schema") == name.split("/", 1)[1]
    ]
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    schema = json.loads(path.read_text(encoding="utf-8"))
    validator = jsonschema.Draft202012Validator(schema, registry=_registry(exported))
    for example in examples:
        text = (EXAMPLES / example).read_text(encoding="utf-8")
        document = json.loads(text) if example.endswith(".json") else yaml.safe_load(text)
        errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
        assert errors == [], f"{example} against {name}"


def test_export_of_named_schemas_and_an_unknown_name(agentpack_cli, tmp_path):
    done = agentpack_cli("schema", "export", "ecp/ecp-manifest", "openexperts/expert", "-o", str(tmp_path), "--json")
    assert done.exit_code == 0
    assert sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.json")) == [
        "ecp/ecp-manifest.schema.json",
        "openexperts/expert.schema.json",
    ]
    missing = agentpack_cli("schema", "export", "ecp/no-such", "-o", str(tmp_path / "x"))
    assert missing.exit_code == 2 and "no schema named 'ecp/no-such'" in missing.stderr
    assert not (tmp_path / "x").exists()
