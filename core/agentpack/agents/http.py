"""The SDK's Streamable HTTP server (stdlib ``http.server``), imported only when an agent serves HTTP.

Rules: one endpoint (``/ecp``); POST JSON-RPC with an ``Accept`` that allows
``application/json`` or ``text/event-stream`` (else 406) and a JSON body
(else 415); notifications get ``202 Accepted``; GET and DELETE get ``405``
with ``Allow: POST``; a browser ``Origin`` not on the allow-list gets ``403``.
Connections are HTTP/1.1 keep-alive; agent handlers run one at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

from agentpack.io.netutil import bind_socket

from .wire import PARSE_ERROR, dump_response, error_response, loads


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def _media_types(header: str) -> set[str]:
    return {part.split(";", 1)[0].strip().lower() for part in header.split(",") if part.strip()}


def make_server(
    handle: Callable[[Any], dict[str, Any] | None],
    host: str,
    port: int,
    path: str,
    *,
    allowed_origins: list[str] | None = None,
    sse: bool = False,
) -> ThreadingHTTPServer:
    """A server for ``http://host:port/path`` whose messages ``handle`` answers (``Agent.handle``).

    Port 0 picks a free one (``server.server_port``); ``AgentpackError`` when it cannot listen.
    """
    endpoint = path if path.startswith("/") else f"/{path}"
    lock = threading.Lock()
    origins: set[str] = set(allowed_origins or ())

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "agentpack-agent"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the runtime shows stderr
            pass

        def _origin_ok(self) -> bool:
            origin = self.headers.get("Origin")
            if origin is None:
                return True
            if origin in origins:
                return True
            return origin in (
                f"http://127.0.0.1:{server.server_port}",
                f"http://localhost:{server.server_port}",
                f"http://{host}:{server.server_port}",
            )

        def _status(self, status: HTTPStatus, allow: str | None = None) -> None:
            self.send_response(status)
            if allow:
                self.send_header("Allow", allow)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def _body(self) -> bytes:
            try:
                length = int(self.headers.get("Content-Length") or 0)
            except ValueError:
                length = 0
            return self.rfile.read(length) if length > 0 else b""

        def _send(self, payload: Any, *, stream: bool, status: HTTPStatus = HTTPStatus.OK) -> None:
            if isinstance(payload, list):  # a batch
                data = b"[" + b",".join(dump_response(item) for item in payload) + b"]"
            else:
                data = dump_response(payload)
            if stream:
                data = b"event: message\ndata: " + data + b"\n\n"
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            if urlparse(self.path).path != endpoint:
                self._body()
                return self._status(HTTPStatus.NOT_FOUND)
            if not self._origin_ok():
                self._body()
                return self._status(HTTPStatus.FORBIDDEN)
            accepted = _media_types(self.headers.get("Accept") or "*/*")
            wants_json = bool(accepted & {"application/json", "*/*", "application/*"})
            wants_sse = "text/event-stream" in accepted
            if not (wants_json or wants_sse):
                self._body()
                return self._status(HTTPStatus.NOT_ACCEPTABLE)
            ctype = (self.headers.get("Content-Type") or "application/json").lower()
            if "json" not in ctype:
                self._body()
                return self._status(HTTPStatus.UNSUPPORTED_MEDIA_TYPE)
            stream = wants_sse and (sse or not wants_json)
            try:
                message = loads(self._body() or b"null")
            except ValueError:  # not JSON, NaN or infinity, nested too deep
                return self._send(
                    error_response(None, PARSE_ERROR, "Parse error: invalid JSON"),
                    stream=False,
                    status=HTTPStatus.BAD_REQUEST,
                )
            with lock:
                if isinstance(message, list):
                    answers = [a for a in (handle(m) for m in message) if a is not None]
                    response: Any = answers or None
                else:
                    response = handle(message)
            if response is None:
                return self._status(HTTPStatus.ACCEPTED)
            self._send(response, stream=stream)

        def do_GET(self) -> None:
            if urlparse(self.path).path != endpoint:
                return self._status(HTTPStatus.NOT_FOUND)
            if not self._origin_ok():
                return self._status(HTTPStatus.FORBIDDEN)
            self._status(HTTPStatus.METHOD_NOT_ALLOWED, allow="POST")

        do_DELETE = do_GET

    sock = bind_socket(host, port)  # bound first: a port in use is a one-line error, not a traceback
    name, bound = sock.getsockname()[:2]
    server = _Server((name, bound), Handler, bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    server.server_name, server.server_port = str(name), int(bound)
    return server
