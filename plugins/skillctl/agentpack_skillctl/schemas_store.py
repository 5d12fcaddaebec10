"""The plugin's bundled JSON Schemas (skill.yaml, access manifest, run report): one ``SchemaStore``, loaded once.

``bundled`` reads a single schema without building the store: the prepare path
checks a contract with ``quickschema`` alone in the common case (importing
``agentpack.kernel.schemas`` would cost every uncached run a few milliseconds) and asks
the store only when ``quickschema`` cannot tell.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentpack.kernel.schemas import SchemaStore

BASE = "https://agentpack.dev/schemas/skillctl/"
SKILL_SCHEMA = BASE + "skill.schema.json"
ACCESS_SCHEMA = BASE + "access-manifest.schema.json"
REPORT_SCHEMA = BASE + "run-report.schema.json"


@cache
def store() -> SchemaStore:
    from agentpack.kernel.schemas import SchemaStore

    return SchemaStore.from_package("agentpack_skillctl", "schemas")


@cache
def bundled(schema_id: str) -> dict[str, Any]:
    """One bundled schema by ``$id``, read straight from package data (for ``quickschema``)."""
    name = schema_id.rsplit("/", 1)[-1]
    return json.loads(resources.files("agentpack_skillctl").joinpath("schemas", name).read_text(encoding="utf-8"))
