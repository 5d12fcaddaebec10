"""`agentpack skill-md read-properties` and `to-prompt` against skills-ref 0.1.1's commands, byte for byte.

Both run in-process on every SKILL.md fixture and on the 42 real skills of the shared reference folder:
where skills-ref succeeds, agentpack prints the same bytes; where it fails, agentpack fails too. The
fixtures whose verdicts differ on purpose (``divergence`` in ``cases.json``, see docs/skill-md.md) must
still differ, so the documentation stays true.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentpack.testing import run_cli

skills_ref_cli = pytest.importorskip("skills_ref.cli", reason="skills-ref (test dependency) is not installed")

FIXTURES = Path(__file__).parent / "fixtures" / "skills"
CASES: dict[str, dict] = json.loads((FIXTURES / "cases.json").read_text(encoding="utf-8"))
PAX_SKILLS = Path(__file__).parents[2] / ".." / "shared" / "reference" / "dci" / "pax-skills"
COMMANDS = ("read-properties", "to-prompt")


def reference(*args: str) -> str | None:
    """skills-ref's stdout, or None when it fails (an error or a crash)."""
    from click.testing import CliRunner

    result = CliRunner().invoke(skills_ref_cli.main, list(args))
    return result.stdout if result.exit_code == 0 else None


def ours(*args: str) -> str | None:
    result = run_cli(["skill-md", *args])
    if result.exit_code == 0:
        return result.stdout
    assert result.exit_code == 2 and result.stderr.startswith("error: "), result.stderr
    return None


@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("case", sorted(CASES))
def test_fixture_output_matches_skills_ref(case, command):
    path = str(FIXTURES / case)
    theirs, mine = reference(command, path), ours(command, path)
    if "divergence" in CASES[case]:
        assert theirs != mine, CASES[case]["divergence"]
    else:
        assert mine == theirs


def test_real_skills_match_skills_ref():
    if not PAX_SKILLS.is_dir():
        pytest.skip(f"reference skills not found at {PAX_SKILLS.resolve()} (the shared reference folder is absent)")
    directories = sorted(str(p.parent) for p in PAX_SKILLS.rglob("SKILL.md"))
    assert len(directories) == 42
    readable = []
    for directory in directories:
        theirs = reference("read-properties", directory)
        assert ours("read-properties", directory) == theirs, directory
        readable += [directory] if theirs is not None else []
    assert 30 < len(readable) < 42  # the corpus has both outcomes, so the comparison is not vacuous
    assert ours("to-prompt", *directories) is reference("to-prompt", *directories) is None
    prompt = ours("to-prompt", *readable)
    assert prompt is not None and prompt == reference("to-prompt", *readable)
    assert prompt.count("<skill>") == len(readable)


def test_skill_md_paths_escaping_and_order_match():
    skill = FIXTURES / "html-characters"
    args = ("to-prompt", str(skill / "SKILL.md"), str(FIXTURES / "valid-basic"), str(skill))
    prompt = ours(*args)
    assert prompt == reference(*args)
    assert "&lt;tags&gt; &amp; &quot;quotes&quot; into &#x27;text&#x27;" in prompt
    assert ours("read-properties", str(skill / "SKILL.md")) == reference("read-properties", str(skill))


def test_json_envelopes():
    skill = FIXTURES / "html-characters"
    data = run_cli(["skill-md", "read-properties", "--json", str(skill)]).json()
    assert data["command"] == "skill-md read-properties" and data["ok"] is True
    assert data["properties"]["metadata"] == {"author": "Ana Müller", "nested": "['one', 'two']"}
    data = run_cli(["skill-md", "to-prompt", "-o", "json", str(skill)]).json()
    (entry,) = data["skills"]
    assert entry["location"] == str((skill / "SKILL.md").resolve()) and data["prompt"].startswith("<available_skills>")
    failed = run_cli(["skill-md", "read-properties", "--json", str(FIXTURES / "missing-name")])
    assert failed.exit_code == 2
    assert failed.json()["error"]["message"] == "missing required field 'name'"
