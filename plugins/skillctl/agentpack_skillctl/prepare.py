"""A skill checked and made ready to run, cached in-process until one of its contract files changes."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError, PackError
from agentpack.io.yamldoc import YamlDocument
from agentpack.kernel.records import Record

from . import diskcache
from .access import (
    ACCESS_FILE,
    AccessManifest,
    Grants,
    check_skill,
    find_access_file,
    grants,
    load_access,
)
from .diskcache import stamp
from .io_schemas import schema_problem
from .manifest import MANIFEST, JsonSchema, SkillManifest, load_skill, schema_refs

if TYPE_CHECKING:
    from agentpack.kernel.models import Finding


LoadedAccess = tuple["AccessManifest | None", "list[Finding]"]
"""What ``access.load_access`` gives: the manifest (None when unusable) and its findings."""


class SkillInvalidError(AgentpackError):
    """The skill's contract has errors, so it is not run."""

    def __init__(self, skill_file: str, findings: list[Finding]) -> None:
        first = findings[0]
        more = f" (and {len(findings) - 1} more; run 'agentpack validate')" if len(findings) > 1 else ""
        super().__init__(
            f"the skill cannot run: {first.code} {first.message}{more}", file=first.file or skill_file, line=first.line
        )
        self.findings = findings


class Prepared(Record):
    """A skill ready to run: contract, grants, loaded schemas, resolved ``argv`` and ``cwd``, file stamps."""

    __slots__ = ("skill", "grants", "access", "input_schema", "output_schema", "argv", "cwd", "signature")
    skill: SkillManifest
    grants: Grants
    access: AccessManifest | None
    input_schema: dict[str, Any]
    """An object schema: a skill whose input schema is not one does not run (SKC132)."""
    output_schema: JsonSchema
    argv: list[str]
    cwd: Path
    signature: tuple


_CACHE: dict[str, Prepared] = {}
KIND = "prepared"
PLUGIN_FILES = (
    "prepare.py",
    "manifest.py",
    "access.py",
    "validation.py",
    "globs.py",
    "schemas/skill.schema.json",
    "schemas/access-manifest.schema.json",
)
"""Plugin files whose change invalidates every prepared-skill cache entry (an editable install changes them)."""


def _contract_files(real: str, skill: SkillManifest) -> list[str]:
    """The files a prepared skill was derived from: skill.yaml, the access manifest, schemas, command files."""
    files = [os.path.join(real, MANIFEST), os.path.join(os.path.dirname(real), ACCESS_FILE)]
    for key in ("inputSchema", "outputSchema"):
        value = skill.get("io", key)
        if isinstance(value, str):
            files.append(os.path.join(real, value))
    files += [os.path.join(real, a) for a in skill.command if "/" in a and not a.startswith("-")]
    here = os.path.dirname(os.path.abspath(__file__))
    return files + [os.path.join(here, name) for name in PLUGIN_FILES]


def _fresh(signature: tuple) -> bool:
    return all(stamp(s[0]) == list(s) for s in signature)


def _looks_runnable(skill: SkillManifest, access: AccessManifest | None) -> bool:
    """A cheap yes/no on the rules that stop a run; the full validator explains a no (and may overrule it)."""
    from agentpack.io.paths import resolve_under
    from agentpack.io.quickschema import is_valid

    from .schemas_store import SKILL_SCHEMA, bundled, store

    verdict = is_valid(bundled(SKILL_SCHEMA), skill.data)
    if verdict is None:
        verdict = store().is_valid(SKILL_SCHEMA, skill.data)
    if not verdict:
        return False
    relative = [a for a in skill.command if "/" in a and not a.startswith("-")]
    try:
        if not all(resolve_under(skill.directory, a).is_file() for a in relative):
            return False
        if not resolve_under(skill.directory, skill.get("runtime", "cwd") or ".").is_dir():
            return False
        schemas = [skill.io_schema("input"), skill.io_schema("output")]
    except AgentpackError:
        return False
    if not (isinstance(schemas[0], dict) and schemas[0].get("type") == "object"):
        return False
    if any(not r.startswith("#") for s in schemas for r in schema_refs(s)):
        return False
    if any(schema_problem(s) for s in schemas):  # a schema its own dialect rejects is never applied to a run
        return False
    return access is None or not check_skill(skill, access)


