"""openexperts on many workers: throughput and per-event overhead of the PostgreSQL queue and store.

Figures only, never assertions. Needs PostgreSQL server binaries (initdb, pg_ctl) and
``agentpack-openexperts[postgres]``; a throwaway server is started in a temporary folder
(durable settings by default, as in production: fsync and synchronous commits on).

1. The queue alone (procrastinate): submitting a job, and taking it through a worker
   thread to done with a handler that does nothing, per event.
2. One event end to end on one thread with no tool wait: the PostgreSQL runtime against
   the in-process default (SQLite): what the shared queue and store add per event.
3. Events whose tool call waits 20 ms (I/O-bound), serial_per_key over many keys: the
   in-process default (4 threads), then 1, 2 and 4 worker processes (4 threads each) on
   PostgreSQL, ``--repeat`` times each, interleaved (the medians count). Throughput is measured
   from the database (first segment start to last run update), so worker start-up does not
   count; the events are committed at once.

    .venv/bin/python bench/openexperts_scale.py [--events 2000] [--keys 200] [--wait-ms 20] [--repeat 3] [--fast-db]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import yaml

AGENTPACK = str(Path(sys.executable).with_name("agentpack"))
TOOLS = textwrap.dedent("""\
    import os, time

    class Waiter:
        def wait(self, key, seq):
            wait = float(os.environ.get("BENCH_WAIT_MS", "20")) / 1000
            if wait:
                time.sleep(wait)  # the I/O a real tool waits on
            return {"ok": True}
    """)
SCRIPT = {
    "processes": {
        "handle": {
            "steps": [[{"call": "io.wait", "args": {"key": "${inputs.key}", "seq": "${inputs.seq}"}}]],
            "finish": {"narrative": "done"},
        }
    }
}


def generate(root: Path) -> Path:
    """A package with one webhook trigger (serial_per_key on ``key``) whose process makes one tool call."""
    for folder in ("persona", "functions", "processes", "tools"):
        (root / folder).mkdir(parents=True)
    (root / "README.md").write_text("# scale bench\n")
    (root / "orchestrator.md").write_text("# Orchestrator\n\nHandle events.\n")
    (root / "persona" / "identity.md").write_text("# Identity\n")
    (root / "functions" / "wait.md").write_text("---\nname: wait\ndescription: wait\n---\n\nWait.\n")
    front = {
        "name": "handle",
        "description": "handle an event",
        "trigger": "event",
        "inputs": [{"name": "key", "type": "string"}, {"name": "seq", "type": "string"}],
        "tools": ["io"],
    }
    (root / "processes" / "handle.md").write_text("---\n" + yaml.safe_dump(front) + "---\n\n- [ ] wait\n")
    operation = {"name": "wait", "description": "wait on I/O", "input": {"type": "object"}}
    (root / "tools" / "io.yaml").write_text(
        yaml.safe_dump({"name": "io", "description": "I/O", "operations": [operation]})
    )
    manifest = {
        "spec": "1.0",
        "name": "scale-bench",
        "version": "1.0.0",
        "description": "one tool call per event",
        "requires": {"tools": ["io"]},
        "concurrency": {"default": "serial_per_key"},
        "policy": {"approval": {"default": "auto"}},
        "execution": {"timeout": "5m", "idempotent": False, "retry": {"max_attempts": 1}},
        "triggers": [
            {
                "name": "event",
                "type": "webhook",
                "process": "handle",
                "payload_mapping": {"key": "key", "seq": "seq"},
                "concurrency_key": "key",
            }
        ],
        "components": {
            "orchestrator": "orchestrator.md",
            "persona": ["persona/identity.md"],
            "functions": ["functions/wait.md"],
            "processes": ["processes/handle.md"],
            "tools": ["tools/io.yaml"],
        },
    }
    (root / "expert.yaml").write_text(yaml.safe_dump(manifest, sort_keys=False))
    return root


class Bench:
    def __init__(self, tmp: Path, server: Any, args: argparse.Namespace) -> None:
        self.tmp, self.server, self.args = tmp, server, args
        self.pack = generate(tmp / "scale-bench")
        (tmp / "bench_tools.py").write_text(TOOLS)
        (tmp / "script.yaml").write_text(yaml.safe_dump(SCRIPT))
        (tmp / "bindings.yaml").write_text("tools:\n  io: {python: bench_tools.py:Waiter}\n")
        self.count = 0

    def runtime(self, store: str | None, workers: int, wait_ms: float) -> Any:
        from agentpack_openexperts.runtime import BindContext, ExpertRuntime
        from agentpack_openexperts.runtime.bindings import load_bindings_file

        os.environ["BENCH_WAIT_MS"] = str(wait_ms)
        self.count += 1
        rt = ExpertRuntime(
            self.pack,
            driver="scripted",
            driver_options={"script": SCRIPT},
            workdir=self.tmp / f"w{self.count}",
            store=store,
            workers=workers,
        )
        bindings = self.tmp / "bindings.yaml"  # the same binding the worker processes load
        rt.tools = load_bindings_file(bindings, BindContext(bindings.parent, rt))
        return rt

    def server_cpu(self) -> float:
        """CPU seconds used so far by the PostgreSQL server's processes that are alive (Linux)."""
        parent = self.server._postmaster_pid()
        total = 0.0
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                    if int(fields[1]) == parent or int(entry.name) == parent:
                        total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return total

    def database(self) -> str:
        self.count += 1
        return self.server.create_database(f"bench_{self.count}")

    def fire_all(self, rt: Any, events: int, *, at_once: bool) -> float:
        """Fire ``events`` events; seconds it took (one transaction when ``at_once``)."""
        keys = self.args.keys
        start = time.perf_counter()
        with rt.store.transaction() if at_once else contextlib.nullcontext():
            for seq in range(events):
                rt.fire("event", {"key": f"k{seq % keys}", "seq": seq})
        return time.perf_counter() - start

    def flush(self) -> None:
        """How long one flushed commit takes on this machine (its disk's fsync): the floor of a durable write."""
        import psycopg

        with psycopg.connect(self.database(), autocommit=True) as conn:
            conn.execute("CREATE TABLE probe (n integer)")
            times = []
            for n in range(50):
                start = time.perf_counter()
                conn.execute("INSERT INTO probe VALUES (%s)", (n,))
                times.append(time.perf_counter() - start)
        print(f"one flushed commit on this machine: {statistics.median(times) * 1000:.2f} ms (median of 50)")

    # -- 1. the queue alone ---------------------------------------------------------------------------
    def queue_only(self) -> None:
        from agentpack_openexperts.runtime.postgres.queue import PostgresQueue
        from agentpack_openexperts.runtime.postgres.store import PostgresStore
        from agentpack_openexperts.runtime.queue import Job

        events = self.args.events
        store = PostgresStore(self.database(), "queue-bench", pool_size=4)
        for n in range(events):
            store.create_run(f"r{n}", "handle", "event", f"r{n}", None, {}, None, time.time())
        queue = PostgresQueue(store, workers=1)
        start = time.perf_counter()
        for n in range(events):
            queue.submit(Job(f"r{n}"), f"k{n % self.args.keys}")
        submitted = time.perf_counter() - start
        done: list[float] = []
        queue.start(lambda job: done.append(time.perf_counter()))
        queue.join(600)
        queue.stop()
        store.close()
        through = (done[-1] - done[0]) / max(len(done) - 1, 1)
        print(
            f"queue alone (procrastinate on PostgreSQL), {events} jobs: submit {submitted / events * 1000:.2f} ms/job "
            f"(a flushed transaction each); fetch + claim + finish on one worker thread {through * 1000:.2f} ms/job; "
            f"queue overhead per event {(submitted / events + through) * 1000:.2f} ms"
        )

    # -- 2. one event end to end, one thread, no tool wait ----------------------------------------------------
    def per_event(self) -> None:
        events = min(self.args.events, 1000)
        figures = {}
        for name, store in (("in-process (SQLite)", None), ("PostgreSQL", self.database())):
            rt = self.runtime(store, 1, 0)
            accept = self.fire_all(rt, events, at_once=False) if store else None
            if not store:
                start = time.perf_counter()
                with rt.started(cron=False):
                    self.fire_all(rt, events, at_once=False)
                    rt.wait_idle(600)
                figures[name] = (time.perf_counter() - start) / events
            else:
                start = time.perf_counter()
                with rt.started(cron=False):
                    rt.wait_idle(600)
                figures[name] = _span(store, events) / events
                print(
                    f"accepting an event on PostgreSQL (run + job in one transaction): {accept / events * 1000:.2f} ms"
                )
            rt.stop()
        sqlite, pg = figures["in-process (SQLite)"], figures["PostgreSQL"]
        print(
            f"one event end to end on one thread, no tool wait ({events} events): in-process {sqlite * 1000:.2f} ms, "
            f"PostgreSQL worker {pg * 1000:.2f} ms (+{(pg - sqlite) * 1000:.2f} ms for the shared queue and store)"
        )

    # -- 3. throughput with I/O-bound tool calls -------------------------------------------------------------------
    def in_process(self) -> float:
        events, wait = self.args.events, self.args.wait_ms
        rt = self.runtime(None, self.args.threads, wait)
        with rt.started(cron=False):
            start = time.perf_counter()
            self.fire_all(rt, events, at_once=False)
            rt.wait_idle(600)
            elapsed = time.perf_counter() - start
        rate = events / elapsed
        print(f"in-process default ({self.args.threads} threads), {wait:g} ms tool calls: {rate:,.0f} events/s")
        return rate

    def workers(self, count: int) -> float:
        from agentpack.io.proc import kill_group, spawn

        events, wait = self.args.events, self.args.wait_ms
        url = self.database()
        intake = self.runtime(url, 0, wait)
        env = {**os.environ, "BENCH_WAIT_MS": str(wait)}
        argv = [AGENTPACK, "experts", "worker", str(self.pack), "--store", url, "--workers", str(self.args.threads)]
        argv += ["--bindings", str(self.tmp / "bindings.yaml"), "--script", str(self.tmp / "script.yaml")]
        argv += ["--workdir", str(self.tmp / f"w{self.count}")]
        logs = [self.tmp / f"worker-{self.count}-{n}.log" for n in range(count)]
        procs = []
        for log in logs:
            with log.open("w") as handle:
                procs.append(spawn(argv, env=env, stdout=subprocess.DEVNULL, stderr=handle))
        try:
            deadline = time.monotonic() + 120
            while not all("runs at a time" in log.read_text() for log in logs):
                if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
                    raise SystemExit("a worker did not start:\n" + "\n".join(log.read_text() for log in logs))
                time.sleep(0.1)
            cpu, db = sum(_cpu(p.pid) for p in procs), self.server_cpu()
            self.fire_all(intake, events, at_once=True)
            intake.wait_idle(600)
            cpu, db = sum(_cpu(p.pid) for p in procs) - cpu, self.server_cpu() - db
        finally:
            for proc in procs:
                kill_group(proc, grace=10)
            intake.stop()
        rate = events / _span(url, events)
        print(
            f"PostgreSQL, {count} worker process{'es' if count > 1 else ''} x {self.args.threads} threads, "
            f"{wait:g} ms tool calls: {rate:,.0f} events/s (CPU per event: workers {cpu / events * 1000:.2f} ms, "
            f"PostgreSQL {db / events * 1000:.2f} ms)"
        )
        return rate


