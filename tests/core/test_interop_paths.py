"""Paths as upstream repositories lay them out: `validate .` inside a skill, a folder of skills, several
packs to `eval`, and the messages for a path no installed format claims or a command group not installed."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentpack.io.installhint import command as install_command
from agentpack.kernel.host import Host
from agentpack.kernel.plugins import create_plugin_manager, set_host
from agentpack.testing import run_cli

PAX_SKILLS = Path(__file__).parents[2] / ".." / "shared" / "reference" / "dci" / "pax-skills"


def write_skill(folder: Path, name: str | None = None, description: str = "Does one thing.") -> Path:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name or folder.name}\ndescription: {description}\n---\nBody.\n")
    return folder


@pytest.fixture
def without_plugin(monkeypatch):
    """A host as if the named plugin's distribution were not installed (its entry point hidden)."""
    import agentpack.kernel.entrypoints
    import agentpack.kernel.host
    import agentpack.kernel.plugins

    real = agentpack.kernel.entrypoints.entry_points
    hosts: list[Host | None] = []

    def hide(name: str) -> Host:
        def entry_points(group):
            return [ep for ep in real(group) if ep.name != name]

        monkeypatch.setattr(agentpack.kernel.entrypoints, "entry_points", entry_points)
        monkeypatch.setattr(agentpack.kernel.plugins, "entry_points", entry_points)
        monkeypatch.setattr(agentpack.kernel.host, "entry_points", entry_points)
        host = Host(create_plugin_manager())
        hosts.append(set_host(host))
        return host

    yield hide
    for previous in hosts[:1]:
        set_host(previous)


def test_validate_dot_inside_a_skill_checks_the_real_folder_name(tmp_path, monkeypatch):
    monkeypatch.chdir(write_skill(tmp_path / "pdf-tools"))
    result = run_cli(["validate", "--json", "."])
    assert result.exit_code == 0, result.stdout
    monkeypatch.chdir(write_skill(tmp_path / "other-folder", name="pdf-tools"))
    for path in (".", "SKILL.md"):
        (finding,) = run_cli(["validate", "--json", path]).json()["items"][0]["findings"]
        assert finding["code"] == "SKL018" and "directory name 'other-folder'" in finding["message"]


def test_validate_a_folder_of_skills_validates_each(tmp_path):
    skills = tmp_path / "skills"
    write_skill(skills / "tools" / "pdf-tools")
    write_skill(skills / "tools" / "bad-name", name="Bad_Name")
    write_skill(skills / "workflow" / "merge-pr")
    write_skill(skills / ".hidden" / "ignored")
    write_skill(skills / "node_modules" / "ignored")
    write_skill(skills / "venv" / "lib" / "site-packages" / "ignored")
    (skills / "notes").mkdir()
    result = run_cli(["validate", "--json", str(skills)])
    assert result.exit_code == 1
    items = {Path(i["path"]).relative_to(skills).as_posix(): i for i in result.json()["items"]}
    assert list(items) == ["tools/bad-name", "tools/pdf-tools", "workflow/merge-pr"]
    assert [items[k]["ok"] for k in items] == [False, True, True]
    assert {i["format"] for i in items.values()} == {"agent-skill"}


def test_a_pack_is_not_searched_for_packs_inside_it(tmp_path):
    outer = write_skill(tmp_path / "outer")
    write_skill(outer / "inner")
    assert [i["path"] for i in run_cli(["validate", "--json", str(tmp_path)]).json()["items"]] == [str(outer)]


def test_upstream_skill_collection_validates_like_skills_ref():
    if not PAX_SKILLS.is_dir():
        pytest.skip(f"reference skills not found at {PAX_SKILLS.resolve()} (the shared reference folder is absent)")
    validator = pytest.importorskip("skills_ref.validator", reason="skills-ref (test dependency) is not installed")
    data = run_cli(["validate", "--json", str(PAX_SKILLS)]).json()
    assert len(data["items"]) == 42
    for item in data["items"]:
        assert item["ok"] == (not validator.validate(Path(item["path"]))), item["path"]


