"""The plugin's bundled JSON Schemas (``schemas/*.json``): one ``SchemaStore``, and the run path's quick check.

Findings always come from ``agentpack.kernel.schemas.SchemaStore`` (``store()``).
Deciding that a manifest is valid, on every run, does not: it reads the
``manifest`` schema as plain JSON and asks ``agentpack.io.quickschema``, split in
two passes that together equal the schema (the manifest with each grader
reduced to its skeleton, then each built-in grader entry against the schema
of its ``type``), which skips three ``if/then`` evaluations per grader and
the import of ``agentpack.kernel.schemas`` (``importlib.resources``, ``referencing``:
about 10 ms of a run that takes about 100 ms).
"""

from __future__ import annotations

import copy
import json
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # agentpack.kernel.schemas loads only when findings are needed
    from agentpack.kernel.schemas import SchemaStore

BASE = "https://schemas.agentpack.dev/agent-rpc/"
MANIFEST, AGENT_RESULT, REPORT = (BASE + n for n in ("manifest.json", "agent-result.json", "report.json"))
BUILTIN_GRADERS = ("text_match", "tool_usage", "llm_judge")


@cache
def store() -> SchemaStore:
    """The bundled schemas, by ``$id``."""
    from agentpack.kernel.schemas import SchemaStore

    return SchemaStore.from_package("agentpack_agent_rpc", "schemas")


@cache
def bundled(name: str) -> dict[str, Any]:
    """One bundled schema read as plain JSON, for ``quickschema`` on the run path."""
    schema: dict[str, Any] = json.loads((Path(__file__).parent / "schemas" / name).read_text(encoding="utf-8"))
    return schema


@cache
def quick_schemas() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """The manifest schema split for ``quickschema``: the skeleton, and each built-in grader's own schema.

    Validating the skeleton, then each grader entry against the schema of its
    ``type``, equals validating the ``manifest`` schema (whose grader
    definition is that skeleton plus ``if type == X then X``), at about 40 %
    of the cost: no ``if`` is evaluated for the types a grader is not.
    """
    schema = bundled("manifest.json")
    defs = schema["$defs"]
    skeleton = copy.deepcopy(schema)
    del skeleton["$defs"]["grader"]["allOf"]
    by_type = {kind: {**defs[kind], "$defs": defs} for kind in BUILTIN_GRADERS}
    return skeleton, by_type


def entry_store(kind: str, schema: dict[str, Any]) -> tuple[SchemaStore, str]:
    """A store holding a plugin grader's entry schema, and the schema's ``$id`` (one is made up when it has none)."""
    from agentpack.kernel.schemas import SchemaStore

    schema_id = schema.get("$id") or f"urn:agentpack:agent-rpc:grader:{kind}"
    return SchemaStore([{**schema, "$id": schema_id}]), schema_id
