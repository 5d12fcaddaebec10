"""Run a manifest's scenarios against the agent and collect plain-JSON records for the reports.

Isolation: by default one agent process per worker is initialized once and
``agent/reset`` runs before every scenario after the first; ``isolation:
process`` starts a fresh process per scenario run. Steps of one scenario are
one conversation (``status: paused`` just means the agent awaits the next
input). A step that ends in a timeout, crash or protocol error skips the rest
of its scenario; a session whose stream may be out of step is killed and the
next scenario gets a fresh one. Retries rerun a scenario after execution
errors only; ``repeat`` runs it k times for pass@k and a pass-rate threshold.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from typing import Any, ClassVar

from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.kernel.records import Record, constant

from .containment import Containment
from .executors import LocalExecutor
from .graders.base import Check, GradeContext
from .manifest.loader import start_hint
from .manifest.model import Manifest, Scenario
from .protocol import AgentTimeout, AgentUnreachable, CallError, ProtocolError
from .session import Session

OK = "ok"
RETRYABLE = {"timeout", "transport_error", "protocol_error", "agent_error", "agent_unreachable", "scenario_timeout"}
NOT_RUN = {
    "interrupted": "not run: the run was interrupted",
    "max_duration_exceeded": "not run: --max-duration was exceeded",
    "fail_fast": "not run: --fail-fast stopped the run after a failure",
}


class RunOptions(Record):
    """How to run: workers, filters, executor (and its settings), timeouts, fail-fast and a result callback."""

    __slots__ = (
        "jobs",
        "filters",
        "executor",
        "step_timeout",
        "max_duration",
        "isolation",
        "clock",
        "on_result",
        "executor_options",
        "fail_fast",
    )
    DEFAULTS: ClassVar[dict[str, Callable[[], Any]]] = {
        "jobs": constant(1),
        "filters": list,
        "executor": constant("local"),
        "step_timeout": constant(None),
        "max_duration": constant(None),
        "isolation": constant(None),
        "clock": constant(SYSTEM_CLOCK),
        "on_result": constant(None),
        "executor_options": dict,
        "fail_fast": constant(False),
    }
    jobs: int
    filters: list[str]
    executor: str
    step_timeout: float | None
    max_duration: float | None
    isolation: str | None
    clock: Clock
    on_result: Callable[[dict[str, Any]], None] | None
    executor_options: dict[str, Any]
    fail_fast: bool


def select_scenarios(scenarios: list[Scenario], filters: list[str]) -> list[Scenario]:
    """Scenarios whose name contains a filter, or that carry it as a tag (``tag:x`` matches tags only)."""
    if not filters:
        return list(scenarios)
    chosen = []
    for scenario in scenarios:
        for expr in filters:
            if expr.startswith("tag:"):
                hit = expr[4:] in scenario.tags
            else:
                hit = expr in scenario.tags or expr.lower() in scenario.name.lower()
            if hit:
                chosen.append(scenario)
                break
    return chosen


def _cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


def needed_capabilities(manifest: Manifest) -> dict[str, str]:
    needed: dict[str, str] = {}
    for scenario in manifest.scenarios:
        for step in scenario.steps:
            for spec in step.graders:
                if spec.type == "tool_usage":
                    needed.setdefault("tool_calls", "a tool_usage grader")
                elif spec.config.get("field") in ("evaluation_context", "private_thought"):
                    needed.setdefault("evaluation_context", f"a {spec.type} grader on {spec.config['field']}")
    return needed


def _clip(text: Any, limit: int) -> Any:
    if isinstance(text, str) and len(text) > limit:
        return text[:limit] + f"\n[... {len(text) - limit} more characters not shown]"
    return text


def _execution_check(reason: str) -> dict[str, Any]:
    """A failed check standing in for a step that produced no result, so 0/0 never reads as a pass."""
    return Check("execution", "agent", False, "an agent/step result", None, reason, error=True).to_json()


class Runner:
    """Runs the selected scenarios on an executor's workers; ``transport``: an agent already started for the target."""

    def __init__(
        self, manifest: Manifest, options: RunOptions | None = None, *, executor: Any = None, transport: Any = None
    ) -> None:
        self.manifest = manifest
        self._started = transport
        self.scope: Containment = getattr(transport, "scope", None) or Containment()
        """Where this run's agents start; ``finish`` ends whatever they started (see ``containment``)."""
        self.options = options or RunOptions()
        self.executor = executor
        self.cancel = threading.Event()
        self.context = GradeContext(judge=manifest.judge)
        self.agent: dict[str, Any] = {}
        self.warnings: list[str] = []
        self._lock = threading.Lock()
        self.deadline = math.inf
        self.stop_reason = "interrupted"
        self.isolation = self.options.isolation or manifest.isolation
        self._retired: list[Any] = []
        self.spin = False
        """Whether stdio sessions busy-poll for quick answers: one worker, and a CPU for the agent besides it."""

    # -- the run --------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        clock = self.options.clock
        started_at = clock.iso()
        start = clock.monotonic()
        wall = time.monotonic()
        if self.options.max_duration:
            self.deadline = wall + self.options.max_duration
        chosen = select_scenarios(self.manifest.scenarios, self.options.filters)
        if not chosen:
            self.warnings.append(f"no scenario matches the filters {self.options.filters}")
        jobs = self.options.jobs
        if jobs > 1 and self.manifest.target.kind == "http":
            self.warnings.append(
                "--jobs ignored for an HTTP agent: the protocol has no sessions, so parallel "
                "conversations on one endpoint would share state"
            )
            jobs = 1
        records: dict[int, dict[str, Any]] = {}
        self.spin = jobs == 1 and _cpus() > 1

        def done(record: dict[str, Any]) -> None:
            records[record["index"]] = record
            if self.options.fail_fast and record["status"] in ("failed", "error") and not self.cancel.is_set():
                self.stop_reason = "fail_fast"
                self.cancel.set()
            if self.options.on_result:
                self.options.on_result(record)

        executor = self.executor or LocalExecutor()
        bind = getattr(executor, "bind", None)
        if bind is not None:  # an executor that runs scenarios elsewhere (see executors.Run)
            bind(self)
        interrupted = False
        try:
            executor.run(chosen, self.worker, jobs, done, self.cancel)
        except KeyboardInterrupt:
            interrupted = True
            self.cancel.set()
        finally:
            self.context.close()
            unused = self.take_started()
            if unused is not None:
                self.retire(unused)
        if self.cancel.is_set() and self.stop_reason == "interrupted":
            interrupted = True
        for scenario in chosen:
            if scenario.index not in records:
                records[scenario.index] = self.skipped(scenario, self.stop_reason, NOT_RUN[self.stop_reason])
        ordered = [records[s.index] for s in chosen]
        return {
            "scenarios": ordered,
            "agent": self.agent,
            "warnings": self.warnings,
            "interrupted": interrupted,
            "started_at": started_at,
            "finished_at": clock.iso(),
            "duration_ms": round((clock.monotonic() - start) * 1000, 3),
            "jobs": jobs,
            "isolation": self.isolation,
            "selected": len(chosen),
            "total_scenarios": len(self.manifest.scenarios),
        }

    def worker(self) -> _Worker:
        """A worker of this run: one agent session that runs scenarios one after another."""
        return _Worker(self)

    def skipped(self, scenario: Scenario, reason: str, message: str) -> dict[str, Any]:
        return {
            "index": scenario.index,
            "id": scenario.id,
            "name": scenario.name,
            "tags": scenario.tags,
            "line": scenario.line,
            "status": "skipped",
            "exit_reason": reason,
            "message": message,
            "repeat": scenario.repeat,
            "pass_threshold": scenario.pass_threshold,
            "passes": 0,
            "pass_rate": 0.0,
            "pass_at_k": False,
            "flaky": False,
            "duration_ms": 0.0,
            "runs": [],
        }

    def retire(self, transport: Any) -> None:
        """Tell an agent the run is over (end of input) and leave the waiting for its exit to ``finish``."""
        transport.end_input()
        with self._lock:
            self._retired.append(transport)

    def finish(self) -> None:
        """Wait for the retired agents to exit (each within its grace period), then kill their process groups.

        Separate from ``run`` so that the caller can build and write the
        report while the agents shut down.
        """
        with self._lock:
            retired, self._retired = self._retired, []
        try:
            for transport in retired:
                transport.close()
        finally:
            self.scope.close()

    def take_started(self) -> Any:
        """The agent started before the run (once; None afterwards or when there was none)."""
        with self._lock:
            transport, self._started = self._started, None
        return transport

    def note_agent(self, info: dict[str, Any]) -> None:
        with self._lock:
            if not self.agent:
                self.agent = dict(info)
                self._check_capabilities(info)

    def _check_capabilities(self, info: dict[str, Any]) -> None:
        needed = needed_capabilities(self.manifest)
        missing = {k: why for k, why in needed.items() if k not in info["capabilities"]}
        if missing:
            detail = "; ".join(f"{k} (needed by {why})" for k, why in sorted(missing.items()))
            self.warnings.append(
                f"agent '{info['name']}' does not declare: {detail}; a failure there may mean it "
                "did not report it rather than did not do it"
            )
        if info.get("legacy"):
            self.warnings.append(
                f"agent '{info['name']}' sent no protocol_version; treated as legacy protocol "
                f"{info['protocol_version']}"
            )

    def missing_required(self, info: dict[str, Any]) -> str | None:
        if not self.manifest.require_capabilities:
            return None
        needed = needed_capabilities(self.manifest)
        missing = sorted(k for k in needed if k not in info["capabilities"])
        if missing:
            return (
                f"agent '{info['name']}' does not declare required capabilities: {', '.join(missing)} "
                "(the manifest sets require_capabilities: true)"
            )
        return None


