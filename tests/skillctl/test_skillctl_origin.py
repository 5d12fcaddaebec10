"""The origin's own skills, template and fixtures (context-engineering-framework): its shell template
(`sh impl/run.sh` calling `cat`, `subprocess: {allowed: false}`) and what its `skillctl scaffold` writes
run; its `_template` folder validates; its REPLACE_ME fixtures pass as its own tests pass them; and what
`agentpack skill new` writes, its reader can read."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from skillctl_testkit import REPO, manifest, write_skill

UPSTREAM = REPO / ".." / "shared" / "reference" / "upstream" / "interop3" / "skillctl" / "cef" / "skills"
SCAFFOLDED = UPSTREAM / "text-upper-case" / "skill.yaml"
needs_upstream = pytest.mark.skipif(
    not SCAFFOLDED.is_file(), reason=f"the origin's scaffold output is not at {UPSTREAM}"
)

CAT_SH = "#!/usr/bin/env sh\nset -eu\n# the origin's template: pass the JSON request through\ncat\n"
ANY_OBJECT = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object"}
SMOKE = (
    "#!/usr/bin/env bash\nset -euo pipefail\n"
    'here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"\n'
    'out="$(cd "$here" && sh impl/run.sh < fixtures/input.json)"\n'
    '[[ -n "$out" ]]\n'
)


def origin_shaped(folder: Path, skill_yaml: str) -> Path:
    """A skill folder in the origin's layout around ``skill_yaml`` (its exact text): the template's files."""
    for sub in ("schemas", "impl", "tests", "fixtures"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    (folder / "skill.yaml").write_text(skill_yaml)
    for name in ("input", "output"):
        (folder / "schemas" / f"{name}.schema.json").write_text(json.dumps(ANY_OBJECT))
    (folder / "impl" / "run.sh").write_text(CAT_SH)
    (folder / "tests" / "test_smoke.sh").write_text(SMOKE)
    (folder / "tests" / "test_smoke.sh").chmod(0o755)
    (folder / "fixtures" / "input.json").write_text('{"text": "hello"}\n')
    (folder / "fixtures" / "output.expected.json").write_text('{"text": "hello"}\n')
    return folder


@needs_upstream
def test_the_origin_scaffold_output_runs_under_its_declared_shell(agentpack_cli, tmp_path):
    """`sh impl/run.sh` + `cat` with `subprocess: {allowed: false}` used to die with "Cannot fork"."""
    text = SCAFFOLDED.read_text()
    assert "allowed: false" in text and "- sh" in text
    skill = origin_shaped(tmp_path / "skills" / "text-upper-case", text)
    (tmp_path / "in.json").write_text('{"text": "hello"}')
    report = tmp_path / "run.json"
    result = agentpack_cli("skill", "run", str(skill), "-i", str(tmp_path / "in.json"), "--report", str(report))
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"text": "hello"}
    run = json.loads(report.read_text())
    assert run["status"] == "ok" and run["enforcement"]["subprocess"]["allowed"] is False
    assert "no-processes" not in run["sandbox"]["seccomp"]  # the shell's children are its runtime's own
    tested = agentpack_cli("skill", "test", str(skill), "--json")
    assert tested.exit_code == 0, tested.stdout


@needs_upstream
def test_the_origin_template_folder_validates(agentpack_cli, tmp_path):
    """The spec's layout lists `skills/_template/`: a template is not a skill slug (the origin skips `_*`)."""
    template = origin_shaped(tmp_path / "skills" / "_template", SCAFFOLDED.read_text())
    (template / "SKILL.template.md").write_text("# Template\n")
    result = agentpack_cli("skill", "validate", str(template), "--json")
    assert result.exit_code == 0, result.stdout
    codes = [f["code"] for item in result.json()["items"] for f in item["findings"]]
    assert "SKC160" not in codes
    bad = origin_shaped(tmp_path / "skills" / "Not_A_Slug", SCAFFOLDED.read_text())
    codes = [
        f["code"] for i in agentpack_cli("skill", "validate", str(bad), "--json").json()["items"] for f in i["findings"]
    ]
    assert "SKC160" in codes  # a skill folder still needs a kebab-case name


