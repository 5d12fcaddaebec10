"""Who may talk to the runtime's HTTP server: the approvals' bearer token, the ``Host`` and ``Origin`` rules
(``agentpack.io.hostcheck``, shared with the other servers) and the ``Content-Type`` rule that make DNS
rebinding and cross-site requests fail."""

from __future__ import annotations

import hmac
import os
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from agentpack.io.errors import AgentpackError
from agentpack.io.fsutil import atomic_write_bytes
from agentpack.io.hostcheck import HostGuard

TOKEN_ENV = "AGENTPACK_OPENEXPERTS_SERVER_TOKEN"
TOKEN_FILE = "server-token"
MIN_TOKEN = 16


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


@dataclass(frozen=True)
class Guard:
    """The checks of one server: the token, and the ``Host`` and ``Origin`` rules (``agentpack.io.hostcheck``)."""

    token: str
    hosts: HostGuard

    def authorized(self, authorization: str | None) -> bool:
        """Whether ``Authorization`` is ``Bearer <token>`` (compared in constant time)."""
        scheme, _, given = (authorization or "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), self.token.encode())


def is_json(content_type: str | None) -> bool:
    """Whether a ``Content-Type`` is JSON (``application/json`` or ``application/*+json``, any parameters)."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    return media == "application/json" or (media.startswith("application/") and media.endswith("+json"))
