"""``agentpack ecp refresh``, ``publish`` and ``rollback``: eval-gated, crash-safe updates of a pack's indexes.

A refresh takes the pack lock, finishes any interrupted publish, works out what
changed since the published build, plans (policy thresholds and budgets),
builds every index into ``expert/context/.staging/<run>/``, runs the policy's
eval suites against the staged build, then applies the policy:

* evals pass: ``auto_publish`` swaps the staged indexes in (``publish.py``);
  ``require_approval`` keeps the build as pending for ``agentpack ecp publish``;
* evals fail with ``fail_action: warn``: as if they passed, but exit status 1;
* evals fail with ``fail_action: rollback`` or ``publishing.rollback_on_fail``:
  the failed build is discarded, the published state stays (decision
  ``rolled_back``), exit status 1;
* evals fail with ``fail_action: block``: the build is kept as a blocked pending
  run (``agentpack ecp publish --force`` can still ship it), exit status 1.

Nothing the published pack serves changes before the swap, so a refresh killed
at any point leaves the last published index intact and queryable.
"""

from __future__ import annotations

import secrets
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentpack.io import jsonio
from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.io.console import NO_PROGRESS, logger, progress
from agentpack.io.errors import AgentpackError
from agentpack.io.fsutil import atomic_write_json, file_lock

from ..index.build import build_pack
from ..pack import journal, layout, leftovers
from ..pack.crashpoints import crashpoint
from ..pack.files import read_regular
from ..pack.logs import logger_for
from ..pack.manifest import ExpertPack, load_pack
from ..pack.revisions import current_revisions
from . import publish, state
from .changes import SourceChanges, changed_paths, detect, git_targets, snapshots
from .policy import Budget, BudgetExceeded, Plan, Policy, plan_refresh
from .staging import staged_pack

if TYPE_CHECKING:
    from ..evals import Outcome


def new_run_id(clock: Clock) -> str:
    return f"{clock.now():%Y%m%dT%H%M%SZ}-{secrets.token_hex(3)}"


def _last_full_rebuild(root: Path, pack: ExpertPack, current: dict[str, Any]) -> datetime | None:
    """From the state, else the oldest index ``created_at`` (a first build is a full one)."""
    recorded = state.parse_time(current.get("last_full_rebuild_at"))
    if recorded is not None:
        return recorded
    stamps = []
    for entry in pack.indexes:
        try:
            stamp = state.parse_time(jsonio.loads(read_regular(root / entry.path / "index.json")).get("created_at"))
        except (OSError, ValueError, AttributeError):
            continue
        if stamp is not None:
            stamps.append(stamp)
    return min(stamps) if stamps else None


def eval_summary(report: Outcome) -> dict[str, Any]:
    totals = report.totals
    return {
        "passed": report.ok,
        "total": totals.total,
        "failed": totals.failed,
        "errors": totals.errors,
        "suites": [
            {
                "suite_id": s.id,
                "total": len(s.cases),
                "failed": [c.id for c in s.cases if c.status in ("failed", "error")],
            }
            for s in report.suites
        ],
    }


def _run_evals(pack: ExpertPack, policy: Policy, staging_rel: str, budget: Budget, clock: Clock) -> Outcome:
    """The policy's suites against the staged build, with an index cache of its own (dropped after)."""
    from ..evals import evaluate  # the query path comes with it: a refresh without evals does without
    from ..query.retrieve import IndexCache
    from ..query.synthesis import query_synthesizer, usage_cost

    def charge(usage: dict[str, Any]) -> None:
        budget.charge(*usage_cost(usage))

    synth = query_synthesizer(pack.security, on_usage=charge) if budget.allows_llm() else None
    return evaluate(
        staged_pack(pack, staging_rel),
        suite_ids=policy.eval_suites or None,
        clock=clock,
        synthesize=synth,
        cache=IndexCache(),
    )


