"""``agentpack ecp package``: a reproducible ZIP with ``expert/package.json`` (spec section 6.5).

Reproducible bytes: entries sorted by path, one fixed timestamp for every
entry (``SOURCE_DATE_EPOCH`` when set, else the newest modification time of the
packaged files), fixed permissions and compression, no directory entries, and
the same ``created_at`` in the manifest. Packaging the same tree twice gives
the same bytes.

Only declared parts of the pack are packaged: under ``expert/``, what EXPERT.yaml names
(``declared_paths``); anything else there (a stray index folder, a staging folder a killed build
left, a scratch file) is left out and listed in ``left_out``. The rest of the skill is packaged as
Agent Skills define it, minus ``DEFAULT_EXCLUDES``.
"""

from __future__ import annotations

import json
import os
import stat
import time
import zipfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError
from agentpack.io.hashing import sha256_bytes, sha256_file
from agentpack.io.paths import is_within
from agentpack.skills.skillmd import read_skill

from .. import __version__
from ..pack import layout
from ..pack.manifest import ExpertPack, as_dict, as_str, contains_secrets, load_pack
from ..sources.database import database_path
from ..sources.recipes import resolve_location

PACKAGE_VERSION = "1.0"
DEFAULT_EXCLUDES = [
    "**/.git/**",
    "**/__pycache__/**",
    "**/.env",
    "**/.env.*",
    "**/.DS_Store",
    "**/.backup/**",
    "expert/logs/**",
    "expert/context/.staging/**",
    "expert/context/.lifecycle/**",
]
LOGS_EXCLUDE = "expert/logs/**"
BACKUP_MARK = "/.backup/"
BACKUPS_EXCLUDE = "**/.backup/**"
ZIP_EPOCH_MIN = 315532800  # 1980-01-01T00:00:00Z, the earliest time a ZIP entry can carry


def package_sha256(manifest: dict[str, Any]) -> str:
    """SHA-256 of the canonical ``package.json``: without ``package_sha256`` and ``signatures``.

    Canonical form: ``json.dumps(value, indent=2, sort_keys=True)`` (ASCII escapes),
    the recipe ``ecpctl pack`` uses, so unsigned packages verify in both tools.
    """
    body = {k: v for k, v in manifest.items() if k not in ("package_sha256", "signatures")}
    return sha256_bytes(json.dumps(body, indent=2, sort_keys=True).encode("utf-8"))