def test_eval_takes_several_paths(agentpack_host, register_plugin, sample_plugin, todo_pack, tmp_path):
    register_plugin(sample_plugin, name="sample")
    done, open_ = todo_pack("- [x] a\n", name="done"), todo_pack("- [x] a\n- [ ] b\n", name="open")
    store = tmp_path / "runs.sqlite"
    data = run_cli(["eval", "--json", "--store", str(store), str(done), str(open_)]).json()
    assert [e["name"] for e in data["evaluations"]] == ["done", "open"]
    assert data["summary"]["cases"]["total"] == 3 and data["ok"] is False
    from agentpack.results.runs import open_store

    with open_store(store) as runs:  # one recorded run per pack
        assert sorted((r.name, r.status, r.total) for r in runs.find()) == [
            ("done", "passed", 1),
            ("open", "failed", 2),
        ]
    assert run_cli(["eval", str(done), str(done)]).exit_code == 0
    assert run_cli(["eval", "--json", str(tmp_path)]).json()["summary"]["cases"]["total"] == 3  # a folder of packs


def test_not_a_pack_says_what_it_found(tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "misc" / "sub").mkdir(parents=True)
    (tmp_path / "misc" / "notes.txt").write_text("x")
    (finding,) = run_cli(["validate", "--json", str(tmp_path / "empty")]).json()["items"][0]["findings"]
    assert finding["code"] == "PACK" and "an empty folder" in finding["message"]
    assert "SKILL.md" in finding["hint"] and "skill.yaml" in finding["hint"]
    (finding,) = run_cli(["validate", "--json", str(tmp_path / "misc" / "notes.txt")]).json()["items"][0]["findings"]
    assert "a file" in finding["message"] and "notes.txt" in finding["message"]


def test_not_a_pack_names_the_plugin_to_install(tmp_path, without_plugin):
    skill = tmp_path / "fs-hash-tree"
    skill.mkdir()
    (skill / "skill.yaml").write_text("apiVersion: skill/v1\nkind: Skill\n")
    without_plugin("skillctl")
    result = run_cli(["validate", "--json", str(tmp_path)])
    (finding,) = result.json()["items"][0]["findings"]
    assert "it holds fs-hash-tree/skill.yaml, a deterministic skill" in finding["message"]
    assert "plugin 'skillctl', which is not installed" in finding["message"]
    assert finding["hint"] == install_command("agentpack-core", "skillctl")


def test_not_a_pack_names_a_plugin_that_is_installed_but_disabled(tmp_path, monkeypatch):
    (tmp_path / "expert").mkdir()
    (tmp_path / "expert" / "EXPERT.yaml").write_text("ecp_version: '1.0'\n")
    monkeypatch.setenv("AGENTPACK_DISABLE_PLUGINS", "ecp")
    previous = set_host(Host(create_plugin_manager()))
    try:
        result = run_cli(["query", str(tmp_path), "anything"])
    finally:
        set_host(previous)
    assert result.exit_code == 2
    assert "it holds expert/EXPERT.yaml, an Expert Context Pack (plugin 'ecp')" in result.stderr
    assert "installed but not loaded" in result.stderr and "AGENTPACK_DISABLE_PLUGINS" in result.stderr


@pytest.mark.parametrize(
    ("command", "plugin", "extra"),
    [("rpc", "agent_rpc", "agent-rpc"), ("ecp", "ecp", "ecp"), ("skill", "skillctl", "skillctl")],
)
def test_a_missing_command_group_names_its_extra(without_plugin, command, plugin, extra):
    without_plugin(plugin)
    result = run_cli([command, "--help"])
    assert result.exit_code == 2
    assert f"'{command}' comes with plugin '{plugin}', which is not installed" in result.stderr
    assert install_command("agentpack-core", extra) in result.stderr


def test_a_disabled_command_group_says_so(monkeypatch):
    monkeypatch.setenv("AGENTPACK_PLUGINS", "ecp")
    previous = set_host(Host(create_plugin_manager()))
    try:
        result = run_cli(["rpc", "run", "x"])
    finally:
        set_host(previous)
    assert result.exit_code == 2 and "installed but not loaded" in result.stderr
    assert "No such command 'nonsense'" in run_cli(["nonsense"]).stderr


def test_init_names_the_plugin_a_scaffold_needs(without_plugin):
    without_plugin("dci")
    result = run_cli(["init", "dci", "ws"])
    assert result.exit_code == 2
    assert "scaffold 'dci' comes with plugin 'dci', which is not loaded" in result.stderr
    assert install_command("agentpack-core", "dci") in result.stderr
