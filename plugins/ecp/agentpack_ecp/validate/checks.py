"""Validating an Expert Context Pack (spec sections 2-8 and 11): findings with stable codes.

``validate_pack(pack, strict) -> list[Finding]`` (``pack`` is the loaded
``ExpertPack``). Every code is listed in ``docs/ecp.md``; SKILL.md itself is
checked by the core (SKL codes); built indexes by ``artifacts.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from agentpack.io.clock import SYSTEM_CLOCK
from agentpack.io.errors import AgentpackError
from agentpack.io.paths import check_relative, links_out, resolve_under
from agentpack.kernel.models import Finding

from ..pack import leftovers
from ..pack.files import file_kind, read_json_doc
from ..pack.layout import LIFECYCLE, PACKAGE_JSON, has_skill_md
from ..pack.manifest import ExpertPack, as_dict, as_list
from ..pack.ranking import ranking_settings
from ..pack.schemas import MANIFEST_SCHEMA, PACKAGE_SCHEMA, POLICY_SCHEMA, SUITE_SCHEMA, schema_store
from ..pack.spec import COMMIT_RE, KNOWN_ASSERTIONS, REVISION_IDENTITY
from ..sources.recipes import DEFAULT_MAX_FILE_BYTES
from ..sources.snapshot import snapshot_source
from .artifacts import REVISION_TIMES, IndexArtifacts, check_dimensions, check_times, load_index_artifacts
from .profiles import profile_findings

REVISION_KEYS = {
    "git": ("commit", "timestamp"),
    "filesystem": ("hash", "timestamp"),
    "artifact": ("hash", "timestamp"),
    "web": ("retrieved_at",),
    "database": ("timestamp",),
}


def manifest_schema_findings(pack: ExpertPack) -> list[Finding]:
    return schema_store().validate(MANIFEST_SCHEMA, pack.manifest, document=pack.manifest_doc, code="ECP100")


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
                **pack.where(pointer),
                hint="paths in EXPERT.yaml are relative to the skill root, with '/' separators",
            )
        )
        return None
    if not target.exists():
        make = Finding.error if required else Finding.warning
        kind = "is a dangling or looping symbolic link" if os.path.islink(pack.root / rel) else "does not exist"
        out.append(make("ECP111", f"{what} '{rel}' {kind}", **pack.where(pointer)))
        return None
    return target


def _check_markdown(pack: ExpertPack, rel: str, pointer: str, out: list[Finding], *, what: str) -> None:
    """A declared Markdown file (a summary, the playbook): there, a regular file of UTF-8 text
    (ECP111), and more than headings or TODO (ECP112, a warning)."""
    target = _declared_path(pack, rel, pointer, out, what=what)
    if target is None:
        return
    text, problem = None, file_kind(target)
    if problem is None:
        try:
            text = target.read_bytes().decode("utf-8-sig")
        except UnicodeDecodeError:
            problem = "not UTF-8 text"
        except OSError as exc:
            problem = f"unreadable ({exc.strerror or exc})"
    if text is None:
        out.append(Finding.error("ECP111", f"{what} '{rel}' is {problem}, not a Markdown file", **pack.where(pointer)))
    elif _placeholder(text):
        out.append(
            Finding.warning(
                "ECP112", f"{what} ({rel}) is an empty placeholder (only headings or TODO)", **pack.where(pointer)
            )
        )


def _placeholder(text: str) -> bool:
    body = [line.strip() for line in text.splitlines() if line.strip() and not line.strip().startswith("#")]
    return not body or all(
        re.fullmatch(r"(?i)[-*_.>\s]*(todo|tbd|placeholder|lorem ipsum|coming soon)\W*", b) for b in body
    )


def _check_skill_md(pack: ExpertPack, out: list[Finding]) -> None:
    """SKILL.md must be a file (spec 4): missing, a folder or a broken link is ECP103 (its content is the
    core's SKL checks)."""
    if has_skill_md(pack.root):
        return
    kind = file_kind(pack.root / "SKILL.md")
    found = "is missing" if kind is None or kind.startswith("nothing") else f"is {kind}, not a file"
    out.append(
        Finding.error(
            "ECP103",
            f"SKILL.md {found}: an Expert Context Pack is an Agent Skill (spec 3, 4)",
            file="SKILL.md",
            hint="write SKILL.md with name and description frontmatter (agentpack ecp init shows one)",
        )
    )


def _check_linkage(pack: ExpertPack, out: list[Finding]) -> None:
    name = (pack.manifest.get("skill") or {}).get("name") if isinstance(pack.manifest.get("skill"), dict) else None
    if not isinstance(name, str):
        return
    where = pack.where("/skill/name")
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
                    **pack.where(f"{source.pointer}/source_id"),
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
                    **pack.where(f"{source.pointer}/revision"),
                )
            )
        check_times(
            source.revision,
            tuple(f"/{k}" for k in REVISION_TIMES),
            out,
            lambda p, s=source: pack.where(f"{s.pointer}/revision{p}"),
        )
        commit = source.revision.get("commit")
        if source.type == "git" and commit is not None and not COMMIT_RE.match(str(commit)):
            out.append(
                Finding.warning(
                    "ECP122",
                    f"source '{sid}': revision.commit '{commit}' is not a concrete commit hash",
                    **pack.where(f"{source.pointer}/revision/commit"),
                )
            )
        if "\\" in source.uri:
            out.append(
                Finding.error(
                    "ECP110",
                    f"source '{sid}': uri '{source.uri}' must use '/' separators",
                    **pack.where(f"{source.pointer}/uri"),
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
    doc = pack.policy_doc
    if doc is None:
        return
    out.extend(schema_store().validate(POLICY_SCHEMA, doc.data, document=doc, code="ECP140"))
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
                    **doc.where(f"/validation/eval_suites/{i}"),
                )
            )


