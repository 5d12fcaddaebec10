"""Canonical JSON and SHA-256 helpers shared by every format."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_CHUNK = 1 << 20
_SMALL = 1 << 16


def canonical_json(value: Any) -> str:
    """Canonical JSON text: sorted keys, no insignificant whitespace, UTF-8 kept as is.

    Floats that are whole numbers keep their ``.0``; NaN and infinities are refused.
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def canonical_json_bytes(value: Any) -> bytes:
    return canonical_json(value).encode("utf-8")


def sha256_bytes(data: bytes) -> str:
    from hashlib import sha256

    return sha256(data).hexdigest()


def sha256_text(text: str) -> str:
    return sha256_bytes(text.encode("utf-8"))


def sha256_small(data: bytes) -> str:
    """``sha256_bytes`` for one small input on a start-up path, without loading OpenSSL.

    ``hashlib`` loads OpenSSL (about 2.5 ms) and is fastest in bulk; CPython's
    built-in SHA-256 needs nothing loaded and is 4-6 times slower per byte.
    So: built-in for inputs up to 64 KiB while ``hashlib`` is not loaded.
    """
    if len(data) <= _SMALL and "hashlib" not in sys.modules:
        try:  # CPython 3.12+ names it _sha2, 3.11 _sha256: private modules without stubs
            from _sha2 import sha256  # type: ignore[import-not-found]
        except ImportError:
            try:
                from _sha256 import sha256  # type: ignore[import-not-found]
            except ImportError:  # pragma: no cover - an interpreter without them
                from hashlib import sha256
        digest: str = sha256(data).hexdigest()
        return digest
    return sha256_bytes(data)


def sha256_json(value: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``value``."""
    return sha256_bytes(canonical_json_bytes(value))


def sha256_file(path: str | Path) -> str:
    import hashlib

    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def normalize_newlines(text: str) -> str:
    """CRLF and lone CR to LF, the form text hashes are computed over."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


def sha256_text_file(path: str | Path) -> str:
    """SHA-256 over a text file's bytes with newlines normalised as ``normalize_newlines`` does
    (CRLF and lone CR to LF), so it equals ``sha256_text(normalize_newlines(text))``."""
    data = Path(path).read_bytes()
    return sha256_bytes(data.replace(b"\r\n", b"\n").replace(b"\r", b"\n"))
