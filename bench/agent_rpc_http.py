"""Benchmark the Streamable HTTP transport: per-step latency, and how soon a run gives up on a stalled stream.

Runs ``run_manifest`` in-process against the SDK's HTTP server (answers as
JSON, then as SSE) with a 1 x ``--steps`` manifest, and against a server that
answers every step with an SSE stream of comments that never carries the
answer, under a per-call timeout of ``--timeout`` seconds: the run must end
soon after that timeout although bytes keep arriving. Prints the median of
``--repeat`` runs; asserts nothing.

    .venv/bin/python bench/agent_rpc_http.py [--steps 200] [--repeat 5] [--timeout 0.5]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

SDK_AGENT = """from agentpack.agents import Agent, Result
agent = Agent("http-echo")
@agent.step
def step(text):
    return Result(public_output="Echo: " + text)
agent.main()
"""


class Stalling(BaseHTTPRequestHandler):
    """Initializes normally; answers every step with an SSE stream of comments, one every 50 ms, for 10 s."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if message["method"] != "agent/step":
            result: Any = True
            if message["method"] == "agent/initialize":
                result = {"name": "stalling", "protocol_version": "1.0", "capabilities": {}}
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for _ in range(200):
            try:
                self.wfile.write(b": still thinking\n\n")
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.05)


def manifest(folder: Path, name: str, url: str, steps: int, timeout: float | None = None) -> Path:
    body: dict[str, Any] = {
        "manifest_version": "v1",
        "name": name,
        "target": url,
        "scenarios": [
            {
                "name": "s",
                "steps": [
                    {
                        "input": f"m{i}",
                        "graders": [{"type": "text_match", "condition": "equals", "value": f"Echo: m{i}"}],
                    }
                    for i in range(steps)
                ],
            }
        ],
    }
    if timeout is not None:
        body["timeout"] = timeout
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def sdk_server(folder: Path, *args: str) -> tuple[subprocess.Popen, str]:
    from agentpack.io.proc import spawn

    script = folder / "http_agent.py"
    script.write_text(SDK_AGENT)
    proc = spawn(
        [sys.executable, str(script), "--http", "--port", "0", *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    match = re.search(r"(http://\S+)", proc.stderr.readline())
    if not match:
        raise SystemExit("the SDK agent did not announce its URL")
    return proc, match.group(1)


def timed_runs(path: Path, repeat: int) -> tuple[float, dict[str, Any]]:
    from agentpack_agent_rpc.api import run_manifest

    walls, report = [], {}
    for _ in range(repeat):
        start = time.perf_counter()
        report = run_manifest(path)
        walls.append(time.perf_counter() - start)
    return statistics.median(walls), report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5, help="runs per figure (median; default 5)")
    parser.add_argument("--timeout", type=float, default=0.5, help="per-call timeout of the stalled run, seconds")
    parser.add_argument("--quick", action="store_true", help="5 steps, one run (CI: the script still works)")
    args = parser.parse_args()
    if args.quick:
        args.steps, args.repeat = 5, 1
    from agentpack.io.proc import kill_group

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for label, extra in (("JSON answers", ()), ("SSE answers", ("--sse",))):
            proc, url = sdk_server(folder, *extra)
            try:
                path = manifest(folder, label.split()[0].lower(), url, args.steps)
                wall, report = timed_runs(path, args.repeat)
            finally:
                kill_group(proc, grace=0.5)
            state = "ok" if report["ok"] else f"FAILED ({report['exit_reason']})"
            print(
                f"SDK HTTP agent, {label}: 1x{args.steps} in {wall:.3f} s, "
                f"mean {report['latency']['mean_ms']:.3f} ms/step, {state}"
            )
        server = ThreadingHTTPServer(("127.0.0.1", 0), Stalling)
        server.daemon_threads = True
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        try:
            url = f"http://127.0.0.1:{server.server_address[1]}/ecp"
            path = manifest(folder, "stalled", url, 2, timeout=args.timeout)
            wall, report = timed_runs(path, args.repeat)
        finally:
            server.shutdown()
            server.server_close()
        reasons = [s["exit_reason"] for s in report["scenarios"][0]["runs"][0]["steps"]]
        print(
            f"stalled SSE stream, timeout {args.timeout} s: the run ends after {wall:.3f} s "
            f"({wall - args.timeout:+.3f} s over the timeout); steps: {', '.join(reasons)}"
        )


if __name__ == "__main__":
    main()