def test_a_real_subprocess_violation_names_the_rule_and_the_file(agentpack_cli, tmp_path):
    code = "import json, subprocess, sys\njson.load(sys.stdin)\nsubprocess.run(['true'], check=True)\nprint('{}')\n"
    skill = write_skill(tmp_path / "skills", "starts-a-program", code=code, fixtures={})
    (tmp_path / "in.json").write_text("{}")
    report = tmp_path / "run.json"
    result = agentpack_cli("skill", "run", str(skill), "-i", str(tmp_path / "in.json"), "--report", str(report))
    assert result.exit_code == 1
    run = json.loads(report.read_text())
    if "no-processes" not in run["sandbox"]["seccomp"]:
        pytest.skip("this machine cannot load a seccomp filter, so nothing refuses the fork")
    (error,) = run["errors"]
    assert run["status"] == "violation" and error["code"] == "subprocess_refused"
    assert "security.access.subprocess.allowed: false" in error["message"]
    assert f"{skill / 'skill.yaml'}:" in error["message"] and error["pointer"] == "/security/access/subprocess/allowed"


def test_a_shell_runtime_may_not_reach_what_the_sandbox_forbids(agentpack_cli, tmp_path):
    """Its children are allowed, not the network or undeclared writes: those stay refused."""
    data = manifest(
        "demo.shell_writes",
        runtime={"type": "shell", "command": ["sh", "impl/run.sh"], "cwd": ".", "timeoutMs": 20000},
    )
    skill = write_skill(tmp_path / "skills", "shell-writes", data=data, fixtures={})
    (skill / "impl" / "run.sh").write_text(
        'cat > /dev/null\necho \'{"echo": 1}\'\necho x > "$SKILL_WORKSPACE/undeclared.txt"\n'
    )
    (tmp_path / "in.json").write_text("{}")
    result = agentpack_cli(
        "skill", "run", str(skill), "-i", str(tmp_path / "in.json"), "--workspace", str(tmp_path), "--json"
    )
    assert result.exit_code == 1
    assert "undeclared.txt" in json.dumps(result.json())


FS_HASH_TREE = """
import hashlib, json, os, sys
req = json.load(sys.stdin)
root = os.path.realpath(os.path.join(os.environ.get("SKILL_WORKSPACE", "."), req["root"]))
files = []
for base, dirs, names in os.walk(root):
    dirs.sort()
    for name in sorted(names):
        path = os.path.join(base, name)
        data = open(path, "rb").read()
        digest = hashlib.sha256(data).hexdigest()
        files.append({"path": os.path.relpath(path, root), "size": len(data), "digest": digest})
tree = hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()
out = {"algorithm": "sha256", "fileCount": len(files), "files": files, "root": root, "treeDigest": tree}
json.dump(out, sys.stdout)
"""


def test_replace_me_in_expected_output_matches_what_the_machine_gives(agentpack_cli, tmp_path):
    """The origin's fs-hash-tree and skillcard-index fixtures write "root": "REPLACE_ME" where the output
    holds an absolute path; its tests drop that key from both sides. Everything else still has to match."""
    data = manifest("fs.hash_tree", security__access__filesystem={"read": ["tree/**"], "write": []})
    skill = write_skill(
        tmp_path / "skills", "fs-hash-tree", code=FS_HASH_TREE, data=data, output_schema=ANY_OBJECT, fixtures={}
    )
    tree = skill / "fixtures" / "workspace" / "tree"  # each case's fresh workspace starts as a copy of it
    (tree / "subdir").mkdir(parents=True)
    (tree / "a.txt").write_text("alpha\n")
    (tree / "subdir" / "b.txt").write_text("bravo\n")
    (skill / "fixtures" / "input.json").write_text(json.dumps({"root": "tree"}))
    out = subprocess.run(
        [sys.executable, str(skill / "impl" / "run.py")],
        input=json.dumps({"root": str(tree)}),
        capture_output=True,
        text=True,
        check=True,
    )
    expected = {**json.loads(out.stdout), "root": "REPLACE_ME"}  # the origin's fixture shape
    assert expected["files"][0]["digest"] == "b6a98d9ce9a2d9149288fa3df42d377c3e42737afdcdaf714e33c0a100b51060"
    (skill / "fixtures" / "output.expected.json").write_text(json.dumps(expected))
    result = agentpack_cli("skill", "test", str(skill), "--json")
    assert result.exit_code == 0, result.stdout
    expected["fileCount"] = 3  # a real difference beside the placeholder still fails
    (skill / "fixtures" / "output.expected.json").write_text(json.dumps(expected))
    failed = agentpack_cli("skill", "test", str(skill), "--json")
    assert failed.exit_code == 1 and "fileCount" in failed.stdout


