"""Capability-token validation: the Agent Skills ``name`` rules, checked without rewriting anything."""

from __future__ import annotations

import re

MAX_TOKEN_LENGTH = 64
_TOKEN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_ALLOWED = re.compile(r"[a-z0-9-]")


def is_capability(value: str) -> bool:
    """True when ``value`` is a valid capability token (1..64 of ``[a-z0-9-]``, no edge or double hyphen)."""
    return 0 < len(value) <= MAX_TOKEN_LENGTH and _TOKEN.fullmatch(value) is not None


def token_problem(value: str) -> str | None:
    """Why ``value`` is not a valid capability token, or ``None`` when it is."""
    if is_capability(value):
        return None
    if not value:
        return "is empty"
    if len(value) > MAX_TOKEN_LENGTH:
        return f"is {len(value)} characters, more than {MAX_TOKEN_LENGTH}"
    bad = sorted({c for c in value if not _ALLOWED.fullmatch(c)})
    if bad:
        shown = ", ".join(repr(c) for c in bad[:5])
        return f"contains characters outside lowercase a-z, 0-9 and '-': {shown}"
    if value.startswith("-") or value.endswith("-"):
        return "starts or ends with a hyphen"
    if "--" in value:
        return "contains consecutive hyphens"
    return "is not a valid capability token"
