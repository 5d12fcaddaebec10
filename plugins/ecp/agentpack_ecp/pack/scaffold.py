"""``agentpack ecp init``: a new, valid Expert Context Pack (profile ``conformance``, bundled corpus)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentpack.io.errors import AgentpackError

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")

SKILL_MD = """---
name: {name}
description: Answers questions about {title} from its bundled sources, with file and line citations. Use when a question is about {title}.
license: Apache-2.0
compatibility: Needs an ECP runtime (for example agentpack with the ecp plugin); works offline.
---

# {title}

When active:
1. Ask the expert (`agentpack query . "question"` or the MCP tool `expert.query`).
2. Answer with the citations it returns (file and line range).
3. Say so when no citation supports an answer.
"""  # noqa: E501  (the description is one line of the SKILL.md this writes)

EXPERT_YAML = """# Expert Context Pack manifest (ECP v1.0). Paths are relative to the skill root.
ecp_version: "1.0"
id: {name}
display_name: {title}
description: Expert on {title}, built from the files under expert/sources/.
profile: conformance
skill:
  name: {name}
security:
  classification: public
  contains_secrets: false
  contains_pii: none
  license: Apache-2.0
  allow_remote_llm: false
sources:
  - source_id: docs
    type: filesystem
    uri: expert/sources/docs
    scope:
      include: ["**/*.md", "**/*.txt"]
      exclude: ["**/.git/**"]
    revision:
      timestamp: "1970-01-01T00:00:00Z"
    refresh:
      strategy: incremental
      incremental:
        method: file-manifest
context:
  strategy: retrieval
  artifacts:
    indexes:
      - id: docs-keyword
        type: keyword
        path: expert/context/indexes/docs-keyword
        descriptor: expert/context/indexes/docs-keyword/index.json
        chunking:
          max_chars: 1200
          overlap_chars: 120
maintenance:
  policy_path: expert/maintenance/policy.json
evals:
  suites:
    - suite_id: conformance
      path: expert/evals/conformance.yaml
"""

POLICY = {
    "policy_version": "1.0",
    "budgets": {"max_update_duration_seconds": 600, "max_changed_files": 500},
    "refresh_triggers": [{"type": "manual", "spec": "on-demand"}, {"type": "event", "spec": "file-change"}],
    "update_strategy": {
        "default": "incremental",
        "incremental": {"method": "file-manifest"},
        "rebuild": {"method": "full-scan"},
        "rebuild_thresholds": {"changed_files_gt": 200, "days_since_full_rebuild_gt": 30},
    },
    "validation": {"eval_suites": ["conformance"], "fail_action": "block"},
    "publishing": {"on_pass": "auto_publish", "rollback_on_fail": True},
}

SUITE = """suite_id: conformance
suite_version: "1.0"
description: Response shape and citation integrity of {title}.
cases:
  - case_id: getting-started
    mode: ephemeral
    question: How do I add a new source document to the expert?
    assertions:
      must_cite: ["getting-started.md"]
      must_cite_source_ids: [docs]
      min_citations: 1
      response_must_include_fields: [answer, as_of, citations, chunks, synthesis]
      as_of_must_include_source_ids: [docs]
      citations_must_resolve: true
      citations_must_match_snippets: true
      citations_must_match_hashes: true
"""

DOC = """# Getting started with {title}

This expert answers from the files under `expert/sources/docs/`.

## Adding a source document

To add a new source document, save it as Markdown or plain text under
`expert/sources/docs/`, then rebuild the index with `agentpack ecp build .`.
Every answer cites the file and the line range it came from.

## Checking the expert

Run `agentpack validate . --strict` and `agentpack eval .` after each change.
"""


def scaffold(directory: Path, *, name: str | None = None, title: str | None = None, force: bool = False) -> Path:
    """Write a new pack into ``directory`` (created); refuse to overwrite an existing pack unless ``force``."""
    directory = Path(directory)
    name = name or directory.resolve().name
    if not NAME_RE.match(name) or len(name) > 64:
        raise AgentpackError(
            f"'{name}' is not a valid skill name (lowercase letters, digits and single hyphens)",
            hint="the skill directory name must equal the name; pass --name or rename the folder",
        )
    if directory.resolve().name != name:
        raise AgentpackError(
            f"the directory is named '{directory.resolve().name}' but the skill name is '{name}'",
            hint="the skill directory name must equal the skill name (spec 3.2)",
        )
    if (directory / "expert" / "EXPERT.yaml").exists() and not force:
        raise AgentpackError(f"{directory} already holds an Expert Context Pack", hint="use --force to overwrite it")
    title = title or name.replace("-", " ").title()
    files = {
        "SKILL.md": SKILL_MD.format(name=name, title=title),
        "expert/EXPERT.yaml": EXPERT_YAML.format(name=name, title=title),
        "expert/maintenance/policy.json": json.dumps(POLICY, indent=2) + "\n",
        "expert/evals/conformance.yaml": SUITE.format(title=title),
        "expert/sources/docs/getting-started.md": DOC.format(title=title),
    }
    for rel, text in files.items():
        target = directory / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise AgentpackError(f"cannot write {rel}: {exc.strerror or exc}", file=str(target)) from None
    return directory
