"""The Python API other tools bind to (stable signatures).

from agentpack_skillctl.api import run_skill
result = run_skill("fs.hash_tree", {"path": "src"}, root="skills")
result.status, result.output, result.report
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from .describe import describe, listing
from .library import find_skill as _find
from .library import library_root
from .manifest import load_skill
from .prepare import prepare
from .runner import RunOptions, RunResult, run_prepared

__all__ = ["RunResult", "describe_skill", "find_skill", "list_skills", "run_skill", "validate_skill"]


def run_skill(
    path_or_id: str | Path,
    input_obj: Any,
    *,
    timeout_ms: int | None = None,
    root: str | Path | None = None,
    workspace: str | Path | None = None,
    cache: bool = False,
    cache_dir: str | Path | None = None,
    check_determinism: bool = False,
    on_stderr: Callable[[bytes], None] | None = None,
    require_sandbox: bool = False,
) -> RunResult:
    """Run one skill on ``input_obj`` (a JSON value) and return ``RunResult(status, output, report)``.

    ``path_or_id`` is a skill folder or a ``skill.id`` looked up in ``root`` (a
    ``skills/`` tree; default $AGENTPACK_SKILLCTL_ROOT or ./skills). ``workspace`` is the
    folder the skill's filesystem globs are relative to (default: the current
    directory). ``require_sandbox`` refuses the run (status ``error``) when this
    machine cannot give the sandbox every protection (the report's ``sandbox``
    section lists them). Failures of the skill are statuses, not exceptions; an unknown
    skill or an invalid contract raises ``agentpack.io.errors.AgentpackError``.
    """
    prepared = prepare(_find(path_or_id, root))
    options = RunOptions(
        workspace=Path(workspace) if workspace is not None else Path.cwd(),
        timeout_ms=timeout_ms,
        cache=cache,
        cache_dir=Path(cache_dir) if cache_dir else None,
        check_determinism=check_determinism,
        on_stderr=on_stderr,
        require_sandbox=require_sandbox,
    )
    return run_prepared(prepared, options, value=input_obj)


def find_skill(path_or_id: str | Path, root: str | Path | None = None) -> Path:
    """A skill folder from a folder path or a ``skill.id`` (looked up in ``root``)."""
    return _find(path_or_id, root)


def describe_skill(path_or_id: str | Path, root: str | Path | None = None) -> dict[str, Any]:
    """The skill's contract as JSON: ``skill.yaml`` plus its loaded input and output schemas."""
    return describe(find_skill(path_or_id, root))


def list_skills(root: str | Path | None = None) -> list[dict[str, Any]]:
    """A summary of every skill of the library root (unreadable ones carry ``error``)."""
    return listing(library_root(root))


def validate_skill(path_or_id: str | Path, *, root: str | Path | None = None, strict: bool = False):
    """Findings (``agentpack.kernel.models.Finding``) for one skill folder."""
    from .validation import validate_skill as _validate  # agentpack.kernel.models: pydantic, only when asked

    return _validate(load_skill(find_skill(path_or_id, root)), strict=strict)
