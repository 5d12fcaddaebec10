"""Hostile skills and broken contract files: a clear status or finding, never a traceback, never a wrong verdict."""

from __future__ import annotations

import json
import os

import pytest
from skillctl_testkit import OBJECT_IN, manifest

from agentpack.testing import break_file, run_cli

HOSTILE = {
    "deep": b"[" * 5000 + b"]" * 5000,
    "nan": b'{"echo": NaN}',
    "infinity": b'{"echo": Infinity}',
    "not-utf8": b'{"echo": "\xff"}',
    "truncated": b'{"echo": [1,',
}


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_a_hostile_output_is_invalid_output(make_skill, workspace, name):
    code = f"import sys\nsys.stdin.read()\nsys.stdout.buffer.write({HOSTILE[name]!r})\n"
    skill = make_skill(code=code)
    (workspace / "in.json").write_text('{"value": 1}')
    result = run_cli(["skill", "run", skill, "--input", workspace / "in.json", "--workspace", workspace, "--json"])
    assert result.exit_code == 1, result.stderr
    envelope = json.loads(result.stdout, parse_constant=pytest.fail)  # strict JSON: no NaN leaks into the envelope
    assert envelope["status"] == "invalid_output" and envelope["report"]["errors"][0]["code"] == "output_json"


def test_hostile_log_lines_are_kept_as_text(make_skill, workspace):
    code = (
        "import sys, json\nsys.stdin.read()\n"
        "sys.stderr.write('[' * 5000 + ']' * 5000 + '\\n' + '{\"n\": NaN}\\n')\n"
        "json.dump({'echo': 1}, sys.stdout)\n"
    )
    skill = make_skill(code=code)
    (workspace / "in.json").write_text('{"value": 1}')
    result = run_cli(["skill", "run", skill, "--input", workspace / "in.json", "--workspace", workspace, "--json"])
    assert result.exit_code == 0, result.stderr
    logs = json.loads(result.stdout, parse_constant=pytest.fail)["report"]["logs"]
    assert logs["records"] == [] and logs["invalidLines"] == 2


@pytest.mark.parametrize("text", ["[" * 5000 + "]" * 5000, '{"value": NaN}', '{"value": -Infinity}'])
def test_a_hostile_input_is_invalid_input(make_skill, workspace, text):
    skill = make_skill()
    (workspace / "in.json").write_text(text)
    result = run_cli(["skill", "run", skill, "--input", workspace / "in.json", "--workspace", workspace, "--json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["status"] == "invalid_input"


@pytest.mark.parametrize(
    "schema",
    [{**OBJECT_IN, "properties": {"value": {"type": "strin"}}}, {**OBJECT_IN, "required": "value"}],
    ids=["unknown-type", "required-not-a-list"],
)
def test_run_refuses_a_skill_whose_schema_is_invalid(make_skill, workspace, schema):
    skill = make_skill(input_schema=schema)
    (workspace / "in.json").write_text('{"value": 1}')
    result = run_cli(["skill", "run", skill, "--input", workspace / "in.json", "--workspace", workspace])
    assert result.exit_code == 2 and "SKC131" in result.stderr


DEEP_SCHEMA = '{"type": "object", "properties": {"a": ' + "[" * 3000 + "]" * 3000 + "}}"


@pytest.mark.parametrize("how", ["folder", "dangling", "fifo", "deep"])
@pytest.mark.parametrize(
    "file",
    ["schemas/input.schema.json", "fixtures/one.expected.json", "fixtures/one.input.json", "../_access.yaml"],
)
def test_a_contract_file_that_cannot_be_read_is_a_finding(make_skill, file, how):
    skill = make_skill(access={"filesystem": {"read": [], "write": []}})
    break_file(skill / file, how, deep=DEEP_SCHEMA)
    for args in (["validate", skill, "--json"], ["skill", "--root", skill.parent, "validate", skill, "--json"]):
        result = run_cli(args)
        assert result.exit_code == 1, (args, result.stdout, result.stderr)
        codes = {f["code"] for item in result.json()["items"] for f in item["findings"]}
        assert codes & {"SKC121", "SKC130", "SKC141", "SKC155"}, result.stdout


@pytest.mark.parametrize("how", ["folder", "dangling", "fifo"])
def test_a_broken_access_manifest_stops_a_run(make_skill, workspace, how):
    skill = make_skill(access={"filesystem": {"read": [], "write": []}})
    break_file(skill.parent / "_access.yaml", how)
    (workspace / "in.json").write_text('{"value": 1}')
    result = run_cli(["skill", "run", skill, "--input", workspace / "in.json", "--workspace", workspace])
    assert result.exit_code == 2 and "SKC155" in result.stderr and "expected a YAML file" in result.stderr


def test_describe_says_when_a_schema_cannot_be_read(make_skill):
    skill = make_skill(data=manifest(runtime__command=5))
    (skill / "schemas" / "output.schema.json").write_text('{"type": ')
    result = run_cli(["skill", "describe", skill])
    assert result.exit_code == 1 and "not valid JSON" in result.stderr
    assert "command: 5" in result.stdout  # an invalid contract is still shown as it is
    result = run_cli(["skill", "describe", skill, "--json"])
    assert result.exit_code == 1 and result.json()["ok"] is False


def test_a_fifo_in_the_skill_folder_does_not_hang_a_cached_run(make_skill, workspace):
    skill = make_skill()
    os.mkfifo(skill / "fixtures" / "pipe")
    (workspace / "in.json").write_text('{"value": 1}')
    args = ["skill", "run", skill, "--input", workspace / "in.json", "--workspace", workspace, "--cache", "--json"]
    result = run_cli(args)
    assert result.exit_code == 0 and result.json()["report"]["cache"]["eligible"] is True


def test_a_skill_whose_contract_stops_a_run_is_not_tested(make_skill):
    skill = make_skill()
    break_file(skill / "impl" / "run.py", "fifo")  # its own test scripts would open it and wait forever
    (skill / "tests" / "test_impl.py").write_text("open('../impl/run.py').read()\n")
    result = run_cli(["skill", "--root", skill.parent, "test", skill, "-o", "json"])
    assert result.exit_code == 1, result.stdout
    [suite] = result.json()["evaluations"][0]["suites"]
    assert [(c["id"], c["status"]) for c in suite["cases"]] == [("contract", "error")] and "SKC121" in result.stdout