class _Worker:
    """Runs scenarios one after another on one agent session (replaced when broken or per scenario)."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.manifest = runner.manifest
        self.session: Session | None = None
        self.limit = runner.manifest.report_text_chars

    # -- sessions -----------------------------------------------------------------------------------
    def _acquire(self, timeout: float) -> Session:
        session = self.session
        if session is not None and (session.broken or self.runner.isolation == "process"):
            self._discard()
            session = None
        if session is not None and session.used:
            try:
                session.reset(time.monotonic() + timeout)
                return session
            except CallError:
                self._discard()
                session = None
        if session is None:
            session = Session.open(
                self.manifest.target, self.manifest.config, timeout, self.runner.take_started(), self.runner.scope
            )
            if session.transport.kind == "stdio":
                session.transport.spin = self.runner.spin
            self.session = session
            self.runner.note_agent(session.info)
            problem = self.runner.missing_required(session.info)
            if problem:
                raise ProtocolError(problem)
        return session

    def _discard(self) -> None:
        if self.session is not None:
            self.session.close()
            self.session = None

    def kill(self) -> None:
        session = self.session
        if session is not None:
            session.kill()

    def close(self) -> None:
        """The end of this worker's scenarios: its agent is retired (see ``Runner.finish``)."""
        if self.session is not None:
            self.runner.retire(self.session.transport)
            self.session = None

    # -- scenarios ----------------------------------------------------------------------------------
    def run_scenario(self, scenario: Scenario) -> dict[str, Any]:
        runner = self.runner
        if scenario.skip:
            return runner.skipped(scenario, "skipped", scenario.skip)
        record = runner.skipped(scenario, OK, "")
        runs = record["runs"]
        for repetition in range(scenario.repeat):
            attempt = 0
            while True:
                run = self._run_once(scenario)
                run["repetition"] = repetition + 1
                run["attempt"] = attempt + 1
                if (
                    run["exit_reason"] in RETRYABLE
                    and attempt < scenario.retries
                    and not runner.cancel.is_set()
                    and time.monotonic() < runner.deadline
                ):
                    attempt += 1
                    continue
                break
            runs.append(run)
            if runner.cancel.is_set() or time.monotonic() >= runner.deadline:
                break
        passes = sum(1 for run in runs if run["status"] == "passed")
        record["passes"] = passes
        record["pass_rate"] = round(passes / len(runs), 4) if runs else 0.0
        record["pass_at_k"] = passes > 0
        record["flaky"] = 0 < passes < len(runs)
        record["duration_ms"] = round(sum(run["duration_ms"] for run in runs), 3)
        bad = [run for run in runs if run["status"] != "passed"]
        record["exit_reason"] = next((run["exit_reason"] for run in runs if run["exit_reason"] != OK), OK)
        if runs and record["pass_rate"] >= scenario.pass_threshold and len(runs) == scenario.repeat:
            record["status"] = "passed"
        elif bad and all(run["status"] == "error" for run in bad):
            record["status"] = "error"
        else:
            record["status"] = "failed"
        first_bad = bad[0] if bad else None
        if record["status"] != "passed" and first_bad is not None:
            record["message"] = first_bad["message"]
        elif record["flaky"]:
            record["message"] = f"flaky: passed {passes} of {len(runs)} runs"
        if scenario.repeat > 1 and record["status"] != "passed" and passes:
            record["message"] = (
                f"passed {passes} of {len(runs)} runs (pass rate {record['pass_rate']:.0%}, "
                f"threshold {scenario.pass_threshold:.0%})"
            )
        return record

    def _run_once(self, scenario: Scenario) -> dict[str, Any]:
        runner = self.runner
        t0 = time.perf_counter()
        now = time.monotonic()
        scenario_deadline = min(now + scenario.timeout if scenario.timeout else math.inf, runner.deadline)
        step_timeout = runner.options.step_timeout or scenario.step_timeout
        run: dict[str, Any] = {
            "status": "passed",
            "exit_reason": OK,
            "message": "",
            "steps": [],
            "stderr": "",
            "warnings": [],
            "pid": None,
            "duration_ms": 0.0,
        }
        steps = run["steps"]
        try:
            session = self._acquire(min(step_timeout, max(0.001, scenario_deadline - now)))
        except (CallError, KeyboardInterrupt) as exc:
            self._fail_start(run, scenario, exc)
            run["duration_ms"] = round((time.perf_counter() - t0) * 1000, 3)
            return run
        transport = session.transport
        run["pid"] = transport.pid
        run["stderr"] = transport.stderr.take()
        failure: tuple[str, str] | None = None
        for step in scenario.steps:
            if failure is None:
                if runner.cancel.is_set():
                    failure = (runner.stop_reason, "run stopped before this step")
                elif time.monotonic() >= scenario_deadline:
                    reason = "max_duration_exceeded" if scenario_deadline >= runner.deadline else "scenario_timeout"
                    if reason == "max_duration_exceeded":
                        runner.stop_reason = reason
                        runner.cancel.set()
                    failure = (reason, f"{reason.replace('_', ' ')} before step {step.index}")
            if failure is not None:
                steps.append(self._skipped_step(step, failure[1]))
                continue
            record, failure = self._run_step(session, scenario, step, step_timeout, scenario_deadline)
            steps.append(record)
            if failure is not None:
                run["exit_reason"], run["message"] = failure
                run["status"] = "error"
        if transport.broken or runner.isolation == "process":
            self._discard()
        run["stderr"] += transport.stderr.take()
        run["warnings"] = list(transport.warnings)
        transport.warnings.clear()
        if run["status"] == "passed":
            self._verdict(run)
        run["duration_ms"] = round((time.perf_counter() - t0) * 1000, 3)
        return run

    def _fail_start(self, run: dict[str, Any], scenario: Scenario, exc: BaseException) -> None:
        if isinstance(exc, KeyboardInterrupt):
            self.runner.cancel.set()
            reason, message = "interrupted", "interrupted while starting the agent"
        else:
            reason = exc.exit_reason if isinstance(exc, CallError) else "error"
            message = (
                f"agent unreachable: {exc}{start_hint(self.manifest)}"
                if isinstance(exc, AgentUnreachable)
                else f"agent/initialize failed: {exc}"
            )
        run.update(status="error", exit_reason=reason, message=message)
        run["steps"] = [self._skipped_step(step, message) for step in scenario.steps]
        run["stderr"] = exc.stderr if isinstance(exc, CallError) else ""
        if self.session is not None:
            run["stderr"] += self.session.transport.stderr.take()

    def _skipped_step(self, step: Any, message: str) -> dict[str, Any]:
        return {
            "index": step.index,
            "name": step.name,
            "input": _clip(step.input, self.limit),
            "status": "skipped",
            "exit_reason": "skipped",
            "agent_status": None,
            "public_output": None,
            "evaluation_context": None,
            "tool_calls": [],
            "logs": None,
            "usage": None,
            "duration_ms": 0.0,
            "checks": [_execution_check(message)],
            "stderr": "",
            "error": message,
        }

    def _run_step(
        self, session: Session, scenario: Scenario, step: Any, step_timeout: float, scenario_deadline: float
    ) -> tuple[dict[str, Any], tuple[str, str] | None]:
        timeout = step.timeout or step_timeout
        start = time.monotonic()
        deadline = min(start + timeout, scenario_deadline)
        t0 = time.perf_counter()
        try:
            result = session.step(step.input, deadline)
        except (CallError, KeyboardInterrupt) as exc:
            duration = round((time.perf_counter() - t0) * 1000, 3)
            if isinstance(exc, KeyboardInterrupt):
                self.runner.cancel.set()
                session.kill()
                reason, message = "interrupted", "interrupted during this step"
            else:
                reason = exc.exit_reason
                if isinstance(exc, AgentTimeout):
                    limit, reason = "step timeout", "timeout"
                    if deadline == scenario_deadline and deadline < start + timeout:
                        limit, reason = "scenario timeout", "scenario_timeout"
                        if scenario_deadline >= self.runner.deadline:
                            limit, reason = "run's --max-duration", "max_duration_exceeded"
                            self.runner.stop_reason = reason
                            self.runner.cancel.set()
                    message = f"agent did not answer agent/step within the {limit} ({deadline - start:.3g} s)"
                    session.kill()
                else:
                    message = str(exc)
                if self.runner.cancel.is_set() and self.runner.stop_reason == "interrupted":
                    reason, message = "interrupted", f"interrupted: {message}"
            record = self._skipped_step(step, message)
            record.update(
                status="failed",
                exit_reason=reason,
                duration_ms=duration,
                checks=[_execution_check(f"{reason}: {message}")],
                stderr=session.transport.stderr.take(),
            )
            return record, (reason, f"step {step.index}: {message}")
        duration = round((time.perf_counter() - t0) * 1000, 3)
        # graders share the step's limits: as long as a step may take, never past the scenario or the run
        context = self.runner.context.for_step(step.input, min(time.monotonic() + timeout, scenario_deadline))
        checks = []
        for spec in step.graders:
            try:
                check = spec.grader.grade(result, context).to_json()
            except Exception as exc:  # a grader's bug must not lose the run
                check = Check(
                    spec.type,
                    spec.config.get("field", "public_output"),
                    False,
                    None,
                    None,
                    f"grader crashed: {type(exc).__name__}: {exc}",
                    error=True,
                ).to_json()
            checks.append(check)
        if step.expect_status:
            ok = result.status == step.expect_status
            checks.append(
                Check(
                    "status",
                    "status",
                    ok,
                    step.expect_status,
                    result.status,
                    f"agent status is {result.status!r}"
                    if ok
                    else f"expected status {step.expect_status!r}, got {result.status!r}",
                ).to_json()
            )
        chars = self.limit
        record = {
            "index": step.index,
            "name": step.name,
            "input": _clip(step.input, chars),
            "status": OK,
            "exit_reason": OK,
            "agent_status": result.status,
            "public_output": _clip(result.public_output, chars),
            "evaluation_context": _clip(result.evaluation_context, chars),
            "tool_calls": result.tool_calls,
            "logs": _clip(result.logs, chars),
            "usage": result.usage,
            "duration_ms": duration,
            "checks": checks,
            "stderr": session.transport.stderr.take(),
            "error": None,
        }
        return record, None

    @staticmethod
    def _verdict(run: dict[str, Any]) -> None:
        checks = [c for step in run["steps"] for c in step["checks"]]
        errors = [c for c in checks if c["error"]]
        failed = [c for c in checks if not c["passed"] and not c["error"]]
        if errors:
            run.update(status="error", exit_reason="grader_error", message=errors[0]["reason"])
        elif failed:
            run.update(status="failed", message=f"{len(failed)} of {len(checks)} checks failed: {failed[0]['reason']}")