def _check_suites(pack: ExpertPack, out: list[Finding]) -> None:
    seen: set[str] = set()
    for ref in pack.suites:
        pointer = f"/evals/suites/{ref.index}"
        if ref.suite_id in seen:
            out.append(
                Finding.error(
                    "ECP156", f"suite_id '{ref.suite_id}' is declared twice", **pack.where(f"{pointer}/suite_id")
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
        suite_doc = ref.doc
        if suite_doc is None:
            continue
        out.extend(schema_store().validate(SUITE_SCHEMA, suite_doc.data, document=suite_doc, code="ECP150"))
        data = ref.data
        if data.get("suite_id") not in (None, ref.suite_id):
            out.append(
                Finding.error(
                    "ECP152",
                    f"the file says suite_id '{data.get('suite_id')}' but EXPERT.yaml declares '{ref.suite_id}'",
                    **suite_doc.where("/suite_id"),
                )
            )
        case_ids: set[str] = set()
        for i, case in enumerate(as_list(data.get("cases"))):
            if not isinstance(case, dict):
                continue
            cid = case.get("case_id")
            if not isinstance(cid, str):  # the schema finding says why
                continue
            if cid in case_ids:
                out.append(
                    Finding.error(
                        "ECP153",
                        f"case_id '{cid}' appears twice in suite '{ref.suite_id}'",
                        **suite_doc.where(f"/cases/{i}/case_id"),
                    )
                )
            case_ids.add(cid)
            assertions = case.get("assertions")
            if not assertions:
                out.append(
                    Finding.warning("ECP155", f"case '{cid}' has no assertions", **suite_doc.where(f"/cases/{i}"))
                )
                continue
            if not isinstance(assertions, dict):
                continue
            for key in assertions:
                if key not in KNOWN_ASSERTIONS:
                    out.append(
                        Finding.warning(
                            "ECP151",
                            f"case '{cid}': unknown assertion '{key}' (ignored)",
                            **suite_doc.where(f"/cases/{i}/assertions/{key}"),
                        )
                    )
            for j, pattern in enumerate(as_list(assertions.get("answer_must_match"))):
                if not isinstance(pattern, str):
                    continue
                try:
                    re.compile(pattern)
                except re.error as exc:
                    out.append(
                        Finding.error(
                            "ECP154",
                            f"case '{cid}': invalid regular expression: {exc}",
                            **suite_doc.where(f"/cases/{i}/assertions/answer_must_match/{j}"),
                        )
                    )


def _check_summaries_and_snapshots(pack: ExpertPack, strict: bool, out: list[Finding]) -> None:
    for s in pack.summaries:
        if s.path:
            _check_markdown(pack, s.path, f"/context/artifacts/summaries/{s.index}/path", out, what=f"summary '{s.id}'")
    for snap in pack.snapshots:
        if snap.path:
            _declared_path(
                pack,
                snap.path,
                f"/context/artifacts/snapshots/{snap.index}/path",
                out,
                what="snapshot path",
                required=strict,
            )
    playbook = (
        (pack.manifest.get("maintenance") or {}).get("playbook_path")
        if isinstance(pack.manifest.get("maintenance"), dict)
        else None
    )
    if isinstance(playbook, str) and playbook:
        _check_markdown(pack, playbook, "/maintenance/playbook_path", out, what="the playbook")
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


def _check_staleness(pack: ExpertPack, arts: list[IndexArtifacts], out: list[Finding]) -> None:
    """An index whose recorded source revision no longer matches the source is stale (warning)."""
    current: dict[str, dict[str, Any] | None] = {}
    for art in arts:
        if not art.data:
            continue
        config = as_dict(art.data.get("config"))
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
                        **pack.where(art.entry.pointer),
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
                            **pack.where(source.pointer),
                        )
                    )
                    current[key] = None
            now = current[key]
            if now is None:
                continue
            before = as_dict(recorded.get("revision"))
            keys = [k for k in REVISION_IDENTITY if k in before and k in now and k not in ("retrieved_at",)]
            changed = [k for k in keys if before[k] != now[k]]
            if changed:
                out.append(
                    Finding.warning(
                        "ECP135",
                        f"index '{art.entry.id}' is stale: source '{source.source_id}' changed since it was "
                        f"built ({', '.join(f'{k} {str(before[k])[:12]} -> {str(now[k])[:12]}' for k in changed)})",
                        **pack.where(art.entry.pointer),
                        hint="run agentpack ecp build",
                    )
                )


