"""The runtime's HTTP server: webhook triggers, channel messages and approvals, as starlette routes served
by uvicorn on a background thread of the runtime process.

Routes::

    POST /hooks/<trigger>        a webhook trigger fires with the signed JSON body   -> 202
    POST /channels/<channel>     a channel message (signed) goes to its triggers      -> 202
    GET  /approvals              pending approval requests (bearer token)             -> 200
    POST /approvals/<id>         {"approve": true|false} (bearer token)               -> 200 / 404
    GET  /health                                                                      -> 200

Every route but ``/health`` checks ``Host`` and ``Origin`` (``agentpack.io.hostcheck``); a POST must be
``application/json``. Bodies are capped (size, time, nesting); handlers check, then hand over to
the runtime on a worker thread, so the event loop never waits for the run store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import threading
import time
from typing import Any

import anyio
import h11
import uvicorn
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError
from agentpack.io.hostcheck import HostGuard
from agentpack.io.netutil import bind_socket

from . import webhooks
from .auth import Guard, Token, is_json, server_token
from .errors import StoreUnavailable
from .serverconfig import ServerSettings

log = logging.getLogger("agentpack.openexperts")
MAX_HEAD = 16 * 1024


def _json(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return Response(json.dumps(body, default=str), status, headers, media_type="application/json")


class RequestChecks:
    """ASGI middleware: the size of the head (431), ``Host`` (400), ``Origin`` (403) and, on a POST, a JSON
    ``Content-Type`` (415). (uvicorn's own limit applies to a head that arrives in pieces; one that
    arrives in one read is measured here.)"""

    def __init__(self, app: ASGIApp, guard: Guard) -> None:
        self.app = app
        self.guard = guard

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        refusal = self._refusal(scope) if scope["type"] == "http" else None
        if refusal is not None:
            await refusal(scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> Response | None:
        if sum(len(k) + len(v) for k, v in scope["headers"]) > MAX_HEAD:
            return _json(431, {"error": f"the request headers are larger than {MAX_HEAD} bytes"})
        if scope["path"] == "/health":
            return None
        headers = Headers(scope=scope)
        if refusal := self.guard.hosts.problem(scope["method"], dict(headers.items()), origin_on_safe=True):
            return _json(refusal[0], {"error": refusal[1]})
        if scope["method"] == "POST" and not is_json(headers.get("content-type")):
            return _json(415, {"error": "the body must be JSON (Content-Type: application/json)"})
        return None


class Endpoints:
    """The route handlers of one runtime."""

    def __init__(self, runtime: Any, settings: ServerSettings, guard: Guard) -> None:
        self.runtime = runtime
        self.settings = settings
        self.guard = guard
        self.webhooks = {t["name"] for t in runtime.package.triggers if t.get("type") == "webhook"}

    async def health(self, request: Request) -> Response:
        return _json(200, {"ok": True, "package": self.runtime.package.name})

    async def pending(self, request: Request) -> Response:
        if refusal := self._unauthorized(request):
            return refusal
        return _json(200, {"pending": [r.to_json() for r in self.runtime.desk.pending()]})

    async def decide(self, request: Request) -> Response:
        if refusal := self._unauthorized(request):
            return refusal
        body = self._parse(await self._read(request))
        if isinstance(body, Response):
            return body
        approval = request.path_params["approval"]
        approve = body.get("approve") if isinstance(body, dict) else None
        if not isinstance(approve, bool):
            return _json(400, {"error": 'expected {"approve": true|false}'})
        if not self.runtime.desk.decide(approval, approve, by="http", note=str(body.get("note", ""))):
            return _json(404, {"error": f"no pending approval '{approval}'"})
        return _json(200, {"id": approval, "approved": approve})

    async def hook(self, request: Request) -> Response:
        trigger = request.path_params["trigger"]
        if trigger not in self.webhooks:
            return _json(404, {"error": f"no webhook trigger '{trigger}'"})
        delivery = await self._delivery(request, "webhook", trigger)
        if isinstance(delivery, Response):
            return delivery
        body, keys = delivery
        answer = await anyio.to_thread.run_sync(lambda: self.runtime.fire(trigger, body, delivery=keys))
        if answer.get("replay"):
            return _json(409, answer)
        return _json(202 if answer.get("accepted") or answer.get("duplicate") else 503, answer)

    async def channel(self, request: Request) -> Response:
        channel = request.path_params["channel"]
        delivery = await self._delivery(request, "channel", channel)
        if isinstance(delivery, Response):
            return delivery
        body, keys = delivery
        try:
            answers = await anyio.to_thread.run_sync(lambda: self.runtime.channel_message(channel, body, delivery=keys))
        except ValueError as exc:
            return _json(400, {"error": str(exc)})
        if answers and answers[0].get("replay"):
            return _json(409, answers[0])
        if not answers:
            return _json(404, {"error": f"no channel trigger listens to '{channel}'"})
        return _json(202, {"accepted": any(a.get("accepted") for a in answers), "invocations": answers})

    # -- helpers ---------------------------------------------------------------------------------------
    def _unauthorized(self, request: Request) -> Response | None:
        if self.guard.authorized(request.headers.get("authorization")):
            return None
        return _json(
            401,
            {"error": "approvals need Authorization: Bearer <token> (the server's token; see server-token)"},
            {"WWW-Authenticate": "Bearer"},
        )

    async def _read(self, request: Request) -> bytes | Response:
        """The raw body, within the time limit (the size limit is starlette's ``max_body_size``: 413)."""
        try:
            with anyio.fail_after(self.settings.body_timeout):
                return await request.body()
        except TimeoutError:
            return _json(408, {"error": f"the body did not arrive within {self.settings.body_timeout:g} s"})

    @staticmethod
    def _parse(raw: bytes | Response) -> Any:
        """The parsed body (``{}`` when empty), or the response refusing it (400: not JSON, nested too deep)."""
        if isinstance(raw, Response):
            return raw
        try:
            return jsonio.loads(raw) if raw.strip() else {}
        except jsonio.JsonError as exc:
            return _json(400, {"error": f"body: {exc.message}"})

    async def _delivery(self, request: Request, kind: str, name: str) -> Any:
        """A webhook or channel delivery: signature checked (401), parsed (400); ``(body, (scope, keys))``, the
        keys None when unsigned. The runtime refuses a replay (409) in the transaction that would start a run."""
        raw = await self._read(request)
        if isinstance(raw, Response):
            return raw
        configured = self.settings.webhook_secrets if kind == "webhook" else self.settings.channel_secrets
        secret = webhooks.secret_for(kind, name, configured)
        if secret is None and not self.settings.insecure_webhooks:
            return _json(
                401,
                {
                    "error": f"{kind} '{name}' has no secret, so no delivery can be verified: set "
                    f"{webhooks.env_name(kind, name)} (unsigned deliveries: --insecure-webhooks on 127.0.0.1)"
                },
            )
        if secret is not None and (problem := webhooks.verify(secret, raw, request.headers)):
            return _json(401, {"error": problem})
        body = self._parse(raw)
        if isinstance(body, Response):
            return body
        if secret is None:
            return body, None
        return body, (f"delivery:{kind}:{name}", webhooks.delivery_keys(raw, request.headers))


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _json(exc.status_code, {"error": exc.detail}, dict(exc.headers or {}))


async def _store_unavailable(request: Request, exc: Exception) -> Response:
    """The shared store is away: nothing was accepted, the sender retries."""
    return _json(503, {"accepted": False, "error": f"{exc}; retry later"}, {"Retry-After": "5"})


def build_app(runtime: Any, settings: ServerSettings, guard: Guard) -> Starlette:
    """The starlette application of one runtime."""
    endpoints = Endpoints(runtime, settings, guard)
    return Starlette(
        routes=[
            Route("/health", endpoints.health, methods=["GET"]),
            Route("/approvals", endpoints.pending, methods=["GET"]),
            Route("/approvals/{approval}", endpoints.decide, methods=["POST"]),
            Route("/hooks/{trigger}", endpoints.hook, methods=["POST"]),
            Route("/channels/{channel}", endpoints.channel, methods=["POST"]),
        ],
        middleware=[Middleware(RequestChecks, guard=guard)],
        exception_handlers={HTTPException: _http_error, StoreUnavailable: _store_unavailable},
        max_body_size=settings.max_body,
    )


class HeadTimeoutProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request head: a connection that sends nothing, or
    trickles its request line and headers (slowloris), is closed after ``head_timeout`` seconds."""

    head_timeout = 10.0
    _head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)  # type: ignore[arg-type]  # uvicorn narrows it to asyncio.Transport
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._busy():
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _busy(self) -> bool:
        """A request head arrived and its response is not complete (the body has its own timeout)."""
        return self.cycle is not None and not self.cycle.response_complete and self.conn.their_state is not h11.IDLE

    def _arm(self) -> None:
        self._disarm()
        self._head_timer = self.loop.call_later(self.head_timeout, self._expire)

    def _disarm(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _expire(self) -> None:
        self._head_timer = None
        if not self._busy() and not self.transport.is_closing():
            self.transport.close()


class RuntimeServer:
    """The server of one runtime: bound at construction (errors are one line), served on a thread."""

    def __init__(self, runtime: Any, settings: ServerSettings) -> None:
        settings.check()
        self.settings = settings
        self.socket = bind_socket(settings.host, settings.port)
        self.port: int = self.socket.getsockname()[1]
        try:
            self.token: Token = server_token(settings.token, settings.token_file, runtime.workdir)
            guard = Guard(self.token.value, HostGuard.of(settings.host, self.port, settings.allowed_hosts))
            protocol = type("Protocol", (HeadTimeoutProtocol,), {"head_timeout": settings.head_timeout})
            config = uvicorn.Config(
                build_app(runtime, settings, guard),
                http=protocol,
                lifespan="off",
                log_config=None,
                access_log=False,
                proxy_headers=False,
                server_header=False,
                timeout_keep_alive=settings.keep_alive,
                timeout_graceful_shutdown=2,
                limit_concurrency=settings.max_connections,
                h11_max_incomplete_event_size=MAX_HEAD,
                ssl_certfile=settings.tls_cert,
                ssl_keyfile=settings.tls_key,
            )
            try:
                config.load()
            except (OSError, ssl.SSLError) as exc:
                raise AgentpackError(f"cannot use the TLS certificate and key: {exc}") from None
        except BaseException:
            self.socket.close()
            raise
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.socket]}, name="openexperts-http", daemon=True
        )

    @property
    def url(self) -> str:
        host = self.socket.getsockname()[0]
        shown = f"[{host}]" if ":" in host else host
        return f"{'https' if self.settings.tls else 'http'}://{shown}:{self.port}"

    def start(self, timeout: float = 10.0) -> None:
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started and self.thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not self.server.started:
            self.stop()
            raise AgentpackError(f"the HTTP server did not start on {self.url}")

    def stop(self) -> None:
        self.server.should_exit = True
        if self.thread.is_alive():
            self.thread.join(timeout=10)
        self.socket.close()
