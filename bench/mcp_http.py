"""Benchmark: ``agentpack mcp serve`` over Streamable HTTP, latency at one client and throughput per worker count.

A copy of the ECP conformance pack (examples/ecp/conformance-pack) is served by a real
``agentpack mcp serve --transport streamable-http --workers N`` process. A client speaking
JSON-RPC over one keep-alive HTTP/1.1 connection (the MCP client's shape: initialize, then
calls) times ``ping`` and ``expert_query`` one after another (latency: wall clock, it is what a
client waits; the server's CPU per request is read from /proc for the server's processes), then
C client processes call ``expert_query`` for a fixed number of calls each (throughput: calls per
wall second). Targets (issue 28): p50 < 10 ms and p99 < 50 ms for expert_query at one client;
throughput grows with the workers. Before the fix (a listening socket of protocol 0, so no
TCP_NODELAY) every request waited ~44 ms: p50 ~44 ms, one client capped at ~22 calls/s.
Prints figures and met/not met; asserts nothing. Wall-clock figures depend on the machine's
load: run it on a quiet machine for the tables in docs/mcp.md.

Usage: python bench/mcp_http.py [--quick] [--workers 1,2] [--clients 8] [--calls 300]
"""

from __future__ import annotations

import argparse
import http.client
import itertools
import json
import multiprocessing
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PACK = ROOT / "examples" / "ecp" / "conformance-pack"
QUESTION = "How are tide tables read?"
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


