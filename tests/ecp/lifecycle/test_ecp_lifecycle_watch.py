"""``agentpack ecp watch``: cron schedules and source-change events, in real subprocesses."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentpack.errors import AgentpackError
from agentpack.proc import kill_group, spawn
from agentpack_ecp.index.build import build_pack
from agentpack_ecp.lifecycle.watch import next_due, parse_triggers

AGENTPACK = str(Path(sys.executable).with_name("agentpack"))


def with_triggers(kit, tmp_path: Path, *triggers: dict) -> Path:
    policy = json.loads(json.dumps(kit.POLICY))
    policy["refresh_triggers"] = list(triggers)
    pack = kit.write_pack(tmp_path, policy=policy)
    build_pack(pack)
    return pack


def read_events(proc, until: str, limit: float = 60.0) -> list[dict]:
    """JSON lines from ``proc`` until an event named ``until`` (bounded by ``limit`` seconds)."""
    events = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        events.append(json.loads(line))
        if events[-1]["event"] == until:
            return events
    pytest.fail(f"no '{until}' event; got {events}; stderr: {proc.stderr.read() if proc.poll() is not None else ''}")


def test_parse_triggers_and_next_due() -> None:
    triggers = parse_triggers(
        {
            "refresh_triggers": [
                {"type": "schedule", "spec": "0 3 * * *"},
                {"type": "event", "spec": "git-push"},
                {"type": "manual", "spec": "on-demand"},
            ]
        },
        "policy.json",
    )
    assert triggers.schedules == ["0 3 * * *"] and triggers.events == ["git-push"]
    assert next_due("0 3 * * *", datetime(2026, 1, 1, 4, tzinfo=UTC)) == datetime(2026, 1, 2, 3, tzinfo=UTC)
    with pytest.raises(AgentpackError, match="not a cron expression") as err:
        parse_triggers({"refresh_triggers": [{"type": "schedule", "spec": "every day"}]}, "policy.json")
    assert err.value.file == "policy.json"


def test_schedule_trigger_runs_a_refresh(tmp_path: Path, kit) -> None:
    pack = with_triggers(kit, tmp_path, {"type": "schedule", "spec": "* * * * * *"})
    (pack / "expert/sources/docs/tokens.md").write_text("# Tokens\n\nAccess tokens expire after two hours.\n")
    done = subprocess.run(
        [AGENTPACK, "ecp", "watch", str(pack), "--json", "--interval", "0.1", "--max-runs", "1"],
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    events = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0, done.stderr
    assert [e["event"] for e in events] == ["watching", "refresh", "stopped"]
    assert events[1]["reason"].startswith("schedule") and events[1]["decision"] == "published"


def test_event_trigger_reacts_to_a_file_change_and_stops_on_sigterm(tmp_path: Path, kit) -> None:
    pack = with_triggers(kit, tmp_path, {"type": "event", "spec": "file-change"})
    proc = spawn(
        [AGENTPACK, "ecp", "watch", str(pack), "--json", "--interval", "0.2", "--duration", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        read_events(proc, "watching")
        (pack / "expert/sources/docs/tokens.md").write_text("# Tokens\n\nAccess tokens expire after two hours.\n")
        events = read_events(proc, "refresh")
        assert events[-1]["decision"] == "published" and events[-1]["changed_files"] == 1
        assert "file-change" in events[-1]["reason"]
        proc.send_signal(signal.SIGTERM)
        stopped = read_events(proc, "stopped")
        assert stopped[-1]["runs"] == 1 and stopped[-1]["failures"] == 0
        assert proc.wait(timeout=30) == 0
    finally:
        kill_group(proc)


def test_watch_without_triggers_is_an_error(tmp_path: Path, kit) -> None:
    pack = with_triggers(kit, tmp_path, {"type": "manual", "spec": "on-demand"})
    done = subprocess.run(
        [AGENTPACK, "ecp", "watch", str(pack)], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "no schedule or event trigger" in done.stderr
