"""Find skills: the library root, ``skill.id`` lookup, and listings."""

from __future__ import annotations

import os
from pathlib import Path

from agentpack.io.errors import AgentpackError

from .diskcache import read, stamp, write
from .env import ROOT, lookup
from .manifest import ID_RE, is_skill_dir, load_skill, tree_skill_dirs


def library_root(root: str | Path | None = None) -> Path:
    """The ``skills/`` tree: ``root`` (a tree, or a folder holding ``skills/``), $AGENTPACK_SKILLCTL_ROOT
    (alias $SKILLCTL_ROOT), or ./skills (else the current folder)."""
    from_env = lookup(ROOT) if root is None else None
    candidate = Path(root) if root is not None else Path(from_env or "skills")
    if root is None and from_env is None and not candidate.is_dir():
        candidate = Path(".")
    if (candidate / "skills").is_dir() and not tree_skill_dirs(candidate):
        candidate = candidate / "skills"
    if not candidate.is_dir():
        raise AgentpackError(f"skills library '{candidate}' is not a folder", hint=f"pass --root DIR or set {ROOT[0]}")
    return candidate


_INDEX: dict[str, tuple[list, dict[str, Path]]] = {}


def skill_index(root: Path) -> dict[str, Path]:
    """``skill.id -> folder`` for the tree, memoised (in-process and on disk) on the ``skill.yaml`` stamps."""
    dirs = tree_skill_dirs(root)
    key = os.path.realpath(root)
    stamps = [stamp(os.path.join(key, d.name, "skill.yaml")) for d in dirs]
    cached = _INDEX.get(key)
    if cached and cached[0] == stamps:
        return cached[1]
    entry = read("index", key)
    if isinstance(entry, dict) and entry.get("stamps") == stamps and isinstance(entry.get("ids"), dict):
        index = {skill_id: root / name for skill_id, name in entry["ids"].items()}
    else:
        index = {}
        for directory in dirs:
            try:
                skill = load_skill(directory)
            except AgentpackError:
                continue
            index.setdefault(skill.id, directory)
        write("index", key, stamps, {"stamps": stamps, "ids": {k: v.name for k, v in index.items()}})
    _INDEX[key] = (stamps, index)
    return index


def find_skill(ref: str | Path, root: str | Path | None = None) -> Path:
    """A skill folder from a path or a ``skill.id`` (looked up in the library root)."""
    path = Path(ref)
    if is_skill_dir(path):
        return path
    if path.name == "skill.yaml" and path.is_file():
        return path.parent
    text = str(ref)
    if ID_RE.match(text):
        tree = library_root(root)
        found = skill_index(tree).get(text)
        if found is not None:
            return found
        raise AgentpackError(
            f"no skill with id '{text}' in {tree}",
            hint="list them with 'agentpack skill list', or pass the skill folder",
        )
    raise AgentpackError(f"'{text}' is neither a skill folder (with skill.yaml) nor a skill id")
