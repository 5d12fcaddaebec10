"""Load and validate a manifest: YAML with lines, the bundled schema, then the checks a schema cannot do.

``load_manifest`` never raises for a user mistake: it returns the findings
(with file, line and JSON pointer) and a ``Manifest`` only when there are no
errors. Regexes are compiled, datasets read and paths resolved here, once.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import YamlError
from agentpack.io.yamlio import YamlDocument

from .. import schema_store
from .builder import Builder
from .model import Manifest, display_path, new_finding
from .reader import Document, read_document

if TYPE_CHECKING:  # pydantic and the graders load after ``rpc run`` has started the agent (``builder.early_target``)
    from agentpack.kernel.models import Finding

    from ..graders.base import GraderType


def _fast_valid(data: Any) -> bool:
    """The yes/no check against the full manifest schema (no jsonschema import on the happy path)."""
    from agentpack.io.quickschema import is_valid

    skeleton, by_type = schema_store.quick_schemas()
    verdict = is_valid(skeleton, data)
    if verdict:  # the skeleton holds: every grader entry is an object with a string type
        for scenario in data["scenarios"]:
            for step in scenario.get("steps") or ():
                for grader in step.get("graders") or ():
                    schema = by_type.get(grader["type"])
                    if schema is not None and not (verdict := is_valid(schema, grader)):
                        break
                if not verdict:
                    break
            if not verdict:
                break
    return schema_store.store().is_valid(schema_store.MANIFEST, data) if verdict is None else verdict


def _schema_findings(doc: YamlDocument) -> list[Finding]:
    """Schema errors as findings (file, line, pointer), in document order."""
    return schema_store.store().validate(schema_store.MANIFEST, doc.data, document=doc, code="ARP100")


def _friendlier(finding: Finding) -> Finding:
    """Schema messages a person can act on, where jsonschema's wording is cryptic."""
    if finding.message.endswith(" does not match '\\\\S'"):
        where = finding.message.split(": ", 1)[0]
        return finding.model_copy(update={"message": f"{where}: must not be empty or blank"})
    return finding


def yaml_error_finding(exc: YamlError, path: Path) -> Finding:
    """The finding (``ARP001``) for a manifest that cannot be read or parsed."""
    return new_finding(
        "error", "ARP001", exc.message, file=display_path(exc.file or path), line=exc.line, column=exc.column
    )


def load_manifest(
    path: Path,
    graders: dict[str, GraderType],
    *,
    strict: bool = False,
    portable: bool = False,
    document: Document | None = None,
) -> tuple[Manifest | None, list[Finding]]:
    """Validate the manifest at ``path`` (or its already read ``document``): ``(manifest or None, findings)``.

    ``strict`` adds the rules of ``rpc validate --strict``; ``portable`` the
    features ecp-runtime would reject or ignore (``portable``), which do not
    make the manifest invalid here.
    """
    path = Path(path)
    try:
        doc, raw = document or read_document(path)
    except YamlError as exc:
        return None, [yaml_error_finding(exc, path)]
    if not isinstance(doc.data, dict):
        return None, [
            new_finding(
                "error",
                "ARP002",
                "a manifest must be a YAML mapping with name, target and scenarios",
                file=display_path(path),
                line=1,
            )
        ]
    findings = [] if _fast_valid(doc.data) else [_friendlier(f) for f in _schema_findings(doc)]
    if any(f.severity == "error" for f in findings):
        return None, findings
    builder = Builder(doc, path.parent.resolve(), graders)
    from agentpack.io.hashing import sha256_small

    manifest = builder.build(path, "sha256:" + sha256_small(raw))
    findings += builder.findings
    if strict:
        findings += _strict_findings(doc, manifest)
    if any(f.severity == "error" for f in findings):
        manifest = None
    if portable:  # errors, but about another runtime: the manifest still runs here
        from ..portable import portable_findings

        findings += portable_findings(doc)
    return manifest, findings


def _strict_findings(doc: YamlDocument, manifest: Manifest | None) -> list[Finding]:
    """Rules ``--strict`` adds: explicit version, graded steps, current field names, a runnable command."""
    import shutil

    found: list[Finding] = []
    data = doc.data
    if "manifest_version" not in data:
        found.append(new_finding("error", "ARP201", "strict: set manifest_version: v1", **doc.where("")))
    for s_index, scenario in enumerate(data["scenarios"]):
        for i, step in enumerate(scenario.get("steps") or []):
            pointer = f"/scenarios/{s_index}/steps/{i}"
            if not step.get("graders"):
                found.append(new_finding("error", "ARP202", "strict: step has no graders", **doc.where(pointer)))
            for g_index, grader in enumerate(step.get("graders") or []):
                if grader.get("field") == "private_thought":
                    found.append(
                        new_finding(
                            "error",
                            "ARP203",
                            "strict: 'private_thought' is deprecated; use 'evaluation_context'",
                            **doc.where(f"{pointer}/graders/{g_index}/field"),
                        )
                    )
    command = manifest.target.command if manifest is not None else None
    if manifest is not None and isinstance(command, list) and not manifest.target.shell:
        program = command[0]
        cwd = manifest.target.cwd or "."
        if shutil.which(program) is None and not (Path(cwd) / program).exists():
            found.append(
                new_finding("error", "ARP204", f"strict: program '{program}' not found on PATH", **doc.where("/target"))
            )
    return found


def start_hint(manifest: Manifest) -> str:
    """A hint for an agent that did not start, when a file its command names is found from another folder.

    Without ``cwd:`` the agent starts in the caller's working directory (as
    with ecp-runtime): a manifest written for its own folder, or one that
    ``ecp init`` wrote to be run from its parent, then names files that are
    not there. Looks in the manifest's folder and the two above it; empty
    when the file is in none of them (or the manifest sets ``cwd:``).
    """
    target = manifest.target
    if target.cwd is not None or target.command is None:
        return ""
    try:
        words = shlex.split(target.command) if isinstance(target.command, str) else target.command
    except ValueError:
        return ""
    here = Path.cwd()
    for word in words:
        if word.startswith("-") or os.path.isabs(word) or (here / word).exists():
            continue
        for folder in (manifest.root, *manifest.root.parents[:2]):
            if (folder / word).exists():
                fix = f"add 'cwd: {os.path.relpath(folder, manifest.root)}' to the manifest"
                if folder != manifest.root:
                    fix = f"run from {folder}, or {fix}"
                return (
                    f"\nhint: without 'cwd:' the agent starts in the current directory ({here}), as with "
                    f"ecp-runtime; '{word}' is found from {folder}: {fix}"
                )
    return ""
