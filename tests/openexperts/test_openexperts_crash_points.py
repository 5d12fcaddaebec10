"""Every named crash point of a process run is killed for real (SIGKILL), then the run is resumed until it
finishes; after each, the invariants of docs/robustness.md hold.

The tools record each side effect they really perform in a ledger (fsynced, so a kill cannot lose one).
Three kinds of binding:

* ``keyed``: the binding honours idempotency keys and answers a repeated key from the ledger;
* ``reconciling``: plain writes, and a ``reconcile`` that looks the call up in the ledger;
* ``plain``: neither; a call the kill left unknown holds the run, and the test settles it the way a person
  would, from the ledger.

Invariants: the run ends ``succeeded`` with the expected result; no ``confirm`` write is performed twice
(``keyed`` and ``reconciling``: no write at all is); the reply draft and the result are delivered once;
the scratchpad is removed and no temporary file is left in the runtime directory.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

AGENTPACK = str(Path(sys.executable).with_name("agentpack"))
EXAMPLES = Path(__file__).parents[2] / "examples" / "openexperts"
CRASH = "AGENTPACK_OPENEXPERTS_CRASH"

TOOLS = textwrap.dedent("""\
    import json, os

    from agentpack_openexperts.runtime import current_key

    LEDGER = os.environ["LEDGER"]
    KIND = os.environ["TOOL_KIND"]


    def entries():
        if not os.path.exists(LEDGER):
            return []
        with open(LEDGER) as handle:
            return [json.loads(line) for line in handle if line.strip()]


    def effect(op, result, key=None, **args):
        with open(LEDGER, "a") as handle:
            handle.write(json.dumps({"op": op, "args": args, "key": key, "result": result}) + "\\n")
            handle.flush()
            os.fsync(handle.fileno())
        return result


    def once(op, key, result, **args):
        for entry in entries():
            if key is not None and entry["key"] == key:
                return entry["result"]
        return effect(op, result, key, **args)


    class Helpdesk:
        idempotency_keys = KIND == "keyed"

        def get_ticket(self, ticket_id):
            return {"id": ticket_id, "subject": "Cannot log in", "body": "locked", "customer_id": "C-1"}

        def reconcile(self, operation, arguments, idempotency_key):
            if KIND != "reconciling":
                return None
            for entry in entries():
                if entry["op"] == operation and entry["args"] == arguments:
                    return {"happened": True, "result": entry["result"]}
            return {"happened": False}

        def add_internal_note(self, ticket_id, body):
            return write("add_internal_note", {"note_id": "N-77"}, ticket_id=ticket_id, body=body)

        def set_status(self, ticket_id, status):
            return write("set_status", {"ok": True}, ticket_id=ticket_id, status=status)


    def write(op, result, **args):
        if KIND == "keyed":
            return once(op, current_key(), result, **args)
        return effect(op, result, **args)


    class Crm:
        def get_customer(self, customer_id):
            return {"id": customer_id, "name": "Globex", "plan": "enterprise", "health": "green"}
    """)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(CRASH)}
    return {**env, **extra}


class Case:
    """One copy of the package, its tools and ledger, and the commands that run it."""

    def __init__(self, base: Path, acme: Path, kind: str) -> None:
        base.mkdir()
        self.pack = base / "acme-support"
        shutil.copytree(acme, self.pack, ignore=shutil.ignore_patterns(".openexperts"))
        (base / "crash_tools.py").write_text(TOOLS)
        bindings = base / "bindings.yaml"
        bindings.write_text(
            "tools:\n  helpdesk: {python: crash_tools.py:Helpdesk}\n  crm: {python: crash_tools.py:Crm}\n"
        )
        self.work, self.ledger = base / "work", base / "ledger.jsonl"
        self.env = _env(LEDGER=str(self.ledger), TOOL_KIND=kind)
        self.common = ["--bindings", str(bindings), "--script", str(EXAMPLES / "script.yaml"), "--approve", "approve"]
        self.common += ["--workdir", str(self.work), "--json"]

    def run(self, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [AGENTPACK, "experts", *args],
            env={**self.env, **env},
            capture_output=True,
            text=True,
            timeout=120,
        )

    def start(self, **env: str) -> subprocess.CompletedProcess[str]:
        return self.run(
            "run", str(self.pack), "--process", "triage-ticket", "--input", "ticket_id=T-9", *self.common, **env
        )

    def effects(self) -> list[str]:
        return [json.loads(line)["op"] for line in self.ledger.read_text().splitlines()] if self.ledger.exists() else []

    def finish(self) -> tuple[dict, list[str]]:
        """Resume until the run ends, settling held calls from the ledger as a person would; the outcome and
        the statuses seen on the way."""
        seen = []
        for _ in range(4):
            done = self.run("run", str(self.pack), "--resume", *self.common)
            assert done.returncode in (0, 1), done.stdout + done.stderr
            runs = json.loads(done.stdout)["runs"]
            assert len(runs) == 1, done.stdout
            outcome = runs[0]
            seen.append(outcome["status"])
            if outcome["status"] != "held":
                return outcome, seen
            operation = outcome["error"].split(" ", 1)[0].split(".", 1)[1]
            happened = operation in self.effects()
            verdict = ["--happened", "--result", '{"ok": true}'] if happened else ["--not-happened"]
            settled = self.run("settle", str(self.pack), outcome["run_id"], *verdict, "--workdir", str(self.work))
            assert settled.returncode == 0, settled.stderr
        raise AssertionError(f"the run never finished: {seen}")

    def log(self, run_id: str) -> dict:
        done = self.run("log", str(self.pack), run_id, "--workdir", str(self.work), "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture(scope="module")
def points(tmp_path_factory) -> list[str]:
    """The crash points an uninterrupted run passes, in order."""
    tmp_path = tmp_path_factory.mktemp("trace")
    case = Case(tmp_path / "trace", EXAMPLES / "acme-support", "plain")
    trace = tmp_path / "trace.txt"
    done = case.start(**{f"{CRASH}_TRACE": str(trace)})
    assert done.returncode == 0, done.stdout + done.stderr
    return trace.read_text().split()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["plain", "keyed", "reconciling"])
def test_every_crash_point_of_a_run(tmp_path, acme, kind, points):
    assert {
        "run.segment_started",
        "call.journalled",
        "call.returned",
        "call.recorded",
        "step.completed",
        "draft.delivered",
        "run.finished",
        "run.delivered",
    } <= set(points)
    held = []
    for n, name in enumerate(points, 1):
        if kind != "plain" and not name.startswith("call."):
            continue  # the points away from tool calls do not depend on the binding
        case = Case(tmp_path / f"{kind}-{n}", acme, kind)
        killed = case.start(**{f"{CRASH}_AT": "*", f"{CRASH}_SKIP": str(n)})
        assert killed.returncode == -signal.SIGKILL, (n, name, killed.stdout, killed.stderr)
        outcome, seen = case.finish()
        where = f"killed at point {n} ({name}), then {seen}"
        assert outcome["status"] == "succeeded", (where, outcome)
        assert outcome["result"]["structured"]["note"] == "N-77", where
        effects = case.effects()
        assert effects.count("set_status") == 1, (where, effects)  # a confirm write: never twice
        if kind != "plain":
            assert effects.count("add_internal_note") == 1, (where, effects)
        if "held" in seen:
            held.append(name)
        data = case.log(outcome["run_id"])
        assert [m["kind"] for m in data["messages"]].count("draft") == 1, where
        assert [m["kind"] for m in data["messages"]].count("result") == 1, where
        assert not list(case.work.joinpath("scratch").glob("*")), where
        assert not [p for p in case.work.rglob("*.tmp")], where
    # only the plain binding leaves a person something to settle: set_status killed before or after it ran
    assert held == (["call.journalled", "call.returned"] if kind == "plain" else []), held
