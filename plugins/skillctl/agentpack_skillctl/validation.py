"""Validation of a skill folder and of a ``skills/`` tree into located findings (codes SKC1xx)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from agentpack.io import jsonio
from agentpack.io.errors import PackError, PathEscapeError
from agentpack.io.paths import links_out
from agentpack.kernel.models import Finding

from .access import ACCESS_FILE, AccessManifest, check_skill, find_access_file, load_access
from .fixtures import STATUSES, fixture_cases, orphans
from .globs import problem
from .io_schemas import schema_problem, user_validator
from .manifest import ID_RE, MANIFEST, SLUG_RE, SkillManifest, is_skill_dir, load_skill, schema_refs
from .schemas_store import SKILL_SCHEMA, store

SPEC_ID_RE = re.compile(
    r"^(?:[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
    r"|SPEC-[A-Za-z0-9][A-Za-z0-9._-]*)$"
)
PLACEHOLDER_SPEC_IDS = {"SPEC-TODO"}
RUNTIME_PROGRAMS = {"python": ("python", "python3"), "node": ("node", "nodejs"), "shell": ("sh", "bash", "dash", "zsh")}


def validate_skill(
    skill: SkillManifest, *, access: AccessManifest | bool | None = True, strict: bool = False
) -> list[Finding]:
    """Every rule for one skill folder. ``access=True`` looks for ``../_access.yaml`` itself."""
    findings = schema_findings(skill)
    findings += _links_out(skill)
    findings += _spec_id(skill)
    findings += _paths(skill)
    findings += _io_schemas(skill)
    findings += _layout(skill, strict)
    findings += _fixtures(skill)
    if access is True:
        path = find_access_file(skill.directory)
        access = None
        if path is not None:
            access, access_findings = load_access(path)
            findings += access_findings
    findings += check_skill(skill, access or None)
    if strict and access is None:
        findings.append(
            Finding.error(
                "SKC156", "strict mode needs an access manifest (_access.yaml) beside the skill folder", file=skill.file
            )
        )
    return findings


def _links_out(skill: SkillManifest) -> list[Finding]:
    """SKC101: a symbolic link whose target leaves the skill folder (never followed)."""
    return [
        Finding.error(
            "SKC101",
            f"'{rel}' is a symbolic link to '{target}', outside the skill folder; agentpack never follows it",
            file=str(skill.directory / rel),
            hint="copy what it points to into the skill folder, or remove the link",
        )
        for rel, target in links_out(skill.directory)
    ]


EXPECTED = [
    (re.compile(r"^/id$"), "must be dot-separated snake_case segments, e.g. 'schema.validate_json'"),
    (re.compile(r"^/version$"), "must be a SemVer version X.Y.Z (e.g. '1.0.0'; quote it in YAML)"),
    (
        re.compile(r"^/(runtime/command/\d+|runtime/cwd|io/inputSchema|io/outputSchema)$"),
        "must be a path relative to the skill folder: no leading '/', no '..' segment, no backslash",
    ),
    (
        re.compile(r"^/security/access/filesystem/(read|write)/\d+$"),
        "must be a workspace-relative glob: no leading '/', no empty, '.' or '..' segment, no control character",
    ),
    (re.compile(r"^/security/access/env/read/\d+$"), "must be an environment variable name"),
]


def schema_findings(skill: SkillManifest) -> list[Finding]:
    """Schema findings for ``skill.yaml``, with plain-words messages instead of raw regular expressions."""
    findings = store().validate(SKILL_SCHEMA, skill.data, document=skill.doc, code="SKC100")
    network_allowed = skill.get("determinism", "network") == "allowed"
    out = []
    for f in findings:
        pointer = f.pointer or ""
        message = f.message
        if "does not match" in message:
            value = message.split(": ", 1)[1].split(" does not match")[0]
            for pattern, expected in EXPECTED:
                if pattern.match(pointer):
                    message = f"{pointer}: {value} {expected}" + _glob_problem(skill, pointer)
                    break
        elif network_allowed and message.endswith("'x-securityApprovalId'"):
            message = "/: determinism.network is 'allowed', so x-securityApprovalId (a Security approval) is required"
        elif pointer == "/security/access/network/allowed" and "was expected" in message:
            message = (
                f"{pointer}: must be {str(network_allowed).lower()} because determinism.network is "
                f"'{skill.get('determinism', 'network')}'"
            )
        out.append(f if message == f.message else f.model_copy(update={"message": message}))
    return out


def _glob_problem(skill: SkillManifest, pointer: str) -> str:
    """`` (it has ...)`` for a declared filesystem glob that does not parse, else ''."""
    if not pointer.startswith("/security/access/filesystem/"):
        return ""
    _, mode, index = pointer.rsplit("/", 2)
    globs = skill.access("filesystem", mode, default=[])
    glob = globs[int(index)] if isinstance(globs, list) and int(index) < len(globs) else None
    reason = problem(glob) if isinstance(glob, str) else None
    return f" (it has {reason})" if reason else ""


def _spec_id(skill: SkillManifest) -> list[Finding]:
    spec_id = skill.get("governance", "specId")
    if not isinstance(spec_id, str) or not spec_id:
        return []
    if not SPEC_ID_RE.match(spec_id):
        return [
            Finding.error(
                "SKC110",
                f"governance.specId '{spec_id}' is neither a UUID nor 'SPEC-<id>'",
                hint="e.g. 6f34688b-a76e-46b8-8d2d-8ffe5c88f9c6 or SPEC-42",
                **skill.where("/governance/specId"),
            )
        ]
    if spec_id in PLACEHOLDER_SPEC_IDS:
        return [
            Finding.warning(
                "SKC111", f"governance.specId '{spec_id}' is a placeholder", **skill.where("/governance/specId")
            )
        ]
    return []


def _paths(skill: SkillManifest) -> list[Finding]:
    out: list[Finding] = []
    command = skill.get("runtime", "command")
    if isinstance(command, list):
        for i, arg in enumerate(command):
            if isinstance(arg, str) and "/" in arg and not arg.startswith("-"):
                out += _existing(skill, arg, f"/runtime/command/{i}", "file")
        runtime_type = skill.get("runtime", "type")
        programs = RUNTIME_PROGRAMS.get(runtime_type)
        if programs and command and isinstance(command[0], str) and Path(command[0]).name not in programs:
            out.append(
                Finding.warning(
                    "SKC122",
                    f"runtime.type is '{runtime_type}' but the command starts with "
                    f"'{command[0]}' (expected one of {', '.join(programs)})",
                    **skill.where("/runtime/command/0"),
                )
            )
    cwd = skill.get("runtime", "cwd")
    if isinstance(cwd, str):
        out += _existing(skill, cwd, "/runtime/cwd", "dir")
    for key in ("inputSchema", "outputSchema"):
        value = skill.get("io", key)
        if isinstance(value, str):
            out += _existing(skill, value, f"/io/{key}", "file")
    if skill.get("observability", "logs", "destination") == "file":
        out.append(
            Finding.warning(
                "SKC143",
                "log files are not collected: the runner keeps structured logs from stderr only",
                **skill.where("/observability/logs/destination"),
            )
        )
    return out


def _existing(skill: SkillManifest, relative: str, pointer: str, kind: str) -> list[Finding]:
    from agentpack.io.paths import check_relative

    try:
        check_relative(relative)
    except PathEscapeError:
        return []  # absolute paths and '..' are schema findings (SKC100)
    try:
        target = skill.resolve(relative)
    except PathEscapeError as exc:
        return [Finding.error("SKC120", exc.message, **skill.where(pointer))]
    exists = target.is_dir() if kind == "dir" else target.is_file()
    if not exists:
        what = "folder" if kind == "dir" else "file"
        return [Finding.error("SKC121", f"'{relative}' is not a {what} in the skill folder", **skill.where(pointer))]
    return []


def _io_schemas(skill: SkillManifest) -> list[Finding]:
    out: list[Finding] = []
    for which in ("input", "output"):
        relative = skill.get("io", f"{which}Schema")
        if not isinstance(relative, str):
            continue
        try:
            schema = skill.io_schema(which)
        except PackError as exc:
            if (
                "does not exist" in exc.message
                or "escape" in exc.message
                or "climbs" in exc.message
                or "absolute" in exc.message
            ):
                continue  # reported by _paths
            out.append(Finding.error("SKC130", exc.message, file=exc.file, line=exc.line, column=exc.column))
            continue
        display = str(Path(skill.file).parent / relative)
        problem = schema_problem(schema)
        if problem is not None:
            where, message = problem
            out.append(
                Finding.error(
                    "SKC131",
                    f"{which} schema is not a valid JSON Schema at {where}: {message}",
                    file=display,
                    pointer=where,
                )
            )
            continue
        if not (isinstance(schema, dict) and schema.get("type") == "object"):
            if which == "input":
                out.append(
                    Finding.error(
                        "SKC132",
                        'the input schema must describe a JSON object ("type": '
                        '"object"): MCP tools and the CLI take an object',
                        file=display,
                    )
                )
            else:
                out.append(
                    Finding.warning(
                        "SKC133",
                        "the output schema does not describe a JSON object: MCP "
                        "clients will get it without an outputSchema",
                        file=display,
                    )
                )
        refs = [r for r in schema_refs(schema) if not r.startswith("#")]
        if refs:
            out.append(
                Finding.error(
                    "SKC134",
                    f"{which} schema has a non-local $ref ('{refs[0]}'): schemas are "
                    "never fetched, bundle the definition under $defs",
                    file=display,
                )
            )
    return out


def _layout(skill: SkillManifest, strict: bool) -> list[Finding]:
    out: list[Finding] = []
    root = skill.directory
    slug = root.resolve().name
    if not SLUG_RE.match(slug) and not slug.startswith("_"):  # `_template`: infrastructure, not a published slug
        out.append(
            Finding.error(
                "SKC160",
                f"skill folder name '{slug}' is not kebab-case",
                file=skill.file,
                hint="rename it, e.g. 'validate-json'",
            )
        )
    for name, required in (("tests", True), ("fixtures", True), ("impl", False), ("README.md", strict)):
        path = root / name
        present = path.is_file() if name.endswith(".md") else path.is_dir()
        if present:
            continue
        message = f"the skill folder has no {name}" + ("" if name.endswith(".md") else "/")
        if required:
            out.append(
                Finding.error(
                    "SKC140",
                    message + " (every skill ships offline tests and fixtures)"
                    if name in ("tests", "fixtures")
                    else message,
                    file=skill.file,
                )
            )
        else:
            out.append(Finding.warning("SKC140", message, file=skill.file))
    return out


def _fixtures(skill: SkillManifest) -> list[Finding]:
    out: list[Finding] = []
    folder = skill.directory / "fixtures"
    if not folder.is_dir():
        return out
    cases = fixture_cases(skill.directory)
    if not cases:
        out.append(
            Finding.warning(
                "SKC142",
                "fixtures/ holds no case: '<case>.input.json', 'input.json' or '<case>/input.json'",
                file=str(folder),
            )
        )
    for orphan in orphans(skill.directory, cases):
        out.append(Finding.warning("SKC141", f"{orphan.name} has no matching input file", file=str(orphan)))
    for fixture in cases:
        case = fixture.name
        try:
            status = fixture.status()
        except PackError as exc:
            out.append(Finding.error("SKC141", exc.message, file=exc.file, line=exc.line))
            continue
        if status not in STATUSES:
            out.append(
                Finding.error(
                    "SKC141",
                    f"fixture '{case}' expects unknown status '{status}' (one of {', '.join(STATUSES)})",
                    file=str(fixture.status_file),
                )
            )
        for which, path in (("input", fixture.input), ("output", fixture.expected)):
            if (
                path is None
                or (which == "input" and status == "invalid_input")
                or (which == "output" and status != "ok")
            ):
                continue
            try:
                value = jsonio.load_file(path)
            except jsonio.JsonError as exc:
                out.append(Finding.error("SKC141", exc.message, file=str(path), line=exc.line, column=exc.column))
                continue
            try:
                schema = skill.io_schema(which)
                errors = list(user_validator(schema).iter_errors(value))
            except Exception:  # an unusable schema is reported by _io_schemas
                continue
            for error in errors[:5]:
                pointer = "/" + "/".join(str(p) for p in error.absolute_path)
                out.append(
                    Finding.error(
                        "SKC141",
                        f"fixture '{case}' does not match the {which} schema at {pointer}: {error.message}",
                        file=str(path),
                        pointer=pointer,
                    )
                )
    return out


# -- trees -------------------------------------------------------------------------------------
def validate_tree(tree: Path, *, strict: bool = False) -> list[Finding]:
    findings: list[Finding] = []
    access: AccessManifest | None = None
    access_path = tree / ACCESS_FILE
    if os.path.lexists(access_path):
        access, findings = load_access(access_path)
    elif strict:
        findings.append(Finding.error("SKC156", "strict mode needs an access manifest", file=str(access_path)))
    seen: dict[str, str] = {}
    for entry in sorted(tree.iterdir()):
        if not entry.is_dir() or entry.name[:1] in "._":
            continue
        if not is_skill_dir(entry):
            findings.append(
                Finding.warning("SKC162", f"'{entry.name}' in the skills tree has no {MANIFEST}", file=str(entry))
            )
            continue
        try:
            skill = load_skill(entry)
        except PackError as exc:
            findings.append(Finding.error("SKC100", exc.message, file=exc.file, line=exc.line, column=exc.column))
            continue
        skill_findings = validate_skill(skill, access=access if access else False, strict=False)
        if access is None:  # one note for the tree, not one per skill
            skill_findings = [f for f in skill_findings if f.code != "SKC156"]
        findings += skill_findings
        skill_id = skill.get("id")
        if isinstance(skill_id, str) and ID_RE.match(skill_id):
            if skill_id in seen:
                findings.append(
                    Finding.error(
                        "SKC161", f"skill id '{skill_id}' is also used by {seen[skill_id]}", **skill.where("/id")
                    )
                )
            else:
                seen[skill_id] = skill.file
    if access is None and not strict and not os.path.lexists(access_path):
        findings.append(
            Finding.info(
                "SKC156",
                "no access manifest (_access.yaml) in the tree: each skill's own declaration is its only limit",
                file=str(access_path),
            )
        )
    return findings
