"""How the runtime's HTTP server is exposed, and the rules a configuration must follow before it binds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from agentpack.io.errors import AgentpackError
from agentpack.io.netutil import is_loopback_host


@dataclass(frozen=True)
class ServerSettings:
    """The HTTP server's address, TLS, authentication and limits (``experts run`` builds one from its options).

    ``token`` (or ``token_file``, or ``$AGENTPACK_OPENEXPERTS_SERVER_TOKEN``) is the bearer token
    approvals need; without one a token is generated at start. ``webhook_secrets`` and
    ``channel_secrets`` map trigger and channel names to HMAC secrets (the environment variables
    of ``webhooks.py`` are read for names not listed). ``allowed_hosts`` are extra names clients may
    use in ``Host`` (a proxy's or certificate's name).
    """

    host: str = "127.0.0.1"
    port: int = 0
    tls_cert: Path | None = None
    tls_key: Path | None = None
    allow_plaintext: bool = False
    insecure_webhooks: bool = False
    token: str | None = None
    token_file: Path | None = None
    allowed_hosts: tuple[str, ...] = ()
    webhook_secrets: Mapping[str, str] = field(default_factory=dict)
    channel_secrets: Mapping[str, str] = field(default_factory=dict)
    max_body: int = 1024 * 1024
    head_timeout: float = 10.0
    body_timeout: float = 10.0
    keep_alive: int = 5
    max_connections: int = 200

    @property
    def tls(self) -> bool:
        return self.tls_cert is not None

    def check(self) -> None:
        """Raise ``AgentpackError`` for a configuration that would expose the server unsafely."""
        if (self.tls_cert is None) != (self.tls_key is None):
            raise AgentpackError("TLS needs both a certificate and its key (--tls-cert and --tls-key)")
        loopback = is_loopback_host(self.host)
        if not loopback and not self.tls and not self.allow_plaintext:
            raise AgentpackError(
                f"refusing to serve on {self.host} without TLS: approval tokens and webhook bodies would cross "
                "the network in plain text",
                hint="pass --tls-cert FILE --tls-key FILE, or --allow-plaintext when a TLS proxy sits in front",
            )
        if self.insecure_webhooks and not loopback:
            raise AgentpackError(
                f"--insecure-webhooks is only allowed on a loopback address, not on {self.host}",
                hint="configure a secret per webhook trigger (AGENTPACK_OPENEXPERTS_WEBHOOK_SECRET_<TRIGGER>)",
            )
