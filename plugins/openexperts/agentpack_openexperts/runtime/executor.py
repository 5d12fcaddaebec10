"""Run one invocation to a terminal state: attempts, timeout, retry with backoff, execution-log
resumption, delivery, SLA, low-confidence escalation and ``on_failure``.

A run can also stop ``held``: a tool call's outcome was left unknown by a crash and nothing could
reconcile it (see ``idempotency``); it waits for ``experts settle``, then ``--resume`` finishes it.
The result is delivered once: a resumed run that finds its result in the outbox does not send it again.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field, replace
from typing import Any

from agentpack.io.errors import AgentpackError

from .. import effective
from .errors import CallHeld, Cancelled, DriverError, ProcessFailure
from .session import AgentResult, AgentSession, ResumeInfo, crashpoint

log = logging.getLogger("agentpack.openexperts")
TERMINAL = ("succeeded", "failed", "escalated", "abandoned", "dead_lettered", "held")
"""Where a run stops: finished, or ``held`` until a person settles a call (which makes it ``running`` again)."""
LOW_CONFIDENCE = "the agent judged its confidence low"


@dataclass
class RunOutcome:
    run_id: str
    process: str
    status: str
    attempts: int
    result: dict[str, Any] | None = None
    error: str | None = None
    sla_breached: bool = False
    dry_run: bool = False
    plan: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == "succeeded"

    def to_json(self) -> dict[str, Any]:
        out = {
            "run_id": self.run_id,
            "process": self.process,
            "status": self.status,
            "attempts": self.attempts,
            "result": self.result,
            "error": self.error,
            "sla_breached": self.sla_breached,
        }
        if self.dry_run:
            out.update(dry_run=True, plan=self.plan, steps=self.steps)
        return out


class Executor:
    def __init__(self, runtime: Any) -> None:
        self.rt = runtime
        self._policies: dict[str, effective.ProcessPolicy] = {}

    def execute(self, run_id: str, *, dry_run: bool = False) -> RunOutcome:
        rt = self.rt
        run = rt.store.run(run_id)
        if run is None:
            raise AgentpackError(f"no run '{run_id}' in {rt.store.path}")
        if run["status"] in TERMINAL:
            return RunOutcome(run_id, run["process"], run["status"], run["attempt"], run["result"], run["error"])
        process = rt.package.process(run["process"])
        policy = self._policy(process)
        if dry_run:
            policy = replace(policy, max_attempts=1)
        interrupted = run["status"] == "running"
        first = not rt.store.segments(run_id)
        attempt = run["attempt"] if interrupted and run["attempt"] else run["attempt"] + 1
        if first and run["session"] != "main":
            rt.workspace.start_session(run["session"])
        scratchpad = rt.workspace.scratchpad(process.meta.get("scratchpad"), run["inputs"])
        sla_timer = self._watch_sla(run, policy)
        reason = "resumed after interruption" if interrupted else "start"
        error, failure_reason, result, session = None, None, None, None
        try:
            while True:
                segment = rt.store.start_segment(run_id, attempt, reason, rt.now())
                rt.store.update_run(run_id, rt.now(), status="running", attempt=attempt)
                crashpoint("run.segment_started")
                session = AgentSession(
                    runtime=rt,
                    run=run,
                    process=process,
                    policy=policy,
                    segment=segment,
                    attempt=attempt,
                    deadline=time.monotonic() + policy.timeout if policy.timeout else None,
                    resume=self._resume_info(run, policy, attempt, segment, scratchpad),
                    scratchpad=scratchpad,
                    dry_run=dry_run,
                )
                try:
                    result = self._drive(session)
                    break
                except Cancelled:
                    rt.store.event(run_id, "interrupted", {"attempt": attempt}, rt.now())
                    return RunOutcome(run_id, run["process"], "interrupted", attempt, dry_run=dry_run)
                except CallHeld as exc:
                    return self._hold(run, policy, attempt, str(exc), dry_run)
                except ProcessFailure as exc:
                    error, failure_reason = str(exc), exc.reason
                rt.store.event(
                    run_id,
                    "attempt_failed",
                    {"attempt": attempt, "reason": failure_reason, "error": rt.redact(error)},
                    rt.now(),
                )
                if attempt >= policy.max_attempts:
                    break
                delay = policy.backoff_delay(attempt)
                rt.store.event(run_id, "retry_scheduled", {"attempt": attempt + 1, "delay_s": delay}, rt.now())
                if rt.stopping.wait(delay):
                    return RunOutcome(run_id, run["process"], "interrupted", attempt, dry_run=dry_run)
                attempt, reason = attempt + 1, "retry"
        finally:
            if sla_timer is not None:
                sla_timer.cancel()
        breached = run_id in rt.sla_breached
        if result is None:
            status = self._fail(run, policy, attempt, error or "failed", failure_reason, dry_run)
            outcome = RunOutcome(
                run_id, run["process"], status, attempt, error=rt.redact(error), sla_breached=breached, dry_run=dry_run
            )
        else:
            status, payload = self._succeed(run, policy, result, scratchpad, dry_run)
            outcome = RunOutcome(
                run_id,
                run["process"],
                status,
                attempt,
                result=payload,
                sla_breached=run_id in rt.sla_breached,
                dry_run=dry_run,
            )
        if run["session"] != "main":
            rt.workspace.end_session(run["session"])
        if dry_run and session is not None:
            outcome.plan = rt.redact(session.plan)
            done = {s["step"] for s in rt.store.steps(run_id)}
            outcome.steps = [
                {"step": i, "text": text, "completed": i in done} for i, text in enumerate(session.steps, start=1)
            ]
        return outcome

    def _policy(self, process) -> effective.ProcessPolicy:
        """The process's resolved policy, computed once per process."""
        if process.name not in self._policies:
            self._policies[process.name] = effective.process_policy(self.rt.package, process)
        return self._policies[process.name]

    def _drive(self, session: AgentSession) -> AgentResult:
        try:
            result = self.rt.driver.run(session)
        except (ProcessFailure, AgentpackError):
            raise
        except Exception as exc:  # a driver bug fails the attempt, visibly, instead of killing the worker
            log.exception("driver crashed")
            raise DriverError(f"driver crashed: {exc!r}") from exc
        session.check()
        return session.finished or result or AgentResult()

    def _resume_info(
        self, run: dict[str, Any], policy: effective.ProcessPolicy, attempt: int, segment: int, scratchpad: str | None
    ) -> ResumeInfo | None:
        if segment == 1 or policy.idempotent or not policy.resume:
            return None
        rt = self.rt
        pad_text = None
        if scratchpad:
            try:
                pad_text, _ = rt.workspace.read(scratchpad, run["session"])
            except Exception:  # no scratchpad yet
                pad_text = None
        failures = [e["data"] for e in rt.store.events(run["run_id"]) if e["kind"] == "attempt_failed"]
        return ResumeInfo(
            attempt=attempt,
            completed_steps=[s["step"] for s in rt.store.steps(run["run_id"])],
            failures=failures,
            scratchpad=scratchpad,
            scratchpad_text=pad_text,
        )

    def _watch_sla(self, run: dict[str, Any], policy: effective.ProcessPolicy):
        if policy.sla is None:
            return None
        rt = self.rt
        left = policy.sla - (rt.now() - run["created"])

        def breach() -> None:
            current = rt.store.run(run["run_id"])
            if current and current["status"] == "running":
                self._breach(run, policy)

        if left <= 0:
            breach()
            return None
        return rt.scheduler.call_later(left, breach)

    def _breach(self, run: dict[str, Any], policy: effective.ProcessPolicy) -> None:
        rt = self.rt
        if run["run_id"] in rt.sla_breached:
            return
        rt.sla_breached.add(run["run_id"])
        text = f"process '{run['process']}' has been running longer than its SLA"
        if policy.sla_breach == "escalate":
            rt.outbox.escalate(
                policy.escalation_channel,
                run["run_id"],
                run["process"],
                text,
                {"inputs": run["inputs"]},
                "check on the run and decide whether to intervene",
            )
        else:
            rt.outbox.send(policy.channel, "sla_warning", run["run_id"], run["process"], {"message": text})
        rt.store.event(run["run_id"], "sla_breached", {"action": policy.sla_breach}, rt.now())

    def _succeed(
        self,
        run: dict[str, Any],
        policy: effective.ProcessPolicy,
        result: AgentResult,
        scratchpad: str | None,
        dry_run: bool,
    ) -> tuple[str, dict[str, Any]]:
        rt = self.rt
        payload: dict[str, Any] = {"format": policy.format}
        if policy.format in ("narrative", "both"):
            payload["narrative"] = result.narrative
        if policy.format in ("structured", "both"):
            payload["structured"] = result.structured
        if result.confidence:
            payload["confidence"] = result.confidence
        if result.recommended_action:
            payload["recommended_action"] = result.recommended_action
        payload = rt.redact(payload)
        if policy.sla is not None and rt.now() - run["created"] > policy.sla:
            self._breach(run, policy)
        status = "succeeded"
        crashpoint("run.finished")
        sent = rt.store.messages(run["run_id"])  # a run killed after delivering resumes without sending again
        if dry_run:
            pass
        elif result.confidence == "low" and policy.on_low_confidence:
            status = "escalated"
            if not any(m["kind"] == "escalation" and m["data"].get("reason") == LOW_CONFIDENCE for m in sent):
                rt.outbox.escalate(
                    policy.escalation_channel,
                    run["run_id"],
                    run["process"],
                    LOW_CONFIDENCE,
                    {"inputs": run["inputs"], "outputs": payload},
                    result.recommended_action or "review the outputs before acting on them",
                )
        elif not any(m["kind"] == "result" for m in sent):
            rt.outbox.send(policy.channel, "result", run["run_id"], run["process"], payload)
        crashpoint("run.delivered")
        if scratchpad and not rt.keep_scratch:
            rt.workspace.remove(scratchpad)
        rt.store.update_run(run["run_id"], rt.now(), status=status, result=payload, error=None)
        return status, payload

    def _hold(
        self, run: dict[str, Any], policy: effective.ProcessPolicy, attempt: int, error: str, dry_run: bool
    ) -> RunOutcome:
        """Stop a run whose call's outcome is unknown: ``held`` until a human settles the call (no attempt used)."""
        rt = self.rt
        rt.store.event(run["run_id"], "held", {"attempt": attempt, "error": rt.redact(error)}, rt.now())
        rt.outbox.escalate(
            policy.escalation_channel,
            run["run_id"],
            run["process"],
            rt.redact(error),
            {"inputs": run["inputs"]},
            "check whether the call happened, settle it with 'agentpack experts settle', then run --resume",
        )
        rt.store.update_run(run["run_id"], rt.now(), status="held", error=rt.redact(error))
        return RunOutcome(run["run_id"], run["process"], "held", attempt, error=rt.redact(error), dry_run=dry_run)

    def _fail(
        self,
        run: dict[str, Any],
        policy: effective.ProcessPolicy,
        attempts: int,
        error: str,
        reason: str | None,
        dry_run: bool,
    ) -> str:
        rt = self.rt
        error = rt.redact(error)
        action = "report" if dry_run else policy.on_failure
        if action == "dead_letter":
            letter = rt.new_id("dl-")
            rt.store.add_dead_letter(letter, run, error, attempts, rt.now())
            status = "dead_lettered"
        elif action == "abandon":
            status = "abandoned"
        elif action == "escalate":
            status = "failed"
            steps = [s["step"] for s in rt.store.steps(run["run_id"])]
            rt.outbox.escalate(
                policy.escalation_channel,
                run["run_id"],
                run["process"],
                f"failed after {attempts} attempt(s) ({reason}): {error}",
                {"inputs": run["inputs"], "trigger": run["trigger"], "completed_steps": steps},
                f"fix the cause and re-run '{run['process']}'; completed steps: {steps or 'none'}",
            )
        else:
            status = "failed"
        rt.store.event(run["run_id"], "failed", {"on_failure": action, "error": error}, rt.now())
        rt.store.update_run(run["run_id"], rt.now(), status=status, error=error)
        return status
