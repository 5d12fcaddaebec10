"""ed25519 package signatures (spec 6.5.1) with the ``cryptography`` package.

A signature signs the ASCII bytes of ``package_sha256``; since that hash covers
every file's hash and the rest of the manifest (but not ``signatures``), adding
signatures never changes it. ``key_id`` is the first 16 hex digits of the
SHA-256 of the raw 32-byte public key, so it can be checked against
``public_key``.
"""

from __future__ import annotations

import base64
import binascii
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentpack.io.clock import SYSTEM_CLOCK
from agentpack.io.errors import AgentpackError, require
from agentpack.io.fsutil import atomic_write_bytes
from agentpack.io.hashing import sha256_bytes

from .package import iso

ALGORITHM = "ed25519"


def _crypto():
    require("cryptography", distribution="agentpack-ecp", feature="package signatures")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519

    return serialization, ed25519


def key_id(raw_public: bytes) -> str:
    return sha256_bytes(raw_public)[:16]


def _raw_public(public_key) -> bytes:
    serialization, _ = _crypto()
    return public_key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def generate_keypair(out: Path, *, force: bool = False) -> dict[str, str]:
    """Write a new private key to ``out`` (PKCS#8 PEM, mode 0600) and its public key to ``out.pub``."""
    serialization, ed25519 = _crypto()
    out = Path(out)
    pub = out.with_name(out.name + ".pub")
    for path in (out, pub):
        if path.exists() and not force:
            raise AgentpackError(f"{path} already exists", hint="choose another path or pass --force")
    private = ed25519.Ed25519PrivateKey.generate()
    public = private.public_key()
    try:
        atomic_write_bytes(
            out,
            private.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            ),
            mode=0o600,
        )
        atomic_write_bytes(
            pub, public.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )
    except OSError as exc:
        raise AgentpackError(f"cannot write the key: {exc.strerror or exc}", file=str(out)) from None
    return {"private_key": str(out), "public_key": str(pub), "key_id": key_id(_raw_public(public))}


def load_private_key(path: Path):
    serialization, ed25519 = _crypto()
    try:
        key = serialization.load_pem_private_key(Path(path).read_bytes(), password=None)
    except OSError as exc:
        raise AgentpackError(f"cannot read private key: {exc.strerror}", file=str(path)) from None
    except (ValueError, TypeError) as exc:
        raise AgentpackError(
            f"not an unencrypted PEM private key: {exc}",
            file=str(path),
            hint="create one with 'agentpack ecp keygen KEYFILE'",
        ) from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise AgentpackError("the private key is not an ed25519 key", file=str(path))
    return key


def load_public_key(path: Path) -> bytes:
    """The raw 32 bytes of an ed25519 public key from a PEM file (or a private key file)."""
    serialization, ed25519 = _crypto()
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise AgentpackError(f"cannot read public key: {exc.strerror}", file=str(path)) from None
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError:
        return _raw_public(load_private_key(path).public_key())
    if not isinstance(key, ed25519.Ed25519PublicKey):
        raise AgentpackError("the public key is not an ed25519 key", file=str(path))
    return _raw_public(key)


def sign(package_hash: str, private_key, signed_at: str) -> dict[str, Any]:
    """A ``signatures[]`` entry for ``package_hash``."""
    raw = _raw_public(private_key.public_key())
    signature = private_key.sign(package_hash.encode("ascii"))
    return {
        "algorithm": ALGORITHM,
        "key_id": key_id(raw),
        "signed_at": signed_at,
        "signed_payload": "package_sha256",
        "signature": base64.b64encode(signature).decode("ascii"),
        "public_key": base64.b64encode(raw).decode("ascii"),
    }


@dataclass
class SignatureCheck:
    index: int
    key_id: str | None
    valid: bool
    trusted: bool
    message: str
    raw_public: bytes | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "key_id": self.key_id,
            "valid": self.valid,
            "trusted": self.trusted,
            "message": self.message,
        }


def _b64(value: Any) -> bytes | None:
    if not isinstance(value, str):
        return None
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None


def check_signature(index: int, entry: Any, package_hash: str, trusted: list[bytes]) -> SignatureCheck:
    """Check one ``signatures[]`` entry against ``package_hash``; ``trusted`` are raw public keys."""
    _, ed25519 = _crypto()
    from cryptography.exceptions import InvalidSignature

    if not isinstance(entry, dict):
        return SignatureCheck(index, None, False, False, "signature entry is not an object")
    kid = entry.get("key_id") if isinstance(entry.get("key_id"), str) else None
    algorithm = entry.get("algorithm")
    if algorithm != ALGORITHM:
        return SignatureCheck(index, kid, False, False, f"unsupported signature algorithm {algorithm!r}")
    raw = _b64(entry.get("public_key"))
    if raw is None and trusted and len(trusted) == 1:
        raw = trusted[0]
    if raw is None or len(raw) != 32:
        return SignatureCheck(index, kid, False, False, "public_key is missing or not a base64 ed25519 key")
    if kid is not None and kid != key_id(raw):
        return SignatureCheck(
            index, kid, False, False, f"key_id {kid} does not match the public key (fingerprint {key_id(raw)})"
        )
    signature = _b64(entry.get("signature"))
    if signature is None:
        return SignatureCheck(index, kid, False, False, "signature is missing or not base64")
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(raw).verify(signature, package_hash.encode("ascii"))
    except InvalidSignature:
        return SignatureCheck(
            index,
            kid,
            False,
            raw in trusted,
            f"signature by key {kid or key_id(raw)} does not match package_sha256 "
            "(the package was changed after signing, or signed with another key)",
            raw,
        )
    is_trusted = raw in trusted
    note = "valid, by a trusted key" if is_trusted else "valid, but the key is not among the trusted keys"
    return SignatureCheck(index, kid or key_id(raw), True, is_trusted, note, raw)


def signed_at_now() -> str:
    """``SOURCE_DATE_EPOCH`` when set (reproducible signing), else the current time."""
    raw = os.environ.get("SOURCE_DATE_EPOCH")
    return iso(int(raw)) if raw and raw.isdigit() else SYSTEM_CLOCK.iso()
