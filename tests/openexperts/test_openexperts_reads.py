"""Data flows once: a command parses each package file once and hands the loaded package along."""

from pathlib import Path

import pytest

from agentpack.testing import count_reads, run_cli

EXAMPLES = Path(__file__).parents[2] / "examples" / "openexperts"


@pytest.fixture
def reads(monkeypatch, acme):
    """Counts opens of files inside the package, by package-relative path."""
    return count_reads(monkeypatch, acme)


def package_files(acme: Path) -> set[str]:
    return {p.relative_to(acme).as_posix() for p in acme.rglob("*") if p.is_file() and p.name != "README.md"}


def test_validate_reads_each_file_once(acme, reads):
    result = run_cli(["validate", str(acme)])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert set(reads) == package_files(acme) and set(reads.values()) == {1}, reads


def test_dry_run_reads_each_file_once(acme, reads, tmp_path):
    result = run_cli(
        [
            "experts",
            "dry-run",
            str(acme),
            "triage-ticket",
            "--input",
            "ticket_id=T-100",
            "--bindings",
            str(EXAMPLES / "bindings.yaml"),
            "--workdir",
            str(tmp_path / "work"),
        ]
    )
    assert result.exit_code == 0, result.stdout + result.stderr
    assert set(reads) == package_files(acme) and set(reads.values()) == {1}, reads
