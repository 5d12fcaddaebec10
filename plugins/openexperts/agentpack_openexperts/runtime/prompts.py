"""Bootstrap context and task prompts.

Knowledge strategy: the orchestrator and persona always go into the system
prompt; ``static`` knowledge is preloaded while it fits ``knowledge_budget``
characters; ``dynamic`` knowledge is never preloaded (read it fresh on demand);
``private`` knowledge is preloaded only when a process lists it in ``context``.
Functions and processes are listed by name and read on demand.
"""

from __future__ import annotations

import json
from typing import Any

from ..model import ExpertPackage, normalise_ref

DEFAULT_BUDGET = 20_000


class Prompts:
    def __init__(self, package: ExpertPackage, workspace: Any, budget: int = DEFAULT_BUDGET) -> None:
        self.package = package
        self.workspace = workspace
        self.budget = budget
        self._system: str | None = None
        self.preloaded: list[str] = []

    def system(self) -> str:
        if self._system is None:
            pkg = self.package
            parts = [f"You are the expert '{pkg.name}': {pkg.data.get('description', '')}".strip()]
            if pkg.orchestrator is not None:
                parts.append("# Orchestrator\n\n" + pkg.orchestrator.body)
            for persona in pkg.of("persona"):
                parts.append(f"# Persona ({persona.path})\n\n{persona.body}")
            used = 0
            for component in pkg.of("knowledge"):
                if pkg.knowledge_type(component) != "static" or used + len(component.body) > self.budget:
                    continue
                used += len(component.body)
                self.preloaded.append(component.path)
                parts.append(f"# Knowledge ({component.path})\n\n{component.body}")
            listing = [f"- {name}: {fn.meta.get('description', '')}" for name, fn in pkg.functions().items()]
            parts.append("# Functions (read one with read_function before applying it)\n\n" + "\n".join(listing))
            other = [c.path for c in pkg.of("knowledge") if c.path not in self.preloaded]
            if other:
                parts.append("# More knowledge (read with read_file)\n\n" + "\n".join(f"- {p}" for p in other))
            self._system = "\n\n".join(parts)
        return self._system

    def task(self, session: Any) -> str:
        process = session.process
        parts = [
            f"# Process: {process.name}\n\n{process.meta.get('description', '')}",
            "Inputs:\n```json\n" + json.dumps(session.inputs, indent=2, sort_keys=True, default=str) + "\n```",
            process.body,
        ]
        for ref in process.list_of("context"):
            if not isinstance(ref, str):
                continue
            try:
                text, _ = self.workspace.read(normalise_ref(ref), session.session_id)
            except Exception:  # a missing context file is reported by validation; skip it here
                continue
            parts.append(f"# Context ({ref})\n\n{text}")
        if session.scratchpad:
            parts.append(f"Scratchpad: {session.scratchpad} (create it, or read it first if it exists).")
        if session.resume is not None:
            parts.append("# Resuming\n\n" + session.resume.prompt(session.steps))
        if session.dry_run:
            parts.append(
                "# Dry run\n\nNarrate each step. Operations at confirm or manual tier are not executed; "
                "say what you would do, with the operation, inputs and expected outcome."
            )
        ops = ", ".join(session.operations()) or "none"
        parts.append(
            f"Tools: {ops}. Call complete_step after each checklist step and finish with your outputs "
            "(narrative, structured, confidence, recommended_action)."
        )
        return "\n\n".join(parts)
