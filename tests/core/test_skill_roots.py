"""`agentpack validate .` on repositories that keep their skills where agent hosts read them (.claude/skills,
.agents/skills, .github/skills, ...), in the layouts real repositories use, with the user's own roots and
excludes from a flag, the environment or the project's configuration file."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentpack.kernel.packwalk import HOST_SKILL_ROOTS
from agentpack.testing import run_cli

TREES = Path(__file__).parents[2] / ".." / "shared" / "reference" / "upstream" / "interop3" / "skills-trees"
needs_trees = pytest.mark.skipif(not TREES.is_dir(), reason=f"the upstream skill trees are not at {TREES}")


def write_skill(folder: Path, name: str | None = None) -> Path:
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(f"---\nname: {name or folder.name}\ndescription: Does one thing.\n---\nBody.\n")
    return folder


def found(result, root: Path) -> list[str]:
    return [Path(i["path"]).relative_to(root).as_posix() for i in result.json()["items"]]


def upstream_skills(tree: Path) -> list[str]:
    """The SKILL.md folders of an upstream tree, relative, as a host would find them (no VCS, no caches)."""
    return sorted(p.parent.relative_to(tree).as_posix() for p in tree.rglob("SKILL.md") if ".git" not in p.parts)


@needs_trees
@pytest.mark.parametrize(
    "repository", ["uipath-skills", "tangledgroup-tangled-skills", "cangjielanguage-sig-cangjieskills"]
)
def test_validate_dot_finds_the_skills_a_real_repository_keeps_in_hidden_folders(repository, tmp_path, monkeypatch):
    tree = tmp_path / repository
    shutil.copytree(TREES / repository, tree)
    (tree / ".git" / "objects").mkdir(parents=True)  # a checkout: VCS folders stay unsearched
    write_skill(tree / ".git" / "objects" / "not-a-skill")
    monkeypatch.chdir(tree)
    result = run_cli(["validate", "--json", "."])
    paths = sorted(found(result, Path(".")))
    assert paths == upstream_skills(TREES / repository)
    assert any(p.startswith((".agents/skills/", ".claude/skills/")) for p in paths)
    assert result.exit_code in (0, 1), result.stderr  # verdicts are the skills' own; the walk found them all


def test_a_repository_whose_skills_are_all_hidden_is_not_an_unknown_pack(tmp_path, monkeypatch):
    """The issue's case: `.` (the Action's and pre-commit hook's default) used to say "not a pack", exit 1."""
    for root in HOST_SKILL_ROOTS:
        write_skill(tmp_path / root / f"from-{root.strip('.').replace('/', '-')}")
    write_skill(tmp_path / "packages" / "web" / ".claude" / "skills" / "monorepo-skill")
    for cache in (".git", ".venv", ".tox", ".mypy_cache", ".pytest_cache", ".ruff_cache", ".idea", ".vscode"):
        write_skill(tmp_path / cache / "skills" / "never")
    write_skill(tmp_path / "node_modules" / "pkg" / ".claude" / "skills" / "never")
    write_skill(tmp_path / ".claude" / "commands" / "never")  # a hidden folder beside a root is not a root
    monkeypatch.chdir(tmp_path)
    result = run_cli(["validate", "--json", "."])
    assert result.exit_code == 0, result.stdout
    paths = found(result, Path("."))
    assert paths == sorted(paths)
    assert len(paths) == len(HOST_SKILL_ROOTS) + 1
    assert "packages/web/.claude/skills/monorepo-skill" in paths
    assert not any("never" in p for p in paths)


def test_a_symlinked_skill_root_is_not_followed(tmp_path, monkeypatch):
    write_skill(tmp_path / "elsewhere" / "linked")
    (tmp_path / "repo" / ".claude").mkdir(parents=True)
    (tmp_path / "repo" / ".claude" / "skills").symlink_to(tmp_path / "elsewhere")
    write_skill(tmp_path / "repo" / "skills" / "real")
    monkeypatch.chdir(tmp_path / "repo")
    assert found(run_cli(["validate", "--json", "."]), Path(".")) == ["skills/real"]


def test_skill_roots_and_excludes_from_flags(tmp_path, monkeypatch):
    write_skill(tmp_path / ".windsurf" / "skills" / "wind")
    write_skill(tmp_path / ".claude" / "skills" / "claude-one")
    write_skill(tmp_path / ".cursor" / "skills" / "cursor-one")
    write_skill(tmp_path / "skills" / "drafts" / "draft-one")
    write_skill(tmp_path / "skills" / "kept")
    monkeypatch.chdir(tmp_path)
    assert found(run_cli(["validate", "--json", "."]), Path(".")) == [
        ".claude/skills/claude-one",
        ".cursor/skills/cursor-one",
        "skills/drafts/draft-one",
        "skills/kept",
    ]
    result = run_cli(
        [
            "validate",
            "--json",
            ".",
            "--skill-root",
            ".windsurf/skills",
            "--exclude",
            ".cursor/skills",
            "--exclude",
            "drafts",
        ]
    )
    assert result.exit_code == 0, result.stdout
    assert found(result, Path(".")) == [".claude/skills/claude-one", ".windsurf/skills/wind", "skills/kept"]