def refresh(
    root: str | Path,
    *,
    dry_run: bool = False,
    rebuild: bool = False,
    no_evals: bool = False,
    clock: Clock = SYSTEM_CLOCK,
    who: str = "user",
    lock_timeout: float = 0.0,
    on_evals: Callable[[Outcome], None] | None = None,
) -> dict[str, Any]:
    """Refresh the pack at ``root``; returns the CLI's JSON payload (``exit_status`` says how it went).

    ``on_evals`` receives the eval gate's ``Outcome`` (the staged build's evals) as soon as it is known,
    so a caller can record it (``agentpack runs``)."""
    pack = load_pack(root)
    root = pack.root
    policy = Policy.load(pack)
    logger = logger_for(root, pack.manifest, policy.raw, clock=clock)
    started = clock.monotonic()
    result: dict[str, Any] = {
        "path": str(root),
        "run_id": None,
        "dry_run": dry_run,
        "decision": None,
        "exit_status": 0,
        "messages": [],
    }
    if dry_run:
        changes, needs = detect(pack, clock=clock, record_hashes=False)
        result["changes"] = [c.as_dict() for c in changes]
        result["decision"] = "dry-run"
        try:
            plan = _plan(policy, changes, needs, rebuild, root, pack, clock, result)
        except BudgetExceeded as exc:
            result.update(strategy="refused", exit_status=1)
            result["messages"].append(str(exc))
            return result
        result.update(plan=plan.as_dict(), strategy=plan.strategy)
        return result
    with file_lock(layout.lock_path(root), timeout=lock_timeout, what=f"pack {root.name}"):
        finished = journal.recover(root)
        if finished:
            result["messages"].append(f"finished the interrupted {finished['action']} of run {finished['run_id']}")
            pack = load_pack(root)
        pending = state.read_json(layout.pending_path(root))
        if pending:
            result["messages"].append(f"superseded pending run {pending.get('run_id')}")
            layout.pending_path(root).unlink(missing_ok=True)
        leftovers.remove(root, [e.path for e in pack.indexes])
        budget = Budget(policy, started=started, clock_monotonic=clock.monotonic)
        try:
            with progress(f"refreshing {root.name}") as bar:
                _refresh_locked(
                    root,
                    pack,
                    policy,
                    result,
                    budget,
                    rebuild=rebuild,
                    no_evals=no_evals,
                    clock=clock,
                    on_evals=on_evals,
                    bar=bar,
                )
        except BudgetExceeded as exc:
            leftovers.remove(root, [e.path for e in pack.indexes])
            result.update(decision="refused", exit_status=1)
            result["messages"].append(str(exc))
        except AgentpackError as exc:
            leftovers.remove(root, [e.path for e in pack.indexes])
            logger.update(
                "refresh",
                who=who,
                run_id=result["run_id"],
                decision="error",
                exit_status=exc.exit_code,
                outputs={"error": exc.message},
            )
            raise
        result["budget"] = budget.as_dict()
        now = clock.iso()
        if result["decision"] != "published":
            state.update(root, last_refresh=_last_refresh(result, now))
        logger.update(
            "refresh",
            who=who,
            run_id=result["run_id"] or "",
            decision=result["decision"],
            exit_status=result["exit_status"],
            plan=result.get("plan", {}),
            evals=result.get("evals"),
            inputs={"rebuild": rebuild, "no_evals": no_evals},
            outputs={
                "revisions": result.get("revisions", {}),
                "indexes": (result.get("build") or {}).get("indexes", []),
            },
            duration_ms=round((clock.monotonic() - started) * 1000, 3),
        )
    journal.published(root)
    return result


def _last_refresh(result: dict[str, Any], now: str) -> dict[str, Any]:
    return {
        "run_id": result["run_id"],
        "at": now,
        "strategy": result.get("strategy"),
        "decision": result["decision"],
        "exit_status": result["exit_status"],
        "changed_files": (result.get("plan") or {}).get("changed_files", 0),
    }


def _plan(
    policy: Policy,
    changes: list[SourceChanges],
    needs: list[str],
    rebuild: bool,
    root: Path,
    pack: ExpertPack,
    clock: Clock,
    result: dict[str, Any],
) -> Plan:
    files = sum(len(c.paths) for c in changes)
    lines = sum(c.lines for c in changes)
    last_full = _last_full_rebuild(root, pack, state.load(root))
    try:
        return plan_refresh(
            policy,
            changed_files=files,
            changed_lines=lines,
            force_rebuild=rebuild,
            needs_rebuild=needs,
            last_full_rebuild=last_full,
            now=clock.now(),
        )
    except BudgetExceeded:
        result["plan"] = {"strategy": "refused", "changed_files": files, "changed_lines": lines, "reasons": []}
        raise


