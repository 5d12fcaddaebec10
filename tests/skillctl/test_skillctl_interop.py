"""Skills written the way the origin (context-engineering-framework) writes them: bash tests that start with
``#!/usr/bin/env bash`` and ``set -euo pipefail``, and fixtures named ``fixtures/input.json`` +
``fixtures/output.expected.json`` or kept in one folder per case."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path

import pytest
import yaml
from skillctl_testkit import REFERENCE, manifest, write_skill

from agentpack_skillctl.skilltest import script_command

BASH = "#!/usr/bin/env bash\nset -euo pipefail\n"

RUN_SH = BASH + (
    'exec python3 -c \'import json, sys; text = json.load(sys.stdin)["text"]; '
    'json.dump({"words": len(text.split())}, sys.stdout, sort_keys=True)\'\n'
)

TESTS = {
    # executable, as the origin's template ships its tests
    "test_smoke.sh": (
        True,
        BASH + 'here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"\n'
        'out="$(bash "$here/impl/run.sh" < "$here/fixtures/input.json")"\n'
        '[[ "$out" == \'{"words": 3}\' ]]\n',
    ),
    # not executable: its #! line still says bash (arrays, process substitution)
    "test_cases.sh": (
        False,
        BASH + "cases=(fixtures/empty fixtures/two)\n"
        'for case in "${cases[@]}"; do\n'
        '  diff <(bash impl/run.sh < "$case/input.json") "$case/output.expected.json"\n'
        "done\n",
    ),
    "test_pipefail.sh": (True, BASH + 'if false | true; then echo "pipefail is off" >&2; exit 1; fi\n'),
    "test_workspace.sh": (
        False,
        BASH + '[[ -f skill.yaml && -d "$SKILL_WORKSPACE" && -f "$SKILL_WORKSPACE/input.json" ]]\n'
        'echo "{}" > "$SKILL_WORKSPACE/scratch.json"\n',
    ),
}

INPUT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["text"],
    "properties": {"text": {"type": "string"}},
    "additionalProperties": False,
}
OUTPUT_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["words"],
    "properties": {"words": {"type": "integer", "minimum": 0}},
    "additionalProperties": False,
}


def write_json(path: Path, value: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(value))


def upstream_skill(parent: Path) -> Path:
    """``parent/text-count-words``: a shell skill with the origin's layout, tests and fixture names."""
    data = manifest(
        "text.count_words",
        name="Count words",
        description="Counts the words of a text.",
        runtime={"type": "shell", "command": ["bash", "impl/run.sh"], "cwd": ".", "timeoutMs": 20000},
        security__access__subprocess={"allowed": True},  # bash starts python3
    )
    root = write_skill(
        parent,
        "text-count-words",
        data=data,
        input_schema=INPUT_SCHEMA,
        output_schema=OUTPUT_SCHEMA,
        fixtures={"long": ({"text": "a b c d e f"}, {"words": 6})},  # agentpack's naming, beside the origin's
    )
    (root / "impl" / "run.py").unlink()
    (root / "impl" / "run.sh").write_text(RUN_SH)
    fixtures = root / "fixtures"
    write_json(fixtures / "input.json", {"text": "one two three"})
    write_json(fixtures / "output.expected.json", {"words": 3})
    write_json(fixtures / "empty" / "input.json", {"text": ""})
    write_json(fixtures / "empty" / "output.expected.json", {"words": 0})
    write_json(fixtures / "two" / "input.json", {"text": "two  words"})
    write_json(fixtures / "two" / "output.expected.json", {"words": 2})
    write_json(fixtures / "refused" / "input.json", {"txt": "misspelt"})
    (fixtures / "refused" / "status").write_text("invalid_input\n")
    write_json(fixtures / "workspace" / "input.json", {"not": "a case"})  # the workspace template, not a case
    for name, (executable, text) in TESTS.items():
        script = root / "tests" / name
        script.write_text(text)
        script.chmod(0o755 if executable else 0o644)
    return root


def cases_of(result) -> dict[str, dict]:
    (evaluation,) = result.json()["evaluations"]
    return {case["id"]: case for suite in evaluation["suites"] for case in suite["cases"]}


