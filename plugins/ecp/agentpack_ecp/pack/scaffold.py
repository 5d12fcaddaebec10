"""``agentpack ecp init``: a new, valid Expert Context Pack (profile ``conformance``, bundled corpus)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError
from agentpack.io.fsutil import SHARED, atomic_write_text
from agentpack.kernel.registry import schema_modeline

NAME_RE = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
SUITE_PATH = "expert/evals/conformance.yaml"
DOCS = "expert/sources/docs"

SKILL_MD = """---
name: {name}
description: Answers questions about {title} from its bundled sources, with file and line citations. Use when a question is about {title}.
license: Apache-2.0
compatibility: Needs an ECP runtime (for example agentpack with the ecp plugin); works offline.
---

# {title}

When active:
1. Ask the expert (`agentpack query . "question"` or the MCP tool `expert_query`).
2. Answer with the citations it returns (file and line range).
3. Say so when no citation supports an answer.
"""  # noqa: E501  (the description is one line of the SKILL.md this writes)

EXPERT_YAML = """{modeline}
# Expert Context Pack manifest (ECP v1.0). Paths are relative to the skill root.
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
      - id: docs-fts
        type: keyword
        backend: sqlite-fts
        path: expert/context/indexes/docs-fts
        descriptor: expert/context/indexes/docs-fts/index.json
        chunking:
          max_chars: 1200
          overlap_chars: 120
      - id: docs-vector
        type: vector
        path: expert/context/indexes/docs-vector
        descriptor: expert/context/indexes/docs-vector/index.json
        chunking:
          max_chars: 1200
          overlap_chars: 120
        embedding: {{model: agentpack-hash-v1, dimensions: 256, provider: local}}
        vector: {{metric: cosine, vectors_path: vectors.npy}}
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

SUITE = """{modeline}
suite_id: conformance
suite_version: "1.0"
description: Response shape and citation integrity of {title}.
cases:
  - case_id: {case_id}
    mode: ephemeral
    question: {question}
    assertions:
      must_cite: [{cite}]
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


def scaffold(
    directory: Path,
    *,
    name: str | None = None,
    title: str | None = None,
    force: bool = False,
    source: Path | None = None,
    schemas: Mapping[str, Any] | None = None,
) -> Path:
    """Write a new pack into ``directory`` (created); refuse to overwrite an existing pack unless ``force``.

    ``source``: a folder of the user's documents, copied into ``expert/sources/docs`` (links and hidden files
    left out) in place of the bundled one, with an eval case that asks about its first document. ``schemas``
    (``host.schemas()``): the YAML files get a ``# yaml-language-server: $schema=`` line to an exported copy.
    """
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
    docs = _documents(source) if source is not None else {"getting-started.md": DOC.format(title=title)}
    first = sorted(docs)[0]
    case = (
        {"case_id": "getting-started", "question": "How do I add a new source document to the expert?"}
        if source is None
        else {"case_id": "first-document", "question": json.dumps(_question(first, docs[first]))}
    )
    lines = {
        rel: schema_modeline(schemas, schema, directory / rel, directory) if schemas else ""
        for rel, schema in (("expert/EXPERT.yaml", "ecp/ecp-manifest"), (SUITE_PATH, "ecp/ecp-eval-suite"))
    }
    files = {
        "SKILL.md": SKILL_MD.format(name=name, title=title),
        "expert/EXPERT.yaml": EXPERT_YAML.format(name=name, title=title, modeline=lines["expert/EXPERT.yaml"]),
        "expert/maintenance/policy.json": json.dumps(POLICY, indent=2) + "\n",
        SUITE_PATH: SUITE.format(title=title, modeline=lines[SUITE_PATH], cite=json.dumps(Path(first).name), **case),
        **{f"{DOCS}/{rel}": text for rel, text in docs.items()},
    }
    for rel, text in files.items():
        target = directory / rel
        try:
            atomic_write_text(target, text.lstrip("\n"), mode=SHARED)
        except OSError as exc:
            raise AgentpackError(f"cannot write {rel}: {exc.strerror or exc}", file=str(target)) from None
    return directory


def _documents(source: Path) -> dict[str, str]:
    """The Markdown and text files under ``source`` (relative POSIX path: text), no links or hidden entries."""
    if not source.is_dir():
        raise AgentpackError(f"--source {source}: not a folder of documents")
    found: dict[str, str] = {}
    for path in sorted(source.rglob("*")):
        rel = path.relative_to(source)
        if any(part.startswith(".") for part in rel.parts) or path.is_symlink() or not path.is_file():
            continue
        if path.suffix.lower() in (".md", ".txt"):
            try:
                found[rel.as_posix()] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                raise AgentpackError(f"cannot read {path}: {exc}", file=str(path)) from None
    if not found:
        raise AgentpackError(
            f"--source {source}: no .md or .txt file in it", hint="point --source at a folder of Markdown or text files"
        )
    return found


def _question(rel: str, text: str) -> str:
    """A question about a document: its first heading, or first line, or its name."""
    for line in text.splitlines():
        words = line.strip().lstrip("#").strip()
        if words:
            return f"What does the documentation say about {words[:80]}?"
    return f"What is in {Path(rel).stem}?"