def _refresh_locked(
    root: Path,
    pack: ExpertPack,
    policy: Policy,
    result: dict[str, Any],
    budget: Budget,
    *,
    rebuild: bool,
    no_evals: bool,
    clock: Clock,
    on_evals: Callable[[Outcome], None] | None = None,
    bar: Any = None,
) -> None:
    bar = bar or NO_PROGRESS
    log = logger(__name__)
    bar.phase(f"refreshing {root.name}: detecting changes")
    changes, needs = detect(pack, clock=clock)
    result["changes"] = [c.as_dict() for c in changes]
    plan = _plan(policy, changes, needs, rebuild, root, pack, clock, result)
    result.update(plan=plan.as_dict(), strategy=plan.strategy)
    log.info("refresh of %s: strategy %s (%s)", root.name, plan.strategy, "; ".join(plan.reasons))
    if plan.strategy == "up-to-date":
        result["decision"] = "up-to-date"
        return
    budget.check_time("change detection")
    bar.phase(f"refreshing {root.name}: building ({plan.strategy})")
    run_id = result["run_id"] = new_run_id(clock)
    staging_rel = f"{layout.STAGING}/{run_id}"
    crashpoint("refresh.before_build")
    build = build_pack(
        root,
        rebuild=plan.strategy == "rebuild",
        out_dir=root / staging_rel,
        changed=changed_paths(changes) or None,
        lock=False,
        clock=clock,
        revisions=git_targets(changes) or None,
        snapshots=snapshots(changes),
    )
    result["build"] = build.to_json()
    result["revisions"] = build.revisions
    crashpoint("refresh.after_build")
    budget.check_time("the build")
    report = None
    if no_evals:
        result["messages"].append("evals skipped (--no-evals): publishing without the eval gate")
    else:
        bar.phase(f"refreshing {root.name}: the eval gate on the staged build")
        report = _run_evals(pack, policy, staging_rel, budget, clock)
        log.info("refresh of %s: eval gate %s", root.name, "passed" if report.ok else "failed")
        if on_evals is not None:
            on_evals(report)
        budget.raise_if_exceeded()
        result["evals"] = eval_summary(report)
        crashpoint("refresh.after_evals")
        budget.check_time("the evals")
    passed = report is None or report.ok
    now = clock.iso()
    evals_state = {"run_id": run_id, "at": now, "staged": True, **result["evals"]} if report is not None else None
    indexes = {e.id: e.path for e in pack.indexes}
    previous_revisions = current_revisions(pack.manifest)
    record = {
        "run_id": run_id,
        "staging": staging_rel,
        "created_at": now,
        "strategy": plan.strategy,
        "indexes": indexes,
        "revisions": build.revisions,
        "previous_revisions": previous_revisions,
        "evals": result.get("evals"),
    }
    if not passed and policy.fail_action != "warn":
        if policy.fail_action == "rollback" or policy.rollback_on_fail:
            shutil.rmtree(root / staging_rel, ignore_errors=True)
            result.update(decision="rolled_back", exit_status=1)
            result["messages"].append(
                "evals failed: the new build was discarded and the published indexes "
                f"kept (fail_action={policy.fail_action}, "
                f"rollback_on_fail={str(policy.rollback_on_fail).lower()})"
            )
        else:
            atomic_write_json(layout.pending_path(root), {**record, "status": "blocked"})
            result.update(decision="blocked", exit_status=1)
            result["messages"].append(
                "evals failed: the new build is blocked (fail_action=block); inspect it, "
                "then 'agentpack ecp publish --force' or refresh again"
            )
        if evals_state:
            state.update(root, last_evals=evals_state)
        return
    if not passed:
        result["exit_status"] = 1
        result["messages"].append("evals failed but fail_action=warn: publishing anyway")
    if policy.on_pass == "require_approval":
        atomic_write_json(layout.pending_path(root), {**record, "status": "awaiting_approval"})
        result["decision"] = "pending_approval"
        if evals_state:
            state.update(root, last_evals=evals_state)
        return
    bar.phase(f"refreshing {root.name}: publishing")
    extra = {"last_refresh": _last_refresh({**result, "decision": "published"}, now)}
    if evals_state:
        extra["last_evals"] = evals_state
    publish.publish_staged(
        root,
        run_id=run_id,
        indexes=indexes,
        staged_dir=staging_rel,
        revisions=build.revisions,
        previous_revisions=previous_revisions,
        strategy=plan.strategy,
        extra_state=extra,
        clock=clock,
    )
    result["decision"] = "published"