def test_output_matches_treats_placeholders_as_the_origin_does():
    from agentpack_skillctl.fixtures import output_matches

    assert output_matches({"root": "REPLACE_ME", "n": 1}, {"root": "/home/x", "n": 1})
    assert output_matches({"root": "REPLACE_ME", "n": 1}, {"n": 1})  # the origin pops the key from both
    assert output_matches({"a": [{"p": "REPLACE_ME"}]}, {"a": [{"p": 3}]})
    assert not output_matches({"root": "REPLACE_ME", "n": 1}, {"root": "/x", "n": 2})
    assert not output_matches({"n": 1}, {"n": 1, "extra": 0})
    assert not output_matches({"a": ["REPLACE_ME"]}, {"a": []})
    assert not output_matches("REPLACE_ME-not", "anything")


def flow_values(text: str) -> list[str]:
    """Every flow collection or quoted scalar written as a value in ``text`` (a simple block-style YAML file)."""
    values = []
    for line in text.splitlines():
        body = line.split(": ", 1)[1].strip() if ": " in line else line.strip().removeprefix("- ")
        if body[:1] in ("[", "{", '"'):
            values.append(body)
    return values


def test_skill_new_writes_json_flow_values_every_reader_accepts(agentpack_cli, tmp_path):
    """The origin's reader takes flow lists and maps only as JSON (`[python3, impl/run.py]` is refused):
    every flow value and quoted string in the scaffold is JSON, and YAML reads the same document."""
    result = agentpack_cli("skill", "--root", str(tmp_path / "skills"), "new", "text.word_count", "word-count")
    assert result.exit_code == 0, result.stderr
    text = (tmp_path / "skills" / "word-count" / "skill.yaml").read_text()
    values = flow_values(text)
    assert '["python3", "impl/run.py"]' in values
    for value in values:
        json.loads(value)
    parsed = yaml.safe_load(text)
    assert parsed["runtime"]["command"] == ["python3", "impl/run.py"]
    assert parsed["io"]["input"] == {"transport": "stdin", "encoding": "json"}
    assert "\t" not in text and not any(line.rstrip().endswith(("|", ">")) for line in text.splitlines())
    assert agentpack_cli("skill", "validate", str(tmp_path / "skills" / "word-count")).exit_code == 0
    tested = agentpack_cli("skill", "test", str(tmp_path / "skills" / "word-count"))
    assert tested.exit_code == 0, tested.stdout


ORIGIN = os.environ.get("AGENTPACK_SKILLCTL_ORIGIN")


@pytest.mark.interop
@pytest.mark.skipif(
    not ORIGIN,
    reason="the origin's skillctl is not on any package index: set AGENTPACK_SKILLCTL_ORIGIN to a checkout of "
    "holaymolay/context-engineering-framework (its scripts/skillctl.py and skills/_schema) to run it",
)
def test_the_origin_skillctl_validates_our_scaffold(agentpack_cli, tmp_path):
    from agentpack.testing import reference_venv

    assert ORIGIN is not None
    venv = reference_venv("skillctl-origin", "jsonschema")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    shutil.copytree(Path(ORIGIN) / "skills" / "_schema", repo / "skills" / "_schema")
    assert agentpack_cli("skill", "--root", str(repo / "skills"), "new", "text.word_count", "word-count").exit_code == 0
    done = subprocess.run(
        [str(venv / "bin" / "python"), str(Path(ORIGIN) / "scripts" / "skillctl.py"), "validate", "skills/word-count"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=10,
)


@given(JSON_VALUES, JSON_VALUES)
def test_without_a_placeholder_matching_is_equality(want, actual):
    from agentpack_skillctl.fixtures import PLACEHOLDER, output_matches

    if PLACEHOLDER not in json.dumps(want):
        assert output_matches(want, actual) == (want == actual)
    assert output_matches(want, want)


def test_what_counts_as_a_shell_runtime(tmp_path):
    from agentpack_skillctl.confine import runs_a_shell

    script = tmp_path / "run.sh"
    script.write_text("#!/usr/bin/env bash\ncat\n")
    python_script = tmp_path / "run.py"
    python_script.write_text("#!/usr/bin/env python3\n")
    assert runs_a_shell("/bin/sh", "command") and runs_a_shell("/usr/bin/bash", "python")
    assert runs_a_shell(str(script), "shell")  # a script run directly, its #! line naming a shell
    assert not runs_a_shell(str(script), "command")
    assert not runs_a_shell(sys.executable, "shell")  # declaring type: shell over Python does not open fork
    assert not runs_a_shell(str(python_script), "shell")
    assert not runs_a_shell(str(tmp_path / "missing"), "shell")
