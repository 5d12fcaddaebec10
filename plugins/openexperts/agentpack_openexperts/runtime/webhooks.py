"""Signed webhook deliveries: a secret per trigger (or channel), an HMAC-SHA256 signature header in the
GitHub convention, and the delivery keys that let the dedupe window refuse a replay.

A sender signs the raw body: ``X-Hub-Signature-256: sha256=<hex of HMAC-SHA256(secret, body)>``
(``X-Signature-256`` is accepted too). Secrets are deployment configuration, not package content
(the spec: "package authors declare intent; they do not configure infrastructure"): given to the
runtime (``ServerSettings.webhook_secrets``) or in the environment as
``AGENTPACK_OPENEXPERTS_WEBHOOK_SECRET_<TRIGGER>`` / ``AGENTPACK_OPENEXPERTS_CHANNEL_SECRET_<CHANNEL>``
(the name upper-cased, each run of other characters than letters and digits made one ``_``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
from collections.abc import Mapping

SIGNATURE_HEADERS = ("x-hub-signature-256", "x-signature-256")
DELIVERY_HEADERS = ("x-github-delivery", "x-delivery-id")
ENV_PREFIX = {"webhook": "AGENTPACK_OPENEXPERTS_WEBHOOK_SECRET_", "channel": "AGENTPACK_OPENEXPERTS_CHANNEL_SECRET_"}
_NOT_NAME = re.compile(r"[^A-Z0-9]+")


def env_name(kind: str, name: str) -> str:
    """The environment variable holding the secret of webhook trigger (``kind="webhook"``) or channel ``name``."""
    return ENV_PREFIX[kind] + _NOT_NAME.sub("_", name.upper()).strip("_")


def secret_for(
    kind: str, name: str, configured: Mapping[str, str], environ: Mapping[str, str] = os.environ
) -> str | None:
    """The secret of trigger or channel ``name``: configured, else from the environment, else None."""
    return configured.get(name) or environ.get(env_name(kind, name)) or None


def signature(secret: str, body: bytes) -> str:
    """The header value a sender puts in ``X-Hub-Signature-256`` for ``body``."""
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


def verify(secret: str, body: bytes, headers: Mapping[str, str]) -> str | None:
    """Why the delivery's signature is refused (missing, malformed, wrong), or None when it is good."""
    given = next((headers[h] for h in SIGNATURE_HEADERS if h in headers), None)
    if given is None:
        return "missing signature: sign the body with the trigger's secret in X-Hub-Signature-256: sha256=<hex>"
    if not hmac.compare_digest(given.strip().lower().encode(), signature(secret, body).encode()):
        return "bad signature"
    return None


def delivery_keys(body: bytes, headers: Mapping[str, str]) -> list[str]:
    """The keys a replayed delivery repeats: the signed body's digest and the sender's delivery id, if any.

    The delivery id header is not covered by the signature, so the body digest is what stops an
    attacker who resends a captured delivery under a new id.
    """
    keys = ["body:" + hashlib.sha256(body).hexdigest()]
    delivery = next((headers[h] for h in DELIVERY_HEADERS if h in headers), None)
    if delivery:
        keys.append("id:" + delivery.strip()[:200])
    return keys
