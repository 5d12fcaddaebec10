"""The reference implementation's recipes for reading source files, so packs interoperate.

* text detection: no NUL byte in the first 8 KiB, and the first 8 KiB decode as UTF-8;
* file hash: SHA-256 of the file's text (UTF-8, undecodable bytes replaced) with
  CRLF and lone CR normalised to LF, encoded as UTF-8 (``text_sha256``);
* file manifest: ``{path: {"sha256", "size", "skipped"}}`` where ``skipped`` is
  ``None``, ``"too_large"``, ``"binary_or_non_utf8"`` or ``"read_error"``;
* filesystem ``revision.hash``: SHA-256 (hex) of ``json.dumps(manifest,
  sort_keys=True)`` with the default separators (``manifest_hash``).

Also where a source ``uri`` points on this machine (``resolve_location``).
"""

from __future__ import annotations

import hashlib
import json
import os
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from agentpack.io.errors import AgentpackError
from agentpack.io.hashing import normalize_newlines, sha256_text
from agentpack.io.paths import check_inside

PROBE_BYTES = 8192
DEFAULT_MAX_FILE_BYTES = 512_000


class SourceError(AgentpackError):
    """A source that cannot be read (unsupported kind, missing path, failing git or query)."""


def looks_like_text(head: bytes) -> bool:
    if b"\x00" in head[:PROBE_BYTES]:
        return False
    try:
        head[:PROBE_BYTES].decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def decode_text(data: bytes) -> str:
    """UTF-8 text (errors replaced) with newlines normalised to LF."""
    return normalize_newlines(data.decode("utf-8", errors="replace"))


def text_sha256(text: str) -> str:
    return sha256_text(text)


def file_record(data: bytes | None, size: int, max_bytes: int) -> tuple[dict[str, Any], str | None]:
    """The manifest record and the text of one file (``data`` None means unreadable)."""
    if size > max_bytes:
        return {"sha256": None, "size": size, "skipped": "too_large"}, None
    if data is None:
        return {"sha256": None, "size": size, "skipped": "read_error"}, None
    if not looks_like_text(data):
        return {"sha256": None, "size": size, "skipped": "binary_or_non_utf8"}, None
    text = decode_text(data)
    return {"sha256": text_sha256(text), "size": size, "skipped": None}, text


def manifest_hash(manifest: dict[str, dict[str, Any]]) -> str:
    """``revision.hash`` of a file manifest (the reference recipe, byte for byte)."""
    return hashlib.sha256(json.dumps(manifest, sort_keys=True).encode("utf-8")).hexdigest()


def iso_utc(value: datetime) -> str:
    return value.astimezone(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


REMOTE_SCHEMES = ("http", "https", "ssh", "git", "s3", "gs", "ftp")


def resolve_location(uri: str, pack_root: Path) -> Path:
    """A local path for ``uri``: ``file://`` URIs, absolute paths, or paths relative to the skill root."""
    parsed = urlparse(uri)
    if parsed.scheme == "file":
        host = parsed.netloc if parsed.netloc not in ("", "localhost") else ""
        path = unquote(host + parsed.path)
        return (pack_root / path).resolve() if not path.startswith("/") else Path(path).resolve()
    if uri.startswith("git@") or parsed.scheme in REMOTE_SCHEMES:
        raise SourceError(
            f"'{uri}' is a remote location; agentpack reads local copies only",
            hint="clone or download it, then point the source's uri at the local path",
        )
    if len(parsed.scheme) > 1:
        raise SourceError(f"unsupported URI scheme '{parsed.scheme}' in '{uri}'")
    local = Path(uri)
    lexical = os.path.normpath(pack_root / local)
    if local.is_absolute() or not Path(lexical).is_relative_to(os.path.normpath(pack_root)):
        return Path(lexical).resolve()  # a location the manifest names outside the pack (``../repo``), as written
    return inside_pack(pack_root, pack_root / local, uri)  # inside, by its path: no link may take it out


def inside_pack(pack_root: Path, path: Path, display: str) -> Path:
    """``path`` (lexically in the pack) resolved; ``SourceError`` when a symbolic link takes it out of the pack."""
    check_inside(pack_root, path, display=display, expected="a source", error=SourceError)
    return path.resolve()
