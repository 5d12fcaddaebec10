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


def token_hint(value: str) -> str:
    """How to write ``value`` as a capability id: DCI ids are ASCII, though Agent Skills names are not."""
    rule = "DCI capability ids are 1..64 of lowercase a-z, 0-9 and '-' (the DCI/1 grammar's name-token)"
    if any(not c.isascii() and c.isalnum() for c in value):
        return (
            f"{rule}: ASCII only, stricter than Agent Skills names, which also allow Unicode lowercase letters; "
            "give the capability an ASCII id (a skill named in Unicode can still provide it)"
        )
    lowered = "-".join(part for part in value.strip().lower().replace("_", "-").replace(" ", "-").split("-") if part)
    return f"{rule}: did you mean '{lowered}'?" if is_capability(lowered) and lowered != value else rule
