"""Validating an Expert Context Pack (spec sections 2-8 and 11): findings with stable codes.

Public, stable API: ``validate_pack(pack, strict) -> list[Finding]`` (``pack`` is
an ``ExpertPack``) and ``manifest_schema_findings(pack)``. Every code is listed
in ``docs/ecp.md``; SKILL.md itself is checked by the core (SKL codes).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentpack.errors import AgentpackError
from agentpack.models import Finding
from agentpack.paths import check_relative, resolve_under

from ..evals import KNOWN_ASSERTIONS
from ..index.chunking import parse_chunk_id
from ..pack.manifest import MANIFEST_PATH, MANIFEST_SCHEMA, ExpertPack, IndexEntry, read_json_doc

SCHEMA_BASE = "https://ecp.amcrypto.org/ecp/schemas/"
POLICY_SCHEMA = SCHEMA_BASE + "ecp-policy.schema.json"
SUITE_SCHEMA = SCHEMA_BASE + "ecp-eval-suite.schema.json"
DESCRIPTOR_SCHEMA = SCHEMA_BASE + "ecp-index-descriptor.schema.json"
CHUNK_SCHEMA = SCHEMA_BASE + "ecp-chunk-provenance.schema.json"
PACKAGE_SCHEMA = SCHEMA_BASE + "ecp-package.schema.json"
PAYLOAD_SCHEMAS = {
    "keyword-index-v2": SCHEMA_BASE + "ecp-keyword-index.schema.json",
    "sqlite-fts-index-v1": SCHEMA_BASE + "ecp-sqlite-fts-index.schema.json",
    "vector-index-v1": SCHEMA_BASE + "ecp-vector-index.schema.json",
}
REVISION_KEYS = {
    "git": ("commit", "timestamp"),
    "filesystem": ("hash", "timestamp"),
    "artifact": ("hash", "timestamp"),
    "web": ("retrieved_at",),
    "database": ("timestamp",),
}
COMMIT_RE = re.compile(r"^[0-9a-f]{7,64}$")
CHUNK_SAMPLE = 500
PAYLOAD_SAMPLE = 200


def schemas():
    """The bundled ECP schemas (loaded once)."""
    from ..pack.layout import schema_store

    return schema_store()


@dataclass
class IndexArtifacts:
    """What validation read of one built index (``None`` fields were missing or unreadable)."""

    entry: IndexEntry
    dir: Path | None = None
    descriptor: dict[str, Any] | None = None
    data: dict[str, Any] | None = None
    chunk_records: list[dict[str, Any]] = field(default_factory=list)
    has_chunks: bool = False


def manifest_schema_findings(pack: ExpertPack) -> list[Finding]:
    return schemas().validate(MANIFEST_SCHEMA, pack.manifest, document=pack.manifest_doc, code="ECP100")


def _where(pack: ExpertPack, pointer: str) -> dict[str, Any]:
    return pack.manifest_doc.where(pointer)


def _declared_path(
    pack: ExpertPack, rel: str, pointer: str, out: list[Finding], *, what: str, required: bool = True
) -> Path | None:
    """Check a declared path (relative, POSIX, inside the root) and that it exists."""
    try:
        check_relative(rel)
        target = resolve_under(pack.root, rel)
    except AgentpackError as exc:
        out.append(
            Finding.error(
                "ECP110",
                f"{what}: {exc.message}",
                **_where(pack, pointer),
                hint="paths in EXPERT.yaml are relative to the skill root, with '/' separators",
            )
        )
        return None
    if not target.exists():
        make = Finding.error if required else Finding.warning
        out.append(make("ECP111", f"{what} '{rel}' does not exist", **_where(pack, pointer)))
        return None
    return target


def _placeholder(text: str) -> bool:
    body = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return not body or all(
        re.fullmatch(r"(?i)[-*_.>\s]*(todo|tbd|placeholder|lorem ipsum|coming soon)\W*", b) for b in body
    )


def _check_linkage(pack: ExpertPack, out: list[Finding]) -> None:
    name = (pack.manifest.get("skill") or {}).get("name") if isinstance(pack.manifest.get("skill"), dict) else None
    if not isinstance(name, str):
        return
    where = _where(pack, "/skill/name")
    if pack.skill is not None and pack.skill.name and pack.skill.name != name:
        out.append(
            Finding.error("ECP101", f"skill.name '{name}' differs from the SKILL.md name '{pack.skill.name}'", **where)
        )
    if pack.root.name != name:
        out.append(
            Finding.error(
                "ECP102", f"skill.name '{name}' differs from the skill directory name '{pack.root.name}'", **where
            )
        )


def _check_sources(pack: ExpertPack, strict: bool, out: list[Finding]) -> None:
    seen: dict[str, int] = {}
    for source in pack.sources:
        sid = source.source_id
        if sid in seen:
            out.append(
                Finding.error(
                    "ECP120",
                    f"source_id '{sid}' is declared twice (also sources[{seen[sid]}])",
                    **_where(pack, f"{source.pointer}/source_id"),
                )
            )
        seen.setdefault(sid, source.index)
        missing = [k for k in REVISION_KEYS.get(source.type, ()) if k not in source.revision]
        if missing:
            out.append(
                Finding.warning(
                    "ECP121",
                    f"source '{sid}' ({source.type}): revision lacks "
                    f"{', '.join(missing)} (run agentpack ecp build to record them)",
                    **_where(pack, f"{source.pointer}/revision"),
                )
            )
        commit = source.revision.get("commit")
        if source.type == "git" and commit is not None and not COMMIT_RE.match(str(commit)):
            out.append(
                Finding.warning(
                    "ECP122",
                    f"source '{sid}': revision.commit '{commit}' is not a concrete commit hash",
                    **_where(pack, f"{source.pointer}/revision/commit"),
                )
            )
        if "\\" in source.uri:
            out.append(
                Finding.error(
                    "ECP110",
                    f"source '{sid}': uri '{source.uri}' must use '/' separators",
                    **_where(pack, f"{source.pointer}/uri"),
                )
            )


def _check_policy(pack: ExpertPack, out: list[Finding]) -> None:
    rel = pack.policy_path
    if not rel or _declared_path(pack, rel, "/maintenance/policy_path", out, what="maintenance.policy_path") is None:
        return
    if pack.policy_error is not None:
        err = pack.policy_error
        out.append(Finding.error("ECP140", err.message, file=err.file or rel, line=err.line, column=err.column))
        return
    out.extend(schemas().validate(POLICY_SCHEMA, pack.policy_doc.data, document=pack.policy_doc, code="ECP140"))
    suite_ids = {s.suite_id for s in pack.suites}
    wanted = (
        (pack.policy.get("validation") or {}).get("eval_suites")
        if isinstance(pack.policy.get("validation"), dict)
        else None
    )
    for i, sid in enumerate(wanted or []):
        if isinstance(sid, str) and sid not in suite_ids:
            out.append(
                Finding.error(
                    "ECP141",
                    f"validation.eval_suites names '{sid}', which EXPERT.yaml does not declare in evals.suites",
                    **pack.policy_doc.where(f"/validation/eval_suites/{i}"),
                )
            )


def _check_suites(pack: ExpertPack, out: list[Finding]) -> None:
    seen: set[str] = set()
    for ref in pack.suites:
        pointer = f"/evals/suites/{ref.index}"
        if ref.suite_id in seen:
            out.append(
                Finding.error(
                    "ECP156", f"suite_id '{ref.suite_id}' is declared twice", **_where(pack, f"{pointer}/suite_id")
                )
            )
        seen.add(ref.suite_id)
        if not ref.path or _declared_path(pack, ref.path, f"{pointer}/path", out, what="evals suite path") is None:
            continue
        if ref.error is not None:
            out.append(
                Finding.error(
                    "ECP150",
                    ref.error.message,
                    file=ref.error.file or ref.path,
                    line=ref.error.line,
                    column=ref.error.column,
                )
            )
            continue
        out.extend(schemas().validate(SUITE_SCHEMA, ref.doc.data, document=ref.doc, code="ECP150"))
        data = ref.data
        if data.get("suite_id") not in (None, ref.suite_id):
            out.append(
                Finding.error(
                    "ECP152",
                    f"the file says suite_id '{data.get('suite_id')}' but EXPERT.yaml declares '{ref.suite_id}'",
                    **ref.doc.where("/suite_id"),
                )
            )
        case_ids: set[str] = set()
        for i, case in enumerate(data.get("cases") or []):
            if not isinstance(case, dict):
                continue
            cid = case.get("case_id")
            if cid in case_ids:
                out.append(
                    Finding.error(
                        "ECP153",
                        f"case_id '{cid}' appears twice in suite '{ref.suite_id}'",
                        **ref.doc.where(f"/cases/{i}/case_id"),
                    )
                )
            case_ids.add(cid)
            assertions = case.get("assertions")
            if not assertions:
                out.append(Finding.warning("ECP155", f"case '{cid}' has no assertions", **ref.doc.where(f"/cases/{i}")))
                continue
            if not isinstance(assertions, dict):
                continue
            for key in assertions:
                if key not in KNOWN_ASSERTIONS:
                    out.append(
                        Finding.warning(
                            "ECP151",
                            f"case '{cid}': unknown assertion '{key}' (ignored)",
                            **ref.doc.where(f"/cases/{i}/assertions/{key}"),
                        )
                    )
            for j, pattern in enumerate(assertions.get("answer_must_match") or []):
                try:
                    re.compile(str(pattern))
                except re.error as exc:
                    out.append(
                        Finding.error(
                            "ECP154",
                            f"case '{cid}': invalid regular expression: {exc}",
                            **ref.doc.where(f"/cases/{i}/assertions/answer_must_match/{j}"),
                        )
                    )


def _check_summaries_and_snapshots(pack: ExpertPack, out: list[Finding]) -> None:
    for s in pack.summaries:
        pointer = f"/context/artifacts/summaries/{s.index}/path"
        target = _declared_path(pack, s.path, pointer, out, what=f"summary '{s.id}'") if s.path else None
        if target is not None and target.is_file():
            if _placeholder(target.read_text(encoding="utf-8", errors="replace")):
                out.append(
                    Finding.error(
                        "ECP112", f"summary '{s.id}' ({s.path}) is an empty placeholder", **_where(pack, pointer)
                    )
                )
    for snap in pack.snapshots:
        if snap.path:
            _declared_path(
                pack, snap.path, f"/context/artifacts/snapshots/{snap.index}/path", out, what="snapshot path"
            )
    playbook = (
        (pack.manifest.get("maintenance") or {}).get("playbook_path")
        if isinstance(pack.manifest.get("maintenance"), dict)
        else None
    )
    if isinstance(playbook, str) and playbook:
        target = _declared_path(pack, playbook, "/maintenance/playbook_path", out, what="maintenance.playbook_path")
        if target is not None and target.is_file() and _placeholder(target.read_text("utf-8", errors="replace")):
            out.append(
                Finding.warning(
                    "ECP112",
                    f"the playbook ({playbook}) is an empty placeholder",
                    **_where(pack, "/maintenance/playbook_path"),
                )
            )
    prov = pack.artifacts.get("provenance")
    if isinstance(prov, dict):
        for key in ("chunks_path", "build_info_path"):
            if isinstance(prov.get(key), str):
                _declared_path(
                    pack,
                    prov[key],
                    f"/context/artifacts/provenance/{key}",
                    out,
                    what=f"provenance.{key}",
                    required=False,
                )


def _sample_payload(data: dict[str, Any]) -> dict[str, Any]:
    sample = dict(data)
    for key in ("documents", "terms"):
        if isinstance(data.get(key), dict) and len(data[key]) > PAYLOAD_SAMPLE:
            sample[key] = dict(list(data[key].items())[:PAYLOAD_SAMPLE])
    return sample


def load_index_artifacts(pack: ExpertPack, entry: IndexEntry, out: list[Finding]) -> IndexArtifacts:
    """Read and check one index's descriptor, payload and provenance."""
    art = IndexArtifacts(entry)
    pointer = entry.pointer
    if not entry.path or not entry.descriptor:
        return art
    try:
        check_relative(entry.path)
        check_relative(entry.descriptor)
        art.dir = resolve_under(pack.root, entry.path)
        descriptor_path = resolve_under(pack.root, entry.descriptor)
    except AgentpackError as exc:
        out.append(Finding.error("ECP110", f"index '{entry.id}': {exc.message}", **_where(pack, pointer)))
        return art
    if not descriptor_path.is_file():
        if not art.dir.exists():
            out.append(
                Finding.warning(
                    "ECP136",
                    f"index '{entry.id}' is not built yet",
                    **_where(pack, f"{pointer}/path"),
                    hint="run agentpack ecp build",
                )
            )
        else:
            out.append(
                Finding.error(
                    "ECP134",
                    f"index '{entry.id}': descriptor {entry.descriptor} is missing",
                    **_where(pack, f"{pointer}/descriptor"),
                )
            )
        return art
    try:
        doc = read_json_doc(descriptor_path, entry.descriptor)
    except AgentpackError as exc:
        out.append(Finding.error("ECP131", exc.message, file=entry.descriptor, line=exc.line, column=exc.column))
        return art
    out.extend(schemas().validate(DESCRIPTOR_SCHEMA, doc.data, document=doc, code="ECP131"))
    if not isinstance(doc.data, dict):
        return art
    art.descriptor = doc.data
    for key, expected in (("index_id", entry.id), ("type", entry.type)):
        if doc.data.get(key) != expected:
            out.append(
                Finding.error(
                    "ECP132",
                    f"descriptor {key} '{doc.data.get(key)}' differs from the index entry '{expected}'",
                    **doc.where(f"/{key}"),
                )
            )
    chunking = doc.data.get("chunking") if isinstance(doc.data.get("chunking"), dict) else {}
    for key, value in entry.chunking.items():
        if key in ("max_chars", "overlap_chars") and chunking.get(key) != value:
            out.append(
                Finding.warning(
                    "ECP132",
                    f"index '{entry.id}' asks for chunking.{key} {value} but was built "
                    f"with {chunking.get(key)} (rebuild it)",
                    **doc.where(f"/chunking/{key}"),
                )
            )
    prov = doc.data.get("provenance") if isinstance(doc.data.get("provenance"), dict) else {}
    _load_payload(pack, art, prov, out)
    _load_chunks(pack, art, prov, out)
    return art


