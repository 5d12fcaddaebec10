"""The pydantic v2 models the core and plugins pass around (findings, evaluations, reports).

The records of the pack path (``Detection``, ``Pack``, ``QueryRequest``, ``Citation``,
``QueryResponse``) are plain, in ``packtypes.py``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, computed_field, model_validator

from agentpack.kernel.summary import summarize

Severity = Literal["error", "warning", "info"]
SEVERITY_ORDER: dict[str, int] = {"error": 0, "warning": 1, "info": 2}


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _drop_computed(cls, data: Any) -> Any:
        """Accept our own JSON back: computed fields (``ok``, ``totals``...) are derived, not input."""
        if isinstance(data, dict) and cls.model_computed_fields:
            data = {k: v for k, v in data.items() if k not in cls.model_computed_fields}
        return data


class Finding(_Model):
    """One problem (or note) found in a pack, precise enough to act on."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    severity: Severity
    code: str = Field(description="stable identifier, e.g. 'ECP101'")
    message: str
    file: str | None = None
    line: int | None = None
    column: int | None = None
    pointer: str | None = Field(default=None, description="JSON pointer of the field, e.g. '/sources/0/type'")
    hint: str | None = None

    @classmethod
    def error(cls, code: str, message: str, **where: Any) -> Finding:
        return cls(severity="error", code=code, message=message, **where)

    @classmethod
    def warning(cls, code: str, message: str, **where: Any) -> Finding:
        return cls(severity="warning", code=code, message=message, **where)

    @classmethod
    def info(cls, code: str, message: str, **where: Any) -> Finding:
        return cls(severity="info", code=code, message=message, **where)

    def location(self) -> str:
        parts = [str(p) for p in (self.file, self.line, self.column) if p is not None]
        return ":".join(parts)

    def sort_key(self) -> tuple[str, int, int, int, str]:
        return (self.file or "", self.line or 0, self.column or 0, SEVERITY_ORDER[self.severity], self.code)


class EvalOptions(_Model):
    suite: str | None = None
    filter: str | None = None
    jobs: int = Field(default=1, ge=1)
    options: dict[str, Any] = Field(default_factory=dict)


class AssertionResult(_Model):
    name: str
    passed: bool
    expected: Any = None
    actual: Any = None
    message: str = ""


CaseStatus = Literal["passed", "failed", "error", "skipped"]


class CaseResult(_Model):
    id: str
    name: str | None = None
    status: CaseStatus
    duration_s: float = 0.0
    message: str = ""
    file: str | None = None
    line: int | None = None
    assertions: list[AssertionResult] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)


class Totals(_Model):
    total: int = 0
    passed: int = 0
    failed: int = 0
    errors: int = 0
    skipped: int = 0

    @computed_field  # type: ignore[prop-decorator]
    @property
    def pass_rate(self) -> float:
        ran = self.total - self.skipped
        return round(self.passed / ran, 4) if ran else 0.0

    @classmethod
    def of(cls, cases: list[CaseResult]) -> Totals:
        count = {s: 0 for s in ("passed", "failed", "error", "skipped")}
        for case in cases:
            count[case.status] += 1
        return cls(
            total=len(cases),
            passed=count["passed"],
            failed=count["failed"],
            errors=count["error"],
            skipped=count["skipped"],
        )

    def __add__(self, other: Totals) -> Totals:
        return Totals(
            total=self.total + other.total,
            passed=self.passed + other.passed,
            failed=self.failed + other.failed,
            errors=self.errors + other.errors,
            skipped=self.skipped + other.skipped,
        )


class SuiteResult(_Model):
    id: str
    name: str | None = None
    file: str | None = None
    duration_s: float = 0.0
    cases: list[CaseResult] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def totals(self) -> Totals:
        return Totals.of(self.cases)


class EvalReport(_Model):
    """The result of evaluating one pack (or manifest)."""

    name: str
    format: str
    path: str | None = None
    started_at: datetime | None = None
    duration_s: float = 0.0
    suites: list[SuiteResult] = Field(default_factory=list)
    metadata: dict[str, Any] = Field(default_factory=dict)
    findings: list[Finding] = Field(default_factory=list)
    aborted: str | None = Field(
        default=None,
        description="why the run could not start or finish (e.g. the "
        "agent is unreachable); the report is still emitted and the CLI exits 2",
    )

    @computed_field  # type: ignore[prop-decorator]
    @property
    def totals(self) -> Totals:
        total = Totals()
        for suite in self.suites:
            total = total + suite.totals
        return total

    @property
    def ok(self) -> bool:
        t = self.totals
        return t.failed == 0 and t.errors == 0 and not any(f.severity == "error" for f in self.findings)


class ValidationItem(_Model):
    path: str
    format: str | None = None
    findings: list[Finding] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return not any(f.severity == "error" for f in self.findings)


class ToolInfo(_Model):
    name: str = "agentpack"
    version: str = ""


class Report(_Model):
    """The one versioned envelope every reporter renders and ``-o json`` prints."""

    schema_version: Literal[1] = 1
    command: str
    tool: ToolInfo = Field(default_factory=ToolInfo)
    generated_at: datetime | None = None
    items: list[ValidationItem] = Field(default_factory=list)
    evaluations: list[EvalReport] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def ok(self) -> bool:
        return all(i.ok for i in self.items) and all(e.ok for e in self.evaluations)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def summary(self) -> dict[str, Any]:
        summary = summarize((f for i in self.items for f in i.findings), len(self.items))
        if self.evaluations:
            total = Totals()
            for ev in self.evaluations:
                total = total + ev.totals
            summary["cases"] = total.model_dump()
        return summary
