"""Invalid inputs validate accepted before issue 24: a process file holding a NUL byte, a tool whose
``pattern`` is not a regular expression."""

from __future__ import annotations

import shutil
from pathlib import Path

from agentpack.testing import run_cli

PACKAGE = Path(__file__).resolve().parents[2] / "examples" / "openexperts" / "acme-support"


def _copy(tmp_path: Path) -> Path:
    dest = tmp_path / "acme-support"
    shutil.copytree(PACKAGE, dest)
    return dest


def test_a_process_file_with_a_nul_byte_is_a_located_error(tmp_path: Path) -> None:
    package = _copy(tmp_path)
    process = package / "processes" / "triage-ticket.md"
    process.write_bytes(process.read_bytes() + b"\nstep\x00 two\n")
    result = run_cli(["validate", package])
    assert result.exit_code == 1, result.stdout
    assert "OEX125" in result.stdout and "NUL byte" in result.stdout and "triage-ticket.md:" in result.stdout


def test_a_tool_pattern_that_is_not_a_regular_expression_is_an_error(tmp_path: Path) -> None:
    package = _copy(tmp_path)
    tool = package / "tools" / "crm.yaml"
    text = tool.read_text()
    old = "        customer_id:\n          type: string\n"
    assert old in text
    tool.write_text(text.replace(old, old + '          pattern: "(unclosed"\n', 1))
    result = run_cli(["validate", package])
    assert result.exit_code == 1, result.stdout
    assert "crm.yaml:12: error OEX224" in result.stdout, result.stdout
