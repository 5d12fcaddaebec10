"""The workspace's JSON files under ``.dci/``, read with line numbers and checked against their schemas."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError

from .schemas_store import store

if TYPE_CHECKING:
    from agentpack.kernel.models import Finding


def load_json_artifact(
    path: Path, schema_id: str, *, code: str, display: str | None = None
) -> tuple[Any, list[Finding]]:
    """Read a JSON file: strict JSON first (no NaN, no comments, a nesting limit), then the YAML loader over
    the same text for line numbers and duplicate-key errors.

    Returns ``(data, findings)``; raises ``AgentpackError`` (``JsonError``, ``YamlError``) when it cannot be
    read or parsed at all, a folder or a dangling link included.
    """
    from agentpack.io import jsonio
    from agentpack.io.userfiles import read_text
    from agentpack.io.yamlio import parse_yaml  # PyYAML: only when a workspace has such a file

    name = display or str(path)
    text = read_text(path, display=name, error=jsonio.JsonError, expected="a JSON file")
    jsonio.loads(text, file=name)
    document = parse_yaml(text, file=name)
    return document.data, store().validate(schema_id, document.data, document=document, code=code)


def require_valid(path: Path, schema_id: str, *, code: str, what: str, display: str | None = None) -> Any:
    """Like ``load_json_artifact`` but raises ``AgentpackError`` at the first schema finding."""
    data, findings = load_json_artifact(path, schema_id, code=code, display=display)
    errors = [f for f in findings if f.severity == "error"]
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise AgentpackError(
            f"invalid {what}: {first.message}{more}",
            file=first.file,
            line=first.line,
            hint=f"it must follow {schema_id}",
        )
    return data
