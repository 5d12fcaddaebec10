"""Where a run came from: the input's key and digest, the git commit and dirty state, judge and model settings."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

GIT_TIMEOUT_S = 5.0
SKIPPED_DIRS = frozenset({"__pycache__", "node_modules"})
"""Folders left out of a directory's digest, beside every folder whose name starts with a dot."""
_SETTING = re.compile(r"^(AGENTPACK_|ECP_|OPENAI_|OPENEXPERTS_).*(MODEL|JUDGE|BASE_URL|TEMPERATURE)")
_SECRET = re.compile(r"(key|token|secret|password|passwd|auth|authorization|credentials?|cookie)$", re.IGNORECASE)
_SECRET_ENV = re.compile(r"SECRET|TOKEN|KEY|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)
"""An environment name holding any of these is never kept, wherever the word stands (``..._SECRET_MODEL_X``)."""
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/?#\s@]*@")


def input_key(path: str | Path, root: Path) -> str:
    """How runs of one input are grouped: its path relative to the project ``root`` (POSIX), else absolute."""
    resolved = Path(path).resolve()
    try:
        relative = resolved.relative_to(root)
    except ValueError:
        return resolved.as_posix()
    return relative.as_posix() or "."


def input_digest(path: str | Path) -> str | None:
    """``sha256:...`` over a file's bytes, or over a folder's files (relative path and content, sorted).

    Folders starting with a dot, ``__pycache__`` and ``node_modules`` are left out: they hold
    build output and tool state, not the input; so is what is not a regular file (a FIFO would block
    the reader). ``None`` when the path cannot be read.
    """
    import hashlib

    path = Path(path)
    digest = hashlib.sha256()
    try:
        if path.is_file():
            _file_into(digest, path)
        elif path.is_dir():
            for file in _files(path):
                digest.update(file.relative_to(path).as_posix().encode("utf-8") + b"\0")
                _file_into(digest, file)
                digest.update(b"\0")
        else:
            return None
    except OSError:
        return None
    return "sha256:" + digest.hexdigest()


def _files(root: Path) -> list[Path]:
    found = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in SKIPPED_DIRS)
        found += [Path(folder) / name for name in files if os.path.isfile(os.path.join(folder, name))]
    return sorted(found, key=lambda p: p.relative_to(root).as_posix())


def _file_into(digest: Any, path: Path) -> None:
    with open(path, "rb") as handle:
        while block := handle.read(1 << 20):
            digest.update(block)


def git_state(path: str | Path) -> dict[str, Any]:
    """``{"commit", "branch", "dirty"}`` of the git work tree holding ``path`` (values ``None`` outside git).

    One ``git status --porcelain=v2 --branch`` with a timeout; ``dirty`` counts untracked files too.
    """
    where = Path(path).resolve()
    folder = where if where.is_dir() else where.parent
    state: dict[str, Any] = {"commit": None, "branch": None, "dirty": None}
    try:
        result = subprocess.run(
            ["git", "status", "--porcelain=v2", "--branch"],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
            timeout=GIT_TIMEOUT_S,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except (OSError, subprocess.SubprocessError):  # no git, or it took too long
        return state
    if result.returncode != 0:
        return state
    dirty = False
    for line in result.stdout.splitlines():
        if line.startswith("# branch.oid "):
            oid = line.split(" ", 2)[2]
            state["commit"] = None if oid == "(initial)" else oid
        elif line.startswith("# branch.head "):
            head = line.split(" ", 2)[2]
            state["branch"] = None if head == "(detached)" else head
        elif line and not line.startswith("#"):
            dirty = True
    state["dirty"] = dirty
    return state


def environment_settings() -> dict[str, str]:
    """Model and judge settings from the environment (``ECP_LLM_JUDGE_MODEL``...): never a name holding SECRET,
    TOKEN, KEY, PASSWORD, PASSWD or CREDENTIAL, and URLs without their ``user:password@``."""
    return {
        name: without_url_credentials(value)
        for name, value in sorted(os.environ.items())
        if _SETTING.match(name) and not _SECRET_ENV.search(name) and value
    }


def without_url_credentials(text: str) -> str:
    """``text`` with the ``user:password@`` of every URL in it removed."""
    return _URL_USERINFO.sub(r"\1", text) if "@" in text else text


def without_secrets(value: Any) -> Any:
    """``value`` with every mapping key that looks like a secret (``api_key``, ``token``...) left out, and
    every string's URLs without their credentials."""
    if isinstance(value, dict):
        return {k: without_secrets(v) for k, v in value.items() if not _SECRET.search(str(k))}
    if isinstance(value, list):
        return [without_secrets(v) for v in value]
    if isinstance(value, str):
        return without_url_credentials(value)
    return value
