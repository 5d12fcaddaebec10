"""The JSON Schemas bundled with the plugin (``agentpack_ecp/schemas/``), by ``$id``.

Every schema check of the plugin goes through ``schema_store()``, the core's
``SchemaStore`` loaded once per process: its ``validate`` answers the valid case
without ``jsonschema`` and writes located findings otherwise.
"""

from __future__ import annotations

from functools import cache

from agentpack.kernel.schemas import SchemaStore

SPEC_BASE = "https://ecp.amcrypto.org/ecp/schemas/"
MANIFEST_SCHEMA = SPEC_BASE + "ecp-manifest.schema.json"
POLICY_SCHEMA = SPEC_BASE + "ecp-policy.schema.json"
SUITE_SCHEMA = SPEC_BASE + "ecp-eval-suite.schema.json"
DESCRIPTOR_SCHEMA = SPEC_BASE + "ecp-index-descriptor.schema.json"
CHUNK_SCHEMA = SPEC_BASE + "ecp-chunk-provenance.schema.json"
PACKAGE_SCHEMA = SPEC_BASE + "ecp-package.schema.json"
PAYLOAD_SCHEMAS = {
    "keyword-index-v2": SPEC_BASE + "ecp-keyword-index.schema.json",
    "sqlite-fts-index-v1": SPEC_BASE + "ecp-sqlite-fts-index.schema.json",
    "vector-index-v1": SPEC_BASE + "ecp-vector-index.schema.json",
}
SIGNATURE_SCHEMA = "https://agentpack.dev/schemas/ecp/package-signature.schema.json"


@cache
def schema_store() -> SchemaStore:
    """The plugin's bundled schemas (loaded once per process)."""
    return SchemaStore.from_package("agentpack_ecp", "schemas")
