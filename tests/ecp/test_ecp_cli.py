"""Every ``agentpack ecp`` command with ``--json`` reports an error as the JSON envelope on stdout."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentpack.testing import run_cli

COMMANDS = [
    ["build"],
    ["refresh"],
    ["publish"],
    ["rollback"],
    ["status"],
    ["prune"],
    ["watch"],
    ["package", "{pack}", "-o", "{tmp}/out.zip"],
]
# every command, with an argument that does not exist or cannot be written: the envelope, exit 2
MISSING = [
    ["init", "/proc/no-such-dir/new-pack"],
    ["build", "{tmp}/missing"],
    ["refresh", "{tmp}/missing"],
    ["publish", "{tmp}/missing"],
    ["rollback", "{tmp}/missing"],
    ["status", "{tmp}/missing"],
    ["prune", "{tmp}/missing"],
    ["watch", "{tmp}/missing", "--max-runs", "1"],
    ["package", "{tmp}/missing", "-o", "{tmp}/out.zip"],
    ["package", "{pack}", "-o", "/proc/no-such-dir/out.zip"],
    ["package", "{pack}", "-o", "{tmp}/out.zip", "--sign-key", "{tmp}/missing.key"],
    ["verify", "{tmp}/missing.zip"],
    ["verify", "{tmp}/missing.zip", "--key", "{tmp}/missing.pub"],
    ["sign", "{tmp}/missing.zip", "--key", "{tmp}/missing.key"],
    ["keygen", "/proc/no-such-dir/release.key"],
]


@pytest.mark.parametrize("args", COMMANDS, ids=[a[0] for a in COMMANDS])
def test_json_errors_are_envelopes(agentpack_host, tmp_path: Path, args: list[str]) -> None:
    not_a_pack = tmp_path / "not-a-pack"
    not_a_pack.mkdir()
    argv = [a.format(pack=not_a_pack, tmp=tmp_path) for a in args]
    if len(argv) == 1:
        argv.append(str(not_a_pack))
    result = run_cli(["ecp", *argv, "--json"])
    assert result.exit_code == 2, result.stdout + result.stderr
    envelope = result.json()
    assert envelope["schema_version"] == 1 and envelope["ok"] is False
    assert envelope["command"] == f"ecp {args[0]}"
    assert "EXPERT.yaml" in envelope["error"]["message"]


def test_package_keeps_o_for_the_zip_and_takes_format(agentpack_host, new_pack: Path, tmp_path: Path) -> None:
    out = tmp_path / "pack.zip"
    result = run_cli(["ecp", "package", new_pack, "-o", out, "--format", "json"])
    assert result.exit_code == 0, result.stderr
    assert result.json()["command"] == "ecp package" and out.is_file()


@pytest.mark.parametrize("args", MISSING, ids=[" ".join(a[:1] + a[2:3]) for a in MISSING])
def test_missing_or_unwritable_paths_are_envelopes(agentpack_host, new_pack: Path, tmp_path: Path, args) -> None:
    argv = [a.format(pack=new_pack, tmp=tmp_path) for a in args]
    flag = ["--format", "json"] if args[0] == "package" else ["--json"]
    result = run_cli(["ecp", *argv, *flag])
    assert result.exit_code == 2, result.stdout + result.stderr
    envelope = result.json()
    assert envelope["ok"] is False and envelope["command"] == f"ecp {args[0]}" and envelope["error"]["message"]
    assert not (tmp_path / "out.zip").exists()