def _cpu(pid: int) -> float:
    """CPU seconds (user + system) process ``pid`` has used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _span(url: str, events: int) -> float:
    """Seconds from the first run's start to the last run's end, read from the database."""
    import psycopg

    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT (SELECT min(at) FROM openexperts_segments), max(updated), "
            "count(*) FILTER (WHERE status = 'succeeded') FROM openexperts_runs"
        ).fetchone()
    assert row is not None
    first, last, done = row
    if done != events:
        raise SystemExit(f"only {done} of {events} runs succeeded")
    return float(last - first)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=2000)
    parser.add_argument("--keys", type=int, default=200)
    parser.add_argument("--threads", type=int, default=4, help="worker threads per process (and in-process)")
    parser.add_argument("--wait-ms", type=float, default=20.0, help="how long each tool call waits")
    parser.add_argument("--fast-db", action="store_true", help="fsync and synchronous commits off")
    parser.add_argument("--repeat", type=int, default=3, help="runs of each worker count (the median counts)")
    parser.add_argument("--quick", action="store_true", help="100 events, one run each, fsync off (CI)")
    args = parser.parse_args()
    if args.quick:
        args.events, args.keys, args.repeat, args.fast_db = 100, 20, 1, True
    try:
        from agentpack_openexperts.runtime.postgres.server import TemporaryServer, find_bindir
    except ImportError as exc:
        raise SystemExit(f"needs agentpack-openexperts[postgres]: {exc}") from None
    if find_bindir() is None:
        raise SystemExit("needs PostgreSQL server binaries (initdb, pg_ctl): apt-get install postgresql")
    with tempfile.TemporaryDirectory() as tmp, TemporaryServer(durable=not args.fast_db) as server:
        load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
        print(f"PostgreSQL {'with fsync off' if args.fast_db else 'durable (fsync on)'}; {os.cpu_count()} CPUs")
        print(f"load average before: {load} (other processes share the CPUs: figures scale with what is left)")
        bench = Bench(Path(tmp), server, args)
        bench.flush()
        bench.queue_only()
        bench.per_event()
        bench.in_process()
        rates: dict[int, list[float]] = {1: [], 2: [], 4: []}
        for _ in range(args.repeat):  # interleaved, so a change of the machine's load touches every count alike
            for count, seen in rates.items():
                seen.append(bench.workers(count))
        one, two, four = (statistics.median(seen) for seen in rates.values())
        print(
            f"medians of {args.repeat}: 1 / 2 / 4 workers {one:,.0f} / {two:,.0f} / {four:,.0f} events/s; "
            f"2 workers / 1 worker: {two / one:.2f}x; 4 workers / 1 worker: {four / one:.2f}x"
        )
        print(f"load average after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
