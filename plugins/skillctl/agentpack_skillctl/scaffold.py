"""``skill new``: a skill folder from the bundled template, written atomically."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from importlib import resources
from pathlib import Path

from agentpack.io.errors import AgentpackError

from .manifest import ID_RE, SLUG_RE
from .validation import SPEC_ID_RE

PLACEHOLDERS = ("__SKILL_ID__", "__SKILL_NAME__", "__SPEC_ID__", "__DESCRIPTION__")


def scaffold(
    tree: Path, skill_id: str, slug: str, *, spec_id: str = "SPEC-TODO", description: str | None = None
) -> Path:
    """Create ``tree/slug`` for ``skill_id``; AgentpackError for a bad id, slug, spec id or an existing folder."""
    if not ID_RE.match(skill_id):
        raise AgentpackError(f"'{skill_id}' is not a skill id (dot-separated snake_case, e.g. text.word_count)")
    if not SLUG_RE.match(slug):
        raise AgentpackError(f"'{slug}' is not a kebab-case folder name (e.g. word-count)")
    if not SPEC_ID_RE.match(spec_id):
        raise AgentpackError(f"'{spec_id}' is neither a UUID nor 'SPEC-<id>'")
    target = tree / slug
    if target.exists():
        raise AgentpackError(f"{target} already exists")
    name = skill_id.rsplit(".", 1)[-1].replace("_", " ").capitalize()
    values = {
        "__SKILL_ID__": skill_id,
        "__SKILL_NAME__": name,
        "__SPEC_ID__": spec_id,
        "__DESCRIPTION__": (description or f"{name} (deterministic skill scaffolded from the template).").replace(
            "\n", " "
        ),
    }
    tree.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{slug}.", dir=tree))
    try:
        _copy(resources.files("agentpack_skillctl").joinpath("templates", "skill"), staging, values)
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _copy(source, dest: Path, values: dict[str, str]) -> None:
    dest.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.name == "__pycache__":
            continue
        if entry.is_dir():
            _copy(entry, dest / entry.name, values)
            continue
        text = entry.read_text(encoding="utf-8")
        for key in PLACEHOLDERS:
            value = values[key]
            if entry.name.endswith(".yaml") and key in ("__DESCRIPTION__", "__SKILL_NAME__"):
                value = json.dumps(value, ensure_ascii=False)  # a JSON string: every YAML reader's, the origin's
            text = text.replace(key, value)
        (dest / entry.name).write_text(text, encoding="utf-8")
        if entry.name.endswith(".sh"):
            os.chmod(dest / entry.name, 0o755)