def publish_pending(
    root: str | Path, *, force: bool = False, clock: Clock = SYSTEM_CLOCK, who: str = "user", lock_timeout: float = 0.0
) -> dict[str, Any]:
    """Publish the build a refresh left waiting for approval (or blocked, with ``force``)."""
    pack = load_pack(root)
    root = pack.root
    with file_lock(layout.lock_path(root), timeout=lock_timeout, what=f"pack {root.name}"):
        if journal.recover(root):
            pack = load_pack(root)
        pending = state.read_json(layout.pending_path(root))
        if not pending:
            raise AgentpackError(
                "nothing is waiting to be published",
                hint="'agentpack ecp refresh' stages a build; with publishing.on_pass: "
                "require_approval it waits for this command",
            )
        if pending.get("status") == "blocked" and not force:
            failed = sum(len(s["failed"]) for s in (pending.get("evals") or {}).get("suites", []))
            raise AgentpackError(
                f"run {pending['run_id']} failed {failed} eval case(s) and is blocked",
                hint="fix the pack and refresh again, or pass --force to publish it anyway",
            )
        if pending.get("previous_revisions") != current_revisions(pack.manifest):
            raise AgentpackError(
                f"run {pending['run_id']} was built on another published state (the pack was "
                "refreshed or rolled back since)",
                hint="run 'agentpack ecp refresh' again",
            )
        if not (root / pending["staging"]).is_dir():
            layout.pending_path(root).unlink(missing_ok=True)
            raise AgentpackError(
                f"the staged build of run {pending['run_id']} is gone", hint="run 'agentpack ecp refresh' again"
            )
        generation = publish.publish_staged(
            root,
            run_id=pending["run_id"],
            indexes=pending["indexes"],
            staged_dir=pending["staging"],
            revisions=pending["revisions"],
            previous_revisions=pending["previous_revisions"],
            strategy=pending.get("strategy", "incremental"),
            clear_pending=True,
            clock=clock,
        )
        logger_for(root, pack.manifest, pack.policy, clock=clock).update(
            "publish",
            who=who,
            run_id=pending["run_id"],
            decision="published" if not force else "published_forced",
            inputs={"force": force},
            outputs={"revisions": pending["revisions"]},
            evals=pending.get("evals"),
        )
    journal.published(root)
    return {
        "path": str(root),
        "run_id": pending["run_id"],
        "status": pending.get("status"),
        "forced": force,
        "published_at": generation["published_at"],
        "indexes": sorted(pending["indexes"]),
    }


def rollback_pack(
    root: str | Path, *, clock: Clock = SYSTEM_CLOCK, who: str = "user", lock_timeout: float = 0.0
) -> dict[str, Any]:
    """Restore the published state before the last publish (indexes from backups, EXPERT.yaml revisions)."""
    pack = load_pack(root)
    root = pack.root
    with file_lock(layout.lock_path(root), timeout=lock_timeout, what=f"pack {root.name}"):
        journal.recover(root)
        done = publish.rollback(root, clock=clock)
        logger_for(root, pack.manifest, pack.policy, clock=clock).update(
            "rollback",
            who=who,
            run_id=done["rolled_back"],
            decision="rolled_back",
            outputs={"revisions": done["revisions"], "indexes": done["indexes"]},
        )
    journal.published(root)
    return {"path": str(root), **done}
