"""SKILL.md parity with the Agent Skills reference validator (skills-ref 0.1.1).

Every fixture under ``fixtures/skills/`` is validated by both; the verdicts
(valid or not) must agree, and so must the reason category (each reference
message maps to one SKL code). ``cases.json`` holds the expected agentpack
codes and the few divergences agentpack keeps on purpose (see docs/skill-md.md).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agentpack.skills.skillmd import read_skill, validate_skill_dir

validator = pytest.importorskip("skills_ref.validator", reason="skills-ref (test dependency) is not installed")

FIXTURES = Path(__file__).parent / "fixtures" / "skills"
CASES: dict[str, dict] = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
PAX_SKILLS = Path(__file__).parents[2] / ".." / "shared" / "reference" / "dci" / "pax-skills"

REF_CATEGORIES = [
    (r"^Missing required file", "SKL001"),
    (
        r"^(SKILL\.md must start|SKILL\.md frontmatter not properly closed|Invalid YAML|"
        r"SKILL\.md frontmatter must be a YAML mapping)",
        "SKL002",
    ),
    (r"^Unexpected fields in frontmatter", "SKL010"),
    (r"^Missing required field in frontmatter: name", "SKL011"),
    (r"^Field 'name' must be", "SKL012"),
    (r"^Skill name '.*' exceeds", "SKL013"),
    (r"^Skill name '.*' must be lowercase", "SKL014"),
    (r"^Skill name cannot start or end", "SKL015"),
    (r"^Skill name cannot contain consecutive", "SKL016"),
    (r"^Skill name '.*' contains invalid", "SKL017"),
    (r"^Directory name '.*' must match", "SKL018"),
    (r"^Missing required field in frontmatter: description", "SKL020"),
    (r"^Field 'description' must be", "SKL021"),
    (r"^Description exceeds", "SKL022"),
    (r"^Field 'compatibility' must be", "SKL030"),
    (r"^Compatibility exceeds", "SKL031"),
]


def reference_codes(directory: Path) -> set[str] | None:
    """The reference's errors mapped to SKL codes; None when the reference crashes (an invalid verdict)."""
    try:
        messages = validator.validate(directory)
    except Exception:
        return None
    codes = set()
    for message in messages:
        matched = [code for pattern, code in REF_CATEGORIES if re.search(pattern, message, re.S)]
        assert matched, f"unmapped reference message: {message!r}"
        codes.add(matched[0])
    return codes


def agentpack_codes(directory: Path, severity: str = "error") -> set[str]:
    _, findings = validate_skill_dir(directory)
    return {f.code for f in findings if f.severity == severity}


def test_every_fixture_directory_has_an_expectation():
    directories = {p.name for p in FIXTURES.iterdir() if p.is_dir()}
    assert directories == set(CASES)
    assert len(CASES) >= 60


@pytest.mark.parametrize("case", sorted(CASES))
def test_fixture_matches_reference(case):
    expected = CASES[case]
    directory = FIXTURES / case
    ours = agentpack_codes(directory)
    assert sorted(ours) == expected["errors"], expected["note"]
    assert sorted(agentpack_codes(directory, "warning")) == expected.get("warnings", [])
    theirs = reference_codes(directory)
    reference_valid = theirs is not None and not theirs
    if "divergence" in expected:  # kept on purpose; fail if the reference ever agrees, so the docs stay true
        assert reference_valid != (not ours), expected["divergence"]
        return
    assert reference_valid == (not ours), f"verdict differs: reference {theirs}, agentpack {ours}"
    if theirs is not None:
        assert theirs == ours, "same verdict, different reason category"
    else:
        assert ours == {"SKL002"}, "where the reference crashes agentpack reports an unreadable SKILL.md"


def test_divergences_are_documented():
    docs = (Path(__file__).parents[2] / "docs" / "skill-md.md").read_text(encoding="utf-8")
    for case, expected in CASES.items():
        if "divergence" in expected:
            assert f"`{case}`" in docs, f"divergence {case} is not described in docs/skill-md.md"
    for code in sorted({c for e in CASES.values() for c in e["errors"] + e.get("warnings", [])}):
        assert f"`{code}`" in docs, f"{code} is not documented"


def test_real_skills_match_reference():
    if not PAX_SKILLS.is_dir():
        pytest.skip(f"reference skills not found at {PAX_SKILLS.resolve()} (the shared reference folder is absent)")
    directories = sorted(p.parent for p in PAX_SKILLS.rglob("SKILL.md"))
    assert len(directories) == 42
    differences = []
    invalid = 0
    for directory in directories:
        theirs, ours = reference_codes(directory), agentpack_codes(directory)
        invalid += bool(ours)
        if theirs != ours:
            differences.append((directory.name, theirs, ours))
    assert not differences
    assert 0 < invalid < len(directories)  # the corpus has both verdicts, so the comparison is not vacuous


