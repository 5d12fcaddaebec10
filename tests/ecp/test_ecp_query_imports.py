"""A cold ``agentpack query`` imports only what the answer needs (speed, checked without timing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = {"httpx", "jsonschema", "referencing", "cryptography", "croniter", "pathspec", "sentence_transformers", "mcp"}


def _imported(pack: Path, *args: str) -> set[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "agentpack", "query", str(pack), "prediction cache", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


NOT_NEEDED = {"pydantic", "agentpack.kernel.models", "agentpack_agent_rpc.manifest"}
"""No pydantic (the pack path's records are plain) and no other format's modules (detection is light)."""


@pytest.mark.parametrize("mode", ["keyword", "fts", "vector", "hybrid"])
@pytest.mark.parametrize("output", ["--json", "text"])
def test_cold_query_skips_heavy_modules(example_pack: Path, mode: str, output: str) -> None:
    modules = _imported(example_pack, "--mode", mode, *([output] if output != "text" else []))
    assert not modules & (HEAVY | NOT_NEEDED), sorted(modules & (HEAVY | NOT_NEEDED))
    if mode in ("keyword", "fts"):  # BM25 over the cache's memoryviews, FTS5 in SQLite: no numpy
        assert "numpy" not in modules


ONE_FORMAT = {
    "keyword": {"agentpack_ecp.index.fts", "agentpack_ecp.index.vector", "agentpack_ecp.index.embed"},
    "fts": {"agentpack_ecp.index.keyword", "agentpack_ecp.index.vector", "agentpack_ecp.index.embed"},
}
"""Modules of the other formats a cold query of one format does without (each index module is imported
by the index it opens)."""


@pytest.mark.parametrize("mode", ["keyword", "fts"])
def test_cold_query_imports_only_its_formats_modules_and_no_logging(example_pack: Path, mode: str) -> None:
    modules = _imported(example_pack, "--mode", mode, "--json")
    assert not modules & (ONE_FORMAT[mode] | {"logging"}), sorted(modules & (ONE_FORMAT[mode] | {"logging"}))


def test_refresh_without_the_eval_gate_imports_no_pydantic(example_pack: Path, tmp_path: Path) -> None:
    """``ecp refresh --no-evals`` builds and publishes; the eval module's validation import (pydantic's
    Finding) waits for suites to run."""
    doc = next((example_pack / "expert" / "sources").rglob("*.md"))
    doc.write_text(doc.read_text() + "\nOne more line about tides.\n")
    argv = ["-X", "importtime", "-m", "agentpack", "ecp", "refresh", str(example_pack), "--no-evals", "--json"]
    proc = subprocess.run(
        [sys.executable, *argv, "--store", str(tmp_path / "runs.sqlite")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert '"decision": "published"' in proc.stdout
    modules = {line.split("|")[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}
    assert not modules & {"pydantic", "agentpack.kernel.models"}, sorted(
        modules & {"pydantic", "agentpack.kernel.models"}
    )
