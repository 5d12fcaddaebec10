"""``agentpack ecp verify``: integrity and authenticity of a packaged (ZIP) or unpacked pack.

A ZIP is checked without extracting it: entry names that are absolute, climb
out with ``..`` or use backslashes (zip-slip), symlink entries, encrypted or
duplicate entries, entries outside the skill root directory, too many entries,
oversized or highly compressed content (bombs) are refused before any byte is
hashed, and hashing stops as soon as an entry yields more bytes than it
declares. Every listed file must match its sha256 and size, and no file may be
present that ``package.json`` does not list.
"""

from __future__ import annotations

import hashlib
import os
import stat
import zipfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError, PathEscapeError
from agentpack.io.paths import check_relative
from agentpack.kernel.models import Finding

from ..pack import layout
from ..pack.schemas import PACKAGE_SCHEMA, SIGNATURE_SCHEMA, schema_store
from .package import exclude_spec, package_sha256
from .signing import check_signature


@dataclass(frozen=True)
class Limits:
    """Defences against archive bombs; every figure can be raised from the CLI."""

    max_entries: int = 50_000
    max_total_bytes: int = 2 * 1024**3
    max_ratio: float = 200.0
    """Largest uncompressed/compressed ratio for an entry bigger than ``ratio_floor_bytes``."""
    ratio_floor_bytes: int = 1 << 20
    max_manifest_bytes: int = 32 * 1024**2


@dataclass
class VerifyResult:
    path: str
    kind: str
    findings: list[Finding] = field(default_factory=list)
    package_sha256: str | None = None
    skill_name: str | None = None
    checked_files: int = 0
    signatures: list[dict[str, Any]] = field(default_factory=list)
    trusted_signature: bool = False

    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)

    def error(self, code: str, message: str, file: str | None = None, hint: str | None = None) -> None:
        self.findings.append(Finding.error(code, message, file=file or self.path, hint=hint))

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "kind": self.kind,
            "ok": self.ok,
            "package_sha256": self.package_sha256,
            "skill_name": self.skill_name,
            "checked_files": self.checked_files,
            "signatures": self.signatures,
            "trusted_signature": self.trusted_signature,
            "findings": [f.model_dump(mode="json", exclude_none=True) for f in self.findings],
        }


class _Stop(Exception):
    """Verification cannot go on (the error is already recorded)."""


# -- shared checks -----------------------------------------------------------------------------
def _bare(value: Any) -> str:
    """A hex digest without its optional ``sha256:`` prefix, lower case."""
    text = str(value or "").lower()
    return text[7:] if text.startswith("sha256:") else text


def _check_manifest(result: VerifyResult, raw: bytes, where: str) -> dict[str, Any]:
    try:
        manifest = jsonio.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        result.error("ECPK011", f"package.json is not valid UTF-8 JSON: {exc}", where)
        raise _Stop from None
    if not isinstance(manifest, dict):
        result.error("ECPK011", "package.json must be a JSON object", where)
        raise _Stop
    for finding in schema_store().validate(PACKAGE_SCHEMA, manifest, file=where, code="ECPK012"):
        result.findings.append(finding)
    if not isinstance(manifest.get("files"), list):
        raise _Stop
    result.skill_name = manifest.get("skill_name") if isinstance(manifest.get("skill_name"), str) else None
    declared = _bare(manifest.get("package_sha256"))
    actual = package_sha256(manifest)
    result.package_sha256 = actual
    if declared != actual:
        result.error(
            "ECPK013",
            f"package_sha256 mismatch: package.json says {declared}, its content hashes to "
            f"{actual} (package.json was edited after packaging)",
            where,
        )
    return manifest


def _listed_files(result: VerifyResult, manifest: dict[str, Any], where: str) -> dict[str, dict[str, Any]]:
    listed: dict[str, dict[str, Any]] = {}
    for i, entry in enumerate(manifest["files"]):
        if not isinstance(entry, dict) or not isinstance(entry.get("path"), str):
            continue  # reported by the schema
        try:
            path = check_relative(entry["path"]).as_posix()
        except PathEscapeError as exc:
            result.error("ECPK024", f"files[{i}].path: {exc.message}", where)
            continue
        if path == layout.PACKAGE_JSON:
            result.error("ECPK024", f"files[{i}] lists {layout.PACKAGE_JSON} itself", where)
        elif path in listed:
            result.error("ECPK025", f"files[{i}]: '{path}' is listed twice", where)
        else:
            listed[path] = entry
    return listed


def _hash_stream(handle: IO[bytes], limit: int) -> tuple[str, int, bool]:
    """sha256 and size of ``handle``, reading at most ``limit + 1`` bytes; third value: limit exceeded."""
    digest = hashlib.sha256()
    total = 0
    while block := handle.read(min(1 << 20, limit + 1 - total)):
        total += len(block)
        digest.update(block)
        if total > limit:
            return digest.hexdigest(), total, True
    return digest.hexdigest(), total, False


