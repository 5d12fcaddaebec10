"""openexperts on many workers: the PostgreSQL store and queue, against a real server (see conftest).

Skipped with the reason when PostgreSQL or the postgres extra is missing (CI lists postgres in
AGENTPACK_TESTS_REQUIRE so they run there). The intakes accept unsigned webhooks on loopback
(--insecure-webhooks) and share one approval token.
"""

import http.client
import itertools
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from agentpack.io.proc import kill_group, spawn
from agentpack.testing import run_cli

AGENTPACK = str(Path(sys.executable).with_name("agentpack"))
TOKEN = "deployment-approval-token"

TOOLS = textwrap.dedent("""\
    import json, os, time
    from pathlib import Path

    from agentpack_openexperts.runtime import current_key

    LEDGER = Path(os.environ["LEDGER"])

    class Ledger:
        idempotency_keys = True  # one side effect per key, like a payment API

        def record(self, key, seq):
            ik = current_key()
            if LEDGER.exists() and f'"{ik}"' in LEDGER.read_text():
                return {"recorded": False}
            with LEDGER.open("a") as handle:  # one short line per write: atomic across processes
                handle.write(json.dumps({"key": key, "seq": int(seq), "ik": ik, "pid": os.getpid()}) + "\\n")
            if str(seq) == os.environ.get("HANG_SEQ"):  # done, not yet journaled: the test kills this worker now
                Path(os.environ["HANG_MARKER"]).write_text(str(os.getpid()))
                time.sleep(60)
            time.sleep(0.005)
            return {"recorded": True}

        def release(self, item):
            with LEDGER.open("a") as handle:
                handle.write(json.dumps({"key": "release", "seq": 0, "ik": current_key(), "item": item}) + "\\n")
            return {"released": item}
    """)

SCRIPT = {
    "processes": {
        "handle": {
            "steps": [[{"call": "ledger.record", "args": {"key": "${inputs.key}", "seq": "${inputs.seq}"}}]],
            "finish": {"narrative": "recorded ${inputs.key} ${inputs.seq}"},
        },
        "tick": {"steps": [[]], "finish": {"narrative": "tick"}},
        "gated": {
            "steps": [[{"call": "ledger.release", "args": {"item": "${inputs.item}"}}]],
            "finish": {"narrative": "released ${inputs.item}"},
        },
    }
}


def _process(name: str, trigger: str, inputs: list[str], step: str) -> str:
    front = {
        "name": name,
        "description": f"the {name} process",
        "trigger": trigger,
        "inputs": [{"name": n, "type": "string"} for n in inputs],
        "tools": ["ledger"],
    }
    return "---\n" + yaml.safe_dump(front) + f"---\n\n- [ ] {step}\n"


