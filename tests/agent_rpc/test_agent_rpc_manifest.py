"""Manifest validation: schema, semantic checks, datasets, paths, strict rules, and ecp-runtime compatibility."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from agentpack_agent_rpc.api import validate_manifest

GOLDEN = Path(__file__).parent / "golden"


def write(tmp_path: Path, text: str, name: str = "manifest.yaml") -> Path:
    path = tmp_path / name
    path.write_text(textwrap.dedent(text).lstrip())
    return path


def findings(path: Path, strict: bool = False) -> list[tuple]:
    _, found = validate_manifest(path, strict=strict)
    return [(f.severity, f.code, f.line, f.pointer, f.message) for f in found]


def test_reference_starter_manifest_is_valid(tmp_path):
    # the shape `ecp init` writes (ecp-runtime 0.10.0)
    path = write(
        tmp_path,
        """
        manifest_version: "v1"
        name: "Starter ECP Evaluation"
        target: 'python ecp_eval/agent.py'

        scenarios:
          - name: "Echo contract"
            steps:
              - input: "hello ecp"
                graders:
                  - type: text_match
                    field: public_output
                    condition: contains
                    value: "hello ecp"
                  - type: tool_usage
                    field: public_output
                    tool_name: "echo"
                    arguments:
                      text: "hello ecp"
    """,
    )
    manifest, found = validate_manifest(path)
    assert found == [] and manifest.target.command == ["python", "ecp_eval/agent.py"]
    assert manifest.target.cwd is None  # no cwd: the caller's working directory, as ecp-runtime


def test_golden_findings_for_a_broken_manifest(tmp_path):
    path = write(
        tmp_path,
        """
        manifest_version: v2
        name: broken
        target: python agent.py
        timeout: -1
        scenarios:
          - name: one
            steps:
              - input: hi
                graders:
                  - type: text_match
                    condition: regex
                  - type: text_match
                    condition: contains
                    value: 3
                  - type: llm_judge
                    prompt: "   "
                  - type: tool_usage
                    tool_nam: x
                extra: true
          - steps: []
    """,
    )
    got = [list(f) for f in findings(path)]
    golden = GOLDEN / "broken_manifest_findings.json"
    expected = json.loads(golden.read_text())
    assert got == expected


def test_semantic_errors_point_at_the_field(tmp_path):
    path = write(
        tmp_path,
        """
        name: semantic
        target: "python 'unclosed"
        scenarios:
          - name: a
            steps:
              - input: x
                graders:
                  - {type: text_match, condition: not_regex, pattern: "[z-a]"}
                  - {type: magic}
                  - {type: tool_usage, not_called: true, count: 2}
    """,
    )
    got = findings(path)
    assert ("error", "ARP106", 2, "/target", "target is not a valid command line: No closing quotation") in got
    codes = {(code, pointer) for _, code, _, pointer, _ in got}
    assert ("ARP104", "/scenarios/0/steps/0/graders/0/pattern") in codes
    assert ("ARP103", "/scenarios/0/steps/0/graders/1/type") in codes
    assert ("ARP104", "/scenarios/0/steps/0/graders/2/not_called") in codes
    message = next(m for _, c, _, _, m in got if c == "ARP103")
    assert message == "unknown grader type 'magic'; available: llm_judge, text_match, tool_usage"


def test_datasets_csv_and_jsonl(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "qa.csv").write_text("question,answer\nhi,Echo: hi\nbye,\n")
    (tmp_path / "data" / "qa.jsonl").write_text('{"q": "a", "a": "Echo: a"}\n\n{"q": "b", "a": "Echo: b"}\n')
    path = write(
        tmp_path,
        """
        name: data
        target: python agent.py
        scenarios:
          - name: csv
            dataset: {type: csv, source: data/qa.csv, input_column: question, output_column: answer}
          - name: jsonl
            dataset: {type: jsonl, source: data/qa.jsonl, input_column: q, output_column: a, condition: contains}
    """,
    )
    manifest, found = validate_manifest(path)
    assert found == []
    csv_steps, jsonl_steps = manifest.scenarios[0].steps, manifest.scenarios[1].steps
    assert [(s.input, len(s.graders)) for s in csv_steps] == [("hi", 1), ("bye", 0)]
    assert jsonl_steps[1].graders[0].config == {
        "type": "text_match",
        "field": "public_output",
        "condition": "contains",
        "value": "Echo: b",
    }
    assert jsonl_steps[1].name == "qa.jsonl:3"


def test_dataset_errors(tmp_path):
    (tmp_path / "bad.jsonl").write_text('{"input": "a"}\nnot json\n[1]\n{"input": 5}\n')
    (tmp_path / "cols.csv").write_text("q\nx\n")
    path = write(
        tmp_path,
        """
        name: data
        target: python agent.py
        scenarios:
          - name: missing
            dataset: {type: csv, source: nope.csv}
          - name: escape
            dataset: {type: csv, source: ../outside.csv}
          - name: columns
            dataset: {type: csv, source: cols.csv}
          - name: lines
            dataset: {type: jsonl, source: bad.jsonl}
    """,
    )
    _, found = validate_manifest(path)
    got = [(f.code, f.file, f.line, f.pointer, f.message) for f in found]
    manifest = str(path)
    assert got[0][:4] == ("ARP102", manifest, 5, "/scenarios/0/dataset/source")
    assert got[0][4].startswith("dataset file not found: nope.csv (looked in ")
    assert got[1] == (
        "ARP105",
        manifest,
        7,
        "/scenarios/1/dataset/source",
        "dataset source '../outside.csv' climbs out of the pack root with '..'",
    )
    assert got[2] == (
        "ARP102",
        manifest,
        9,
        "/scenarios/2/dataset/input_column",
        "dataset cols.csv has no column 'input' (columns: q)",
    )
    data = str(tmp_path / "bad.jsonl")
    assert got[3:] == [
        ("ARP102", data, 2, None, "invalid JSON line: Expecting value at column 1"),
        ("ARP102", data, 3, None, "each JSONL line must be an object"),
        ("ARP102", data, 4, None, "row has no string 'input' value"),
    ]


def test_cwd_is_relative_to_the_manifest_and_may_lead_outside_it(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    text = """
        name: x
        target: [python, agent.py]
        cwd: {cwd}
        scenarios: [{{name: a, steps: [{{input: x}}]}}]
    """
    sub = tmp_path / "evals"
    sub.mkdir()
    for cwd, expected in (("../elsewhere", tmp_path / "elsewhere"), (".", sub), (str(tmp_path), tmp_path)):
        manifest, found = validate_manifest(write(sub, text.format(cwd=cwd)))
        assert found == [] and manifest.target.cwd == str(expected.resolve())
    got = findings(write(sub, text.format(cwd="../missing")))
    assert got[0][1:4] == ("ARP106", 3, "/cwd") and "resolved to" in got[0][4]


def test_warnings_for_duplicates_and_ignored_dataset(tmp_path):
    (tmp_path / "d.csv").write_text("input\nx\n")
    path = write(
        tmp_path,
        """
        name: x
        target: python agent.py
        scenarios:
          - {name: same, steps: [{input: a}], dataset: {type: csv, source: d.csv}}
          - {name: same, steps: [{input: b}]}
    """,
    )
    manifest, found = validate_manifest(path)
    assert [f.code for f in found] == ["ARP110", "ARP112"]
    assert [s.id for s in manifest.scenarios] == ["same", "same (2)"]


def test_strict_rules(tmp_path):
    path = write(
        tmp_path,
        """
        name: x
        target: definitely-not-a-program-xyz
        scenarios:
          - name: a
            steps:
              - input: x
              - input: y
                graders: [{type: text_match, field: private_thought, condition: contains, value: z}]
    """,
    )
    assert findings(path) == []
    got = [(f[1], f[2], f[3]) for f in findings(path, strict=True)]
    assert got == [
        ("ARP201", 1, None),
        ("ARP202", 6, "/scenarios/0/steps/0"),
        ("ARP203", 8, "/scenarios/0/steps/1/graders/0/field"),
        ("ARP204", 2, "/target"),
    ]


@pytest.mark.parametrize(
    "text,code",
    [
        ("[1, 2]\n", "ARP002"),
        ("name: x\nname: y\n", "ARP001"),
        ("name: [\n", "ARP001"),
    ],
)
def test_unreadable_documents(tmp_path, text, code):
    path = write(tmp_path, text)
    got = findings(path)
    assert got[0][1] == code and got[0][2] is not None


@pytest.mark.parametrize("kind", ["fifo", "folder", "dangling-link"])
def test_a_manifest_that_is_not_a_file_is_named_never_read(agentpack_cli, tmp_path, kind):
    import os

    path = tmp_path / "manifest.yaml"
    if kind == "fifo":
        os.mkfifo(path)  # no writer: reading it would wait forever
    elif kind == "folder":
        path.mkdir()
    else:
        path.symlink_to(tmp_path / "gone.yaml")
    checked = agentpack_cli("rpc", "validate", path, "--json")
    run = agentpack_cli("rpc", "run", "-m", path)
    if kind == "dangling-link":  # the command line refuses it: a usage error
        assert checked.exit_code == run.exit_code == 2 and "does not exist" in run.stderr
        return
    assert checked.exit_code == 1 and "expected a YAML file, found" in checked.stdout, checked.stdout
    assert run.exit_code == 2 and "expected a YAML file, found" in run.stderr, run.stderr


def test_validate_command_text_and_json(agentpack_cli, tmp_path):
    good = write(
        tmp_path,
        """
        name: ok
        target: python agent.py
        scenarios:
          - {name: a, tags: [x], steps: [{input: x, graders: [{type: text_match, condition: contains, value: x}]}]}
    """,
        "good.yaml",
    )
    bad = write(tmp_path, "name: bad\ntarget: x\nscenarios: [{name: a, steps: [{inputs: x}]}]\n", "bad.yaml")
    result = agentpack_cli("rpc", "validate", good)
    assert result.exit_code == 0 and "'ok': 1 scenarios, 1 steps, 1 graders, target python agent.py" in result.stdout
    result = agentpack_cli("rpc", "validate", good, bad, "--json")
    assert result.exit_code == 1
    envelope = result.json()
    assert envelope["command"] == "rpc validate" and envelope["ok"] is False
    messages = [f["message"] for f in envelope["items"][1]["findings"]]
    assert messages == [
        "/scenarios/0/steps/0: missing required key 'input'",
        "/scenarios/0/steps/0/inputs: unknown key 'inputs'",
    ]


def test_the_example_manifest_is_strictly_valid(agentpack_cli):
    example = Path(__file__).parents[2] / "examples" / "agent_rpc" / "manifest.yaml"
    result = agentpack_cli("rpc", "validate", "--strict", example)
    assert result.exit_code == 0, result.stdout
    assert "4 scenarios, 6 steps, 16 graders" in result.stdout


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"ECP_RPC_TIMEOUT": "7"}, 7.0),
        ({"AGENTPACK_AGENT_RPC_TIMEOUT": "5", "ECP_RPC_TIMEOUT": "7"}, 5.0),
        ({}, 30.0),
    ],
)
def test_step_timeout_from_the_environment(tmp_path, monkeypatch, env, expected):
    for name in ("AGENTPACK_AGENT_RPC_TIMEOUT", "ECP_RPC_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    path = write(tmp_path, "name: x\ntarget: y\nscenarios:\n  - name: a\n    steps: [{input: hi}]\n")
    manifest, found = validate_manifest(path)
    assert found == [] and manifest.scenarios[0].step_timeout == expected


@pytest.mark.parametrize("value", ["soon", "0", "-1", "inf"])
def test_a_bad_timeout_in_the_environment_is_an_error(tmp_path, monkeypatch, value):
    monkeypatch.setenv("AGENTPACK_AGENT_RPC_TIMEOUT", value)
    path = write(tmp_path, "name: x\ntarget: y\nscenarios:\n  - name: a\n    steps: [{input: hi}]\n")
    manifest, found = validate_manifest(path)
    assert manifest is None and [(f.code, f.file) for f in found] == [("ARP107", str(path))]
    assert "AGENTPACK_AGENT_RPC_TIMEOUT (or ECP_RPC_TIMEOUT) must be a positive number" in found[0].message
