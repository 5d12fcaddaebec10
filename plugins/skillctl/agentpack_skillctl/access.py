"""The repository Access Manifest (``skills/_access.yaml``): the most any skill of the tree may be granted.

A skill that declares more fails validation (SKC150-SKC154); a run grants
only what both the skill and the manifest allow (``grants``). Without a
manifest, the skill's own declaration is the only limit (an info finding says so).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from agentpack.kernel.records import Record

from .globs import covered, problem
from .manifest import SkillManifest

if TYPE_CHECKING:
    from agentpack.io.yamldoc import YamlDocument
    from agentpack.kernel.models import Finding

ACCESS_FILE = "_access.yaml"


class AccessManifest(Record):
    __slots__ = ("doc",)
    doc: YamlDocument

    @property
    def file(self) -> str | None:
        return self.doc.file

    def _list(self, *keys: str) -> list[str] | None:
        value: Any = self.doc.data
        for key in keys:
            if not isinstance(value, dict) or key not in value:
                return None
            value = value[key]
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else None

    @property
    def env(self) -> list[str]:
        return self._list("env", "read") or []

    def globs(self, mode: str) -> list[str]:
        return self._list("filesystem", mode) or []

    @property
    def subprocess(self) -> bool:
        sub = self.doc.data.get("subprocess") if isinstance(self.doc.data, dict) else None
        return bool(isinstance(sub, dict) and sub.get("allowed") is True)

    @property
    def sandbox_required(self) -> bool:
        """``sandbox.required: true``: a run whose sandbox lacks a protection here is refused."""
        box = self.doc.data.get("sandbox") if isinstance(self.doc.data, dict) else None
        return bool(isinstance(box, dict) and box.get("required") is True)

    def approval(self, approval_id: str | None, skill_id: str) -> bool:
        network = self.doc.data.get("network") if isinstance(self.doc.data, dict) else None
        for entry in (network or {}).get("approvals") or []:
            if isinstance(entry, dict) and entry.get("id") == approval_id:
                skills = entry.get("skills")
                return skills is None or skill_id in skills
        return False


def find_access_file(skill_dir: Path) -> Path | None:
    """The manifest of the tree a skill folder belongs to: ``<tree>/_access.yaml``, None when nothing is there.

    Anything at that name counts (a folder, a dangling link): ``load_access`` then reports why it
    cannot be used, rather than the skill running as if the tree had no manifest.
    """
    candidate = skill_dir.parent / ACCESS_FILE
    return candidate if os.path.lexists(candidate) else None


def load_access(path: Path, *, display: str | None = None) -> tuple[AccessManifest | None, list[Finding]]:
    """Load and schema-check a manifest; ``(None, findings)`` when it cannot be used."""
    from agentpack.io.errors import YamlError
    from agentpack.io.yamlio import load_yaml

    from .schemas_store import ACCESS_SCHEMA, bundled, store

    try:
        doc = load_yaml(path, display=display or str(path))
    except YamlError as exc:
        from agentpack.kernel.models import Finding

        return None, [Finding.error("SKC155", exc.message, file=exc.file, line=exc.line, column=exc.column)]
    from agentpack.io.quickschema import is_valid

    if is_valid(bundled(ACCESS_SCHEMA), doc.data):  # the common case, without the schema machinery
        return AccessManifest(doc), []
    findings = store().validate(ACCESS_SCHEMA, doc.data, document=doc, code="SKC155")
    return (None, findings) if findings else (AccessManifest(doc), [])


class Grants(Record):
    """What a run grants: the intersection of the skill's declaration and the manifest."""

    __slots__ = ("env", "withheld_env", "read_globs", "write_globs", "network", "subprocess", "notes")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {"notes": list}
    env: list[str]
    withheld_env: list[str]
    read_globs: list[str]
    write_globs: list[str]
    network: bool
    subprocess: bool
    notes: list[str]


def _declared(skill: SkillManifest) -> dict[str, Any]:
    def strings(*keys: str) -> list[str]:
        value = skill.access(*keys, default=[])
        return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []

    network = (
        skill.get("determinism", "network") == "allowed" and skill.access("network", "allowed", default=False) is True
    )
    return {
        "env": strings("env", "read"),
        "read": strings("filesystem", "read"),
        "write": strings("filesystem", "write"),
        "network": network,
        "subprocess": skill.access("subprocess", "allowed", default=False) is True,
    }


def grants(skill: SkillManifest, access: AccessManifest | None) -> Grants:
    d = _declared(skill)
    if access is None:  # a glob that does not parse is granted nothing, whatever validation said
        read, write = ([g for g in d[mode] if problem(g) is None] for mode in ("read", "write"))
        return Grants(d["env"], [], read, write, d["network"], d["subprocess"])
    env = [name for name in d["env"] if name in access.env]
    return Grants(
        env=env,
        withheld_env=[name for name in d["env"] if name not in env],
        read_globs=[g for g in d["read"] if covered(g, access.globs("read"))],
        write_globs=[g for g in d["write"] if covered(g, access.globs("write"))],
        network=d["network"] and access.approval(skill.get("x-securityApprovalId"), skill.id),
        subprocess=d["subprocess"] and access.subprocess,
    )


def check_skill(skill: SkillManifest, access: AccessManifest | None) -> list[Finding]:
    """Findings for every declaration of ``skill`` that ``access`` does not allow."""
    if access is None:
        from agentpack.kernel.models import Finding

        return [
            Finding.info(
                "SKC156",
                "no access manifest (_access.yaml) beside this skill folder: the skill's own "
                "declaration is the only limit",
                file=skill.file,
                hint="add skills/_access.yaml to cap what skills may be granted",
            )
        ]
    d = _declared(skill)
    problems: list[tuple[str, str, str]] = []  # (code, message, pointer); findings built only when needed
    where = f" (allowed by {access.file})"
    for i, name in enumerate(skill.access("env", "read", default=[]) or []):
        if isinstance(name, str) and name not in access.env:
            problems.append(
                (
                    "SKC150",
                    f"environment variable '{name}' is not in the access manifest{where}",
                    f"/security/access/env/read/{i}",
                )
            )
    for mode in ("read", "write"):
        ceiling = access.globs(mode)
        for i, glob in enumerate(skill.access("filesystem", mode, default=[]) or []):
            reason = problem(glob) if isinstance(glob, str) else None
            if reason:
                message = f"filesystem {mode} glob {glob!r} is not a workspace-relative glob: it has {reason}"
                problems.append(("SKC151", message, f"/security/access/filesystem/{mode}/{i}"))
            elif isinstance(glob, str) and not covered(glob, ceiling):
                problems.append(
                    (
                        "SKC151",
                        f"filesystem {mode} glob '{glob}' is broader than the access manifest "
                        f"allows ({', '.join(ceiling) or 'nothing'})",
                        f"/security/access/filesystem/{mode}/{i}",
                    )
                )
    if d["subprocess"] and not access.subprocess:
        problems.append(
            (
                "SKC152",
                f"subprocesses are not allowed by the access manifest{where}",
                "/security/access/subprocess/allowed",
            )
        )
    if d["network"]:
        approval = skill.get("x-securityApprovalId")
        if not access.approval(approval, skill.id):
            problems.append(
                (
                    "SKC153",
                    f"network access needs approval '{approval}' listed for skill '{skill.id}' "
                    f"under network.approvals in the access manifest{where}",
                    "/x-securityApprovalId" if approval else "/security/access/network/allowed",
                )
            )
    if not problems:
        return []
    from agentpack.kernel.models import Finding

    return [Finding.error(code, message, **skill.where(pointer)) for code, message, pointer in problems]