def test_upstream_tests_and_fixtures_all_run_and_pass(agentpack_cli, tmp_path):
    skill = upstream_skill(tmp_path / "skills")
    result = agentpack_cli("skill", "--root", tmp_path / "skills", "test", "--json")
    cases = cases_of(result)
    assert sorted(cases) == [
        "fixture:default",
        "fixture:empty",
        "fixture:long",
        "fixture:refused",
        "fixture:two",
        "test:test_cases.sh",
        "test:test_pipefail.sh",
        "test:test_smoke.sh",
        "test:test_workspace.sh",
    ]
    assert {k: c["status"] for k, c in cases.items() if c["status"] != "passed"} == {}
    assert result.exit_code == 0
    assert cases["fixture:default"]["file"] == str(skill / "fixtures" / "input.json")
    assert cases["fixture:empty"]["file"] == str(skill / "fixtures" / "empty" / "input.json")
    assert cases_of(agentpack_cli("eval", "--json", skill)).keys() == cases.keys()  # the core command too


def test_a_wrong_expected_output_fails_its_case(agentpack_cli, tmp_path):
    skill = upstream_skill(tmp_path / "skills")
    write_json(skill / "fixtures" / "two" / "output.expected.json", {"words": 3})
    result = agentpack_cli("eval", "--json", skill, "--filter", "fixture:")
    cases = cases_of(result)
    assert result.exit_code == 1 and cases["fixture:two"]["status"] == "failed"
    assert '"words": 3' in cases["fixture:two"]["message"]
    assert all(c["status"] == "passed" for k, c in cases.items() if k != "fixture:two")


def test_upstream_layout_validates_without_fixture_warnings(agentpack_cli, tmp_path):
    skill = upstream_skill(tmp_path / "skills")
    findings = agentpack_cli("validate", "--json", skill).json()["items"][0]["findings"]
    assert [f for f in findings if f["code"] in ("SKC141", "SKC142")] == []
    write_json(skill / "fixtures" / "lost" / "output.expected.json", {"words": 1})
    write_json(skill / "fixtures" / "two" / "input.json", {"text": 2})
    findings = agentpack_cli("validate", "--json", skill).json()["items"][0]["findings"]
    assert {(f["code"], Path(f["file"]).relative_to(skill).as_posix()) for f in findings if f["code"] == "SKC141"} == {
        ("SKC141", "fixtures/lost/output.expected.json"),  # an output with no input beside it
        ("SKC141", "fixtures/two/input.json"),  # does not match the input schema
    }


def test_how_a_test_is_started(tmp_path):
    def script(name: str, text: str, mode: int) -> Path:
        path = tmp_path / name
        path.write_text(text)
        path.chmod(mode)
        return path.resolve()

    executable = script("a.sh", BASH, 0o755)
    assert script_command(executable) == [str(executable)]
    plain = script("b.sh", BASH, 0o644)
    assert script_command(plain) == ["/usr/bin/env", "bash", str(plain)]
    with_argument = script("c", "#!/bin/bash -eu\necho\n", 0o644)
    assert script_command(with_argument) == ["/bin/bash", "-eu", str(with_argument)]
    assert script_command(script("d.sh", "echo\n", 0o755)) == ["sh", str(tmp_path / "d.sh")]
    assert script_command(script("e.py", "print()\n", 0o644)) == [sys.executable, str(tmp_path / "e.py")]
    assert script_command(script("f.mjs", "1\n", 0o644)) == ["node", str(tmp_path / "f.mjs")]
    assert script_command(script("g", "\x7fELF", 0o755)) == [str(tmp_path / "g")]
    assert os.stat(plain).st_mode & stat.S_IXUSR == 0  # nothing was changed on disk


def test_the_upstream_skill_contract_matches_the_origin_schema(tmp_path):
    schema_file = REFERENCE / "skill.schema.json"
    if not schema_file.is_file():
        pytest.skip(f"the origin's schema is not at {schema_file.resolve()} (the shared reference folder is absent)")
    from jsonschema import Draft202012Validator

    skill = upstream_skill(tmp_path / "skills")
    data = yaml.safe_load((skill / "skill.yaml").read_text())
    validator = Draft202012Validator(json.loads(schema_file.read_text()))
    assert [e.message for e in validator.iter_errors(data)] == []
