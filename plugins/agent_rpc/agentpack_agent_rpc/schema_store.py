"""The plugin's bundled JSON Schemas (``schemas/*.json``), loaded once."""

from __future__ import annotations

from functools import lru_cache

from agentpack.schemas import SchemaStore

BASE = "https://schemas.agentpack.dev/agent-rpc/"
MANIFEST, AGENT_RESULT, TOOL_CALL, REPORT = (BASE + n for n in ("manifest.json", "agent-result.json",
                                                                "tool-call.json", "report.json"))


@lru_cache(maxsize=1)
def store() -> SchemaStore:
    return SchemaStore.from_package("agentpack_agent_rpc", "schemas")