def _check_leftovers(pack: ExpertPack, strict: bool, out: list[Finding]) -> None:
    """What killed runs left (ECP113): an unfinished publish journal, staging folders. Nothing
    serves them, but a pack in that state is not what its files say until they are dealt with."""
    make = Finding.error if strict else Finding.warning
    journal_file = f"{LIFECYCLE}/journal.json"
    if os.path.lexists(pack.root / journal_file):
        out.append(
            make(
                "ECP113",
                "an interrupted publish is pending: the next query, build, refresh or prune finishes it",
                file=journal_file,
                hint="run agentpack ecp prune",
            )
        )
    for rel in leftovers.find(pack.root, [e.path for e in pack.indexes]):
        out.append(
            make(
                "ECP113",
                f"{rel} was left by a killed build or refresh",
                file=rel,
                hint="agentpack ecp prune (or the next build or refresh) deletes it",
            )
        )


def _check_security(pack: ExpertPack, out: list[Finding]) -> None:
    sec = pack.security
    if sec.get("allow_remote_llm") is True and not sec.get("allowed_remote_llm_providers"):
        out.append(
            Finding.error(
                "ECP201",
                "security.allow_remote_llm is true without a non-empty allowed_remote_llm_providers allowlist",
                **pack.where("/security/allow_remote_llm"),
            )
        )
    if sec.get("contains_secrets") is True and sec.get("allow_remote_llm") is True:
        out.append(
            Finding.error(
                "ECP202",
                "a pack that contains secrets must not allow remote LLM synthesis",
                **pack.where("/security/allow_remote_llm"),
            )
        )


def _check_package(pack: ExpertPack, out: list[Finding]) -> None:
    path = pack.root / PACKAGE_JSON
    if not os.path.lexists(path):
        return
    try:
        doc = read_json_doc(path, PACKAGE_JSON)
    except AgentpackError as exc:
        out.append(Finding.error("ECP170", exc.message, file=PACKAGE_JSON, line=exc.line))
        return
    out.extend(schema_store().validate(PACKAGE_SCHEMA, doc.data, document=doc, code="ECP170"))
    check_times(doc.data, ("/created_at",), out, doc.where)
    for i, signature in enumerate(as_dict(doc.data).get("signatures") or []):
        check_times(signature, ("/signed_at",), out, lambda p, i=i: doc.where(f"/signatures/{i}{p}"))


def _check_links(pack: ExpertPack, out: list[Finding]) -> None:
    """ECP114: a symbolic link whose target leaves the pack root (never followed: build skips it)."""
    for rel, target in links_out(pack.root):
        out.append(
            Finding.error(
                "ECP114",
                f"'{rel}' is a symbolic link to '{target}', outside the pack root; agentpack never follows it",
                file=rel,
                hint="copy what it points to into the pack, or remove the link",
            )
        )


def _check_ranking(pack: ExpertPack, out: list[Finding]) -> None:
    """``context.ranking`` (role weights and patterns, diversity) as a query reads it."""
    try:
        ranking_settings(pack)
    except AgentpackError as exc:
        out.append(Finding.error("ECP190", exc.message, file=exc.file, line=exc.line))


def validate_pack(pack: ExpertPack, strict: bool = False) -> list[Finding]:
    """Every finding for ``pack``; ``strict`` adds the profile rules of spec 11.6."""
    out = manifest_schema_findings(pack)
    _check_links(pack, out)
    _check_skill_md(pack, out)
    _check_linkage(pack, out)
    _check_sources(pack, strict, out)
    _check_policy(pack, out)
    _check_suites(pack, out)
    _check_summaries_and_snapshots(pack, strict, out)
    _check_security(pack, out)
    _check_package(pack, out)
    _check_ranking(pack, out)
    _check_leftovers(pack, strict, out)
    seen: set[str] = set()
    arts = []
    for entry in pack.indexes:
        if entry.id in seen:
            out.append(
                Finding.error("ECP130", f"index id '{entry.id}' is declared twice", **pack.where(f"{entry.pointer}/id"))
            )
        seen.add(entry.id)
        if entry.format is None and entry.type:
            out.append(
                Finding.warning(
                    "ECP130",
                    f"index '{entry.id}': type '{entry.type}' has no portable format agentpack can build or query",
                    **pack.where(f"{entry.pointer}/type"),
                )
            )
        check_dimensions(entry.embedding.get("dimensions"), out, **pack.where(f"{entry.pointer}/embedding/dimensions"))
        arts.append(load_index_artifacts(pack, entry, out, strict))
    _check_staleness(pack, arts, out)
    if strict:
        out.extend(profile_findings(pack, arts))
    return out
