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

from agentpack.io.errors import AgentpackError
from agentpack.io.proc import kill_group, spawn
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


def test_each_refresh_of_a_watch_is_recorded_as_ecp_refresh_does(tmp_path: Path, kit) -> None:
    """The eval gate of every refresh is a run in the store (AGENTPACK_RUNS, --tag); --no-record records
    nothing; a store that cannot be written is a warning, the watch goes on and exits 2."""
    import os

    from agentpack.results.runs import open_store

    pack = with_triggers(kit, tmp_path, {"type": "schedule", "spec": "* * * * * *"})
    store = tmp_path / "runs.sqlite"

    def watch(*extra: str, env_store: Path = store) -> subprocess.CompletedProcess:
        """One scheduled refresh after a change to the sources (each call below writes another text), so its
        eval gate runs."""
        doc = pack / "expert/sources/docs/tokens.md"
        doc.write_text(f"# Tokens\n\nAccess tokens expire after {len(extra) + 2} hours.\n")
        args = [AGENTPACK, "ecp", "watch", str(pack), "--json", "--interval", "0.1", "--max-runs", "1", *extra]
        env = dict(os.environ, AGENTPACK_RUNS=str(env_store))
        return subprocess.run(args, check=False, capture_output=True, text=True, timeout=120, env=env)

    done = watch("--tag", "nightly")
    assert done.returncode == 0, done.stderr
    refreshed = [json.loads(line) for line in done.stdout.splitlines()][1]
    with open_store(store) as opened:
        (summary,) = opened.find()
        run = opened.get(summary.id)
    assert (run.command, run.format, run.status, run.tags) == ("ecp refresh", "ecp", "passed", ["nightly"])
    assert run.settings["trigger"].startswith("schedule") and run.settings["refresh_run_id"] == refreshed["run_id"]
    assert run.total >= 1 and run.settings["decision"] == refreshed["decision"]

    assert watch("--no-record", env_store=tmp_path / "none.sqlite").returncode == 0
    assert not (tmp_path / "none.sqlite").exists()

    broken = tmp_path / "broken.sqlite"
    broken.write_text("not a database")
    failed = watch(env_store=broken)
    events = [json.loads(line)["event"] for line in failed.stdout.splitlines()]
    assert failed.returncode == 2 and events == ["watching", "refresh", "stopped"]
    assert "was not recorded" in failed.stderr and broken.read_text() == "not a database"


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
        proc.stdout.close()
        proc.stderr.close()


def test_watch_without_triggers_is_an_error(tmp_path: Path, kit) -> None:
    pack = with_triggers(kit, tmp_path, {"type": "manual", "spec": "on-demand"})
    done = subprocess.run(
        [AGENTPACK, "ecp", "watch", str(pack)], check=False, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 2 and "no schedule or event trigger" in done.stderr
