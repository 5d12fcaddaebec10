"""Who may talk to the runtime's HTTP server: the approvals' bearer token, and the ``Host``, ``Origin`` and
``Content-Type`` rules that make DNS rebinding and cross-site requests fail."""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from agentpack.io.errors import AgentpackError
from agentpack.io.fsutil import atomic_write_bytes

TOKEN_ENV = "AGENTPACK_OPENEXPERTS_SERVER_TOKEN"
TOKEN_FILE = "server-token"
MIN_TOKEN = 16
LOCAL_NAMES = ("localhost", "127.0.0.1", "[::1]")


@dataclass(frozen=True)
class Token:
    """The bearer token, where it came from, and the file a generated one was written to."""

    value: str
    source: str
    path: Path | None = None


def server_token(
    configured: str | None, token_file: Path | None, workdir: Path, environ: Mapping[str, str] = os.environ
) -> Token:
    """The token given (argument, ``token_file``, ``$AGENTPACK_OPENEXPERTS_SERVER_TOKEN``), else a new one
    from ``secrets`` written to ``workdir/server-token`` (mode 0600, atomically)."""
    if configured is not None:
        return Token(_checked(configured, "the configured token"), "configured")
    if token_file is not None:
        try:
            text = Path(token_file).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AgentpackError(f"cannot read the token file {token_file}: {exc}") from None
        return Token(_checked(text.strip(), f"the token in {token_file}"), f"file {token_file}")
    if environ.get(TOKEN_ENV):
        return Token(_checked(environ[TOKEN_ENV].strip(), f"${TOKEN_ENV}"), f"${TOKEN_ENV}")
    value = secrets.token_urlsafe(32)
    path = workdir / TOKEN_FILE
    atomic_write_bytes(path, value.encode("ascii") + b"\n", mode=0o600)
    return Token(value, "generated", path)


def _checked(value: str, what: str) -> str:
    if len(value) < MIN_TOKEN or any(c.isspace() for c in value):
        raise AgentpackError(f"{what} must be at least {MIN_TOKEN} characters without spaces")
    return value


def host_names(host: str, port: int, extra: tuple[str, ...] = ()) -> frozenset[str]:
    """The ``Host`` header values the server answers to: its address, the loopback names and ``extra``,
    each bare or with the bound port."""
    bound = f"[{host}]" if ":" in host and not host.startswith("[") else host
    names = {n.lower() for n in (bound, *LOCAL_NAMES, *extra)}
    return frozenset(names | {f"{n}:{port}" for n in names})


@dataclass(frozen=True)
class Guard:
    """The checks of one server: the token, the host names it answers to."""

    token: str
    hosts: frozenset[str]

    def authorized(self, authorization: str | None) -> bool:
        """Whether ``Authorization`` is ``Bearer <token>`` (compared in constant time)."""
        scheme, _, given = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())

    def host_problem(self, host: str | None) -> str | None:
        """Why ``Host`` is refused (a name this server was not told about: DNS rebinding), or None."""
        if not host or host.lower() not in self.hosts:
            return f"Host {host!r} is not a name of this server (add it with --allow-host)"
        return None

    def origin_problem(self, origin: str | None, host: str | None) -> str | None:
        """Why ``Origin`` is refused (a cross-site request from a browser), or None when absent or same-origin."""
        if origin is None:
            return None
        parts = urlsplit(origin)
        if parts.scheme not in ("http", "https") or parts.netloc.lower() != (host or "").lower():
            return f"cross-origin request from {origin!r} refused"
        return None


def is_json(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` is JSON (``application/json`` or ``application/*+json``, any parameters)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))
