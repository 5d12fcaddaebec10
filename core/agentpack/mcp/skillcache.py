"""The disk cache of skill files read from MCP servers.

Each file lands at ``ROOT/LABEL/SCHEME/AUTHORITY/PATH...``: the host-assigned server label and the whole
URI are in the path, so same-URI skills of two servers never meet and the origin is recoverable from the
path. Segments are percent-encoded where needed and ``.``/``..`` never reach the filesystem. A cached file
is served only after its SHA-256 is recomputed and matches the entry it is read for (a stored label or a
modification time is not verification). The root is outside every skill discovery path: by default
``$XDG_CACHE_HOME/agentpack/mcp-skills`` (``AGENTPACK_MCP_CACHE`` overrides it), and a command refuses a
cache inside any folder it scans for local skills.
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import quote

from agentpack.io.errors import AgentpackError


def default_root() -> Path:
    configured = os.environ.get("AGENTPACK_MCP_CACHE")
    if configured:
        return Path(configured).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base, "agentpack", "mcp-skills")


def _segment(text: str) -> str:
    encoded = quote(text, safe="-_~@+,;=!$'()")
    return {"": "%", ".": "%2E", "..": "%2E%2E"}.get(encoded, encoded)


class SkillCache:
    """Verified skill files by (server label, URI)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or default_root()

    def server_dir(self, label: str) -> Path:
        return self.root / _segment(label)

    def path(self, label: str, uri: str) -> Path:
        """Where the file at ``uri`` of server ``label`` is kept."""
        scheme, sep, rest = uri.partition("://")
        parts = [scheme, *rest.split("/")] if sep else ["%", *uri.split("/")]
        return self.server_dir(label).joinpath(*(_segment(p) for p in parts))

    def get(self, label: str, uri: str, digest: str) -> bytes | None:
        """The cached bytes when their SHA-256 is ``digest`` now; None otherwise (fetch again)."""
        from agentpack.io.hashing import sha256_bytes

        try:
            data = self.path(label, uri).read_bytes()
        except OSError:
            return None
        return data if f"sha256:{sha256_bytes(data)}" == digest else None

    def put(self, label: str, uri: str, data: bytes) -> Path:
        """Store verified bytes (atomically: a reader never sees half a file)."""
        from agentpack.io.fsutil import atomic_write_bytes

        path = self.path(label, uri)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, data, durable=False)
        return path

    def refuse_inside(self, local_paths: list[Path], walked: tuple[str, ...] = ()) -> None:
        """An error when the cache lies inside a folder scanned for local skills or holds one: cached MCP content
        is never a local skill. Below a hidden folder it may lie, unless that is one of the hidden skill roots
        ``walked`` (``.claude/skills``...), which discovery enters in every folder."""
        root = os.path.realpath(self.root)
        for local in local_paths:
            real = os.path.realpath(local)
            inside = _within(root, real) and (not _hidden_between(root, real) or _under_walked(root, real, walked))
            if _within(real, root) or inside:
                raise AgentpackError(
                    f"the MCP skill cache {self.root} is inside {local}, which is scanned for local skills",
                    hint="set AGENTPACK_MCP_CACHE to a folder outside every skill folder",
                )


def _hidden_between(inner: str, outer: str) -> bool:
    """Whether a hidden folder lies between ``outer`` and ``inner``: skill discovery never enters one."""
    rest = os.path.relpath(inner, outer)
    return any(part.startswith(".") and part not in (".", "..") for part in rest.split(os.sep))


def _under_walked(inner: str, outer: str, walked: tuple[str, ...]) -> bool:
    rest = "/" + os.path.relpath(inner, outer).replace(os.sep, "/") + "/"
    return any(f"/{folder.strip('/')}/" in rest for folder in walked)


def _within(inner: str, outer: str) -> bool:
    return inner == outer or inner.startswith(outer.rstrip(os.sep) + os.sep)