def _under_index(art: IndexArtifacts, rel: Any, what: str, out: list[Finding]) -> Path | None:
    try:
        check_relative(str(rel))
        return resolve_under(art.dir, str(rel))
    except AgentpackError as exc:
        out.append(Finding.error("ECP110", f"index '{art.entry.id}': {what}: {exc.message}", file=art.entry.descriptor))
        return None


def _load_payload(pack: ExpertPack, art: IndexArtifacts, prov: dict, out: list[Finding]) -> None:
    entry = art.entry
    rel = prov.get("index_data_path") or "index_data.json"
    path = _under_index(art, rel, "provenance.index_data_path", out)
    display = f"{entry.path}/{rel}"
    if path is None:
        return
    if not path.is_file():
        out.append(
            Finding.error(
                "ECP134",
                f"index '{entry.id}': payload {display} is missing",
                file=entry.descriptor,
                hint="run agentpack ecp build",
            )
        )
        return
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        out.append(Finding.error("ECP133", f"index payload is not valid JSON: {exc}", file=display))
        return
    if not isinstance(data, dict):
        out.append(Finding.error("ECP133", "index payload must be a JSON object", file=display))
        return
    fmt = data.get("format")
    if fmt not in PAYLOAD_SCHEMAS:
        out.append(
            Finding.error(
                "ECP133",
                f"unknown index payload format '{fmt}' (expected one of {', '.join(PAYLOAD_SCHEMAS)})",
                file=display,
                pointer="/format",
            )
        )
        return
    for f in schemas().validate(PAYLOAD_SCHEMAS[fmt], _sample_payload(data), file=display, code="ECP133"):
        out.append(f)
    art.data = data
    if data.get("index_id") != entry.id:
        out.append(
            Finding.error(
                "ECP132",
                f"payload index_id '{data.get('index_id')}' differs from the index entry '{entry.id}'",
                file=display,
                pointer="/index_id",
            )
        )
    expects_vector = entry.type == "vector"
    if expects_vector != (fmt == "vector-index-v1") and entry.type in ("vector", "keyword"):
        out.append(
            Finding.error(
                "ECP132",
                f"index '{entry.id}' has type '{entry.type}' but a {fmt} payload",
                file=display,
                pointer="/format",
            )
        )
    if fmt == "sqlite-fts-index-v1":
        db = (data.get("sqlite") or {}).get("path") if isinstance(data.get("sqlite"), dict) else None
        target = _under_index(art, db or "fts.sqlite", "sqlite.path", out)
        if target is not None and not target.is_file():
            out.append(
                Finding.error(
                    "ECP134",
                    f"index '{entry.id}': SQLite database {db} is missing",
                    file=display,
                    pointer="/sqlite/path",
                )
            )
    if fmt == "vector-index-v1":
        config = data.get("config") if isinstance(data.get("config"), dict) else {}
        vcfg = config.get("vector") if isinstance(config.get("vector"), dict) else {}
        target = _under_index(art, vcfg.get("vectors_path") or "vectors.jsonl", "config.vector.vectors_path", out)
        if target is not None and not target.is_file():
            out.append(
                Finding.error(
                    "ECP134",
                    f"index '{entry.id}': vector payload {vcfg.get('vectors_path')} is missing",
                    file=display,
                    pointer="/config/vector/vectors_path",
                )
            )
        emb = config.get("embedding") if isinstance(config.get("embedding"), dict) else {}
        desc_emb = (art.descriptor or {}).get("embedding") or {}
        if (
            desc_emb
            and emb
            and (desc_emb.get("model"), desc_emb.get("dimensions")) != (emb.get("model"), emb.get("dimensions"))
        ):
            out.append(
                Finding.error(
                    "ECP132",
                    f"index '{entry.id}': descriptor embedding differs from the payload's",
                    file=entry.descriptor,
                    pointer="/embedding",
                )
            )
    for i, doc in enumerate(list((data.get("documents") or {}).values())[:2000]):
        path_value = doc.get("path") if isinstance(doc, dict) else None
        if isinstance(path_value, str):
            try:
                check_relative(path_value)
            except AgentpackError as exc:
                out.append(Finding.error("ECP138", f"document path: {exc.message}", file=display, pointer="/documents"))
                break


