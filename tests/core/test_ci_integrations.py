"""The pre-commit hooks (`.pre-commit-hooks.yaml`) and the GitHub Action (`action.yml`), run the way
pre-commit and the Actions runner run them: the hook's entry with the files its pattern selects, and the
action's shell steps with its inputs passed through the environment."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent  # the environment agentpack is installed in, as a hook's or the runner's


def environment(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "AGENTPACK_")) or k == "AGENTPACK_RUNS"}
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.update(extra)
    return env


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository with a valid skill, a skill whose folder does not match its name, and other files."""
    root = tmp_path / "repo"
    for folder, name in (("skills/pdf-tools", "pdf-tools"), ("skills/tools/renamed", "bad-name")):
        (root / folder).mkdir(parents=True)
        (root / folder / "SKILL.md").write_text(f"---\nname: {name}\ndescription: Does one thing.\n---\nBody.\n")
    (root / "skills" / "pdf-tools" / "scripts").mkdir()
    (root / "skills" / "pdf-tools" / "scripts" / "extract.py").write_text("print()\n")
    (root / "README.md").write_text("# skills\n")
    return root


def tracked(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


# -- pre-commit --------------------------------------------------------------------------------------
HOOKS = {hook["id"]: hook for hook in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())}


def run_hook(hook_id: str, root: Path, files: list[str]) -> subprocess.CompletedProcess[str] | None:
    """What pre-commit does: select ``files`` by ``files``/``exclude``, then run ``entry`` + ``args`` (+ the
    files when ``pass_filenames``) in the repository root; None when the hook is skipped."""
    hook = HOOKS[hook_id]
    selected = [
        f
        for f in files
        if re.search(hook.get("files", ""), f) and not (hook.get("exclude") and re.search(hook["exclude"], f))
    ]
    if not selected and not hook.get("always_run", False):
        return None
    argv = [*shlex.split(hook["entry"]), *hook.get("args", [])]
    if hook.get("pass_filenames", True):
        argv += selected
    return subprocess.run(argv, cwd=root, env=environment(), capture_output=True, text=True, timeout=120)


def test_hooks_are_well_formed():
    assert set(HOOKS) == {"agentpack-validate", "agentpack-validate-all"}
    for hook in HOOKS.values():
        assert hook["language"] == "python" and hook["entry"].startswith("agentpack validate")
        assert {"id", "name", "entry", "language", "description"} <= set(hook)


def test_validate_hook_checks_the_touched_skills(repo):
    result = run_hook("agentpack-validate", repo, tracked(repo))
    assert result is not None and result.returncode == 1, result
    assert "skills/tools/renamed/SKILL.md:2: error SKL018 directory name 'renamed'" in result.stdout
    assert "skills/pdf-tools/SKILL.md (agent-skill): ok" in result.stdout
    assert run_hook("agentpack-validate", repo, ["README.md", "skills/pdf-tools/scripts/extract.py"]) is None
    fixed = run_hook("agentpack-validate", repo, ["skills/pdf-tools/SKILL.md"])
    assert fixed is not None and fixed.returncode == 0, fixed.stdout + fixed.stderr


def test_validate_all_hook_walks_the_repository(repo):
    result = run_hook("agentpack-validate-all", repo, [])
    assert result is not None and result.returncode == 1
    assert "2 checked: 1 errors" in result.stdout
    (repo / "skills" / "tools" / "renamed").rename(repo / "skills" / "tools" / "bad-name")
    assert run_hook("agentpack-validate-all", repo, []).returncode == 0


# -- GitHub Action -----------------------------------------------------------------------------------
ACTION = yaml.safe_load((REPO / "action.yml").read_text())
TEMPLATE = re.compile(r"\$\{\{\s*([\w.-]+)\s*\}\}")


def run_step(step_id: str, cwd: Path, tmp_path: Path, bin_dir: Path = BIN, **inputs: str):
    """The action's step ``step_id`` as the runner runs it: ``${{ }}`` expressions in its ``env`` resolved,
    then its script under ``bash -e {0}``; returns the process and what it wrote to ``$GITHUB_OUTPUT``."""
    values = {f"inputs.{k}": str(v.get("default", "")) for k, v in ACTION["inputs"].items()}
    values.update({f"inputs.{k}": v for k, v in inputs.items()}, **{"github.action_path": str(REPO)})
    step = next(s for s in ACTION["runs"]["steps"] if s.get("id") == step_id)
    assert step["shell"] == "bash" and "${{" not in step["run"]  # inputs only through the environment
    env = {k: TEMPLATE.sub(lambda m: values[m[1]], str(v)) for k, v in step["env"].items()}
    output = tmp_path / "github-output"
    output.write_text("")
    script = tmp_path / f"{step_id}.sh"
    script.write_text(step["run"])
    env = environment(GITHUB_OUTPUT=str(output), GITHUB_WORKSPACE=str(cwd), **env)
    env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    result = subprocess.run(
        ["bash", "--noprofile", "--norc", "-e", "-o", "pipefail", str(script)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return result, output.read_text()


def test_action_annotates_and_writes_sarif(repo, tmp_path):
    result, outputs = run_step("validate", repo, tmp_path, **{"sarif-file": "agentpack.sarif"})
    assert result.returncode == 1, result.stderr
    (annotation,) = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
    assert annotation.startswith("::error file=skills/tools/renamed/SKILL.md,line=2,title=SKL018::")
    sarif = json.loads((repo / "agentpack.sarif").read_text())
    (finding,) = sarif["runs"][0]["results"]
    assert finding["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "skills/tools/renamed/SKILL.md"
    assert outputs == "sarif-file=agentpack.sarif\n"


def test_action_paths_strict_and_no_sarif(repo, tmp_path):
    result, outputs = run_step("validate", repo, tmp_path, paths="skills/pdf-tools README.md", strict="true")
    assert result.returncode == 1 and "::error file=README.md,title=PACK::" in result.stdout
    result, outputs = run_step("validate", repo / "skills", tmp_path, paths="pdf-tools")
    assert result.returncode == 0 and outputs == "sarif-file=\n"
    assert result.stdout == "::notice title=agentpack validate::1 pack checked, no findings\n"


def test_action_install_step_installs_the_core_and_the_named_plugins(tmp_path):
    fake = tmp_path / "bin"
    fake.mkdir()
    log = tmp_path / "pip-args"
    (fake / "python").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {shlex.quote(str(log))}\n')
    (fake / "python").chmod(0o755)
    result, _ = run_step("install", tmp_path, tmp_path, bin_dir=fake, extras="skillctl, agent-rpc")
    assert result.returncode == 0, result.stderr

    def installed() -> list[Path]:
        args = log.read_text().splitlines()
        assert args[:2] == ["-m", "pip"] and "install" in args
        return [Path(arg) for arg in args[args.index("install") + 1 :] if not arg.startswith("-")]

    assert installed() == [REPO, REPO / "plugins" / "skillctl", REPO / "plugins" / "agent_rpc"]
    run_step("install", tmp_path, tmp_path, bin_dir=fake, extras="all")
    everything = installed()
    assert sorted(everything[1:]) == sorted(p for p in (REPO / "plugins").iterdir() if (p / "pyproject.toml").is_file())
    assert all((p / "pyproject.toml").is_file() for p in everything)
    result, _ = run_step("install", tmp_path, tmp_path, bin_dir=fake, extras="nope")
    assert result.returncode == 2 and "::error title=agentpack::unknown extra 'nope'" in result.stdout
