"""``experts export --to skills``: one Agent Skill per function, so other hosts can use the package.

Each skill folder holds a SKILL.md (name, description, metadata naming the source)
with the function's instructions, its inputs and outputs, the abstract tools it
needs with their effective approval tiers, and its non-private knowledge copied
under ``references/``. ``private`` knowledge is never exported.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import yaml

from agentpack.io.fsutil import replace_directory
from agentpack.skills.skillmd import validate_skill_dir

from . import effective
from .model import ExpertPackage, normalise_ref

_INVALID = re.compile(r"[^a-z0-9-]+")


def skill_name(name: str) -> str:
    """An Agent Skills name (lowercase letters, digits, single hyphens, at most 64 characters)."""
    cleaned = re.sub(r"-{2,}", "-", _INVALID.sub("-", name.lower())).strip("-")
    return cleaned[:64].rstrip("-") or "function"


def _fields(title: str, fields: list[Any]) -> list[str]:
    rows = [f for f in fields if isinstance(f, dict) and f.get("name")]
    if not rows:
        return []
    lines = [f"## {title}", ""]
    for field in rows:
        extra = f" (one of: {', '.join(map(str, field['enum']))})" if isinstance(field.get("enum"), list) else ""
        desc = f": {field['description']}" if field.get("description") else ""
        lines.append(f"- `{field['name']}` ({field.get('type', 'any')}){extra}{desc}")
    return [*lines, ""]


def skill_files(package: ExpertPackage) -> tuple[dict[str, bytes], list[dict[str, Any]], list[dict[str, str]]]:
    """The skills as files (``<skill>/SKILL.md``, ``<skill>/references/...``: raw bytes), what each
    holds, and the knowledge left out (``private``)."""
    files: dict[str, bytes] = {}
    written: list[dict[str, Any]] = []
    omitted: list[dict[str, str]] = []
    knowledge = package.knowledge_paths()
    for name, fn in sorted(package.functions().items()):
        folder = skill_name(name)
        refs = []
        for ref in fn.list_of("knowledge"):
            component = knowledge.get(normalise_ref(ref)) if isinstance(ref, str) else None
            if component is None:
                continue
            if package.knowledge_type(component) == "private":
                omitted.append({"function": name, "knowledge": component.path, "reason": "private"})
                continue
            reference = f"references/{Path(component.path).name}"
            files[f"{folder}/{reference}"] = Path(component.file).read_bytes()
            refs.append(reference)
        front = {
            "name": folder,
            "description": str(fn.meta.get("description", name))[:1024],
            "metadata": {
                "openexperts-package": str(package.name),
                "openexperts-version": str(package.version),
                "source": fn.path,
            },
        }
        body = [f"# {name}", "", fn.body.strip(), ""]
        body += _fields("Inputs", fn.list_of("inputs")) + _fields("Outputs", fn.list_of("outputs"))
        tools = [t for t in fn.list_of("tools") if isinstance(t, str)]
        if tools:
            body += ["## Tools", "", "Abstract tools this function uses (bind them in your host):", ""]
            for tool in tools:
                ops = package.operations(tool)
                tiers = ", ".join(f"{op} ({effective.tier(package, f'{tool}.{op}').value})" for op in ops)
                body.append(f"- `{tool}`" + (f": {tiers}" if tiers else ""))
            body.append("")
        if refs:
            body += ["## References", ""] + [f"- [{Path(r).name}]({r})" for r in refs] + [""]
        text = "---\n" + yaml.safe_dump(front, sort_keys=False, allow_unicode=True) + "---\n\n" + "\n".join(body)
        files[f"{folder}/SKILL.md"] = text.encode("utf-8")
        written.append({"function": name, "skill": folder, "source": fn.path, "references": refs})
    return files, written, omitted


def export_skills(package: ExpertPackage, target: Path) -> dict[str, Any]:
    """Write the skills into ``target`` (replaced atomically as a whole); return what was written."""
    target = Path(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    files, written, omitted = skill_files(package)
    staged = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        for relative, data in files.items():
            (staged / relative).parent.mkdir(parents=True, exist_ok=True)
            (staged / relative).write_bytes(data)
        replace_directory(staged, target)
    except BaseException:
        shutil.rmtree(staged, ignore_errors=True)
        raise
    for entry in written:
        _, findings = validate_skill_dir(target / entry["skill"])
        entry["findings"] = [f.model_dump(exclude_none=True) for f in findings]
    return {"target": str(target), "skills": written, "omitted": omitted}
