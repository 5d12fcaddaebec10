"""The versioned JSON envelope every ``--json`` command prints, without click.

``agentpack.clikit`` re-exports these; a click-free fast path (``skillctl run``)
imports them from here so that asking for JSON does not import click.
"""

from __future__ import annotations

import json
from typing import Any

SCHEMA_VERSION = 1


def envelope(command: str, ok: bool, **fields: Any) -> dict[str, Any]:
    """The versioned JSON envelope every ``--json`` command prints."""
    return {"schema_version": SCHEMA_VERSION, "command": command, "ok": ok, **fields}


def dumps(value: Any) -> str:
    """``value`` as the CLI prints JSON: indented, UTF-8, unknown types as strings."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str)


__all__ = ["SCHEMA_VERSION", "dumps", "envelope"]