def _load_chunks(pack: ExpertPack, art: IndexArtifacts, prov: dict, out: list[Finding]) -> None:
    entry = art.entry
    rel = prov.get("chunks_path") or "chunks.jsonl"
    path = _under_index(art, rel, "provenance.chunks_path", out)
    display = f"{entry.path}/{rel}"
    if path is None or not path.is_file():
        if path is not None:
            out.append(
                Finding.error(
                    "ECP134", f"index '{entry.id}': provenance map {display} is missing", file=entry.descriptor
                )
            )
        return
    art.has_chunks = True
    known = {s.source_id for s in pack.sources} | {"ecp_artifacts"}
    store = schemas()
    with open(path, encoding="utf-8") as handle:
        for n, line in enumerate(handle, 1):
            if n > CHUNK_SAMPLE:
                break
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as exc:
                out.append(Finding.error("ECP137", f"not JSON: {exc}", file=display, line=n))
                continue
            problems = store.validate(CHUNK_SCHEMA, record, file=display, code="ECP137")
            out.extend(f.model_copy(update={"line": n}) for f in problems)
            if problems or not isinstance(record, dict):
                continue
            art.chunk_records.append(record)
            parts = parse_chunk_id(record["chunk_id"])
            loc = record["loc"]
            if parts is None or parts != (
                record["source_id"],
                record["artifact_path"],
                loc.get("start_line"),
                loc.get("end_line"),
            ):
                out.append(
                    Finding.warning(
                        "ECP138",
                        f"chunk_id '{record['chunk_id']}' is not the canonical "
                        "<source_id>::<path>#L<a>-L<b> of its record",
                        file=display,
                        line=n,
                        pointer="/chunk_id",
                    )
                )
            try:
                check_relative(record["artifact_path"])
            except AgentpackError as exc:
                out.append(
                    Finding.error(
                        "ECP138", f"artifact_path: {exc.message}", file=display, line=n, pointer="/artifact_path"
                    )
                )
            if record["source_id"] not in known:
                out.append(
                    Finding.error(
                        "ECP139",
                        f"chunk cites source_id '{record['source_id']}', which EXPERT.yaml does not declare",
                        file=display,
                        line=n,
                        pointer="/source_id",
                    )
                )