def _compare(result: VerifyResult, path: str, entry: dict[str, Any], digest: str, size: int, where: str) -> None:
    result.checked_files += 1
    expected_size = entry.get("size")
    if isinstance(expected_size, int) and expected_size != size:
        result.error("ECPK022", f"'{path}' has {size} bytes, package.json says {expected_size}", where)
    elif _bare(entry.get("sha256")) != digest:
        result.error("ECPK021", f"'{path}' does not match its sha256 in package.json (the file was changed)", where)


def _check_signatures(
    result: VerifyResult, manifest: dict[str, Any], trusted: list[bytes], require_signature: bool, where: str
) -> None:
    entries = manifest.get("signatures") or []
    if not isinstance(entries, list):
        return  # reported by the schema
    if result.package_sha256 is None or _bare(manifest.get("package_sha256")) != result.package_sha256:
        if entries:
            result.error("ECPK030", "signatures not checked: package_sha256 does not match the package", where)
        return
    for entry in entries:
        result.findings += schema_store().validate(SIGNATURE_SCHEMA, entry, file=where, code="ECPK012")
    checks = [check_signature(i, e, result.package_sha256, trusted) for i, e in enumerate(entries)]
    result.signatures = [c.as_dict() for c in checks]
    for check in checks:
        if not check.valid:
            result.error("ECPK030", f"signatures[{check.index}]: {check.message}", where)
    result.trusted_signature = any(c.valid and c.trusted for c in checks)
    if trusted and not result.trusted_signature:
        signers = ", ".join(sorted({c.key_id or "?" for c in checks})) or "nobody"
        result.error(
            "ECPK031",
            f"the package is not signed by any of the given keys (signed by: {signers})",
            where,
            hint="check that --key names the publisher's public key",
        )
    elif require_signature and not any(c.valid for c in checks):
        result.error(
            "ECPK032",
            "the package has no valid signature",
            where,
            hint="sign it with 'agentpack ecp sign PACKAGE --key KEYFILE'",
        )


# -- ZIP ---------------------------------------------------------------------------------------
def _entry_problem(name: str) -> str | None:
    if "\x00" in name:
        return "contains a NUL byte"
    if "\\" in name:
        return "uses a backslash (a Windows path separator)"
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        return "is an absolute path"
    if ".." in PurePosixPath(name).parts:
        return "climbs out of the extraction directory with '..'"
    return None


def _scan_entries(
    result: VerifyResult, archive: zipfile.ZipFile, limits: Limits
) -> tuple[str, dict[str, zipfile.ZipInfo]]:
    infos = archive.infolist()
    if len(infos) > limits.max_entries:
        result.error(
            "ECPK004",
            f"the archive has {len(infos)} entries, more than the limit of {limits.max_entries}",
            hint="raise --max-entries if this is expected",
        )
        raise _Stop
    files: dict[str, zipfile.ZipInfo] = {}
    tops: set[str] = set()
    total = 0
    for info in infos:
        name = info.filename
        problem = _entry_problem(name)
        if problem:
            result.error("ECPK002", f"unsafe entry name '{name}': it {problem} (zip-slip)")
            continue
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            result.error("ECPK003", f"entry '{name}' is a symbolic link; packages hold regular files only")
            continue
        if info.flag_bits & 0x1:
            result.error("ECPK006", f"entry '{name}' is encrypted")
            continue
        tops.add(name.split("/", 1)[0])
        if info.is_dir():
            continue
        if name in files:
            result.error("ECPK005", f"entry '{name}' appears twice in the archive")
            continue
        total += info.file_size
        if info.file_size > limits.ratio_floor_bytes and info.file_size > limits.max_ratio * max(info.compress_size, 1):
            result.error(
                "ECPK007",
                f"entry '{name}' expands {info.file_size // max(info.compress_size, 1)}x "
                f"(limit {limits.max_ratio:g}x): refusing a likely zip bomb",
            )
        files[name] = info
    if total > limits.max_total_bytes:
        result.error(
            "ECPK004",
            f"the archive expands to {total} bytes, more than the limit of {limits.max_total_bytes}",
            hint="raise --max-bytes if this is expected",
        )
    if not result.ok:
        raise _Stop
    if len(tops) != 1 or any("/" not in n for n in files):
        result.error(
            "ECPK008",
            "the archive must hold exactly one top-level directory (the skill root); found "
            + (", ".join(sorted(tops)) or "nothing"),
        )
        raise _Stop
    return tops.pop(), files