def render_manifest(manifest: dict[str, Any]) -> bytes:
    return (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode("utf-8")


def exclude_spec(patterns: Iterable[str]):
    """A gitignore-style matcher (``pathspec``) for ``patterns``."""
    import pathspec

    return pathspec.PathSpec.from_lines("gitignore", list(patterns))


@dataclass(frozen=True)
class PackFile:
    path: str
    """POSIX path relative to the skill root."""
    source: Path
    size: int
    sha256: str
    mode: int


def collect_files(root: Path, excludes: list[str]) -> list[PackFile]:
    """Every file under ``root`` not matched by ``excludes``, sorted by path.

    A symlink to a file inside the pack is packaged as a regular file; a
    symlink that leaves the pack, or one to a directory, and a special file
    (a FIFO, socket or device) are errors.
    """
    spec = exclude_spec(excludes)
    root = Path(root)
    files: list[PackFile] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        rel_dir = base.relative_to(root).as_posix()
        for name in list(dirnames):
            rel = f"{rel_dir}/{name}" if rel_dir != "." else name
            if spec.match_file(rel + "/"):
                dirnames.remove(name)
            elif (base / name).is_symlink():
                raise AgentpackError(
                    f"'{rel}' is a symlink to a directory; packages hold regular files only",
                    file=str(base / name),
                    hint="replace it by a copy or exclude it",
                )
        dirnames.sort()
        for name in filenames:
            full = base / name
            rel = f"{rel_dir}/{name}" if rel_dir != "." else name
            if rel == layout.PACKAGE_JSON or spec.match_file(rel):
                continue
            if full.is_symlink() and (not is_within(root, full) or not full.is_file()):
                raise AgentpackError(
                    f"'{rel}' is a symlink that leaves the pack or is dangling",
                    file=str(full),
                    hint="replace it by a copy or exclude it",
                )
            st = full.stat()
            if not stat.S_ISREG(st.st_mode):
                raise AgentpackError(
                    f"'{rel}' is a special file (a FIFO, socket or device); packages hold regular files only",
                    file=str(full),
                    hint="remove it or exclude it (--exclude)",
                )
            files.append(PackFile(rel, full, st.st_size, sha256_file(full), st.st_mode))
    files.sort(key=lambda f: f.path)
    return files


def declared_paths(pack: ExpertPack) -> list[str]:
    """What EXPERT.yaml declares under the skill root: itself, the policy, playbook and suites, every
    index folder and descriptor, summary, snapshot and provenance file, and the local folder or
    database file of each source (paths relative to the skill root, files or folders)."""
    maintenance = as_dict(pack.manifest.get("maintenance"))
    provenance = as_dict(pack.artifacts.get("provenance"))
    paths = [layout.MANIFEST_PATH, pack.policy_path, as_str(maintenance.get("playbook_path"))]
    paths += [s.path for s in pack.suites] + [p for e in pack.indexes for p in (e.path, e.descriptor)]
    paths += [s.path for s in pack.summaries] + [s.path for s in pack.snapshots]
    paths += [as_str(provenance.get(k)) for k in ("chunks_path", "build_info_path")]
    for source in pack.sources:
        try:
            where = (
                database_path(source.uri, pack.root)
                if source.type == "database"
                else resolve_location(source.uri, pack.root)
            )
        except AgentpackError:
            continue
        if is_within(pack.root, where) and where != pack.root.resolve():
            paths.append(where.relative_to(pack.root.resolve()).as_posix())
    return sorted({p.strip("/") for p in paths if p and p.strip("/")})


def _left_out(rel: str, declared: list[str]) -> str | None:
    """``None`` when ``rel`` (a file under ``expert/``) is declared, else its topmost undeclared folder or itself."""
    if any(rel == d or rel.startswith(d + "/") for d in declared):
        return None
    parts = rel.split("/")
    for n in range(2, len(parts) + 1):
        prefix = "/".join(parts[:n])
        if not any(d == prefix or d.startswith(prefix + "/") for d in declared):
            return prefix
    return rel


def source_date_epoch(files: list[PackFile]) -> int:
    """``SOURCE_DATE_EPOCH`` when set, else the newest modification time of ``files``."""
    raw = os.environ.get("SOURCE_DATE_EPOCH")
    if raw is not None:
        try:
            return int(raw)
        except ValueError:
            raise AgentpackError(f"SOURCE_DATE_EPOCH must be an integer number of seconds, got '{raw}'") from None
    return max((int(f.source.stat().st_mtime) for f in files), default=ZIP_EPOCH_MIN)


def iso(epoch: int) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


def zip_info(name: str, epoch: int, executable: bool = False) -> zipfile.ZipInfo:
    """A ZIP entry header that depends only on ``name``, ``epoch`` and the executable bit."""
    stamp = time.gmtime(max(epoch, ZIP_EPOCH_MIN))[:6]
    info = zipfile.ZipInfo(name, date_time=stamp)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.create_system = 3
    info.external_attr = ((0o100755 if executable else 0o100644) & 0xFFFF) << 16
    return info


def write_zip(out: Path, entries: Sequence[tuple[zipfile.ZipInfo, Path | bytes]]) -> None:
    """Write ``entries`` to ``out`` through a temporary file and an atomic rename."""
    out = Path(out)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as archive:
            for info, content in entries:
                if isinstance(content, bytes):
                    archive.writestr(info, content, compresslevel=6)
                    continue
                info.file_size = content.stat().st_size
                with open(content, "rb") as src, archive.open(info, "w", force_zip64=info.file_size > 2**31) as dst:
                    while block := src.read(1 << 20):
                        dst.write(block)
        os.replace(tmp, out)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise AgentpackError(f"cannot write the package: {exc.strerror or exc}", file=str(out)) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def build_manifest(
    *,
    skill_root_dir: str,
    skill_name: str,
    ecp_version: str,
    excludes: list[str],
    files: list[PackFile],
    created_at: str,
) -> dict[str, Any]:
    manifest: dict[str, Any] = {
        "ecp_package_version": PACKAGE_VERSION,
        "created_at": created_at,
        "created_by": {"tool": "agentpack", "version": __version__},
        "skill_root_dir": skill_root_dir,
        "skill_name": skill_name,
        "ecp_version": ecp_version,
        "excludes": excludes,
        "files": [{"path": f.path, "sha256": f.sha256, "size": f.size} for f in files],
    }
    manifest["package_sha256"] = package_sha256(manifest)
    return manifest


def package_pack(
    root: Path,
    out: Path,
    *,
    extra_excludes: Iterable[str] = (),
    include_logs: bool = False,
    include_backups: bool = False,
    allow_secrets: bool = False,
) -> dict[str, Any]:
    """Package the pack at ``root`` into the ZIP ``out``; returns a summary (the CLI's JSON)."""
    pack = load_pack(root)
    root, doc, manifest = pack.root, pack.manifest_doc, pack.manifest
    if contains_secrets(manifest) and not allow_secrets:
        raise AgentpackError(
            "refusing to package a pack with security.contains_secrets: true (spec 5.5: it must not be "
            "distributed as an unencrypted archive)",
            file=layout.MANIFEST_PATH,
            line=doc.line_of("/security/contains_secrets"),
            hint="distribute it through an approved secure channel, or pass --allow-secrets if the archive "
            "will be encrypted",
        )
    skill = read_skill(root)
    if not skill.name:
        raise AgentpackError("SKILL.md has no 'name' in its frontmatter", file=str(root / "SKILL.md"), line=1)
    excludes = [
        p
        for p in DEFAULT_EXCLUDES
        if not (include_logs and p == LOGS_EXCLUDE) and not (include_backups and p == BACKUPS_EXCLUDE)
    ]
    excludes += [p for p in extra_excludes if p not in excludes]
    out = Path(out).resolve()
    declared = declared_paths(pack)
    kept = [p for p in (layout.LOGS if include_logs else "", BACKUP_MARK if include_backups else "") if p]
    files, left_out = [], set()
    for f in collect_files(root, excludes):
        if f.source.resolve() == out:
            continue
        undeclared = _left_out(f.path, declared) if f.path.startswith("expert/") else None
        if undeclared is not None and not any(k in f"/{f.path}" for k in kept):
            left_out.add(undeclared)
            continue
        files.append(f)
    epoch = source_date_epoch(files)
    package = build_manifest(
        skill_root_dir=root.name,
        skill_name=str(skill.name),
        ecp_version=str(manifest.get("ecp_version", "")),
        excludes=excludes,
        files=files,
        created_at=iso(epoch),
    )
    entries: list[tuple[zipfile.ZipInfo, Path | bytes]] = [
        (zip_info(f"{root.name}/{f.path}", epoch, bool(f.mode & 0o111)), f.source) for f in files
    ]
    entries.append((zip_info(f"{root.name}/{layout.PACKAGE_JSON}", epoch), render_manifest(package)))
    entries.sort(key=lambda e: e[0].filename)
    write_zip(out, entries)
    return {
        "package": str(out),
        "package_sha256": package["package_sha256"],
        "skill_name": package["skill_name"],
        "created_at": package["created_at"],
        "files": len(files) + 1,
        "bytes": sum(f.size for f in files),
        "excludes": excludes,
        "left_out": sorted(left_out),
        "archive_sha256": sha256_file(out),
    }
