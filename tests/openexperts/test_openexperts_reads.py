"""Data flows once: a command parses each package file once and hands the loaded package along."""

import builtins
import io
from collections import Counter
from pathlib import Path

import pytest

from agentpack.testing import run_cli

EXAMPLES = Path(__file__).parents[2] / "examples" / "openexperts"


@pytest.fixture
def reads(monkeypatch, acme):
    """Counts opens of files inside the package, by package-relative path."""
    counted: Counter[str] = Counter()
    root = acme.resolve()
    real_open = io.open

    def counting_open(file, *args, **kwargs):
        if isinstance(file, (str, Path)):
            path = Path(file).resolve()
            if path.is_relative_to(root):
                counted[path.relative_to(root).as_posix()] += 1
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(builtins, "open", counting_open)
    return counted


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
