"""Data flows once: ``agentpack query``, ``eval`` and ``validate`` parse each file of the pack once.

``agentpack_load`` returns the loaded pack and the query, evaluate and validate hooks receive that
object; the test counts every read of a file under the pack root during one command.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from agentpack.kernel.host import Host
from agentpack.kernel.plugins import create_plugin_manager, set_host
from agentpack.testing import count_reads, run_cli

PACK_FILES = [
    "expert/EXPERT.yaml",
    "expert/maintenance/policy.json",
    "expert/evals/conformance.yaml",
    "expert/evals/retrieval.yaml",
]


@pytest.fixture
def ecp_host(monkeypatch):
    """A host with the ECP plugin only: other plugins' cross-cutting checks read SKILL.md themselves."""
    monkeypatch.setenv("AGENTPACK_PLUGINS", "ecp")
    host = Host(create_plugin_manager())
    previous = set_host(host)
    yield host
    set_host(previous)


@pytest.fixture
def reads(monkeypatch, example_pack: Path) -> Counter:
    """Reads (opens for reading) of each file under ``example_pack``, by pack-relative path."""
    return count_reads(monkeypatch, example_pack)


@pytest.mark.parametrize(
    "args",
    [
        ["query", "{pack}", "How is the prediction cache invalidated?", "--json"],
        ["eval", "{pack}", "--json", "--no-record"],  # recording hashes the pack once more: reads, no parse
    ],
    ids=["query", "eval"],
)
def test_query_and_eval_read_each_pack_file_once(ecp_host, example_pack: Path, reads: Counter, args) -> None:
    result = run_cli([a.format(pack=example_pack) for a in args])
    assert result.exit_code == 0, result.stderr
    assert {f: reads[f] for f in PACK_FILES} == dict.fromkeys(PACK_FILES, 1)
    assert reads["SKILL.md"] == 0  # answering needs nothing of SKILL.md


def test_validate_reads_each_pack_file_once(ecp_host, example_pack: Path, reads: Counter) -> None:
    result = run_cli(["validate", example_pack, "--strict", "-o", "json"])
    assert result.exit_code == 0, result.stdout
    assert {f: reads[f] for f in PACK_FILES} == dict.fromkeys(PACK_FILES, 1)
    index_files = [f for f in reads if f.startswith("expert/context/indexes/")]
    assert index_files and all(reads[f] == 1 for f in index_files), reads
    # ECP's linkage check (ECP101) and the core's own SKILL.md rules (SKL codes) share one parse
    assert reads["SKILL.md"] == 1
