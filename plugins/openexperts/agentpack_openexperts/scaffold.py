"""``agentpack experts init``: a new openexperts package that validates strictly and dry-runs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError

from .names import MANIFEST

EXPERT_YAML = """{modeline}
spec: "1.0"
name: {name}
version: "0.1.0"
description: Answers questions about {title} from its knowledge files
license: Apache-2.0

execution:
  timeout: 5m
  on_failure: escalate

policy:
  approval:
    default: confirm

triggers:
  - name: question
    type: channel
    session: isolated
    payload_mapping:
      question: message_text
    process: answer-question
    description: Someone asks a question.

components:
  orchestrator: orchestrator.md
  persona:
    - persona/identity.md
  functions:
    - functions/draft-answer.md
  processes:
    - processes/answer-question.md
  knowledge:
    - knowledge/faq.md
"""

FILES = {
    "README.md": """# {title}

An openexperts package: `expert.yaml` lists its parts. Check it with `agentpack validate . --strict`,
see its effective settings with `agentpack experts explain .`, and plan a run with
`agentpack experts dry-run . answer-question --input question=hello`.
""",
    "orchestrator.md": """# Orchestrator

You answer questions about {title}. For a question, run the process `answer-question`.
Escalate when the knowledge files do not answer it.
""",
    "persona/identity.md": """# Identity

You are a careful assistant for {title}. You answer in plain language, from the knowledge files only.
""",
    "functions/draft-answer.md": """---
name: draft-answer
description: Draft an answer to a question from the knowledge files
inputs:
  - name: question
    type: string
outputs:
  - name: answer
    type: string
knowledge:
  - knowledge/faq.md
---
# Draft answer

Find the entry of `knowledge/faq.md` that answers the question and restate it in one or two sentences.
When none does, say so.
""",
    "processes/answer-question.md": """---
name: answer-question
description: Answer a question from the knowledge files
trigger: question
inputs:
  - name: question
    type: string
outputs:
  - name: answer
    type: string
functions:
  - draft-answer
---
## Answer a question

### Steps

- [ ] Apply `draft-answer` to the question.
- [ ] Send the answer, or say that the knowledge files do not cover it.
""",
    "knowledge/faq.md": """# Frequently asked questions about {title}

## What is this expert for?

It answers questions about {title} from the files under `knowledge/`. Add a file there and list it
under `components.knowledge` of `expert.yaml`.
""",
}


def scaffold(directory: Path, schemas: Mapping[str, Any], *, force: bool = False) -> list[Path]:
    """Write a package into ``directory`` (named after it); the files written."""
    from agentpack.io.fsutil import SHARED, atomic_write_text
    from agentpack.kernel.registry import schema_modeline

    name = directory.resolve().name
    manifest = directory / MANIFEST
    if manifest.exists() and not force:
        raise AgentpackError(f"{manifest} already exists", hint="agentpack experts init --force replaces it")
    title = name.replace("-", " ").replace("_", " ").capitalize()
    written = []
    for rel, text in FILES.items():
        atomic_write_text(directory / rel, text.format(title=title), mode=SHARED)
        written.append(directory / rel)
    modeline = schema_modeline(schemas, "openexperts/expert", manifest, directory)
    atomic_write_text(manifest, EXPERT_YAML.format(modeline=modeline, name=name, title=title), mode=SHARED)
    return [manifest, *written]
