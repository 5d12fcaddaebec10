"""Profile requirements of spec 11.6, enforced by ``agentpack validate --strict``.

Each rule has its own code (ECP21x); the common safety rule (ECP201/ECP202)
is always checked by ``validate``. A profile given as an object, or no
profile, adds no rule; an unknown profile name is a warning.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlparse

from agentpack.io import jsonio
from agentpack.kernel.models import Finding

from ..pack.files import open_regular
from ..pack.manifest import ExpertPack, as_dict
from ..pack.spec import COMMIT_RE
from .artifacts import IndexArtifacts

PROFILES = ("conformance", "codebase", "docs", "web", "mixed")
RULES: dict[str, dict[str, Any]] = {
    "conformance": {
        "types": ("filesystem", "artifact"),
        "revision": {"filesystem": ("hash", "timestamp")},
        "index": True,
        "payloads": True,
        "chunks": {"filesystem": ("hash", "timestamp")},
        "no_remote": True,
        "relative_fs_uri": True,
    },
    "codebase": {
        "types": ("git", "filesystem"),
        "revision": {"git": ("commit", "timestamp"), "filesystem": ("hash", "timestamp")},
        "concrete_commit": True,
        "index": True,
        "payloads": True,
        "chunks": {"git": ("commit", "timestamp"), "filesystem": ("hash", "timestamp")},
    },
    "docs": {
        "types": ("filesystem", "git", "web"),
        "revision": {"git": ("commit", "timestamp"), "filesystem": ("hash", "timestamp"), "web": ("retrieved_at",)},
        "summary": True,
    },
    "web": {
        "types": ("web",),
        "revision": {"web": ("retrieved_at",)},
        "snapshot": True,
        "index": True,
        "payloads": True,
        "chunks": {"web": ("retrieved_at",)},
    },
    "mixed": {
        "min_sources": 2,
        "revision": {"git": ("commit", "timestamp"), "filesystem": ("hash", "timestamp"), "web": ("retrieved_at",)},
        "index": True,
        "summary": True,
        "payloads": True,
    },
}


def _chunk_revisions(art: IndexArtifacts) -> Iterator[tuple[int, dict[str, Any]]]:
    """Every chunks.jsonl record of an index (all of them, not a sample), with its line number; read
    again only when validation's sample did not cover the whole file."""
    if art.dir is None or not art.has_chunks:
        return
    if art.chunks_complete:
        yield from art.chunk_records
        return
    prov = (art.descriptor or {}).get("provenance") or {}
    path = art.dir / str(prov.get("chunks_path") or "chunks.jsonl")
    with open_regular(path, "r", encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            try:
                record = jsonio.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict):
                yield n, record


def profile_findings(pack: ExpertPack, arts: list[IndexArtifacts]) -> list[Finding]:
    profile = pack.manifest.get("profile")
    if not isinstance(profile, str):
        return []
    if profile not in RULES:
        return [
            Finding.warning(
                "ECP220",
                f"unknown profile '{profile}' (known: {', '.join(PROFILES)}); no profile rules applied",
                **pack.where("/profile"),
            )
        ]
    rules = RULES[profile]
    out: list[Finding] = []
    label = f"profile '{profile}'"
    types = rules.get("types")
    if types and not any(s.type in types for s in pack.sources):
        out.append(
            Finding.error(
                "ECP210", f"{label} needs at least one source of type {' or '.join(types)}", **pack.where("/sources")
            )
        )
    if len(pack.sources) < rules.get("min_sources", 0):
        out.append(
            Finding.error("ECP219", f"{label} needs at least {rules['min_sources']} sources", **pack.where("/sources"))
        )
    for source in pack.sources:
        needed = rules["revision"].get(source.type, ())
        missing = [k for k in needed if not source.revision.get(k)]
        if missing:
            out.append(
                Finding.error(
                    "ECP212",
                    f"{label}: {source.type} source '{source.source_id}' revision needs {', '.join(missing)}",
                    **pack.where(f"{source.pointer}/revision"),
                    hint="run agentpack ecp build to record the revision",
                )
            )
        commit = str(source.revision.get("commit") or "")
        if rules.get("concrete_commit") and source.type == "git" and commit and not COMMIT_RE.match(commit):
            out.append(
                Finding.error(
                    "ECP213",
                    f"{label}: git source '{source.source_id}' revision.commit must be a "
                    f"concrete commit hash, not '{commit}'",
                    **pack.where(f"{source.pointer}/revision/commit"),
                )
            )
        if rules.get("relative_fs_uri") and source.type == "filesystem":
            uri = source.uri
            parsed = urlparse(uri)
            if len(parsed.scheme) > 1 or uri.startswith("/") or ".." in PurePosixPath(uri).parts:
                out.append(
                    Finding.error(
                        "ECP211",
                        f"{label}: filesystem source '{source.source_id}' uri must be a "
                        "relative path under the skill root without '..'",
                        **pack.where(f"{source.pointer}/uri"),
                    )
                )
    if rules.get("index") and not pack.indexes:
        out.append(
            Finding.error(
                "ECP214",
                f"{label} needs at least one index in context.artifacts.indexes",
                **pack.where("/context/artifacts"),
            )
        )
    if rules.get("summary") and not pack.summaries:
        out.append(
            Finding.error(
                "ECP217",
                f"{label} needs at least one summary in context.artifacts.summaries",
                **pack.where("/context/artifacts"),
            )
        )
    if rules.get("snapshot") and not pack.snapshots:
        out.append(
            Finding.error(
                "ECP218",
                f"{label} needs at least one snapshot in context.artifacts.snapshots",
                **pack.where("/context/artifacts"),
            )
        )
    if rules.get("no_remote") and pack.security.get("allow_remote_llm") is not False:
        out.append(
            Finding.error("ECP215", f"{label}: security.allow_remote_llm must be false", **pack.where("/security"))
        )
    if rules.get("payloads"):
        for art in arts:
            if not art.has_payload or not art.has_chunks:
                out.append(
                    Finding.error(
                        "ECP214",
                        f"{label}: index '{art.entry.id}' needs an index_data.json payload "
                        "and a chunks.jsonl provenance map",
                        **pack.where(art.entry.pointer),
                        hint="run agentpack ecp build",
                    )
                )
    chunk_rules = rules.get("chunks") or {}
    types_by_id: dict[Any, str] = {s.source_id: s.type for s in pack.sources}
    for art in arts:
        if not chunk_rules:
            break
        prov = (art.descriptor or {}).get("provenance") or {}
        display = f"{art.entry.path}/{prov.get('chunks_path') or 'chunks.jsonl'}"
        for n, record in _chunk_revisions(art):
            sid = record.get("source_id")
            needed = chunk_rules.get(types_by_id.get(sid, "") if isinstance(sid, str) else "", ())
            revision = as_dict(record.get("revision"))
            missing = [k for k in needed if not revision.get(k)]
            if missing:
                out.append(
                    Finding.error(
                        "ECP216",
                        f"{label}: chunk '{record.get('chunk_id')}' revision lacks {', '.join(missing)}",
                        file=display,
                        line=n,
                        pointer="/revision",
                    )
                )
                break
    return out
