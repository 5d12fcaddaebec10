"""Small JSON entries that let a fresh process skip work done before (parsing, validation, hashing).

An entry is found by a kind and an identity (a real path) and is valid only
while the files it was derived from keep their stamp ``(size, mtime_ns, inode)``.
Entries are written only when every stamped file is older than ``SETTLE_NS``:
a file changed twice within the file system's timestamp granularity could
otherwise keep its stamp (git's "racily clean" problem). Any failure to read
or write an entry is a miss, never an error.
"""

from __future__ import annotations

import json
import os
import time
from hashlib import sha256
from pathlib import Path
from typing import Any

from . import __version__
from .env import CACHE_DIR, PREPARED_CACHE, lookup

FORMAT = 1
SETTLE_NS = 2_000_000_000
DISABLE_ENV = PREPARED_CACHE[0]
"""Set to ``off`` to neither read nor write these entries (alias: ``SKILLCTL_PREPARED_CACHE``)."""

Stamp = list  # [path, size, mtime_ns, inode] or [path, None] when missing


def default_dir() -> Path:
    """``$AGENTPACK_SKILLCTL_CACHE_DIR`` (alias ``$SKILLCTL_CACHE_DIR``), else
    ``$XDG_CACHE_HOME/agentpack/skillctl`` (``~/.cache/...``)."""
    base = lookup(CACHE_DIR)
    if base:
        return Path(base)
    xdg = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(xdg) / "agentpack" / "skillctl"


def enabled() -> bool:
    return (lookup(PREPARED_CACHE) or "").lower() not in ("off", "0", "no", "false")


def stamp(path: str) -> Stamp:
    try:
        st = os.stat(path)
    except OSError:
        return [path, None]
    return [path, st.st_size, st.st_mtime_ns, st.st_ino]


def settled(stamps: list[Stamp], now_ns: int | None = None) -> bool:
    """True when no stamped file changed within the last ``SETTLE_NS``."""
    limit = (time.time_ns() if now_ns is None else now_ns) - SETTLE_NS
    return all(s[1] is None or s[2] < limit for s in stamps)


def _entry_path(kind: str, ident: str) -> str:
    return os.path.join(default_dir(), kind, sha256(ident.encode()).hexdigest()[:40] + ".json")


def read(kind: str, ident: str) -> dict[str, Any] | None:
    """The entry's value when its recorded stamps still hold, else None."""
    if not enabled():
        return None
    try:
        with open(_entry_path(kind, ident), "rb") as handle:
            entry = json.loads(handle.read())
    except (OSError, ValueError):
        return None
    if not (
        isinstance(entry, dict)
        and entry.get("format") == FORMAT
        and entry.get("version") == __version__
        and entry.get("ident") == ident
        and isinstance(entry.get("stamps"), list)
    ):
        return None
    if any(not isinstance(s, list) or not s or stamp(s[0]) != s for s in entry["stamps"]):
        return None
    return entry.get("value")


def write(kind: str, ident: str, stamps: list[Stamp], value: Any) -> bool:
    """Store ``value`` (JSON) under the stamps; False when not written (unsettled files, I/O error, not JSON)."""
    if not enabled() or not settled(stamps):
        return False
    try:
        text = json.dumps(
            {"format": FORMAT, "version": __version__, "ident": ident, "stamps": stamps, "value": value},
            ensure_ascii=False,
            allow_nan=False,
        )
        if json.loads(text)["value"] != value:  # e.g. a YAML date or an integer key: not JSON-exact
            return False
        from agentpack.io.fsutil import atomic_write_text

        atomic_write_text(Path(_entry_path(kind, ident)), text)
    except (OSError, TypeError, ValueError):
        return False
    return True


__all__ = ["default_dir", "enabled", "read", "settled", "stamp", "write"]
