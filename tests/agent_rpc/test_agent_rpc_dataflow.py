"""Data flows once: each command reads and parses the manifest once, and the run path stays light."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from agentpack.testing import count_reads


def parsed(parses: list[tuple[str, str]], path) -> list[tuple[str, str]]:
    """Each parse as ``("whole" or "head", file)``: the whole manifest, or the part above ``scenarios:``."""
    whole = path.read_text()
    return [("whole" if text == whole else "head", file) for text, file in parses]


STEP = {"input": "hi", "graders": [{"type": "text_match", "condition": "contains", "value": "Echo: hi"}]}


@pytest.fixture
def manifest_io(monkeypatch):
    """``(opens, parses)``: files opened (by path) and the YAML texts parsed (with their file)."""
    import agentpack.io.yamlio
    from agentpack_agent_rpc.manifest import reader

    opens = count_reads(monkeypatch)
    parses: list[tuple[str, str]] = []
    real_parse = agentpack.io.yamlio.parse_yaml

    def counting_parse(text, **kwargs):
        parses.append((text, kwargs.get("file")))
        return real_parse(text, **kwargs)

    monkeypatch.setattr(agentpack.io.yamlio, "parse_yaml", counting_parse)
    monkeypatch.setattr(reader, "parse_yaml", counting_parse)
    return opens, parses


def test_agentpack_eval_reads_and_parses_the_manifest_once(agentpack_cli, write_manifest, manifest_io):
    path = write_manifest([{"name": "a", "steps": [STEP]}, {"name": "b", "steps": [STEP]}])
    opens, parses = manifest_io
    opens.clear()
    result = agentpack_cli("eval", path, "--json", "--no-record")  # recording hashes the file once more: no parse
    assert result.exit_code == 0, result.stderr
    assert opens[os.path.realpath(path)] == 1, "detection reads it; loading reuses what it read"
    assert parsed(parses, path) == [("whole", str(path))], "loaded once; validation and the run use Pack.data"


def test_agentpack_validate_reads_and_parses_the_manifest_once(agentpack_cli, write_manifest, manifest_io):
    path = write_manifest([{"name": "a", "steps": [STEP]}])
    opens, parses = manifest_io
    opens.clear()
    assert agentpack_cli("validate", path).exit_code == 0
    assert opens[os.path.realpath(path)] == 1 and parsed(parses, path) == [("whole", str(path))]


def test_rpc_run_reads_the_manifest_once_and_parses_the_head_first(agentpack_cli, write_manifest, manifest_io):
    path = write_manifest([{"name": "a", "steps": [STEP]}])
    opens, parses = manifest_io
    opens.clear()
    result = agentpack_cli("rpc", "run", "-m", path)
    assert result.exit_code == 0, result.stderr
    assert opens[os.path.realpath(path)] == 1
    assert parsed(parses, path) == [("head", str(path)), ("whole", str(path))], "the agent starts from the head"


def test_a_flow_style_manifest_is_parsed_once_too(agentpack_cli, write_manifest, manifest_io):
    import json

    import yaml

    path = write_manifest([{"name": "a", "steps": [STEP]}])
    path.write_text(json.dumps(yaml.safe_load(path.read_text())))  # JSON is YAML: detection has to parse it
    opens, parses = manifest_io
    opens.clear()
    result = agentpack_cli("eval", path, "--no-record")
    assert result.exit_code == 0, result.stderr
    assert opens[os.path.realpath(path)] == 1 and parsed(parses, path) == [("whole", str(path))]


def test_the_run_path_imports_no_heavy_module(write_manifest, tmp_path):
    path = write_manifest([{"name": "a", "steps": [STEP]}])
    code = (
        "import sys\n"
        "from agentpack.cli.app import main\n"
        f"assert main(['rpc', 'run', '-m', {str(path)!r}, '--json-out', {str(tmp_path / 'r.json')!r}]) == 0\n"
        "heavy = ('pydantic', 'jsonschema', 'httpx', 'agentpack.kernel.schemas', 'agentpack_agent_rpc.html_report')\n"
        "print('loaded:', *(m for m in heavy if m in sys.modules), file=sys.stderr)\n"
    )
    err = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stderr
    assert err.splitlines()[-1].split() == ["loaded:"]


def test_eval_of_a_manifest_with_broken_yaml_names_the_line(agentpack_cli, tmp_path):
    path = tmp_path / "manifest.yaml"
    path.write_text("name: x\ntarget: y\nscenarios:\n  - name: [unclosed\n")
    result = agentpack_cli("eval", path)
    assert result.exit_code == 2 and result.stderr.startswith(f"error: {path}:5:1: invalid YAML"), result.stderr
