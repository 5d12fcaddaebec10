from agentpack.testing import run_cli


def test_version_lists_plugins():
    result = run_cli(["--version"])
    assert result.exit_code == 0
    assert result.stdout.startswith("agentpack ")


def test_validate_skill(tmp_path):
    skill = tmp_path / "my-skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("---\nname: my-skill\ndescription: Does things.\n---\n# Body\n")
    assert run_cli(["validate", str(skill)]).exit_code == 0
    (skill / "SKILL.md").write_text("---\nname: other\n---\n")
    result = run_cli(["validate", "-o", "json", str(skill)])
    assert result.exit_code == 1
    codes = {f["code"] for f in result.json()["items"][0]["findings"]}
    assert codes == {"SKL018", "SKL020"}
