"""The workspace's ``.dci/config.v1.json`` (an agentpack extension) and workspace-root rules."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from agentpack.io.errors import AgentpackError
from agentpack.io.userfiles import optional_file

from . import schemas_store
from .artifacts import require_valid

CONFIG_FILE = Path(".dci") / "config.v1.json"
BUILTIN_RUNTIMES = frozenset(
    {
        "all",
        "claude",
        "claude-code",
        "cli",
        "codex",
        "copilot",
        "cursor",
        "gemini-cli",
        "opencode",
        "vscode",
        "windsurf",
    }
)
"""Runtime tokens recognised in ``compatibility`` out of the box (``all`` means runtime-agnostic)."""


class WorkspaceConfig(NamedTuple):
    runtime_roots: tuple[str, ...] = ()
    external_roots: tuple[str, ...] = ()
    disabled: frozenset[str] = frozenset()
    known_runtimes: frozenset[str] = frozenset()
    path: str | None = None


def load_config(workspace: Path) -> WorkspaceConfig:
    """The workspace config, or defaults when nothing is at its path; ``AgentpackError`` when it is invalid
    or unusable (a folder, a dangling link: never taken for an absent file)."""
    path = workspace / CONFIG_FILE
    if not optional_file(path, display=CONFIG_FILE.as_posix(), error=AgentpackError, expected="a JSON file"):
        return WorkspaceConfig()
    data = require_valid(path, schemas_store.CONFIG, code="DCI102", what="DCI config", display=CONFIG_FILE.as_posix())
    return WorkspaceConfig(
        runtime_roots=tuple(data.get("runtime_roots", ())),
        external_roots=tuple(data.get("external_roots", ())),
        disabled=frozenset(data.get("disabled", ())),
        known_runtimes=frozenset(data.get("known_runtimes", ())),
        path=CONFIG_FILE.as_posix(),
    )


def state_root(start: Path) -> Path:
    """Where ``.dci/state`` lives: the nearest directory containing ``.git`` at or above ``start``
    (the spec's first rule), else ``start`` itself (the explicit root, or the current directory)."""
    start = start.resolve()
    for directory in (start, *start.parents):
        if (directory / ".git").exists():
            return directory
    return start
