"""One run of a skill with a JSON value under its declared sandbox: ``agentpack_invoke`` and the MCP tools.

A run that fails is an ``InvokeResult`` (the run report's status and located errors), never an
exception: an invalid contract is ``invalid_skill`` with the findings' files and lines, a skill
that declares workspace writes run without a workspace is ``no_workspace``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError
from agentpack.kernel.invocation import InvokeError, InvokeResult

from .prepare import SkillInvalidError, prepare
from .runner import RunOptions, run_prepared


def invoke(
    directory: Path,
    value: Any,
    *,
    workspace: Path | None = None,
    require_sandbox: bool = False,
    timeout_ms: int | None = None,
) -> InvokeResult:
    """Run the skill in ``directory`` on ``value``; ``workspace`` ``None``: a fresh empty folder, removed after."""
    try:
        prepared = prepare(directory)
    except SkillInvalidError as exc:
        errors = [InvokeError(f.code, f.message, file=f.file, line=f.line) for f in exc.findings]
        return InvokeResult("invalid_skill", errors=errors)
    except AgentpackError as exc:
        return InvokeResult("invalid_skill", errors=[InvokeError("unreadable", exc.message, exc.file, exc.line)])
    if workspace is None and prepared.grants.write_globs:
        message = f"skill {prepared.skill.id} writes to its workspace and the run has none"
        return InvokeResult("no_workspace", errors=[InvokeError("no_workspace", message, prepared.skill.file)])
    with _workspace(workspace) as folder:
        options = RunOptions(workspace=folder, require_sandbox=require_sandbox, timeout_ms=timeout_ms)
        result = run_prepared(prepared, options, value=value)
    errors = [
        InvokeError(e["code"], e["message"], side=e.get("side"), pointer=e.get("pointer"))
        for e in result.report["errors"]
    ]
    return InvokeResult(result.status, output=result.output, errors=errors, report=result.report)


def flag(value: Any) -> bool:
    """An option's yes/no (``--option skillctl.require_sandbox=true``, ``InvokeRequest.options``)."""
    return str(value).lower() in ("true", "1", "yes")


@contextmanager
def _workspace(folder: Path | None) -> Iterator[Path]:
    """``folder``, or a fresh empty folder for one run (removed after it)."""
    if folder is not None:
        yield folder
        return
    import shutil
    import tempfile

    fresh = tempfile.mkdtemp(prefix="skillctl-run-")
    try:
        yield Path(fresh)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)


__all__ = ["flag", "invoke"]
