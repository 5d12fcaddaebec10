"""``dci resolve --mcp``: provider candidates from several MCP servers (Skills extension) beside the local tree,
from their listings alone, origin-tagged, never shadowing a local skill, never probed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentpack.io.hashing import sha256_json
from agentpack_dci.discovery import EXTERNAL, remote_candidate

pytest.importorskip("mcp")

SERVER = Path(__file__).parents[1] / "core" / "mcpskills" / "server.py"


def skill(root: Path, name: str, description: str, contract: str) -> None:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        f'---\nname: {name}\ndescription: {description}\nmetadata:\n  contract: "{contract}"\n---\nBody\n'
    )


def test_resolve_takes_providers_from_two_servers_and_the_local_tree(tmp_path):
    workspace = tmp_path / "ws"
    skill(workspace / "skills", "summarizer", "Summarize text.", "DCI/1 P(summarization)")
    skill(tmp_path / "a", "pdf-tools", "Extract text from PDF files.", "DCI/1 P(pdf-extraction)")
    skill(tmp_path / "b", "summarizer", "Summarize text, remotely.", "DCI/1 P(summarization)")
    servers = [f"{label}={sys.executable} {SERVER} {tmp_path / label}" for label in ("a", "b")]
    run = subprocess.run(
        [sys.executable, "-m", "agentpack", "dci", "resolve", "--workspace", str(workspace), "--require",
         "summarization,pdf-extraction", "--selection", "cover", "--no-prompt", "--no-history", "--no-record",
         "-o", "json", "--mcp", servers[0], "--mcp", servers[1]],
        capture_output=True, text=True, env={**os.environ, "AGENTPACK_MCP_CACHE": str(tmp_path / "cache")},
        timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(run.stdout)["report"]
    ids = [c["id"] for c in report["candidates"]]
    assert set(ids) == {
        "summarizer::skills/summarizer",
        "pdf-tools::mcp:a:skill://pdf-tools/SKILL.md",
        "summarizer::mcp:b:skill://summarizer/SKILL.md",
    }
    # the local summarizer and the served one are two candidates; the local one wins the tie
    assert set(report["selected_candidates"]) == {
        "summarizer::skills/summarizer",
        "pdf-tools::mcp:a:skill://pdf-tools/SKILL.md",
    }
    assert report["discovery"]["sources_scanned"] == ["workspace-local", EXTERNAL]
    assert not (tmp_path / "cache").exists()  # listings only: no skill file was fetched


def test_a_served_candidate_is_checked_by_the_core_rules_against_its_uri():
    ok = remote_candidate("mcp:a:skill://x/pdf/SKILL.md", "pdf", {"name": "pdf", "description": "PDF."})
    assert ok.record is not None and ok.record.source == EXTERNAL and ok.record.name == "pdf"
    typed = remote_candidate("mcp:a:skill://v/SKILL.md", "v", {"name": "v", "description": "d", "metadata": {"n": 1.0}})
    as_read = {"name": "v", "description": "d", "metadata": {"n": "1.0"}}  # strings, as on disk
    assert typed.record is not None and typed.record.metadata_hash.hex() == sha256_json(as_read)
    bad = remote_candidate("mcp:a:skill://other/SKILL.md", "other", {"name": "pdf", "description": "PDF."})
    assert bad.record is None and "SKL018" in (bad.reason or "")


def test_a_served_candidate_is_never_probed():
    from agentpack_dci.probes import Probe, ProbeRunner

    ran = []
    runner = ProbeRunner.from_list([Probe("pdf-extraction", "try-it", lambda target: ran.append(target) or True)])
    served = remote_candidate("mcp:a:skill://pdf/SKILL.md", "pdf", {"name": "pdf", "description": "PDF."}).record
    assert served is not None
    assert runner.check(served, ["pdf-extraction"]) is False
    assert ran == [] and runner.runs[0].detail == "served over MCP: not probed"