def _check_staleness(pack: ExpertPack, arts: list[IndexArtifacts], out: list[Finding]) -> None:
    """An index whose recorded source revision no longer matches the source is stale (warning)."""
    from agentpack.clock import SYSTEM_CLOCK

    from ..index.build import REVISION_IDENTITY
    from ..sources.snapshot import DEFAULT_MAX_FILE_BYTES, snapshot_source

    current: dict[str, dict[str, Any] | None] = {}
    for art in arts:
        if not art.data:
            continue
        config = art.data.get("config") if isinstance(art.data.get("config"), dict) else {}
        max_bytes = int(config.get("max_file_bytes") or DEFAULT_MAX_FILE_BYTES)
        for recorded in art.data.get("sources") or []:
            if not isinstance(recorded, dict):
                continue
            source = pack.source(str(recorded.get("source_id")))
            if source is None:
                out.append(
                    Finding.warning(
                        "ECP135",
                        f"index '{art.entry.id}' holds source '"
                        f"{recorded.get('source_id')}', no longer declared (stale)",
                        **_where(pack, art.entry.pointer),
                    )
                )
                continue
            key = f"{source.source_id}:{max_bytes}"
            if key not in current:
                try:
                    pinned = source.revision if source.type == "git" else None
                    current[key] = snapshot_source(
                        pack, source, clock=SYSTEM_CLOCK, max_file_bytes=max_bytes, revision=pinned
                    ).revision
                except AgentpackError as exc:
                    out.append(
                        Finding.warning(
                            "ECP123",
                            f"source '{source.source_id}' cannot be read: {exc.message}",
                            **_where(pack, source.pointer),
                        )
                    )
                    current[key] = None
            now = current[key]
            if now is None:
                continue
            before = recorded.get("revision") if isinstance(recorded.get("revision"), dict) else {}
            keys = [k for k in REVISION_IDENTITY if k in before and k in now and k not in ("retrieved_at",)]
            changed = [k for k in keys if before[k] != now[k]]
            if changed:
                out.append(
                    Finding.warning(
                        "ECP135",
                        f"index '{art.entry.id}' is stale: source '{source.source_id}' changed since it was "
                        f"built ({', '.join(f'{k} {str(before[k])[:12]} -> {str(now[k])[:12]}' for k in changed)})",
                        **_where(pack, art.entry.pointer),
                        hint="run agentpack ecp build",
                    )
                )


