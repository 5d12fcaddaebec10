"""The manifest's model: ``Manifest``, ``Scenario``, ``Step``, ``GraderSpec``, ``Target``, and the rules they share."""

from __future__ import annotations

import math
import os
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlparse

from agentpack.kernel.records import Record, constant

if TYPE_CHECKING:  # pydantic and the graders load after ``rpc run`` has started the agent (``builder.early_target``)
    from agentpack.kernel.models import Finding, Severity

    from ..containment import Containment


DEFAULT_STEP_TIMEOUT = 30.0
MAX_SECONDS = 604_800
"""The longest timeout or budget accepted anywhere (a week; the manifest schema's ``seconds`` says the same)."""
MANIFEST_NAMES = ("manifest.yaml", "manifest.yml")


class GraderSpec(Record):
    """One grader entry of a step, with its configured grader object."""

    __slots__ = ("type", "config", "pointer", "grader")
    type: str
    config: dict[str, Any]
    pointer: str
    grader: Any


class Step(Record):
    """One input sent to the agent, and the graders of its result."""

    __slots__ = ("index", "input", "graders", "timeout", "expect_status", "name", "line")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "timeout": constant(None),
        "expect_status": constant(None),
        "name": constant(None),
        "line": constant(None),
    }
    index: int
    input: str
    graders: list[GraderSpec]
    timeout: float | None
    expect_status: str | None
    name: str | None
    line: int | None


class Scenario(Record):
    """One conversation: steps run in order on one agent session."""

    __slots__ = (
        "index",
        "id",
        "name",
        "steps",
        "tags",
        "description",
        "skip",
        "timeout",
        "step_timeout",
        "retries",
        "repeat",
        "pass_threshold",
        "line",
    )
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "tags": list,
        "description": constant(""),
        "skip": constant(None),
        "timeout": constant(None),
        "step_timeout": constant(DEFAULT_STEP_TIMEOUT),
        "retries": constant(0),
        "repeat": constant(1),
        "pass_threshold": constant(1.0),
        "line": constant(None),
    }
    index: int
    id: str
    name: str
    steps: list[Step]
    tags: list[str]
    description: str
    skip: str | None
    timeout: float | None
    step_timeout: float
    retries: int
    repeat: int
    pass_threshold: float
    line: int | None


class Target(Record):
    """How to reach the agent: a command (stdio) or a URL (Streamable HTTP)."""

    __slots__ = ("command", "url", "shell", "cwd", "env", "stderr_limit", "max_message", "pid_namespace")
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "command": constant(None),
        "url": constant(None),
        "shell": constant(False),
        "cwd": constant(None),
        "env": dict,
        "stderr_limit": constant(64 * 1024),
        "max_message": constant(64 * 1024 * 1024),
        "pid_namespace": constant(False),
    }
    command: list[str] | str | None
    url: str | None
    shell: bool
    cwd: str | None
    """The agent's working directory; None: the caller's (``cwd:`` unset, as ecp-runtime does)."""
    env: dict[str, str]
    stderr_limit: int
    max_message: int
    pid_namespace: bool

    @property
    def kind(self) -> str:
        return "http" if self.url else "stdio"

    def describe(self) -> str:
        if self.url:
            return self.url
        return self.command if isinstance(self.command, str) else shlex.join(self.command or [])

    def open(self, scope: Containment | None = None):
        """A connected transport (spawns the agent for stdio, within ``scope`` when given)."""
        if self.url:
            from ..http_transport import HttpTransport

            return HttpTransport(self.url, max_message=self.max_message)
        from ..stdio import StdioTransport

        assert self.command is not None  # a target is a URL or a command
        return StdioTransport(
            self.command,
            cwd=self.cwd,
            env=self.env,
            stderr_limit=self.stderr_limit,
            max_message=self.max_message,
            scope=scope,
            pid_namespace=self.pid_namespace,
        )


class Manifest(Record):
    """A validated manifest, with paths resolved and graders built."""

    __slots__ = (
        "path",
        "root",
        "name",
        "target",
        "scenarios",
        "config",
        "description",
        "isolation",
        "require_capabilities",
        "judge",
        "report_text_chars",
        "digest",
        "raw",
    )
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "config": dict,
        "description": constant(""),
        "isolation": constant("reset"),
        "require_capabilities": constant(False),
        "judge": dict,
        "report_text_chars": constant(20_000),
        "digest": constant(""),
        "raw": dict,
    }
    path: Path
    root: Path
    name: str
    target: Target
    scenarios: list[Scenario]
    config: dict[str, Any]
    description: str
    isolation: str
    require_capabilities: bool
    judge: dict[str, Any]
    report_text_chars: int
    digest: str
    raw: dict[str, Any]


def is_url(target: str) -> bool:
    parsed = urlparse(target)
    return parsed.scheme in ("http", "https") and bool(parsed.netloc)


SECONDS_RULE = "a positive number of seconds"
SECONDS_LIMIT = f"at most {MAX_SECONDS}, a week; not NaN or infinity"


def parse_seconds(value: Any) -> float | None:
    """``value`` as seconds (a number or its text); None when not within ``SECONDS_RULE`` and ``SECONDS_LIMIT``."""
    try:
        seconds = float(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return seconds if math.isfinite(seconds) and 0 < seconds <= MAX_SECONDS else None


def display_path(path: str | Path) -> str:
    """``path`` as seen from the working directory when it lies below it, else as it is.

    Findings and report locations use it, so SARIF and GitHub annotations can
    place them (GitHub resolves them against the checkout, the usual working
    directory).
    """
    text = str(path)
    if not os.path.isabs(text):
        return text
    try:
        return str(Path(text).relative_to(Path.cwd()))
    except (ValueError, OSError):  # elsewhere, or the working directory is gone
        return text


def looks_like_manifest(data: Any) -> bool:
    return isinstance(data, dict) and "scenarios" in data and ("target" in data or "manifest_version" in data)


def new_finding(severity: Severity, code: str, message: str, **where: Any) -> Finding:
    """A ``Finding`` (pydantic is imported only when there is something to report)."""
    from agentpack.kernel.models import Finding

    return Finding(severity=severity, code=code, message=message, **where)


def make_target(raw: str | list[str], *, shell: bool = False, cwd: str | None = None) -> Target:
    """A ``Target`` from a command line, an argv list or a URL (for ``conformance`` and the pytest fixture)."""
    if isinstance(raw, str) and is_url(raw.strip()):
        return Target(url=raw.strip())
    if isinstance(raw, str) and not shell:
        try:
            command: list[str] | str = shlex.split(raw)
        except ValueError as exc:
            raise ValueError(f"not a valid command line: {exc}") from None
    else:
        command = raw if isinstance(raw, str) else list(raw)
    if not command:
        raise ValueError("empty agent command")
    return Target(command=command, shell=shell, cwd=cwd)
