"""One HTTP server on 127.0.0.1 for the runtime: webhook triggers, channel messages and approvals.

Routes::

    POST /hooks/<trigger>        a webhook trigger fires with the JSON body   -> 202
    POST /channels/<channel>     a channel message (normalised) is routed     -> 202
    GET  /approvals              pending approval requests                    -> 200
    POST /approvals/<id>         {"approve": true|false}                      -> 200 / 404
    GET  /health                                                              -> 200

Each connection is served on its own daemon thread, so a keep-alive client holds up neither the other
clients nor the stop; handlers only enqueue.
"""

from __future__ import annotations

import json
import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger("agentpack.openexperts")
MAX_BODY = 1024 * 1024


class _Handler(BaseHTTPRequestHandler):
    server: RuntimeServer
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body are two writes: no 40 ms delayed-ACK stall on keep-alive

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http: " + format, *args)

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body, default=str).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> tuple[Any, str | None]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.rfile.read(min(length, MAX_BODY * 2))
            return None, f"body larger than {MAX_BODY} bytes"
        raw = self.rfile.read(length) if length else b""
        try:
            return (json.loads(raw) if raw else {}), None
        except ValueError as exc:
            return None, f"body is not JSON: {exc}"

    def do_GET(self) -> None:
        runtime = self.server.runtime
        if self.path == "/health":
            self._send(200, {"ok": True, "package": runtime.package.name})
        elif self.path == "/approvals":
            self._send(200, {"pending": [r.to_json() for r in runtime.desk.pending()]})
        else:
            self._send(404, {"error": f"no route {self.path}"})

    def do_POST(self) -> None:
        runtime = self.server.runtime
        parts = [p for p in self.path.split("?", 1)[0].split("/") if p]
        body, problem = self._body()
        if problem:
            self._send(413 if "larger" in problem else 400, {"error": problem})
            return
        if len(parts) == 2 and parts[0] == "hooks":
            status, answer = runtime.http_fire(parts[1], body)
        elif len(parts) == 2 and parts[0] == "channels":
            status, answer = runtime.http_channel(parts[1], body)
        elif len(parts) == 2 and parts[0] == "approvals":
            approve = body.get("approve") if isinstance(body, dict) else None
            if not isinstance(approve, bool):
                status, answer = 400, {"error": 'expected {"approve": true|false}'}
            elif runtime.desk.decide(parts[1], approve, by="http", note=str(body.get("note", ""))):
                status, answer = 200, {"id": parts[1], "approved": approve}
            else:
                status, answer = 404, {"error": f"no pending approval '{parts[1]}'"}
        else:
            status, answer = 404, {"error": f"no route {self.path}"}
        self._send(status, answer)


class RuntimeServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, runtime: Any, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.runtime = runtime
        self.thread = threading.Thread(
            target=self.serve_forever, kwargs={"poll_interval": 0.05}, name="openexperts-http", daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> None:
        self.thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
