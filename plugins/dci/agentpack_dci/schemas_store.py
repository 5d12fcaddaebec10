"""The plugin's bundled JSON Schemas (offline), as one ``agentpack.kernel.schemas.SchemaStore`` loaded once."""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agentpack.kernel.schemas import SchemaStore

BASE = "https://agentpack.dev/schemas/dci/"
ALIASES = BASE + "aliases.v1.schema.json"
RELIABILITY = BASE + "reliability.v1.schema.json"
REPORT = BASE + "capability-resolution-report.v1.schema.json"
CONFIG = BASE + "config.v1.schema.json"


@cache
def store() -> SchemaStore:
    from agentpack.kernel.schemas import SchemaStore

    return SchemaStore.from_package("agentpack_dci", "schemas")
