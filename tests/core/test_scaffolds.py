"""Every format's scaffold: ``agentpack init`` lists it, ``agentpack init KIND DIR`` writes it, each next step it
prints passes on what it wrote, its files are shared (0644), and its YAML files' ``$schema`` lines resolve offline."""

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from agentpack.testing import run_cli

AGENTPACK = str(Path(sys.executable).parent / "agentpack")
KINDS = {"skill", "deterministic-skill", "ecp", "expert", "dci", "rpc"}
MODELINE = "# yaml-language-server: $schema="


def _agentpack(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENTPACK_")}
    return subprocess.run(
        [AGENTPACK, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=240, check=False
    )


def _next_steps(stdout: str) -> list[list[str]]:
    """The commands after ``next:`` and on the indented lines below it (an indented note in parentheses is not
    a command)."""
    steps, started = [], False
    for line in stdout.splitlines():
        if line.startswith("next: "):
            started = True
            line = line.removeprefix("next: ")
        elif not (started and line.startswith(" ")) or line.strip().startswith("("):
            continue
        for command in line.strip().split(" && "):
            words = shlex.split(command)
            assert words[0] == "agentpack", line
            steps.append(words[1:])
    return steps


def test_init_lists_every_format_scaffold():
    result = run_cli(["init"])
    assert result.exit_code == 0
    listed = {line.split()[0] for line in result.stdout.splitlines() if line.strip()}
    assert listed == KINDS
    assert "agentpack ecp init DIR" in result.stdout and "agentpack skill-md new DIR" in result.stdout


def test_every_known_plugin_names_the_scaffold_it_registers(agentpack_host):
    from agentpack.kernel.known import KNOWN_PLUGINS

    registered = {info.plugin: name for name, info in agentpack_host.scaffolds().items()}
    assert {p.name: p.scaffold for p in KNOWN_PLUGINS} == {
        plugin: name for plugin, name in registered.items() if plugin != "agentpack.skills.plugin"
    }


def test_init_names_the_kinds_it_knows():
    result = run_cli(["init", "ecpp", "x"])
    assert result.exit_code == 2 and "no scaffold 'ecpp'; did you mean 'ecp'?" in result.stderr
    result = run_cli(["init", "ecp"])
    assert result.exit_code == 2 and "agentpack init ecp DIR" in result.stderr


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_each_scaffold_passes_the_next_steps_it_prints(kind, tmp_path):
    made = _agentpack(["init", kind, f"my-{kind}"], tmp_path)
    assert made.returncode == 0, made.stdout + made.stderr
    steps = _next_steps(made.stdout)
    assert steps, made.stdout
    for step in steps:
        done = _agentpack(step, tmp_path)
        assert done.returncode == 0, (step, done.stdout, done.stderr)
    root = tmp_path / f"my-{kind}"
    private = [
        str(p.relative_to(root))
        for p in [root, *root.rglob("*")]
        if ".agentpack" not in p.parts and "context" not in p.parts and (p.stat().st_mode & 0o044) != 0o044
    ]
    assert private == []  # files a user edits or shares are readable by others (0644, folders 0755)
    _modelines_validate(root)


def _modelines_validate(root: Path) -> None:
    for document in [*root.rglob("*.yaml"), *root.rglob("*.yml")]:
        if ".schemas" in document.parts:
            continue
        first = document.read_text(encoding="utf-8").splitlines()[0]
        assert first.startswith(MODELINE), document
        target = (document.parent / first.removeprefix(MODELINE)).resolve()
        assert target.is_file() and root.resolve() in target.parents, target
        resources = [
            Resource.from_contents(json.loads(p.read_text(encoding="utf-8"))) for p in target.parent.glob("*.json")
        ]
        registry = Registry().with_resources((r.id(), r) for r in resources if r.id())
        schema = json.loads(target.read_text(encoding="utf-8"))
        jsonschema.validate(yaml.safe_load(document.read_text(encoding="utf-8")), schema, registry=registry)


@pytest.mark.slow
def test_ecp_init_from_the_users_documents_builds_every_index_kind(tmp_path):
    docs = tmp_path / "notes"
    (docs / "hr").mkdir(parents=True)
    (docs / "hr" / "vacation.md").write_text("# Vacation\n\nEveryone gets 25 days of paid leave a year.\n")
    (docs / "readme.txt").write_text("The office opens at eight.\n")
    (docs / ".hidden.md").write_text("# secret\n")
    (docs / "image.png").write_bytes(b"\x89PNG")
    (docs / "outside.md").symlink_to("/etc/hostname")
    made = _agentpack(["init", "ecp", "handbook", "--source", str(docs)], tmp_path)
    assert made.returncode == 0, made.stderr
    assert "built docs-keyword, docs-fts, docs-vector" in made.stdout
    copied = tmp_path / "handbook" / "expert" / "sources" / "docs"
    assert sorted(p.relative_to(copied).as_posix() for p in copied.rglob("*") if p.is_file()) == [
        "hr/vacation.md",
        "readme.txt",
    ]
    indexes = tmp_path / "handbook" / "expert" / "context" / "indexes"
    assert (indexes / "docs-fts" / "fts.sqlite").is_file() and (indexes / "docs-vector" / "vectors.npy").is_file()
    for step in _next_steps(made.stdout):
        assert _agentpack(step, tmp_path).returncode == 0, step
    answer = _agentpack(["query", "handbook", "How many days of paid leave?", "--json"], tmp_path)
    assert "hr/vacation.md" in answer.stdout


def test_ecp_init_source_needs_documents(tmp_path):
    (tmp_path / "empty").mkdir()
    result = run_cli(["init", "ecp", str(tmp_path / "pack"), "--source", str(tmp_path / "empty")])
    assert result.exit_code == 2 and "no .md or .txt file in it" in result.stderr


def test_a_skill_scaffold_refuses_a_name_the_spec_forbids_and_an_existing_skill(tmp_path):
    result = run_cli(["skill-md", "new", str(tmp_path / "Bad_Name")])
    assert result.exit_code == 2 and "cannot name a skill" in result.stderr
    assert run_cli(["skill-md", "new", str(tmp_path / "ok")]).exit_code == 0
    again = run_cli(["skill-md", "new", str(tmp_path / "ok")])
    assert again.exit_code == 2 and "already exists" in again.stderr
