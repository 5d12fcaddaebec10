"""``agentpack ecp sign``: add a signature to a package that verifies (never to a tampered one)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError
from agentpack.io.fsutil import atomic_write_bytes

from ..pack import layout
from .package import render_manifest, write_zip
from .signing import load_private_key, sign, signed_at_now
from .verify import verify


def sign_package(path: Path, key_file: Path, *, replace: bool = False) -> dict[str, Any]:
    """Add an ed25519 signature to the package ZIP or unpacked pack at ``path``.

    The package must verify first (a tampered package is never signed). A
    signature by the same key replaces the old one with ``replace``, else it is
    an error.
    """
    private = load_private_key(key_file)
    result = verify(path)
    if not result.ok:
        first = next(f for f in result.findings if f.severity == "error")
        raise AgentpackError(
            f"refusing to sign a package that does not verify: {first.message}",
            file=str(path),
            hint="run 'agentpack ecp verify' for every problem",
        )
    entry = sign(str(result.package_sha256), private, signed_at_now())
    path = Path(path)
    if path.is_dir():
        target = Path(result.path) / layout.PACKAGE_JSON
        manifest = json.loads(target.read_bytes())
        manifest["signatures"] = _merge(manifest.get("signatures") or [], entry, replace)
        atomic_write_bytes(target, render_manifest(manifest), mode=target.stat().st_mode & 0o777)  # a shared file
    else:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
            name = next(
                i.filename
                for i in infos
                if i.filename.endswith("/" + layout.PACKAGE_JSON) and i.filename.count("/") == 2
            )
            manifest = json.loads(archive.read(name))
            manifest["signatures"] = _merge(manifest.get("signatures") or [], entry, replace)
            entries = [
                (info, render_manifest(manifest) if info.filename == name else archive.read(info)) for info in infos
            ]
        write_zip(path, entries)
    return {
        "package": str(path),
        "package_sha256": result.package_sha256,
        "key_id": entry["key_id"],
        "signed_at": entry["signed_at"],
        "signatures": len(manifest["signatures"]),
    }


def _merge(existing: list[Any], entry: dict[str, Any], replace: bool) -> list[Any]:
    same = [e for e in existing if isinstance(e, dict) and e.get("key_id") == entry["key_id"]]
    if same and not replace:
        raise AgentpackError(
            f"the package is already signed by key {entry['key_id']}", hint="pass --replace to sign it again"
        )
    return [e for e in existing if e not in same] + [entry]
