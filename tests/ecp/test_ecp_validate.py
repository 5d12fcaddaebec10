"""Validation: stable codes with file, line and pointer; strict profile rules; staleness."""

from __future__ import annotations

import json
from pathlib import Path

from agentpack_ecp.pack.manifest import load_pack
from agentpack_ecp.validate.checks import validate_pack


def _codes(pack: Path, strict: bool = False) -> dict[str, list]:
    found: dict[str, list] = {}
    for f in validate_pack(load_pack(pack), strict):
        found.setdefault(f.code, []).append(f)
    return found


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, old
    path.write_text(text.replace(old, new))


def test_example_pack_is_clean_in_strict_mode(example_pack: Path) -> None:
    assert [f for f in validate_pack(load_pack(example_pack), True) if f.severity != "info"] == []


def test_schema_errors_point_at_file_line_and_field(new_pack: Path) -> None:
    manifest = new_pack / "expert" / "EXPERT.yaml"
    _edit(manifest, "    type: filesystem\n", "    type: ftp\n")
    finding = _codes(new_pack)["ECP100"][0]
    assert finding.file == "expert/EXPERT.yaml" and finding.pointer == "/sources/0/type"
    assert manifest.read_text().splitlines()[finding.line - 1].strip() == "type: ftp"


def test_linkage_paths_and_placeholders(new_pack: Path) -> None:
    manifest = new_pack / "expert" / "EXPERT.yaml"
    _edit(manifest, "skill:\n  name: my-expert", "skill:\n  name: other-name")
    _edit(manifest, "policy_path: expert/maintenance/policy.json", "policy_path: ../policy.json")
    _edit(manifest, "maintenance:\n", "maintenance:\n  playbook_path: expert/maintenance/PLAYBOOK.md\n")
    (new_pack / "expert" / "maintenance" / "PLAYBOOK.md").write_text("# Playbook\n\nTODO\n")
    codes = _codes(new_pack)
    assert {"ECP101", "ECP102", "ECP110"} <= set(codes)
    assert codes["ECP110"][0].pointer == "/maintenance/policy_path"
    assert codes["ECP112"][0].severity == "warning"


def test_eval_suite_problems(new_pack: Path) -> None:
    suite = new_pack / "expert" / "evals" / "conformance.yaml"
    _edit(
        suite,
        "      min_citations: 1\n",
        "      min_citations: 1\n      must_be_polite: true\n      answer_must_match: ['(unclosed']\n",
    )
    _edit(suite, "suite_id: conformance", "suite_id: renamed")
    codes = _codes(new_pack)
    assert codes["ECP151"][0].severity == "warning" and codes["ECP151"][0].pointer.endswith("/must_be_polite")
    assert "ECP154" in codes and "ECP152" in codes


def test_policy_problems(new_pack: Path) -> None:
    policy = new_pack / "expert" / "maintenance" / "policy.json"
    data = json.loads(policy.read_text())
    data["validation"]["eval_suites"] = ["missing-suite"]
    data["publishing"]["on_pass"] = "yolo"
    policy.write_text(json.dumps(data, indent=2))
    codes = _codes(new_pack)
    assert codes["ECP141"][0].file == "expert/maintenance/policy.json"
    assert codes["ECP140"][0].line is not None
    policy.write_text("{ not json")
    assert _codes(new_pack)["ECP140"][0].line == 1


def test_index_descriptor_must_agree_and_staleness(new_pack: Path) -> None:
    index_dir = new_pack / "expert" / "context" / "indexes" / "docs-keyword"
    descriptor = json.loads((index_dir / "index.json").read_text())
    descriptor["index_id"] = "other"
    (index_dir / "index.json").write_text(json.dumps(descriptor))
    (new_pack / "expert" / "sources" / "docs" / "new.md").write_text("# New page\n")
    codes = _codes(new_pack)
    assert codes["ECP132"][0].file.endswith("index.json")
    assert codes["ECP135"][0].severity == "warning" and "stale" in codes["ECP135"][0].message


def test_unbuilt_index_warns_and_strict_profile_fails(tmp_path: Path) -> None:
    from agentpack_ecp.pack.scaffold import scaffold

    pack = tmp_path / "fresh-expert"
    scaffold(pack)
    assert "ECP136" in _codes(pack)
    strict = _codes(pack, strict=True)
    assert "ECP214" in strict and "ECP212" in strict


def test_profile_rules_and_safety(new_pack: Path) -> None:
    manifest = new_pack / "expert" / "EXPERT.yaml"
    _edit(manifest, "  allow_remote_llm: false", "  allow_remote_llm: true\n  contains_secrets: true")
    _edit(manifest, "  contains_secrets: false\n", "")
    _edit(manifest, "uri: expert/sources/docs", "uri: ../outside/docs")
    codes = _codes(new_pack, strict=True)
    assert {"ECP201", "ECP202", "ECP211", "ECP215"} <= set(codes)
    _edit(manifest, "profile: conformance", "profile: docs")
    assert "ECP217" in _codes(new_pack, strict=True)
    _edit(manifest, "profile: docs", "profile: galactic")
    assert _codes(new_pack, strict=True)["ECP220"][0].severity == "warning"


def test_chunk_records_are_checked(new_pack: Path) -> None:
    chunks = new_pack / "expert" / "context" / "indexes" / "docs-keyword" / "chunks.jsonl"
    records = [json.loads(line) for line in chunks.read_text().splitlines()]
    good = dict(records[0], revision={"timestamp": "2026-01-01T00:00:00Z"})
    records[0]["artifact_path"] = "/etc/passwd"
    records[0]["source_id"] = "ghost"
    chunks.write_text("".join(json.dumps(r) + "\n" for r in [*records, good]))
    codes = _codes(new_pack, strict=True)
    assert {"ECP138", "ECP139", "ECP216"} <= set(codes)
    assert codes["ECP138"][0].line == 1 and codes["ECP216"][0].line == len(records) + 1
