"""Redaction covers mapping keys (issue 24): a ``private`` knowledge line used as a JSON key never reaches
``runtime.db`` or the CLI's stdout, as a value never did."""

import json
import sqlite3
from pathlib import Path

import yaml

from agentpack.testing import run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "openexperts"
MARKER = "PRIVATE-MARKER-4417 the vault code for night escalations"


def test_a_private_line_used_as_a_key_is_redacted(acme, tmp_path):
    contacts = acme / "knowledge" / "escalation-contacts.md"
    contacts.write_text(contacts.read_text() + f"\n{MARKER}\n")
    script = yaml.safe_load((EXAMPLES / "script.yaml").read_text())
    triage = script["processes"]["triage-ticket"]
    triage["finish"]["structured"] = {
        MARKER: "as a key",
        "nested": [{MARKER: 1, "[private knowledge redacted]": 2}],  # two keys redacted alike keep both values
    }
    script_file = tmp_path / "script.json"
    script_file.write_text(json.dumps(script))
    work = tmp_path / "work"
    argv = ["experts", "run", str(acme), "--process", "triage-ticket", "--input", "ticket_id=T-100"]
    argv += ["--script", str(script_file), "--approve", "approve"]
    result = run_cli([*argv, "--bindings", str(EXAMPLES / "bindings.yaml"), "--workdir", str(work), "--json"])
    assert result.exit_code == 0, result.stdout + result.stderr
    assert MARKER not in result.stdout and MARKER not in result.stderr
    structured = result.json()["run"]["result"]["structured"]
    assert structured["[private knowledge redacted]"] == "as a key"
    assert structured["nested"] == [{"[private knowledge redacted]": 1, "[private knowledge redacted] (2)": 2}]
    with sqlite3.connect(work / "runtime.db") as db:
        db.execute("PRAGMA wal_checkpoint(FULL)")
    for path in work.rglob("*"):
        if path.is_file():
            assert MARKER.encode() not in path.read_bytes(), path
