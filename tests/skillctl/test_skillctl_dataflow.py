"""Data flows once: a command parses each skill.yaml (and the access manifest) once."""

from __future__ import annotations

import pytest
from skillctl_testkit import YamlParses, write_skill


@pytest.fixture
def tree(tmp_path):
    for slug, skill_id in (("echo-one", "demo.one"), ("echo-two", "demo.two")):
        write_skill(tmp_path / "skills", slug, data=None, access={"env": {"read": []}})
        text = (tmp_path / "skills" / slug / "skill.yaml").read_text()
        (tmp_path / "skills" / slug / "skill.yaml").write_text(text.replace("demo.echo", skill_id))
    return tmp_path / "skills"


@pytest.mark.parametrize("command", ["validate", "eval"])
def test_a_skill_folder_is_parsed_once(agentpack_cli, tree, monkeypatch, command):
    skill = tree / "echo-one"
    parses = YamlParses(monkeypatch)
    result = agentpack_cli(command, skill, "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    assert parses.each_once([skill / "skill.yaml", tree / "_access.yaml"]), parses.parsed


@pytest.mark.parametrize("command", ["validate", "eval"])
def test_a_skills_tree_is_parsed_once(agentpack_cli, tree, monkeypatch, command):
    parses = YamlParses(monkeypatch)
    result = agentpack_cli(command, tree, "--json")
    assert result.exit_code == 0, result.stdout + result.stderr
    files = [tree / "echo-one" / "skill.yaml", tree / "echo-two" / "skill.yaml", tree / "_access.yaml"]
    assert parses.each_once(files), parses.parsed