def test_not_a_directory(tmp_path):
    file = tmp_path / "SKILL.md"
    file.write_text("---\nname: x\ndescription: d\n---\n")
    assert validator.validate(file)
    skill, findings = validate_skill_dir(file)
    assert skill is None and [f.code for f in findings] == ["SKL001"]
    assert agentpack_codes(tmp_path / "missing") == {"SKL001"}
    assert validator.validate(tmp_path / "missing")


def test_scalars_stay_strings():
    skill = read_skill(FIXTURES / "scalars-stay-strings")
    assert skill.metadata == {"version": "1.0", "octal": "010", "flag": "yes", "empty": "~", "date": "2024-01-01"}
    assert read_skill(FIXTURES / "true").name == "true"


def test_nested_metadata_and_merges_are_read():
    assert read_skill(FIXTURES / "nested-metadata").metadata["author"]["links"][1] == "mailto:someone@example.org"
    assert read_skill(FIXTURES / "merge-nested").metadata == {"author": "x", "version": "1"}
    top = read_skill(FIXTURES / "merge-top-level")
    assert top.ignored == ("name", "description") and top.meta == {}


def test_line_separator_and_crlf_are_kept_as_text():
    assert read_skill(FIXTURES / "line-separator").description == "first part\u2028second part"
    skill = read_skill(FIXTURES / "crlf-line-endings")
    assert skill.metadata == {"author": "someone"} and "\r" not in skill.body


def test_findings_point_at_file_line_and_field():
    _, findings = validate_skill_dir(FIXTURES / "directory-mismatch")
    (mismatch,) = findings
    assert (mismatch.line, mismatch.pointer) == (2, "/name")
    assert mismatch.file.endswith("SKILL.md") and "another-name" in mismatch.message and mismatch.hint
    _, findings = validate_skill_dir(FIXTURES / "duplicate-keys")
    (duplicate,) = findings
    assert (duplicate.line, duplicate.column) == (4, 1)
    assert "duplicate key 'name'" in duplicate.message and "line 2" in duplicate.message
    _, findings = validate_skill_dir(FIXTURES / "flow-list")
    assert findings[0].line == 4 and "flow-style lists" in findings[0].message
    _, findings = validate_skill_dir(FIXTURES / "unexpected-fields")
    assert [(f.pointer, f.line) for f in findings] == [("/tags", 5), ("/version", 4)]
    _, findings = validate_skill_dir(FIXTURES / "bom-prefixed")
    assert "byte-order mark" in findings[0].message and findings[0].hint
    _, findings = validate_skill_dir(FIXTURES / "not-utf8")
    assert "not UTF-8" in findings[0].message and findings[0].line == 3


def test_a_tab_in_a_plain_scalar_points_at_the_tab():
    _, findings = validate_skill_dir(FIXTURES / "tab-in-plain-scalar")
    (tab,) = findings
    assert (tab.code, tab.line, tab.column) == ("SKL002", 3, 19)
    assert "tab character" in tab.message and tab.hint
    assert read_skill(FIXTURES / "tab-in-quoted-and-block-scalars").meta["license"] == "MIT\tor Apache\n"


def test_body_and_body_line():
    skill = read_skill(FIXTURES / "valid-basic")
    assert skill.body == "# Body\n\nInstructions."
    assert skill.document.body_line == 7
    assert skill.compatibility == "Python 3.11+"
    assert skill.meta["allowed-tools"] == "Read Grep"


def test_cli_reports_the_same_codes():
    """`agentpack validate -o json` on each fixture reports the codes of validate_skill_dir (exit 1 iff errors)."""
    from agentpack.testing import run_cli

    for case, expected in sorted(CASES.items()):
        if expected["errors"] == ["SKL001"]:
            continue  # no SKILL.md: no format claims the directory, a different (non-SKL) error
        result = run_cli(["validate", "-o", "json", str(FIXTURES / case)])
        findings = [f for item in result.json()["items"] for f in item["findings"]]
        assert sorted({f["code"] for f in findings if f["severity"] == "error"}) == expected["errors"], case
        assert result.exit_code == (1 if expected["errors"] else 0), case


def test_one_skill_md_is_parsed_once_per_state(tmp_path, monkeypatch):
    """Plugins and the core checking one pack share a parse; a changed file is parsed again."""
    from agentpack.io import frontmatter
    from agentpack.skills import skillmd

    skill = tmp_path / "demo"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: A demo.\n---\nBody\n")
    parses = []
    real = frontmatter.read_markdown
    monkeypatch.setattr(frontmatter, "read_markdown", lambda *a, **k: parses.append(a[0]) or real(*a, **k))
    first = skillmd.read_skill(skill)
    assert skillmd.validate_skill_dir(skill)[0] is first and len(parses) == 1
    (skill / "SKILL.md").write_text("---\nname: demo\ndescription: Another, longer description.\n---\n")
    assert skillmd.read_skill(skill).meta["description"].startswith("Another") and len(parses) == 2
