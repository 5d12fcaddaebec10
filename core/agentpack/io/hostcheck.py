"""Which ``Host`` and ``Origin`` a local HTTP server answers to: the defence against DNS rebinding.

A page on ``evil.example`` that rebinds its name to 127.0.0.1 reaches a server on
the user's machine with ``Host: evil.example``; a cross-site request carries its
page's ``Origin``. Every HTTP server agentpack runs (the viewer, ``mcp serve``,
the openexperts server) passes its requests through ``HostGuard`` first: ``Host``
must name this server, as built from the address it is bound to, and ``Origin``,
where checked, must be the same host.
"""

from __future__ import annotations

import ipaddress
import json
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

SAFE_METHODS = frozenset({"GET", "HEAD"})
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Scope = MutableMapping[str, Any]
App = Callable[[Scope, Any, Any], Awaitable[None]]


def _address(text: str) -> Address | None:
    """``text`` as an IP address (an IPv4-mapped IPv6 address as its IPv4 one), None for a name."""
    try:
        address = ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return None
    mapped = getattr(address, "ipv4_mapped", None)
    return mapped or address


def split_host(value: str) -> tuple[str, int | None] | None:
    """``Host`` as ``(name or address, port)``, the name lowercased without brackets; None when malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        name, sep, rest = value[1:].partition("]")
        if not sep or (rest and not rest.startswith(":")):
            return None
        port_text = rest[1:] if rest else None
    elif value.count(":") > 1:
        return None  # an IPv6 address must be bracketed in Host
    else:
        name, _, port_text = value.partition(":")
        port_text = port_text if ":" in value else None
    if not name or (port_text is not None and not (port_text.isdigit() and len(port_text) <= 5)):
        return None
    return name.rstrip("."), int(port_text) if port_text else None


@dataclass(frozen=True)
class HostGuard:
    """The names a server bound to ``bound``:``port`` answers to.

    Allowed in ``Host``: the bound address in any spelling (``::ffff:127.0.0.1`` is
    ``127.0.0.1``), ``extra`` names, the loopback names when the bound address is
    loopback or a wildcard (``0.0.0.0``, ``::``), and, on a wildcard, any IP address
    and this machine's host name. An IP literal cannot be rebound, so only names are
    refused. A port, when given, must be the bound one.
    """

    bound: str
    port: int
    extra: frozenset[str] = frozenset()

    @classmethod
    def of(cls, bound: str, port: int, extra: Iterable[str] = ()) -> HostGuard:
        return cls(bound, port, frozenset(n.lower().strip("[]").rstrip(".") for n in extra))

    @property
    def wildcard(self) -> bool:
        address = _address(self.bound)
        return address is not None and address.is_unspecified

    @property
    def loopback(self) -> bool:
        address = _address(self.bound)
        return self.bound.lower() == "localhost" or (address is not None and address.is_loopback)

    def names(self) -> frozenset[str]:
        """The host names (not addresses) ``Host`` may hold."""
        names = set(self.extra)
        if _address(self.bound) is None:
            names.add(self.bound.lower().rstrip("."))
        if self.loopback or self.wildcard:
            names.add("localhost")
        if self.wildcard:
            names.update(n.lower() for n in {socket.gethostname()} if n)
        return frozenset(names)

    def host_problem(self, host: str | None) -> str | None:
        """Why a ``Host`` header is refused (a name this server was not told about: DNS rebinding), or None."""
        parsed = split_host(host or "")
        if parsed is None:
            return f"Host {host!r} is not a name of this server"
        name, port = parsed
        if port is not None and port != self.port:
            return f"Host {host!r} names another port than this server's ({self.port})"
        if name in self.names() or self._address_allowed(_address(name)):
            return None
        return f"Host {host!r} is not a name of this server"

    def _address_allowed(self, address: Address | None) -> bool:
        if address is None:
            return False
        if self.wildcard or address == _address(self.bound):
            return True
        return self.loopback and address.is_loopback

    def origin_problem(self, origin: str | None, host: str | None) -> str | None:
        """Why ``Origin`` is refused (a cross-site request from a browser), or None when absent or same-origin."""
        if origin is None:
            return None
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or split_host(parts.netloc) != split_host(host or ""):
            return f"cross-origin request from {origin!r} refused"
        return None

    def problem(self, method: str, headers: dict[str, str], *, origin_on_safe: bool = False) -> tuple[int, str] | None:
        """``(status, reason)`` refusing a request (400 for ``Host``, 403 for ``Origin``), or None.

        ``Origin`` is checked on every method but GET and HEAD, or on all with ``origin_on_safe``."""
        host = headers.get("host")
        if reason := self.host_problem(host):
            return 400, reason
        checked = origin_on_safe or method not in SAFE_METHODS
        if checked and (reason := self.origin_problem(headers.get("origin"), host)):
            return 403, reason
        return None


class HostCheck:
    """ASGI middleware: requests whose ``Host`` or ``Origin`` ``guard`` refuses get a JSON error, before the app."""

    def __init__(self, app: App, guard: HostGuard, *, origin_on_safe: bool = False) -> None:
        self.app = app
        self.guard = guard
        self.origin_on_safe = origin_on_safe

    async def __call__(self, scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers") or ()}
            refusal = self.guard.problem(scope["method"], headers, origin_on_safe=self.origin_on_safe)
            if refusal is not None:
                status, reason = refusal
                body = json.dumps({"error": reason}).encode()
                head = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
                await send({"type": "http.response.start", "status": status, "headers": head})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


__all__ = ["HostCheck", "HostGuard", "split_host"]
