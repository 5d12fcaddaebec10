"""Invalid inputs `dci lint` accepted before issue 24: a consumer SKILL.md beside skills/ that is empty, not
UTF-8 or whose contract does not parse, and a contract holding a control character."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from agentpack.testing import run_cli

WORKSPACE = Path(__file__).resolve().parents[2] / "examples" / "dci" / "workspace"

FRONT = b"---\nname: %s\ndescription: A consumer.\nmetadata:\n  contract: %s\n---\nbody\n"
CONSUMERS = {
    "empty": (b"", "DCI100"),
    "not-utf8": (b"---\nname: not-utf8\ndescription: caf\xe9\n---\n", "not UTF-8"),
    "unparsed": (FRONT % (b"unparsed", b'"DCI/1 R(web-search"'), "DCI001"),
    "nul-byte": (FRONT % (b"nul-byte", b'"DCI/1^strict R(web\\0search)"'), "control character"),
}


@pytest.mark.parametrize("name", list(CONSUMERS))
@pytest.mark.parametrize("where", ["workspace", "consumers folder"])
def test_a_broken_consumer_fails_the_lint(tmp_path: Path, name: str, where: str) -> None:
    workspace = tmp_path / "ws"
    shutil.copytree(WORKSPACE, workspace)
    data, expected = CONSUMERS[name]
    (workspace / "consumers" / name).mkdir()
    (workspace / "consumers" / name / "SKILL.md").write_bytes(data)
    target = workspace if where == "workspace" else workspace / "consumers"
    result = run_cli(["dci", "lint", target])
    assert result.exit_code == 1, result.stdout + result.stderr
    assert expected in result.stdout and f"{name}/SKILL.md" in result.stdout, result.stdout


def test_a_control_character_in_a_contract_is_a_parse_error() -> None:
    from agentpack_dci.grammar import ContractParseError, parse_contract

    with pytest.raises(ContractParseError, match="control character") as info:
        parse_contract("DCI/1 P(web\x00search)")
    assert info.value.column == 12
    assert parse_contract("DCI/1 P(web-search)\n").provides
