"""Streamable HTTP for the agent (stdlib ``http.server``), imported only when ``--http`` is given.

One endpoint (``/ecp`` by default): POST a JSON-RPC message with an ``Accept`` allowing
``application/json`` or ``text/event-stream`` (else 406) and a JSON body (else 415); the answer is
JSON, or one SSE event when only ``text/event-stream`` is accepted; a notification gets 202; GET and
DELETE get 405 with ``Allow: POST``; a browser ``Origin`` other than this server's gets 403.
Messages are answered one at a time (the pack's index cache is not shared between threads).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlparse

from agentpack.io.netutil import bind_socket

from .rpc import PARSE_ERROR, dumps, error_response


class _Server(ThreadingHTTPServer):
    daemon_threads = True


def make_server(
    handle: Callable[[Any], dict[str, Any] | None], host: str, port: int, path: str = "/ecp"
) -> ThreadingHTTPServer:
    """A server for ``http://host:port/path`` (port 0 picks one); ``AgentpackError`` when it cannot bind."""
    endpoint = path if path.startswith("/") else f"/{path}"
    lock = threading.Lock()
    sock = bind_socket(host, port)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        server_version = "agentpack-ecp-agent"
        disable_nagle_algorithm = True

        def log_message(self, format: str, *args: Any) -> None:  # quiet: the runtime shows stderr
            pass

        def _origin_ok(self) -> bool:
            origin = self.headers.get("Origin")
            bound = server.server_address[1]
            return origin is None or origin in {f"http://{name}:{bound}" for name in ("127.0.0.1", "localhost", host)}

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
            data = dumps(payload)
            if stream:
                data = b"event: message\ndata: " + data + b"\n\n"
            self.send_response(status)
            self.send_header("Content-Type", "text/event-stream" if stream else "application/json")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = self._body()
            if urlparse(self.path).path != endpoint:
                return self._status(HTTPStatus.NOT_FOUND)
            if not self._origin_ok():
                return self._status(HTTPStatus.FORBIDDEN)
            accepted = {p.split(";", 1)[0].strip().lower() for p in (self.headers.get("Accept") or "*/*").split(",")}
            wants_json = bool(accepted & {"application/json", "application/*", "*/*"})
            if not wants_json and "text/event-stream" not in accepted:
                return self._status(HTTPStatus.NOT_ACCEPTABLE)
            if "json" not in (self.headers.get("Content-Type") or "application/json").lower():
                return self._status(HTTPStatus.UNSUPPORTED_MEDIA_TYPE)
            try:
                message = json.loads(body or b"null")
            except ValueError:
                error = error_response(None, PARSE_ERROR, "Parse error: invalid JSON")
                return self._send(error, stream=False, status=HTTPStatus.BAD_REQUEST)
            with lock:
                if isinstance(message, list):
                    response: Any = [a for a in map(handle, message) if a is not None] or None
                else:
                    response = handle(message)
            if response is None:
                return self._status(HTTPStatus.ACCEPTED)
            self._send(response, stream=not wants_json)

        def do_GET(self) -> None:
            if urlparse(self.path).path != endpoint:
                return self._status(HTTPStatus.NOT_FOUND)
            self._status(HTTPStatus.METHOD_NOT_ALLOWED, allow="POST")

        do_DELETE = do_GET

    server = _Server(sock.getsockname()[:2], Handler, bind_and_activate=False)
    server.socket.close()
    server.socket = sock
    server.server_address = sock.getsockname()[:2]
    return server
