"""The runtime's working directory: state files (persistent or per session), scratchpads and the store.

Layout under ``workdir``::

    runtime.db                 runs, execution log, dedupe window, dead letters, outbox
    state/<file>.md            persistent state, initialised from the package template
    sessions/<id>/state/...    session-scoped state, reset from the template when the session starts
    scratch/...                process scratchpads (kept on failure, removed after success)
    server-token               the HTTP server's generated bearer token (mode 0600)

Agent writes pass through the runtime's redactor: no ``private`` knowledge lands on disk.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentpack.io.errors import AgentpackError, PathEscapeError
from agentpack.io.fsutil import atomic_write_text, remove_stale_temporaries
from agentpack.io.paths import check_relative
from agentpack.io.userfiles import read_text

from ..model import ExpertPackage, normalise_ref

MAX_READ = 256 * 1024
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


class AccessError(AgentpackError):
    """The agent asked for a file it may not read or write."""


class Workspace:
    """The runtime directory's files; ``redact`` is applied to everything the agent writes."""

    def __init__(self, package: ExpertPackage, workdir: Path, redact: Callable[[str], str] = str) -> None:
        self.package = package
        self.workdir = workdir
        self.redact = redact
        workdir.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries(workdir)  # what a runtime killed in the middle of a state write left
        self.scopes: dict[str, str] = {}
        self.templates: dict[str, str] = {}
        for component in package.of("state"):
            scope = component.meta.get("scope")
            self.scopes[component.path] = scope if scope in ("session", "persistent") else "persistent"
            self.templates[component.path] = component.text
        self.readable = {
            c.path: c
            for kind in ("orchestrator", "persona", "functions", "processes", "tools", "knowledge")
            for c in package.of(kind)
        }

    # -- state -----------------------------------------------------------------------------------
    def init_persistent(self) -> None:
        """Copy templates of persistent state files that do not exist yet (existing ones are kept)."""
        for rel, scope in self.scopes.items():
            target = self.workdir / rel
            if scope == "persistent" and not target.exists():
                self._copy_template(rel, target)

    def start_session(self, session: str) -> None:
        """Reset every session-scoped state file of ``session`` to its template."""
        for rel, scope in self.scopes.items():
            if scope == "session":
                self._copy_template(rel, self.session_dir(session) / rel)

    def end_session(self, session: str) -> None:
        shutil.rmtree(self.session_dir(session), ignore_errors=True)

    def session_dir(self, session: str) -> Path:
        return self.workdir / "sessions" / _UNSAFE.sub("-", session)

    def _copy_template(self, rel: str, target: Path) -> None:
        atomic_write_text(target, self.templates[rel])

    def state_path(self, rel: str, session: str) -> Path:
        if self.scopes[rel] == "session":
            return self.session_dir(session) / rel
        return self.workdir / rel

    # -- scratchpads ------------------------------------------------------------------------------
    def scratchpad(self, pattern: str | None, inputs: dict[str, Any]) -> str | None:
        """The package-relative scratchpad path for ``inputs`` (placeholders filled, made path-safe)."""
        if not pattern:
            return None

        def fill(match: re.Match[str]) -> str:
            value = inputs.get(match.group(1))
            if value is None:
                return match.group(0)
            return _UNSAFE.sub("-", str(value)).strip("-") or "none"

        rel = re.sub(r"\{([^{}]+)\}", fill, normalise_ref(pattern))
        try:
            check_relative(rel)
        except PathEscapeError as exc:
            raise AgentpackError(f"scratchpad path: {exc.message}") from None
        (self.workdir / "scratch").mkdir(parents=True, exist_ok=True)
        return rel

    def remove(self, rel: str) -> None:
        path = self.workdir / rel
        if path.is_file():
            path.unlink()

    # -- agent file access ---------------------------------------------------------------------------
    def resolve(self, path: str, session: str, *, write: bool) -> tuple[Path, str]:
        """(real path, kind) for an agent's ``read_file``/``write_file``; raises ``AccessError``."""
        try:
            rel = check_relative(normalise_ref(str(path))).as_posix()
        except PathEscapeError as exc:
            raise AccessError(exc.message) from None
        if rel in self.scopes:
            return self.state_path(rel, session), "state"
        if rel.startswith("scratch/"):
            return self.workdir / rel, "scratch"
        if rel in self.readable and not write:
            component = self.readable[rel]
            kind = component.kind
            if kind == "knowledge" and self.package.knowledge_type(component) == "private":
                kind = "private"
            return component.file, kind
        if write:
            raise AccessError(
                f"'{rel}' is not writable: only state files listed in components.state and files under scratch/ are"
            )
        raise AccessError(f"'{rel}' is not a package component, a state file or a scratch file")

    def read(self, path: str, session: str) -> tuple[str, str]:
        real, kind = self.resolve(path, session, write=False)
        if not os.path.lexists(real):
            raise AccessError(f"'{path}' does not exist yet")
        text = read_text(real, display=path, error=AccessError)  # a folder, a FIFO, not UTF-8: said, not raised
        return (text if len(text) <= MAX_READ else text[:MAX_READ] + "\n[truncated]"), kind

    def write(self, path: str, content: str, session: str) -> str:
        real, kind = self.resolve(path, session, write=True)
        atomic_write_text(real, self.redact(content))
        return kind
