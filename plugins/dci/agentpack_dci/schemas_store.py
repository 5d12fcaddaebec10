"""The plugin's bundled JSON Schemas (offline) and loading of its JSON artifacts with line numbers."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

from agentpack.errors import AgentpackError

BASE = "https://agentpack.dev/schemas/dci/"
ALIASES = BASE + "aliases.v1.schema.json"
RELIABILITY = BASE + "reliability.v1.schema.json"
REPORT = BASE + "capability-resolution-report.v1.schema.json"
CONFIG = BASE + "config.v1.schema.json"


@lru_cache(maxsize=1)
def store():
    from agentpack.schemas import SchemaStore

    return SchemaStore.from_package("agentpack_dci", "schemas")


def load_json_artifact(path: Path, schema_id: str, *, code: str, display: str | None = None) -> tuple[Any, list]:
    """Read a JSON file (through the YAML loader, for line numbers and duplicate-key errors).

    Returns ``(data, findings)``; raises ``YamlError`` when it cannot be parsed at all.
    """
    from agentpack.quickschema import is_valid
    from agentpack.yamlio import load_yaml

    document = load_yaml(path, display=display or str(path))
    if is_valid(store().schema(schema_id), document.data) is True:  # the common case, without jsonschema
        return document.data, []
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
