"""Names the ECP v1 spec fixes that several layers share (validation, build, query, evals, MCP)."""

from __future__ import annotations

import re
from datetime import datetime

ARTIFACT_SOURCE_ID = "ecp_artifacts"
"""The conventional source id for derived artifacts (summaries) cited per spec 6.3.2."""

KNOWN_ASSERTIONS = frozenset(
    {
        "must_cite",
        "must_not_cite",
        "must_cite_source_ids",
        "min_citations",
        "max_citations",
        "answer_must_include",
        "answer_must_not_include",
        "answer_must_match",
        "response_must_include_fields",
        "as_of_must_include_source_ids",
        "citations_must_resolve",
        "citations_must_match_snippets",
        "citations_must_match_hashes",
    }
)
"""The eval case assertions of spec 8.3."""

REVISION_IDENTITY = ("hash", "commit", "query_hash", "row_count", "retrieved_at")
"""The keys of a source revision that say which content it is (``timestamp`` and ``branch`` do not)."""

COMMIT_RE = re.compile(r"^[0-9a-f]{7,64}$")
"""A concrete git commit hash (abbreviated or full)."""

MAX_DIMENSIONS = 65536
"""The largest ``embedding.dimensions`` agentpack accepts (refused before anything is allocated)."""

_RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")


def is_rfc3339(value: object) -> bool:
    """Whether ``value`` is an RFC 3339 date-time string (``2026-01-19T00:00:00Z``), a real date and time."""
    if not isinstance(value, str) or not _RFC3339.match(value):
        return False
    text = value.upper().replace("Z", "+00:00")
    if text[17:19] == "60":  # a leap second
        text = text[:17] + "59" + text[19:]
    try:
        datetime.fromisoformat(text)
    except ValueError:
        return False
    return True
