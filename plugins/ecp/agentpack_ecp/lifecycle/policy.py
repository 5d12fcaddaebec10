"""``expert/maintenance/policy.json`` (spec section 7): budgets, thresholds and the refresh plan.

``plan_refresh`` turns a change set into a decision, with the reason for it:
``up-to-date``, ``incremental`` or ``rebuild``, or a refusal when a budget
forbids the update. ``budgets.max_changed_files_action`` (an agentpack
extension, ``refuse`` by default) says whether too many changed files refuse
the update or force a rebuild.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from agentpack.io.errors import AgentpackError

from ..pack.manifest import ExpertPack, as_dict
from ..pack.schemas import POLICY_SCHEMA, schema_store


class BudgetExceeded(AgentpackError):
    """An update would break a budget of the maintenance policy (exit status 1: the policy said no)."""

    exit_code = 1


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Policy:
    raw: dict[str, Any]
    file: str = "expert/maintenance/policy.json"

    @classmethod
    def load(cls, pack: ExpertPack) -> Policy:
        """The policy of a loaded ``ExpertPack``; a missing or invalid policy is a located error."""
        file = pack.policy_path or "expert/maintenance/policy.json"
        if pack.policy_error is not None:
            raise pack.policy_error
        if pack.policy_doc is None:
            raise AgentpackError(
                "the maintenance policy is missing",
                file=file,
                hint="declare maintenance.policy_path in EXPERT.yaml (spec 7)",
            )
        problems = schema_store().validate(
            POLICY_SCHEMA, pack.policy_doc.data, document=pack.policy_doc, file=file, code="ECP700"
        )
        if problems:
            first = problems[0]
            raise AgentpackError(
                f"invalid maintenance policy: {first.message}",
                file=first.file,
                line=first.line,
                hint=f"{len(problems)} problem(s); run 'agentpack validate' for all of them",
            )
        return cls(pack.policy_doc.data, file)

    @property
    def budgets(self) -> dict[str, Any]:
        return as_dict(self.raw.get("budgets"))

    @property
    def max_duration_s(self) -> int | None:
        return _int(self.budgets.get("max_update_duration_seconds"))

    @property
    def max_changed_files(self) -> int | None:
        return _int(self.budgets.get("max_changed_files"))

    @property
    def max_changed_files_action(self) -> str:
        action = self.budgets.get("max_changed_files_action")
        return action if action in ("refuse", "rebuild") else "refuse"

    @property
    def max_tokens(self) -> int | None:
        return _int(self.budgets.get("max_tokens"))

    @property
    def max_cost_usd(self) -> float | None:
        return _num(self.budgets.get("max_update_cost_usd"))

    @property
    def strategy(self) -> dict[str, Any]:
        return as_dict(self.raw.get("update_strategy"))

    @property
    def default_strategy(self) -> str:
        return "rebuild" if self.strategy.get("default") == "rebuild" else "incremental"

    @property
    def thresholds(self) -> dict[str, Any]:
        return as_dict(self.strategy.get("rebuild_thresholds"))

    @property
    def eval_suites(self) -> list[str]:
        suites = as_dict(self.raw.get("validation")).get("eval_suites")
        return [s for s in suites if isinstance(s, str)] if isinstance(suites, list) else []

    @property
    def fail_action(self) -> str:
        action = as_dict(self.raw.get("validation")).get("fail_action")
        return action if action in ("block", "warn", "rollback") else "block"

    @property
    def on_pass(self) -> str:
        value = as_dict(self.raw.get("publishing")).get("on_pass")
        return value if value in ("auto_publish", "require_approval") else "auto_publish"

    @property
    def rollback_on_fail(self) -> bool:
        return as_dict(self.raw.get("publishing")).get("rollback_on_fail") is True

    @property
    def retention(self) -> dict[str, Any]:
        return as_dict(self.raw.get("retention"))

    @property
    def max_backups_per_index(self) -> int | None:
        return _int(self.retention.get("max_backups_per_index"))

    @property
    def max_backup_age_days(self) -> int | None:
        return _int(self.retention.get("max_backup_age_days"))

    @property
    def triggers(self) -> list[dict[str, Any]]:
        items = self.raw.get("refresh_triggers")
        return [t for t in items if isinstance(t, dict)] if isinstance(items, list) else []


@dataclass
class Plan:
    """What a refresh will do, and why."""

    strategy: str
    """``up-to-date``, ``incremental`` or ``rebuild``."""
    reasons: list[str] = field(default_factory=list)
    changed_files: int = 0
    changed_lines: int = 0

    def as_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "reasons": self.reasons,
            "changed_files": self.changed_files,
            "changed_lines": self.changed_lines,
        }


def plan_refresh(
    policy: Policy,
    *,
    changed_files: int,
    changed_lines: int,
    force_rebuild: bool,
    needs_rebuild: list[str],
    last_full_rebuild: datetime | None,
    now: datetime,
) -> Plan:
    """Decide the strategy. ``needs_rebuild`` lists reasons a rebuild is unavoidable (no index yet, ...)."""
    plan = Plan("incremental", changed_files=changed_files, changed_lines=changed_lines)
    limit = policy.max_changed_files
    if limit is not None and changed_files > limit and not force_rebuild:
        if policy.max_changed_files_action == "refuse":
            raise BudgetExceeded(
                f"{changed_files} changed files exceed budgets.max_changed_files ({limit})",
                file=policy.file,
                hint="raise the budget, set budgets.max_changed_files_action to 'rebuild', or run with --rebuild",
            )
        plan.reasons.append(f"{changed_files} changed files exceed budgets.max_changed_files ({limit})")
    if force_rebuild:
        plan.reasons.append("--rebuild was given")
    plan.reasons += needs_rebuild
    if not plan.reasons and changed_files == 0:
        return Plan("up-to-date", ["no source changed since the published build"])
    if policy.default_strategy == "rebuild":
        plan.reasons.append("update_strategy.default is rebuild")
    t = policy.thresholds
    if _int(t.get("changed_files_gt")) is not None and changed_files > t["changed_files_gt"]:
        plan.reasons.append(
            f"{changed_files} changed files > rebuild_thresholds.changed_files_gt ({t['changed_files_gt']})"
        )
    if _int(t.get("changed_lines_gt")) is not None and changed_lines > t["changed_lines_gt"]:
        plan.reasons.append(
            f"{changed_lines} changed lines > rebuild_thresholds.changed_lines_gt ({t['changed_lines_gt']})"
        )
    days = _int(t.get("days_since_full_rebuild_gt"))
    if days is not None and last_full_rebuild is not None:
        age = (now - last_full_rebuild).total_seconds() / 86400
        if age > days:
            plan.reasons.append(
                f"last full rebuild {age:.0f} days ago > rebuild_thresholds.days_since_full_rebuild_gt ({days})"
            )
    if plan.reasons:
        plan.strategy = "rebuild"
    else:
        plan.reasons.append(f"{changed_files} changed files within the thresholds")
    return plan


class Budget:
    """Tracks tokens, cost and time of one update against the policy's budgets."""

    def __init__(self, policy: Policy, *, started: float, clock_monotonic) -> None:
        self.policy = policy
        self.started = started
        self._monotonic = clock_monotonic
        self.tokens = 0
        self.cost_usd = 0.0
        self.exceeded: BudgetExceeded | None = None
        """The first budget error, kept: callers that catch errors (an eval case) must not hide it."""

    def elapsed(self) -> float:
        return self._monotonic() - self.started

    def check_time(self, phase: str) -> None:
        limit = self.policy.max_duration_s
        elapsed = self.elapsed()
        if limit is not None and elapsed > limit:
            raise BudgetExceeded(
                f"the update ran {elapsed:.1f} s, over budgets.max_update_duration_seconds "
                f"({limit}), after {phase}; nothing was published",
                file=self.policy.file,
            )

    def charge(self, tokens: int, cost_usd: float = 0.0) -> None:
        self.tokens += tokens
        self.cost_usd += cost_usd
        error = None
        if self.policy.max_tokens is not None and self.tokens > self.policy.max_tokens:
            error = BudgetExceeded(
                f"LLM work used {self.tokens} tokens, over budgets.max_tokens ({self.policy.max_tokens})",
                file=self.policy.file,
            )
        elif self.policy.max_cost_usd is not None and self.cost_usd > self.policy.max_cost_usd:
            error = BudgetExceeded(
                f"LLM work cost ${self.cost_usd:.4f}, over budgets.max_update_cost_usd (${self.policy.max_cost_usd})",
                file=self.policy.file,
            )
        if error is not None:
            self.exceeded = self.exceeded or error
            raise error

    def allows_llm(self) -> bool:
        """False when a zero token or cost budget forbids any LLM call, or a budget is already spent."""
        return self.policy.max_tokens != 0 and self.policy.max_cost_usd != 0 and self.exceeded is None

    def raise_if_exceeded(self) -> None:
        if self.exceeded is not None:
            raise self.exceeded

    def as_dict(self) -> dict[str, Any]:
        return {
            "elapsed_s": round(self.elapsed(), 3),
            "tokens": self.tokens,
            "cost_usd": round(self.cost_usd, 6),
            "max_update_duration_seconds": self.policy.max_duration_s,
            "max_tokens": self.policy.max_tokens,
            "max_update_cost_usd": self.policy.max_cost_usd,
        }