def test_an_explicit_path_is_validated_even_when_excluded(tmp_path, monkeypatch):
    write_skill(tmp_path / "skills" / "drafts" / "draft-one")
    monkeypatch.chdir(tmp_path)
    result = run_cli(["validate", "--json", "skills/drafts/draft-one", "--exclude", "drafts", "--exclude", "draft-*"])
    assert found(result, Path(".")) == ["skills/drafts/draft-one"]


def test_skill_roots_and_excludes_from_pyproject_then_env_then_flag(tmp_path, monkeypatch):
    write_skill(tmp_path / ".windsurf" / "skills" / "wind")
    write_skill(tmp_path / ".kiro" / "skills" / "kiro")
    write_skill(tmp_path / ".claude" / "skills" / "claude-one")
    write_skill(tmp_path / "skills" / "kept")
    (tmp_path / ".git").mkdir()
    (tmp_path / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.agentpack]\nskill-roots = [".windsurf/skills"]\nexclude = [".claude/skills"]\n'
    )
    sub = tmp_path / "skills"
    monkeypatch.chdir(sub)  # the file is found from a folder below it, up to the project root
    assert found(run_cli(["validate", "--json", ".."]), Path("..")) == [".windsurf/skills/wind", "skills/kept"]
    monkeypatch.setenv("AGENTPACK_SKILL_ROOTS", ".kiro/skills, .windsurf/skills")
    assert found(run_cli(["validate", "--json", ".."]), Path("..")) == [
        ".kiro/skills/kiro",
        ".windsurf/skills/wind",
        "skills/kept",
    ]
    monkeypatch.setenv("AGENTPACK_EXCLUDE", "kept")  # the variable replaces the file's list
    result = run_cli(["validate", "--json", "..", "--exclude", "wind"])  # and the flag the variable's
    assert found(result, Path("..")) == [".claude/skills/claude-one", ".kiro/skills/kiro", "skills/kept"]


def test_agentpack_toml_comes_before_pyproject(tmp_path, monkeypatch):
    write_skill(tmp_path / ".claude" / "skills" / "claude-one")
    write_skill(tmp_path / "skills" / "kept")
    (tmp_path / "pyproject.toml").write_text('[tool.agentpack]\nexclude = ["skills"]\n')
    (tmp_path / "agentpack.toml").write_text('exclude = [".claude"]\n')
    monkeypatch.chdir(tmp_path)
    assert found(run_cli(["validate", "--json", "."]), Path(".")) == ["skills/kept"]


@pytest.mark.parametrize(
    ("text", "line", "message", "hint"),
    [
        (
            '[tool.agentpack]\nskill_roots = [".x/skills"]\n',
            2,
            "unknown setting 'skill_roots'",
            "did you mean 'skill-roots'?",
        ),
        ('[tool.agentpack]\n\nexclude = "drafts"\n', 3, "'exclude' must be a list of strings, not str 'drafts'", None),
        ('[tool.agentpack]\nskill-roots = ["../outside"]\n', 2, "skill root '../outside' must be a folder path", None),
        ('[tool.agentpack]\nskill-roots = ["/etc/skills"]\n', 2, "skill root '/etc/skills' must be", None),
        ("[tool.agentpack]\noutput = 3\n", 2, "'output' must be a non-empty string, not int 3", None),
        ("[tool.agentpack]\nexclude = [1]\n", 2, "'exclude' must list non-empty strings; found int 1", None),
        ('[tool.agentpack]\nexclude = ["a"\n', 2, "not valid TOML: Unclosed array", None),
        ("[tool.agentpack]\noutput = = 1\n", 2, "not valid TOML: Invalid value", None),
        ("[tool]\nagentpack = 1\n", 2, "[tool.agentpack] must be a table", None),
        ('[tool.agentpack]\n\n[tool.agentpack.judges]\nmodel = "x"\n', 3, "unknown setting 'judges'", None),
    ],
)
def test_a_bad_configuration_is_a_located_usage_error(tmp_path, monkeypatch, text, line, message, hint):
    write_skill(tmp_path / "skills" / "kept")
    (tmp_path / "pyproject.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    result = run_cli(["validate", "--json", "."])
    assert result.exit_code == 2
    error = result.json()["error"]
    assert error["file"] == "pyproject.toml" and error["line"] == line  # relative to where the command ran
    assert error["message"].startswith(message), error
    if hint:
        assert error["hint"] == hint
    assert "Traceback" not in result.stderr


def test_a_bad_environment_value_names_the_variable(tmp_path, monkeypatch):
    write_skill(tmp_path / "skills" / "kept")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("AGENTPACK_SKILL_ROOTS", "../up")
    result = run_cli(["validate", "."])
    assert result.exit_code == 2
    assert "error: $AGENTPACK_SKILL_ROOTS: skill root '../up'" in result.stderr
    monkeypatch.delenv("AGENTPACK_SKILL_ROOTS")
    result = run_cli(["validate", ".", "--skill-root", "../up"])
    assert result.exit_code == 2 and "error: --skill-root: skill root '../up'" in result.stderr