def _errors(skill: SkillManifest, access_findings: list) -> list:
    """Every contract error that stops a run, as findings (the full, slower validation)."""
    from .validation import _io_schemas, _paths, schema_findings

    findings = schema_findings(skill)
    if not findings:
        findings += _paths(skill) + _io_schemas(skill)
    return [f for f in findings + access_findings if f.severity == "error"]


def prepare(directory: Path, skill: SkillManifest | None = None, access: LoadedAccess | None = None) -> Prepared:
    """Load, check and cache the skill in ``directory``; SkillInvalidError when its contract has errors.

    A skill checked once is kept in-process and on disk (``diskcache``, kind
    ``prepared``) while its contract files keep their stamps, so a later run, even
    in a fresh process, reads one JSON file instead of parsing YAML and validating.
    ``skill`` and ``access`` (the tree's manifest as ``load_access`` gives it): what the caller has
    loaded already, so it is not read again.
    """
    real = os.path.realpath(directory)
    cached = _CACHE.get(real)
    if cached is not None and _fresh(cached.signature) and os.path.isdir(cached.cwd):
        return cached
    prepared = _from_disk(Path(directory), real)
    if prepared is None:
        prepared = _prepare(Path(directory), real, skill, access)
    if len(_CACHE) > 512:
        _CACHE.clear()
    _CACHE[real] = prepared
    return prepared


def _prepare(directory: Path, real: str, skill: SkillManifest | None, loaded: LoadedAccess | None) -> Prepared:
    """The full path: parse, validate, resolve; then store the result for the next process."""
    if skill is None:
        skill = load_skill(directory)
    if loaded is None:
        access_path = find_access_file(directory)
        loaded = load_access(access_path) if access_path is not None else (None, [])
    access, access_findings = loaded
    if access_findings or not _looks_runnable(skill, access):
        errors = _errors(skill, access_findings)
        if access is not None:
            errors += [f for f in check_skill(skill, access) if f.severity == "error"]
        if errors:
            raise SkillInvalidError(skill.file, errors)
    try:
        input_schema, output_schema = skill.io_schema("input"), skill.io_schema("output")
    except PackError as exc:  # pragma: no cover - reported above as SKC13x
        raise SkillInvalidError(skill.file, [_finding(exc)]) from None
    stamps = [stamp(f) for f in _contract_files(real, skill)]
    cwd = skill.resolve(skill.get("runtime", "cwd") or ".")
    argv = [str(skill.resolve(a)) if "/" in a and not a.startswith("-") else a for a in skill.command]
    prepared = Prepared(
        skill, grants(skill, access), access, input_schema, output_schema, argv, cwd, tuple(tuple(s) for s in stamps)
    )
    diskcache.write(
        KIND,
        real,
        stamps,
        {
            "skill": {"data": skill.data, "lines": skill.doc.lines},
            "access": None if access is None else {"data": access.doc.data, "lines": access.doc.lines},
            "grants": prepared.grants.as_dict(),
            "inputSchema": input_schema,
            "outputSchema": output_schema,
            "argv": argv,
            "cwd": str(cwd),
        },
    )
    return prepared


def _from_disk(directory: Path, real: str) -> Prepared | None:
    """The prepared skill from a fresh disk entry (no YAML, no JSON Schema machinery), or None."""
    entry = diskcache.read(KIND, real)
    if entry is None:
        return None
    try:
        skill = SkillManifest(
            directory, YamlDocument(entry["skill"]["data"], str(directory / MANIFEST), entry["skill"]["lines"])
        )
        access = None
        if entry["access"] is not None:
            access = AccessManifest(
                YamlDocument(entry["access"]["data"], str(directory.parent / ACCESS_FILE), entry["access"]["lines"])
            )
        skill._schemas.update(input=entry["inputSchema"], output=entry["outputSchema"])
        prepared = Prepared(
            skill,
            Grants(**entry["grants"]),
            access,
            entry["inputSchema"],
            entry["outputSchema"],
            list(entry["argv"]),
            Path(entry["cwd"]),
            tuple(tuple(s) for s in (stamp(f) for f in _contract_files(real, skill))),
        )
    except (KeyError, TypeError, AttributeError):
        return None
    return prepared if os.path.isdir(prepared.cwd) else None


def _finding(exc: PackError):
    from agentpack.kernel.models import Finding

    return Finding.error("SKC130", exc.message, file=exc.file, line=exc.line)