def verify_zip(path: Path, *, trusted: list[bytes], require_signature: bool, limits: Limits) -> VerifyResult:
    result = VerifyResult(path=str(path), kind="zip")
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        result.error("ECPK001", f"not a readable ZIP archive: {exc}")
        return result
    with archive:
        try:
            root, entries = _scan_entries(result, archive, limits)
            pkg_name = f"{root}/{layout.PACKAGE_JSON}"
            info = entries.get(pkg_name)
            if info is None:
                result.error(
                    "ECPK010", f"the archive has no {pkg_name}", hint="create packages with 'agentpack ecp package'"
                )
                raise _Stop
            where = f"{path}!{pkg_name}"
            if info.file_size > limits.max_manifest_bytes:
                result.error("ECPK004", f"{pkg_name} is larger than {limits.max_manifest_bytes} bytes", where)
                raise _Stop
            with archive.open(info) as handle:
                raw = handle.read(limits.max_manifest_bytes + 1)
            manifest = _check_manifest(result, raw, where)
            if manifest.get("skill_root_dir") != root:
                result.error(
                    "ECPK008",
                    f"skill_root_dir is {manifest.get('skill_root_dir')!r} but the archive's "
                    f"root directory is '{root}'",
                    where,
                )
            listed = _listed_files(result, manifest, where)
            for name in sorted(entries):
                rel = name[len(root) + 1 :]
                if rel != layout.PACKAGE_JSON and rel not in listed:
                    result.error("ECPK023", f"'{rel}' is in the archive but not listed in package.json", where)
            for rel, entry in sorted(listed.items()):
                info = entries.get(f"{root}/{rel}")
                if info is None:
                    result.error("ECPK020", f"'{rel}' is listed in package.json but missing from the archive", where)
                    continue
                with archive.open(info) as handle:
                    digest, size, over = _hash_stream(handle, info.file_size)
                if over:
                    result.error("ECPK007", f"'{rel}' yields more bytes than its header declares", where)
                    continue
                _compare(result, rel, entry, digest, size, where)
            _check_signatures(result, manifest, trusted, require_signature, where)
        except _Stop:
            pass
        except (zipfile.BadZipFile, EOFError, zipfile.LargeZipFile) as exc:
            result.error("ECPK001", f"corrupt archive: {exc}")
    return result


# -- directory ---------------------------------------------------------------------------------
def _find_root(path: Path) -> Path:
    if (path / layout.PACKAGE_JSON).is_file():
        return path
    children = [c for c in sorted(path.iterdir()) if (c / layout.PACKAGE_JSON).is_file()] if path.is_dir() else []
    return children[0] if len(children) == 1 else path


def _walk(root: Path) -> Iterable[tuple[str, Path]]:
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        rel_dir = base.relative_to(root).as_posix()
        for name in sorted(dirnames + filenames):
            full = base / name
            rel = name if rel_dir == "." else f"{rel_dir}/{name}"
            if full.is_symlink() or (name in filenames and not full.is_dir()):
                yield rel, full


def verify_directory(path: Path, *, trusted: list[bytes], require_signature: bool) -> VerifyResult:
    root = _find_root(Path(path))
    result = VerifyResult(path=str(root), kind="directory")
    where = str(root / layout.PACKAGE_JSON)
    try:
        try:
            raw = (root / layout.PACKAGE_JSON).read_bytes()
        except OSError:
            result.error(
                "ECPK010",
                f"{layout.PACKAGE_JSON} not found under {root}",
                hint="only packaged (or unpacked) packs carry a package manifest",
            )
            raise _Stop from None
        manifest = _check_manifest(result, raw, where)
        if manifest.get("skill_root_dir") != root.name:
            result.findings.append(
                Finding.warning(
                    "ECPK009",
                    f"the directory is named '{root.name}' but skill_root_dir is {manifest.get('skill_root_dir')!r}",
                    file=where,
                )
            )
        listed = _listed_files(result, manifest, where)
        excluded = exclude_spec(x for x in manifest.get("excludes") or [] if isinstance(x, str))
        for rel, full in _walk(root):
            if full.is_symlink():
                result.error("ECPK003", f"'{rel}' is a symbolic link; packages hold regular files only", str(full))
            elif rel not in listed and rel != layout.PACKAGE_JSON and not excluded.match_file(rel):
                result.error("ECPK023", f"'{rel}' is not listed in package.json", str(full))
        for rel, entry in sorted(listed.items()):
            full = root / rel
            if full.is_symlink():
                continue  # reported above
            if not full.is_file():
                result.error("ECPK020", f"'{rel}' is listed in package.json but missing", where)
                continue
            with open(full, "rb") as handle:
                digest, size, _ = _hash_stream(handle, full.stat().st_size)
            _compare(result, rel, entry, digest, size, where)
        _check_signatures(result, manifest, trusted, require_signature, where)
    except _Stop:
        pass
    return result


def verify(
    path: Path, *, trusted: Iterable[bytes] = (), require_signature: bool = False, limits: Limits = Limits()
) -> VerifyResult:
    """Verify a package ZIP or an unpacked pack directory."""
    path = Path(path)
    trusted_keys = list(trusted)
    if path.is_dir():
        return verify_directory(path, trusted=trusted_keys, require_signature=require_signature)
    if not path.exists():
        raise AgentpackError(f"{path} does not exist")
    return verify_zip(path, trusted=trusted_keys, require_signature=require_signature, limits=limits)
