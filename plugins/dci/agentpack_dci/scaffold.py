"""``agentpack dci init``: a workspace whose consumer's strict contract one provider covers."""

from __future__ import annotations

import json
from pathlib import Path

from agentpack.io.errors import AgentpackError

CONSUMER = "consumers/brief-writer/SKILL.md"
FILES = {
    ".dci/config.v1.json": json.dumps({"schema_version": "1", "known_runtimes": [], "disabled": []}, indent=2) + "\n",
    CONSUMER: """---
name: brief-writer
description: Write a short brief on a topic from the summaries a provider skill gives.
metadata:
  contract: "DCI/1^strict R(summarization) Pol(selection-mode=single)"
---
# Brief writer (a consumer)

Needs one skill that provides `summarization`; `agentpack dci resolve --consumer {consumer}` picks it.
""",
    "skills/writing/summarizer/SKILL.md": """---
name: summarizer
description: Summarize long documents into a short brief of at most ten sentences.
metadata:
  contract: "DCI/1^best-effort P(summarization) E(document-text)"
---
# Summarizer (a provider)

Provides `summarization`: reads a document and writes a brief of at most ten sentences.
""",
}


def scaffold(directory: Path, *, force: bool = False) -> Path:
    """Write the workspace into ``directory``; the consumer's folder."""
    from agentpack.io.fsutil import SHARED, atomic_write_text

    if (directory / ".dci").exists() and not force:
        raise AgentpackError(f"{directory} already holds a DCI workspace", hint="agentpack dci init --force")
    for rel, text in FILES.items():
        atomic_write_text(directory / rel, text.replace("{consumer}", str(Path(CONSUMER).parent)), mode=SHARED)
    return directory / Path(CONSUMER).parent