def make_package(root: Path, *, cron: bool = False) -> Path:
    """A small expert: `event` (webhook, serial_per_key on `key`), `gated` (a confirm call), `tick` (cron)."""
    for folder in ("persona", "functions", "processes", "tools"):
        (root / folder).mkdir(parents=True)
    (root / "README.md").write_text("# scale\n")
    (root / "orchestrator.md").write_text("# Orchestrator\n\nRecord events.\n")
    (root / "persona" / "identity.md").write_text("# Identity\n")
    (root / "functions" / "note.md").write_text("---\nname: note\ndescription: note it\n---\n\nNote it.\n")
    (root / "processes" / "handle.md").write_text(_process("handle", "event", ["key", "seq"], "record the event"))
    (root / "processes" / "gated.md").write_text(_process("gated", "gated", ["item"], "release the item"))
    processes = ["processes/handle.md", "processes/gated.md"]
    if cron:
        (root / "processes" / "tick.md").write_text(_process("tick", "tick", [], "note the tick"))
        processes.append("processes/tick.md")
    string = {"type": "string"}
    operations = [
        {"name": "record", "description": "record", "input": {"type": "object", "properties": {"key": string}}},
        {"name": "release", "description": "release", "input": {"type": "object", "properties": {"item": string}}},
    ]
    (root / "tools" / "ledger.yaml").write_text(
        yaml.safe_dump({"name": "ledger", "description": "side effects", "operations": operations})
    )
    triggers = [
        {
            "name": "event",
            "type": "webhook",
            "process": "handle",
            "payload_mapping": {"key": "key", "seq": "seq"},
            "concurrency_key": "key",
        },
        {"name": "gated", "type": "webhook", "process": "gated", "concurrency": "parallel"},
    ]
    if cron:
        triggers.append(
            {"name": "tick", "type": "cron", "expr": "* * * * * *", "process": "tick", "concurrency": "parallel"}
        )
    manifest = {
        "spec": "1.0",
        "name": "scale-expert",
        "version": "1.0.0",
        "description": "records events",
        "requires": {"tools": ["ledger"]},
        "concurrency": {"default": "serial_per_key"},
        "policy": {"approval": {"default": "auto", "overrides": {"ledger.release": "confirm"}}},
        "execution": {
            "timeout": "1m",
            "idempotent": False,
            "retry": {"max_attempts": 2, "delay": "100ms"},
            "on_failure": "dead_letter",
            "resume_from_execution_log": True,
        },
        "triggers": triggers,
        "components": {
            "orchestrator": "orchestrator.md",
            "persona": ["persona/identity.md"],
            "functions": ["functions/note.md"],
            "processes": processes,
            "tools": ["tools/ledger.yaml"],
        },
    }
    (root / "expert.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return root


def _serving(log: Path) -> str | None:
    """The URL an `experts serve` log announces, once it does."""
    line = next((x for x in log.read_text().splitlines() if x.startswith("serving ")), None)
    return line.split(" on ", 1)[1].split()[0] if line else None


class Deployment:
    """Intake and worker processes of one package on one database; every process is stopped at the end."""

    def __init__(self, tmp: Path, url: str, *, cron: bool = False) -> None:
        self.tmp, self.url = tmp, url
        self.pack = make_package(tmp / "scale-expert", cron=cron)
        (tmp / "tools.py").write_text(TOOLS)
        (tmp / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
        (tmp / "bindings.yaml").write_text("tools:\n  ledger: {python: tools.py:Ledger}\n")
        self.ledger = tmp / "ledger.jsonl"
        self.env = {**os.environ, "LEDGER": str(self.ledger), "AGENTPACK_OPENEXPERTS_SERVER_TOKEN": TOKEN}
        self.procs: list[subprocess.Popen] = []

    def spawn(self, command: str, *args: str) -> subprocess.Popen:
        argv = [AGENTPACK, "experts", command, str(self.pack), "--store", self.url, "--workdir", str(self.tmp / "w")]
        argv += ["--bindings", str(self.tmp / "bindings.yaml"), "--script", str(self.tmp / "script.yaml"), *args]
        log = (self.tmp / f"{command}-{len(self.procs)}.log").open("w")
        proc = spawn(argv, env=self.env, stdout=subprocess.DEVNULL, stderr=log)
        log.close()
        self.procs.append(proc)
        return proc

    def intake(self, count: int = 1) -> str:
        """Start ``count`` `experts serve` processes at once; the base URL of the last."""
        started = [
            (self.spawn("serve", "--insecure-webhooks"), self.tmp / f"serve-{len(self.procs) - 1}.log")
            for _ in range(count)
        ]
        deadline = time.monotonic() + 60
        for proc, log in started:
            while not (url := _serving(log)):
                assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
                time.sleep(0.05)
        return url

    def worker(self, threads: int = 4) -> subprocess.Popen:
        return self.spawn("worker", "--workers", str(threads), "--lease", "2")

    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.ledger.read_text().splitlines()] if self.ledger.exists() else []

    def logs(self) -> str:
        return "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in sorted(self.tmp.glob("*.log")))

    def stop(self) -> None:
        for proc in self.procs:
            kill_group(proc, grace=5)


@pytest.fixture
def deployment(tmp_path, postgres_url):
    made = []

    def make(**kwargs) -> Deployment:
        made.append(Deployment(tmp_path, postgres_url, **kwargs))
        return made[-1]

    yield make
    for one in made:
        one.stop()


class Client:
    """Keep-alive HTTP client for the intake."""

    def __init__(self, base: str) -> None:
        host, port = base.removeprefix("http://").split(":")
        self.conn = http.client.HTTPConnection(host, int(port), timeout=30)

    def post(self, path: str, body: dict) -> tuple[int, dict]:
        data = json.dumps(body).encode()
        headers = {"Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"}
        try:
            self.conn.request("POST", path, body=data, headers=headers)
            response = self.conn.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # the server closed the idle keep-alive connection (its timeout, on a slow machine): a new one
            self.conn.close()
            self.conn.request("POST", path, body=data, headers=headers)
            response = self.conn.getresponse()
        return response.status, json.loads(response.read())

    def get(self, path: str) -> dict:
        self.conn.request("GET", path, headers={"Authorization": f"Bearer {TOKEN}"})
        return json.loads(self.conn.getresponse().read())

    def close(self) -> None:
        self.conn.close()


def runs_of(dep: Deployment, *args: str) -> list[dict]:
    done = subprocess.run(
        [AGENTPACK, "experts", "runs", str(dep.pack), "--store", dep.url, "--json", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["runs"]


def wait_for(predicate, timeout: float, what: str, dep: Deployment | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{dep.logs() if dep else ''}")
        time.sleep(0.1)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request) -> str | None:
    """Each store the runtime offers: None (SQLite in the workdir) or a PostgreSQL URL."""
    return None if request.param == "sqlite" else request.getfixturevalue("postgres_url")


def shape(rt, run_id: str) -> dict:
    """What a run left in a store, without times and ids."""
    return {
        "run": sorted(rt.store.run(run_id)),
        "status": rt.store.run(run_id)["status"],
        "segments": [s["reason"] for s in rt.store.segments(run_id)],
        "steps": [s["step"] for s in rt.store.steps(run_id)],
        "calls": [(c["operation"], c["tier"], c["status"], c["result"]) for c in rt.store.calls(run_id)],
        "events": [e["kind"] for e in rt.store.events(run_id)],
        "messages": [m["kind"] for m in rt.store.messages(run_id)],
    }


# -- one store or the other: the same journal ------------------------------------------------------
def test_both_stores_keep_the_same_journal(make_runtime, acme, ledger, script, postgres_url, tmp_path):
    shapes = []
    for index, url in enumerate((None, postgres_url)):
        rt = make_runtime(
            acme,
            tools=ledger.tools(),
            driver="scripted",
            driver_options={"script": script},
            store=url,
            workdir=tmp_path / f"w{index}",
            ids=itertools.count(1).__next__,
        )
        shapes.append(shape(rt, rt.run_process("triage-ticket", {"ticket_id": "T-7"}).run_id))
    assert shapes[0] == shapes[1] and shapes[0]["status"] == "succeeded"


@pytest.mark.parametrize("keys", [True, False], ids=["honours keys", "no keys"])
def test_a_call_interrupted_mid_way_is_never_repeated_blindly(make_runtime, fast, ledger, script, store, keys):
    tools = ledger.tools()
    seen: list[str | None] = []

    class Helpdesk:
        idempotency_keys = keys

        def __getattr__(self, op):
            if op not in tools["helpdesk"]:
                raise AttributeError(op)
            return tools["helpdesk"][op]

        def set_status(self, ticket_id, status):
            from agentpack_openexperts.runtime import current_key

            seen.append(current_key())
            if len(seen) == 1:
                raise KeyboardInterrupt  # the process dies inside the call: it may or may not have happened
            return tools["helpdesk"]["set_status"](ticket_id=ticket_id, status=status)

    kwargs = {"tools": {"helpdesk": Helpdesk(), "crm": tools["crm"]}, "driver": "scripted", "store": store}
    first = make_runtime(fast, driver_options={"script": script}, **kwargs)
    with pytest.raises(KeyboardInterrupt):
        first.run_process("triage-ticket", {"ticket_id": "T-5"})
    first.stop()
    second = make_runtime(fast, driver_options={"script": script}, **kwargs)
    (outcome,) = second.resume_interrupted()
    if keys:  # issued again with its first key: the service does it once
        assert outcome.status == "succeeded" and len(seen) == 2 and seen[0] == seen[1] is not None
    else:  # no one can tell whether it happened: held for a person, who settles it
        assert outcome.status == "held" and "may or may not have happened" in outcome.error
        assert len(seen) == 1 and second.resume_interrupted() == []
        where = ["--store", store] if store else ["--workdir", second.workdir]
        settled = run_cli(["experts", "settle", fast, outcome.run_id, "--not-happened", *where, "--json"])
        assert settled.exit_code == 0, settled.stderr
        third = make_runtime(fast, driver_options={"script": script}, **kwargs, workers=1)
        if store:  # settling queued the run again: a worker of the deployment finishes it
            with third.started(cron=False):
                assert third.wait_idle(60)
                assert third.store.run(outcome.run_id)["status"] == "succeeded"
        else:
            (outcome,) = third.resume_interrupted()
            assert outcome.status == "succeeded"
        assert len(seen) == 2 and seen[0] == seen[1] is not None
    assert ledger.count("helpdesk.add_internal_note") == 1  # completed calls are replayed from the journal


def test_runs_log_dead_letters_and_approvals_read_and_act_on_the_shared_store(tmp_path, postgres_url, monkeypatch):
    from agentpack_openexperts.runtime import ExpertRuntime

    pack = make_package(tmp_path / "scale-expert")
    broken = {"record": lambda key, seq: 1 / 0, "release": lambda item: {}}
    options = {"driver": "scripted", "driver_options": {"script": SCRIPT}, "workdir": tmp_path / "w"}
    rt = ExpertRuntime(pack, tools={"ledger": broken}, store=postgres_url, **options)
    try:
        failed = rt.run_process("handle", {"key": "k1", "seq": "1"})
    finally:
        rt.stop()
    assert failed.status == "dead_lettered"

    monkeypatch.setenv("AGENTPACK_OPENEXPERTS_STORE", postgres_url)  # as a deployment sets it
    (run,) = run_cli(["experts", "runs", pack, "--json"]).json()["runs"]
    assert run["run_id"] == failed.run_id and run["status"] == "dead_lettered" and run["inputs"]["key"] == "k1"
    log = run_cli(["experts", "log", pack, failed.run_id, "--json"]).json()
    assert [s["reason"] for s in log["segments"]] == ["start", "retry"]
    assert [c["status"] for c in log["calls"]] == ["failed", "failed"]
    (letter,) = run_cli(["experts", "dead-letters", "list", pack, "--json"]).json()["dead_letters"]
    replayed = run_cli(["experts", "dead-letters", "replay", pack, letter["id"], "--json"])
    assert replayed.exit_code == 0, replayed.stderr
    assert replayed.json()["queued"] is True

    done: list[str] = []
    working = {"record": lambda key, seq: done.append(key) or {}, "release": lambda item: {}}
    worker = ExpertRuntime(pack, tools={"ledger": working}, store=postgres_url, workers=1, **options)
    with worker.started(cron=False):
        assert worker.wait_idle(60)
    assert done == ["k1"]
    statuses = {r["run_id"]: r["status"] for r in run_cli(["experts", "runs", pack, "--json"]).json()["runs"]}
    assert statuses == {failed.run_id: "dead_lettered", replayed.json()["run_id"]: "succeeded"}
    assert run_cli(["experts", "dead-letters", "list", pack, "--json"]).json()["dead_letters"] == []

    assert run_cli(["experts", "approvals", "list", pack, "--json"]).json()["approvals"] == []
    unknown = run_cli(["experts", "approvals", "approve", pack, "approval-none"])
    assert unknown.exit_code == 2 and "no pending approval 'approval-none'" in unknown.stderr


def test_approvals_list_and_approve_a_waiting_request_in_either_store(tmp_path, store):
    from agentpack_openexperts.runtime import ExpertRuntime

    pack = make_package(tmp_path / "scale-expert")
    released: list[str] = []
    tools = {"ledger": {"record": lambda key, seq: {}, "release": lambda item: released.append(item) or {}}}
    options = {"driver": "scripted", "driver_options": {"script": SCRIPT}, "workdir": tmp_path / "w"}
    where = ["--store", store] if store else ["--workdir", str(tmp_path / "w")]
    rt = ExpertRuntime(pack, tools=tools, store=store, broker="http", workers=1, **options)
    with rt.started(cron=False):
        rt.fire("gated", {"item": "box-1"})
        wait_for(rt.desk.pending, 60, "the approval request")
        (request,) = rt.desk.pending()
        listed = run_cli(["experts", "approvals", "list", pack, *where, "--json"])
        assert listed.exit_code == 0, listed.stderr
        (shown,) = listed.json()["approvals"]
        assert (shown["id"], shown["run_id"], shown["operation"]) == (request.id, request.run_id, "ledger.release")
        assert shown["arguments"] == {"item": "box-1"}
        assert request.id in run_cli(["experts", "approvals", "list", pack, *where]).stdout
        if store:  # any machine decides through the database
            decided = run_cli(["experts", "approvals", "approve", pack, request.id, *where, "--by", "alice", "--json"])
            assert decided.exit_code == 0 and decided.json()["approved"] is True, decided.stderr
        else:  # the serving process decides (POST /approvals/<id>)
            assert rt.desk.decide(request.id, True, by="alice")
        assert rt.wait_idle(60)
    assert released == ["box-1"]
    assert run_cli(["experts", "approvals", "list", pack, *where, "--json"]).json()["approvals"] == []


def test_without_a_store_approvals_are_decided_by_the_serving_process(tmp_path):
    result = run_cli(["experts", "approvals", "approve", make_package(tmp_path / "p"), "approval-1"])
    assert result.exit_code == 2 and "POST {its URL}/approvals/approval-1" in result.stderr


# -- many workers --------------------------------------------------------------------------------------
@pytest.mark.slow
def test_three_workers_keep_order_per_key_and_a_killed_worker_repeats_nothing(deployment):
    dep = deployment()
    marker = dep.tmp / "hanging"
    dep.env.update(HANG_SEQ="500", HANG_MARKER=str(marker))
    base = dep.intake()
    for _ in range(3):
        dep.worker()
    events, keys, senders = 2000, 50, 5
    refused: list[dict] = []

    def send(part: int) -> None:  # each sender owns keys part, part + senders, ...: order per key is seq order
        client = Client(base)
        for seq in range(part, events, senders):
            status, answer = client.post("/hooks/event", {"key": f"k{seq % keys}", "seq": seq})
            if status != 202 or not answer["accepted"]:
                refused.append(answer)
        client.close()

    threads = [threading.Thread(target=send, args=(part,)) for part in range(senders)]
    for thread in threads:
        thread.start()
    wait_for(marker.exists, 120, "event 500", dep)
    os.killpg(int(marker.read_text()), signal.SIGKILL)  # mid-call: event 500 is done, its journal entry 'started'
    for thread in threads:
        thread.join()
    assert refused == []
    wait_for(lambda: len(dep.lines()) >= events, 180, "every event to be recorded", dep)

    lines = dep.lines()
    assert Counter((line["key"], line["seq"]) for line in lines).most_common(1)[0][1] == 1  # no effect repeated
    assert len(lines) == events and {line["seq"] for line in lines} == set(range(events))
    per_key: dict[str, list[int]] = {}
    for line in lines:
        per_key.setdefault(line["key"], []).append(line["seq"])
    assert all(seqs == sorted(seqs) for seqs in per_key.values())  # arrival order within each key
    assert len({line["pid"] for line in lines}) == 3

    wait_for(lambda: all(r["status"] == "succeeded" for r in runs_of(dep)), 60, "every run to finish", dep)
    runs = runs_of(dep)
    assert len(runs) == events
    (hung,) = [r["run_id"] for r in runs if str(r["inputs"]["seq"]) == "500"]
    log = log_of(dep, hung)  # resumed on another worker, the call in doubt issued again with its key
    assert [s["reason"] for s in log["segments"]] == ["start", "resumed after interruption"]
    first, again = log["calls"]
    assert (first["status"], again["status"], again["result"]) == ("superseded", "executed", {"recorded": False})
    assert first["key"] == again["key"] and first["segment"] == 1 and again["segment"] == 2


def query(dep: Deployment, sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(dep.url) as conn:
        return conn.execute(sql).fetchall()


def log_of(dep: Deployment, run_id: str) -> dict:
    done = subprocess.run(
        [AGENTPACK, "experts", "log", str(dep.pack), run_id, "--store", dep.url, "--json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# -- schedules ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_a_cron_trigger_fires_once_per_tick_with_three_processes_running(deployment):
    dep = deployment(cron=True)
    dep.intake(count=3)
    time.sleep(3.5)
    dep.stop()
    ticks = Counter(json.dumps(r["payload"]["scheduled_for"]) for r in runs_of(dep) if r["process"] == "tick")
    assert len(ticks) >= 2 and set(ticks.values()) == {1}, ticks


# -- approvals ------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_an_approval_given_through_one_node_resumes_the_run_on_another(deployment):
    dep = deployment()
    client = Client(dep.intake())
    first = dep.worker()
    status, answer = client.post("/hooks/gated", {"item": "box-7"})
    assert status == 202
    wait_for(lambda: client.get("/approvals")["pending"], 60, "the approval request", dep)
    (request,) = client.get("/approvals")["pending"]
    assert request["operation"] == "ledger.release" and request["run_id"] == answer["run_id"]

    os.killpg(first.pid, signal.SIGKILL)  # the worker waiting for the decision dies
    dep.worker()
    resumed = "SELECT 1 FROM openexperts_segments WHERE reason = 'resumed after interruption'"
    wait_for(lambda: query(dep, resumed), 60, "another worker to take the run over", dep)
    assert [r["id"] for r in client.get("/approvals")["pending"]] == [request["id"]]  # asked once, not twice

    listed = run_cli(["experts", "approvals", "list", dep.pack, "--store", dep.url, "--json"])
    assert [a["id"] for a in listed.json()["approvals"]] == [request["id"]], listed.stderr
    status, decided = client.post(f"/approvals/{request['id']}", {"approve": True})
    assert status == 200 and decided["approved"] is True

    wait_for(lambda: runs_of(dep)[0]["status"] == "succeeded", 60, "the run to finish", dep)
    assert [line["item"] for line in dep.lines()] == ["box-7"]  # released once
    assert client.get("/approvals")["pending"] == []
    client.close()


# -- faults ---------------------------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("how", ["fast", "immediate"], ids=["stopped", "crashed"])
def test_losing_the_database_pauses_work_and_loses_no_accepted_event(deployment, postgres_server, how):
    dep = deployment()
    client = Client(dep.intake())
    dep.worker()
    accepted = []

    def send(seq: int) -> int:
        status, _ = client.post("/hooks/event", {"key": f"k{seq % 5}", "seq": seq})
        if status == 202:
            accepted.append(seq)
        return status

    for seq in range(60):
        assert send(seq) == 202
    wait_for(lambda: len(dep.lines()) >= 10, 60, "the worker to start", dep)
    postgres_server.stop_server(how)  # mid-run: the worker's runs pause, the intake refuses new events
    try:
        assert send(60) == 503
        time.sleep(1.0)
    finally:  # the server is shared by the module's tests: never leave it stopped
        postgres_server.start_server()
    for seq in range(61, 90):
        wait_for(lambda seq=seq: send(seq) == 202, 60, "the intake to accept again", dep)

    client.close()
    wait_for(lambda: len(dep.lines()) >= len(accepted), 120, "every accepted event to be recorded", dep)
    lines = dep.lines()
    assert sorted(line["seq"] for line in lines) == accepted  # each accepted event once, the refused one never
    for key in {line["key"] for line in lines}:
        seqs = [line["seq"] for line in lines if line["key"] == key]
        assert seqs == sorted(seqs)
    done = ["succeeded"] * len(accepted)
    wait_for(lambda: [r["status"] for r in runs_of(dep)] == done, 60, "every run to finish", dep)


@pytest.mark.parametrize(
    "how, message",
    [
        ("password", "password authentication failed"),
        ("port", "cannot connect to PostgreSQL at postgresql://agentpack@127.0.0.1:"),
        ("newer", "the database schema is version 99, newer than"),
        ("other package", "holds the runtime of package 'someone-else'"),
    ],
)
def test_bad_configuration_is_a_clear_error_at_start(tmp_path, postgres_server, postgres_url, how, message):
    from agentpack_openexperts.runtime.postgres.server import PASSWORD

    pack = make_package(tmp_path / "scale-expert")
    url = postgres_url
    if how == "password":
        url = url.replace(PASSWORD, "wrong")
    elif how == "port":
        with __import__("socket").socket() as sock:
            sock.bind(("127.0.0.1", 0))
            url = url.replace(f":{postgres_server.port}/", f":{sock.getsockname()[1]}/")
    else:
        assert run_cli(["experts", "serve", pack, "--store", url, "--duration", "0"]).exit_code == 0
        change = (
            "value = '99' WHERE key = 'schema_version'"
            if how == "newer"
            else "value = 'someone-else' WHERE key = 'package'"
        )
        query_url(url, f"UPDATE openexperts_meta SET {change}")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(SCRIPT))
    result = run_cli(["experts", "worker", pack, "--store", url, "--duration", "0", "--script", tmp_path / "s.yaml"])
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and PASSWORD not in result.stderr


def query_url(url: str, sql: str) -> list[tuple]:
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(sql)
        return cursor.fetchall() if cursor.description else []


def test_commands_without_a_store_never_import_psycopg_or_procrastinate(tmp_path):
    pack = make_package(tmp_path / "scale-expert")
    (tmp_path / "tools.py").write_text(TOOLS)
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
    (tmp_path / "bindings.yaml").write_text("tools:\n  ledger: {python: tools.py:Ledger}\n")
    runtime = ["--bindings", str(tmp_path / "bindings.yaml"), "--script", str(tmp_path / "script.yaml")]
    commands = [
        ["--help"],
        ["experts", "--help"],
        ["experts", "serve", "--help"],
        ["experts", "worker", "--help"],
        ["experts", "approvals", "list", "--help"],
        ["validate", str(pack)],
        ["experts", "run", str(pack), "--process", "handle", "--input", "key=k", "--input", "seq=1", *runtime],
        ["experts", "serve", str(pack), "--duration", "0", *runtime],
        ["experts", "runs", str(pack), "--json"],
        ["experts", "dead-letters", "list", str(pack)],
        ["experts", "approvals", "list", str(pack)],
    ]
    code = textwrap.dedent(f"""\
        import sys
        from agentpack.cli.app import main
        codes = [main(argv) for argv in {commands!r}]
        loaded = sorted(m for m in sys.modules if m.partition(".")[0] in ("psycopg", "psycopg_pool", "procrastinate"))
        print(codes, loaded, file=sys.stderr)
        """)
    env = {**os.environ, "LEDGER": str(tmp_path / "ledger.jsonl")}
    env.pop("AGENTPACK_OPENEXPERTS_STORE", None)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    last = done.stderr.strip().splitlines()[-1]
    assert last == f"{[0] * len(commands)} []", done.stderr


@pytest.mark.parametrize(
    "argv, message",
    [
        (["serve", "--port", "70000"], "'--port': 70000 is not in the range 0<=x<=65535"),
        (["serve", "--duration", "-1"], "'--duration': -1.0 is not in the range x>=0"),
        (["serve", "--workers", "0"], "--workers 0 (an intake only) needs --store"),
        (["serve", "--store", "mysql://db/oe"], "the store must be a postgresql:// URL, not 'mysql://db/oe'"),
        (["worker", "--store", "postgresql://%zz@127.0.0.1/oe"], "not a usable PostgreSQL URL"),
        (["worker", "--store", "postgresql://oe@127.0.0.1:1/oe", "--lease", "0"], "'--lease': 0.0 is not in"),
        (["runs", "--store", "postgres://oe@127.0.0.1:1/oe?sslmode=bogus"], 'invalid sslmode value: "bogus"'),
        (["approvals", "list", "--store", "http://db"], "the store must be a postgresql:// URL"),
    ],
)
def test_user_mistakes_on_the_deployment_commands_are_one_clear_error(tmp_path, argv, message):
    pack = str(make_package(tmp_path / "scale-expert"))
    command = [*argv[:2], pack, *argv[2:]] if argv[0] == "approvals" else [argv[0], pack, *argv[1:]]
    for json_output in (False, True):
        result = run_cli(["experts", *command, *(["--json"] if json_output else [])])
        assert result.exit_code == 2 and message in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        if json_output and "Usage:" not in result.stderr:  # a usage error is click's, in every command
            envelope = json.loads(result.stdout)
            assert envelope["ok"] is False and message in envelope["error"]["message"]


def test_a_worker_needs_a_store(tmp_path):
    result = run_cli(["experts", "worker", make_package(tmp_path / "p")], env={"AGENTPACK_OPENEXPERTS_STORE": ""})
    assert result.exit_code == 2 and "a worker needs --store" in result.stderr
