"""What the run store holds: a ``Run`` with its ``Case`` rows, and their JSON form."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STATUSES = ("passed", "failed", "error", "interrupted")
"""A run's status: every case passed (or was skipped), some failed, it could not run, it was stopped."""

CASE_STATUSES = ("passed", "failed", "error", "skipped")
FAILING = frozenset({"failed", "error"})


@dataclass
class Case:
    """One scenario or case of a run."""

    suite: str
    id: str
    status: str
    name: str | None = None
    duration_s: float = 0.0
    message: str = ""
    total_tokens: int | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    """Everything else: ``assertions``, ``details`` (input, output, tool calls, stderr...), ``file``, ``line``."""

    @property
    def key(self) -> str:
        """The case's identity across runs: ``suite/id`` (just ``id`` without a suite)."""
        return f"{self.suite}/{self.id}" if self.suite else self.id

    @property
    def failing(self) -> bool:
        return self.status in FAILING

    def to_json(self) -> dict[str, Any]:
        return {
            "suite": self.suite,
            "id": self.id,
            "name": self.name,
            "status": self.status,
            "duration_s": self.duration_s,
            "message": self.message,
            "total_tokens": self.total_tokens,
            **self.detail,
        }


@dataclass
class Run:
    """One recorded run of a command (``eval``, ``rpc run``, ``skill test``...) on one input."""

    id: int
    uid: str
    command: str
    input: str
    status: str
    started_at: str
    format: str | None = None
    name: str | None = None
    input_digest: str | None = None
    duration_s: float = 0.0
    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0
    pass_rate: float = 0.0
    input_tokens: int | None = None
    output_tokens: int | None = None
    total_tokens: int | None = None
    git_commit: str | None = None
    git_branch: str | None = None
    git_dirty: bool | None = None
    agent: dict[str, Any] | None = None
    settings: dict[str, Any] = field(default_factory=dict)
    message: str | None = None
    tool_version: str | None = None
    tags: list[str] = field(default_factory=list)
    report: Any = None
    """The full report as the command wrote it (loaded by ``RunStore.get``, not by listings)."""
    cases: list[Case] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "passed"

    @property
    def label(self) -> str:
        """A short name for people: ``#12 eval examples/pack``."""
        return f"#{self.id} {self.command} {self.input}"

    def case_map(self) -> dict[str, Case]:
        return {case.key: case for case in self.cases}

    def summary_json(self) -> dict[str, Any]:
        """The run without its report and cases (what listings show)."""
        return {
            "id": self.id,
            "uid": self.uid,
            "command": self.command,
            "format": self.format,
            "name": self.name,
            "input": self.input,
            "input_digest": self.input_digest,
            "status": self.status,
            "started_at": self.started_at,
            "duration_s": self.duration_s,
            "totals": {
                "total": self.total,
                "passed": self.passed,
                "failed": self.failed,
                "errors": self.errors,
                "skipped": self.skipped,
                "pass_rate": self.pass_rate,
            },
            "usage": {
                "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens,
                "total_tokens": self.total_tokens,
            },
            "git": {"commit": self.git_commit, "branch": self.git_branch, "dirty": self.git_dirty},
            "agent": self.agent,
            "settings": self.settings,
            "message": self.message,
            "tool_version": self.tool_version,
            "tags": list(self.tags),
        }

    def to_json(self, *, report: bool = True) -> dict[str, Any]:
        """The whole run: summary, cases and (unless ``report=False``) the full report."""
        data = self.summary_json()
        data["cases"] = [case.to_json() for case in self.cases]
        if report:
            data["report"] = self.report
        return data
