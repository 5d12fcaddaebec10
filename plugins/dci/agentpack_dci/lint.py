"""Lint ``metadata.contract`` in SKILL.md files and the ``.dci/`` artifacts of a workspace (codes DCI...).

Codes: DCI001 parse error, DCI002 not a string, DCI010 invalid capability token
(error in a ``^strict`` contract, else warning), DCI011 duplicate token,
DCI020 unknown clause, DCI021 long clause name, DCI022 clause repeated,
DCI030 bad ``Pol(...)`` entry, DCI040 unsupported version, DCI050 over-claim
risk, DCI060 not in canonical form; DCI101/102/103 alias table, config and
reliability state against their schemas; DCI100 a workspace skill the
discovery would reject.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError, PackError
from agentpack.skills.skillmd import Skill, find_skill_md, read_skill, validate_skill_dir

if TYPE_CHECKING:  # pydantic, the grammar and discovery are imported where used: a skill without a contract needs none
    from agentpack.kernel.models import Finding, Severity

OVERCLAIM_FLOOR = 20
_NOTE_CODES: dict[str, tuple[str, Severity]] = {
    "long-form": ("DCI021", "info"),
    "unknown-clause": ("DCI020", "warning"),
    "merged-clause": ("DCI022", "warning"),
    "duplicate-token": ("DCI011", "warning"),
}


def strictly(findings: list[Finding]) -> list[Finding]:
    """``--strict``: warnings become errors."""
    return [f.model_copy(update={"severity": "error"}) if f.severity == "warning" else f for f in findings]


def lint_contract(text: Any, where: dict[str, Any]) -> list[Finding]:
    """Findings for one contract value; ``where`` gives file/line/pointer of ``metadata.contract``."""
    from agentpack.kernel.models import Finding

    from .grammar import CLAUSE_ORDER, LONG_FORMS, ContractParseError, parse_contract
    from .policy import PolicyError, parse_value

    if not isinstance(text, str):
        return [Finding.error("DCI002", "metadata.contract must be a string (a DCI contract)", **where)]
    try:
        contract = parse_contract(text)
    except ContractParseError as exc:
        return [Finding.error("DCI001", f"contract: {exc.message} (column {exc.column})", hint=exc.hint, **where)]
    findings: list[Finding] = []
    strict = contract.mode == "strict"
    for clause, cap in contract.invalid_tokens():
        message = f"{clause}({cap.value!r}) is not a valid capability token: it {cap.problem} (column {cap.column})"
        effect = (
            "a strict contract treats it as unresolved"
            if strict
            else "best-effort keeps it, with an invalid_token_penalty of 0.02 each"
        )
        make = Finding.error if strict else Finding.warning
        findings.append(make("DCI010", message, hint=effect, **where))
    for code_name, message, column in contract.notes:
        code, severity = _NOTE_CODES[code_name]
        hint: str | None = None
        if code_name == "unknown-clause":
            written = message.split("'")[1]
            known = {c.lower(): c for c in (*CLAUSE_ORDER, *LONG_FORMS)}
            if written.lower() in known:
                hint = f"clause names are case-sensitive: did you mean '{known[written.lower()]}'?"
        findings.append(
            Finding(severity=severity, code=code, message=f"{message} (column {column})", hint=hint, **where)
        )
    for key, value in contract.policy:
        try:
            parse_value(key, value)
        except PolicyError as exc:
            findings.append(Finding.error("DCI030", f"Pol(...): {exc}", **where))
    if contract.version != 1:
        findings.append(
            Finding.warning(
                "DCI040", f"contract version {contract.version} is not supported; it is read as version 1", **where
            )
        )
    if len(contract.provides) > OVERCLAIM_FLOOR:
        findings.append(
            Finding.warning(
                "DCI050",
                f"P(...) lists {len(contract.provides)} capabilities; more than {OVERCLAIM_FLOOR} "
                "(or 3x the median of the other candidates) draws an over-claim penalty",
                **where,
            )
        )
    canonical = contract.canonical()
    if canonical != text.strip():
        findings.append(Finding.info("DCI060", "contract is not in canonical form", hint=canonical, **where))
    return findings


def lint_skill(directory: Path, *, display: str | None = None, report_unreadable: bool = True) -> list[Finding]:
    """Findings for the ``metadata.contract`` of one skill directory (none when it has no contract)."""
    md = find_skill_md(directory)
    shown = display or (str(md) if md else str(directory))
    try:
        skill = read_skill(directory, display=shown)
    except PackError as exc:
        if not report_unreadable:
            return []
        from agentpack.kernel.models import Finding

        return [
            Finding.error(
                "DCI100",
                f"SKILL.md cannot be read: {exc.message}",
                file=exc.file or shown,
                line=exc.line,
                column=exc.column,
                hint=exc.hint,
            )
        ]
    return _contract_findings(skill)


def _contract_findings(skill: Skill) -> list[Finding]:
    metadata = skill.meta.get("metadata")
    if not isinstance(metadata, dict) or "contract" not in metadata:
        return []
    return lint_contract(metadata["contract"], skill.where("/metadata/contract"))


def lint_workspace(root: Path) -> list[Finding]:
    """Contracts of every ``skills/**/SKILL.md``, of every other SKILL.md of the workspace (consumers: one that
    cannot be read is an error) and the ``.dci/`` artifacts of a DCI workspace.

    Each SKILL.md is read once: the core's validation and the contract lint share the parsed skill.
    """
    from agentpack.kernel.models import Finding

    from . import schemas_store
    from .artifacts import load_json_artifact
    from .discovery import skill_files

    findings: list[Finding] = []
    skills = root / "skills"
    if find_skill_md(root):
        findings += lint_skill(root, display="SKILL.md", report_unreadable=False)
        skill_mds = skill_files(skills) if skills.is_dir() else []
    else:
        skill_mds = skill_files(root)  # one walk: skills/** and the consumers beside them
    for skill_md in skill_mds:
        rel = skill_md.relative_to(root).as_posix()
        if not rel.startswith("skills/"):  # a consumer (consumers/...): its contract, and why it cannot be read
            findings += lint_skill(skill_md.parent, display=rel)
            continue
        skill, core = validate_skill_dir(skill_md.parent, display=rel)
        findings += [
            Finding.error(
                "DCI100",
                f"discovery rejects this skill: {f.code} {f.message}",
                file=f.file,
                line=f.line,
                column=f.column,
                pointer=f.pointer,
                hint=f.hint,
            )
            for f in core
            if f.severity == "error"
        ]
        if skill is not None:
            findings += _contract_findings(skill)
    artifacts = (
        (".dci/aliases.v1.json", schemas_store.ALIASES, "DCI101"),
        (".dci/config.v1.json", schemas_store.CONFIG, "DCI102"),
        (".dci/state/reliability.v1.json", schemas_store.RELIABILITY, "DCI103"),
    )
    for rel, schema_id, code in artifacts:
        path = root / rel
        if not os.path.lexists(path):  # a folder or a dangling link at that name is reported, not skipped
            continue
        try:
            _, found = load_json_artifact(path, schema_id, code=code, display=rel)
        except AgentpackError as exc:
            found = [Finding.error(code, exc.message, file=exc.file, line=exc.line, column=exc.column)]
        findings += found
    return findings