class McpHttp:
    """A minimal MCP client over one keep-alive connection (no SDK: its own cost would blur the server's)."""

    def __init__(self, url: str) -> None:
        rest = url.split("://", 1)[1]
        address, self.path = rest.split("/", 1)
        host, port = address.rsplit(":", 1)
        self.conn = http.client.HTTPConnection(host, int(port), timeout=60)
        self.path = "/" + self.path
        self.session: str | None = None
        self.ids = 0
        init = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        self.request("initialize", init)
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def post(self, message: dict[str, Any]) -> bytes:
        headers = dict(HEADERS)
        if self.session:
            headers["mcp-session-id"] = self.session
        self.conn.request("POST", self.path, body=json.dumps(message), headers=headers)
        response = self.conn.getresponse()
        body = response.read()
        self.session = response.getheader("mcp-session-id") or self.session
        if response.status >= 300:
            raise RuntimeError(f"HTTP {response.status}: {body[:200]!r}")
        return body

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.ids += 1
        body = self.post({"jsonrpc": "2.0", "id": self.ids, "method": method, "params": params or {}})
        for line in body.decode().splitlines():  # one SSE event, or plain JSON
            text = line[5:].strip() if line.startswith("data:") else line.strip()
            if text.startswith("{"):
                answer: dict[str, Any] = json.loads(text)
                if answer.get("id") == self.ids:
                    if "error" in answer or answer.get("result", {}).get("isError"):
                        raise RuntimeError(f"{method}: {text[:300]}")
                    return answer
        raise RuntimeError(f"{method}: no answer in {body[:200]!r}")

    def query(self) -> None:
        self.request("tools/call", {"name": "expert_query", "arguments": {"question": QUESTION}})


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` and its children (the workers), from /proc."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    pids = [pid, *map(int, Path(f"/proc/{pid}/task/{pid}/children").read_text().split())]
    for one in pids:
        fields = Path(f"/proc/{one}/stat").read_text().rsplit(")", 1)[1].split()
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def start(pack: Path, workers: int) -> tuple[subprocess.Popen[str], str]:
    agentpack = str(Path(sys.executable).with_name("agentpack"))
    argv = [agentpack, "mcp", "serve", "--transport", "streamable-http", "--port", "0", "--pack", str(pack)]
    proc = subprocess.Popen([*argv, "--workers", str(workers), "--no-record"], stderr=subprocess.PIPE, text=True)
    said = []
    for _ in range(50):  # notes (a skill left out, say) may come before the line that names the URL
        line = proc.stderr.readline() if proc.stderr else ""
        said.append(line)
        if "serving on" in line or not line:
            break
    if "serving on" not in said[-1]:
        proc.kill()
        raise SystemExit(f"the server did not start: {''.join(said)}")
    return proc, said[-1].split("serving on ", 1)[1].strip()


def latency(url: str, method: str, calls: int) -> list[float]:
    client = McpHttp(url)
    call = client.query if method == "expert_query" else (lambda: client.request("ping"))
    for _ in range(min(20, calls)):  # warm: imports, caches
        call()
    times = []
    for _ in range(calls):
        began = time.perf_counter()
        call()
        times.append((time.perf_counter() - began) * 1000)
    return times


def _client(url: str, calls: int, ready: Any, go: Any) -> None:
    client = McpHttp(url)
    client.query()
    ready.release()
    go.wait()
    for _ in range(calls):
        client.query()


def throughput(url: str, clients: int, calls: int) -> float:
    ctx = multiprocessing.get_context("fork")
    ready, go = ctx.Semaphore(0), ctx.Event()
    procs = [ctx.Process(target=_client, args=(url, calls, ready, go)) for _ in range(clients)]
    for proc in procs:
        proc.start()
    for _ in procs:
        ready.acquire()
    began = time.perf_counter()
    go.set()
    for proc in procs:
        proc.join()
        if proc.exitcode:
            raise SystemExit(f"a client failed (exit {proc.exitcode})")
    return clients * calls / (time.perf_counter() - began)


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", default="1,2", help="worker counts to compare (default 1,2)")
    parser.add_argument("--clients", type=int, default=8, help="client processes for throughput (default 8)")
    parser.add_argument("--calls", type=int, default=300, help="sequential calls per latency figure (default 300)")
    parser.add_argument("--quick", action="store_true", help="a short run (CI: the script still works)")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    calls, clients = (30, 2) if args.quick else (args.calls, args.clients)
    per_client = max(10, calls // 2)
    with tempfile.TemporaryDirectory() as tmp:
        pack = Path(tmp) / PACK.name  # a skill's folder is named after it: the server publishes its SKILL.md
        shutil.copytree(PACK, pack)
        rows = []
        for workers in counts:
            proc, url = start(pack, workers)
            try:
                ping = latency(url, "ping", calls)
                cpu_before = server_cpu(proc.pid)
                query = latency(url, "expert_query", calls)
                cpu_ms = (server_cpu(proc.pid) - cpu_before) * 1000 / calls
                rate = throughput(url, clients, per_client)
            finally:
                proc.terminate()
                proc.wait(timeout=30)
                if proc.stderr:
                    proc.stderr.close()
            rows.append((workers, ping, query, cpu_ms, rate))
    print(
        f"agentpack mcp serve over HTTP, {calls} sequential calls; throughput: {clients} clients x {per_client} calls"
    )
    print("workers  ping p50/p99 ms  expert_query p50/p99 ms  server CPU ms/query  throughput calls/s")
    for workers, ping, query, cpu_ms, rate in rows:
        print(
            f"{workers:>7}  {pct(ping, 0.5):6.2f} / {pct(ping, 0.99):6.2f}  "
            f"{pct(query, 0.5):10.2f} / {pct(query, 0.99):7.2f}  {cpu_ms:19.2f}  {rate:18.1f}"
        )
    one = rows[0]
    p50, p99 = pct(one[2], 0.5), pct(one[2], 0.99)
    print("targets (the reference is the code before issue 28: p50 ~44 ms, 22 calls/s at one client):")
    print(f"  expert_query p50 {p50:.2f} ms < 10 ms: {'met' if p50 < 10 else 'NOT met'}")
    print(f"  expert_query p99 {p99:.2f} ms < 50 ms: {'met' if p99 < 50 else 'NOT met'}")
    if len(rows) > 1:
        grows = all(b[4] > a[4] for a, b in itertools.pairwise(rows))
        ratios = ", ".join(f"{r[0]} workers {r[4] / rows[0][4]:.2f}x" for r in rows[1:])
        print(f"  throughput grows with workers ({ratios}): {'met' if grows else 'NOT met'}")
    print(
        f"(median server CPU per expert_query {statistics.median(r[3] for r in rows):.2f} ms; "
        f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})"
    )


if __name__ == "__main__":
    main()
