"""The Streamable HTTP transport: POST each JSON-RPC message to the agent's endpoint over one keep-alive client.

A request's answer may come back as ``application/json`` or as an SSE stream;
the stream is parsed as it arrives (``sse.SseParser``) and the call returns at
the first event that answers the request, under the call's deadline even if
the server keeps the stream open or drips bytes.
"""

from __future__ import annotations

import time
from typing import Any

from agentpack.io.errors import require
from agentpack.io.jsonio import JsonError, loads

from .protocol import AgentTimeout, AgentUnreachable, ProtocolError, TransportError
from .sse import Event, SseParser
from .stdio import TailBuffer

ACCEPT = "application/json, text/event-stream"


class HttpTransport:
    kind = "http"
    pid = None
    scope = None

    def __init__(self, url: str, *, headers: dict[str, str] | None = None, max_message: int = 64 * 1024 * 1024) -> None:
        httpx = require("httpx", distribution="agentpack-agent-rpc", feature="Streamable HTTP agents")
        self._httpx = httpx
        self.url = url
        self.max_message = max_message
        self.stderr = TailBuffer(0)
        self.warnings: list[str] = []
        self.broken = False
        self._client = httpx.Client(
            headers={"Accept": ACCEPT, "Content-Type": "application/json", **(headers or {})},
            limits=httpx.Limits(max_keepalive_connections=8, keepalive_expiry=30.0),
        )

    def post(self, data: bytes, deadline: float, *, extra_headers: dict[str, str] | None = None):
        """A raw streaming POST (used by conformance checks); the caller closes the response."""
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise AgentTimeout("no time left for the request")
        request = self._client.build_request(
            "POST", self.url, content=data, headers=extra_headers, timeout=self._httpx.Timeout(remaining)
        )
        return self._send(request)

    def _send(self, request):
        httpx = self._httpx
        try:
            return self._client.send(request, stream=True)
        except httpx.TimeoutException:
            raise AgentTimeout("agent did not answer in time") from None
        except httpx.ConnectError as exc:
            raise AgentUnreachable(f"cannot connect to {self.url}: {exc}") from None
        except httpx.HTTPError as exc:
            raise TransportError(f"HTTP request to {self.url} failed: {exc}") from None

    def call(self, data: bytes, request_id: int, deadline: float) -> Any:
        response = self.post(data, deadline)
        try:
            return self._answer(response, request_id, deadline)
        except self._httpx.TimeoutException:
            raise AgentTimeout("agent did not finish its answer in time") from None
        except self._httpx.HTTPError as exc:
            raise TransportError(f"HTTP response from {self.url} broke off: {exc}") from None
        finally:
            response.close()

    def notify(self, data: bytes, deadline: float) -> int:
        response = self.post(data, deadline)
        response.close()
        return response.status_code

    def _body(self, response, deadline: float) -> bytes:
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > self.max_message:
                raise ProtocolError(f"HTTP response larger than {self.max_message} bytes")
            if time.monotonic() > deadline:
                raise AgentTimeout("agent did not finish its answer in time")
        return bytes(body)

    def _answer(self, response, request_id: int, deadline: float) -> Any:
        status = response.status_code
        ctype = response.headers.get("content-type", "").lower()
        if status == 202:
            raise ProtocolError(f"HTTP 202 Accepted in answer to request {request_id} (a response was expected)")
        if "text/event-stream" in ctype and status < 400:
            return self._from_stream(response, request_id, deadline)
        body = self._body(response, deadline)
        try:
            message = loads(body) if body else None
        except JsonError as exc:
            if status < 400 and b'"jsonrpc"' in body:
                raise ProtocolError(f"the agent's reply is not usable JSON: {exc.message}") from None
            message = None
        if status >= 400:
            if isinstance(message, dict) and "error" in message:
                return message
            raise TransportError(f"HTTP {status} from {self.url}: {body[:300].decode('utf-8', 'replace')}")
        if message is None:
            raise ProtocolError(f"HTTP {status} response is not JSON: {body[:200].decode('utf-8', 'replace')!r}")
        return message

    def _from_stream(self, response: Any, request_id: int, deadline: float) -> Any:
        parser = SseParser()
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > self.max_message:
                raise ProtocolError(f"SSE stream larger than {self.max_message} bytes")
            answer = self._answer_in(parser.feed(chunk), request_id)
            if answer is not None:
                return answer
            if time.monotonic() > deadline:
                raise AgentTimeout("SSE stream did not deliver the answer in time")
        answer = self._answer_in(parser.close(), request_id)
        if answer is not None:
            return answer
        raise ProtocolError("SSE stream ended without a JSON-RPC response")

    def _answer_in(self, events: list[Event], request_id: int) -> Any:
        """The JSON-RPC response among ``events`` (None when there is none yet); other events are skipped."""
        for event in events:
            try:
                message = loads(event.data)
            except JsonError as exc:
                if '"jsonrpc"' in event.data:
                    raise ProtocolError(f"the agent's reply is not usable JSON: {exc.message}") from None
                self.warnings.append(f"skipped non-JSON SSE event: {event.data[:200]!r}")
                continue
            if isinstance(message, dict) and ("result" in message or "error" in message):
                if message.get("id") in (request_id, None):
                    return message
                raise ProtocolError(f"response id mismatch: expected {request_id}, got {message.get('id')!r}")
        return None

    def get_status(self, deadline: float) -> tuple[int, str]:
        """Status and content type of a GET on the endpoint (conformance)."""
        request = self._client.build_request(
            "GET", self.url, timeout=self._httpx.Timeout(max(0.1, deadline - time.monotonic()))
        )
        response = self._send(request)
        response.close()
        return response.status_code, response.headers.get("content-type", "")

    def kill(self) -> None:
        self.broken = True

    def end_input(self) -> None:
        """Nothing to signal over HTTP; ``close`` closes the connection pool."""

    def close(self, grace: float = 0.0) -> None:
        self._client.close()