def _check_security(pack: ExpertPack, out: list[Finding]) -> None:
    sec = pack.security
    if sec.get("allow_remote_llm") is True and not sec.get("allowed_remote_llm_providers"):
        out.append(
            Finding.error(
                "ECP201",
                "security.allow_remote_llm is true without a non-empty allowed_remote_llm_providers allowlist",
                **_where(pack, "/security/allow_remote_llm"),
            )
        )
    if sec.get("contains_secrets") is True and sec.get("allow_remote_llm") is True:
        out.append(
            Finding.error(
                "ECP202",
                "a pack that contains secrets must not allow remote LLM synthesis",
                **_where(pack, "/security/allow_remote_llm"),
            )
        )


def _check_package(pack: ExpertPack, out: list[Finding]) -> None:
    path = pack.root / "expert" / "package.json"
    if not path.is_file():
        return
    try:
        doc = read_json_doc(path, "expert/package.json")
    except AgentpackError as exc:
        out.append(Finding.error("ECP170", exc.message, file="expert/package.json", line=exc.line))
        return
    out.extend(schemas().validate(PACKAGE_SCHEMA, doc.data, document=doc, code="ECP170"))


def validate_pack(pack: ExpertPack, strict: bool = False) -> list[Finding]:
    """Every finding for ``pack``; ``strict`` adds the profile rules of spec 11.6."""
    out = manifest_schema_findings(pack)
    _check_linkage(pack, out)
    _check_sources(pack, strict, out)
    _check_policy(pack, out)
    _check_suites(pack, out)
    _check_summaries_and_snapshots(pack, out)
    _check_security(pack, out)
    _check_package(pack, out)
    seen: set[str] = set()
    arts = []
    for entry in pack.indexes:
        if entry.id in seen:
            out.append(
                Finding.error(
                    "ECP130", f"index id '{entry.id}' is declared twice", **_where(pack, f"{entry.pointer}/id")
                )
            )
        seen.add(entry.id)
        if entry.format is None and entry.type:
            out.append(
                Finding.warning(
                    "ECP130",
                    f"index '{entry.id}': type '{entry.type}' has no portable format agentpack can build or query",
                    **_where(pack, f"{entry.pointer}/type"),
                )
            )
        arts.append(load_index_artifacts(pack, entry, out))
    _check_staleness(pack, arts, out)
    if strict:
        from .profiles import profile_findings

        out.extend(profile_findings(pack, arts))
    return out


__all__ = ["MANIFEST_PATH", "IndexArtifacts", "load_index_artifacts", "manifest_schema_findings", "validate_pack"]
