"""``--executor ray``: the run's scenarios go to scenario slots (Ray actors) spread over the cluster's nodes.

Each slot is one agent session on some node (``node.Slot``), so ``--jobs N``
is the number of scenarios in flight across the cluster. A slot holds at
most two calls (the one running and the next), which bounds what is in
flight; the rest waits here, as indexes. Results are handed on as they
arrive. A slot whose node is lost has its unfinished scenarios sent again
to the other slots (``AGENTPACK_AGENT_RPC_RAY_NODE_RETRIES`` times at most)
and is replaced; a scenario's first record is the one kept. Ctrl-C,
``--fail-fast`` and ``--max-duration`` stop every slot as the local
executor stops its threads, and the records of the scenarios they were in
still come back.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from agentpack.io.errors import AgentpackError

from .. import __version__
from .settings import RaySettings

if TYPE_CHECKING:
    from ..executors import Run

DEPTH = 2
"""Calls a slot holds: the running scenario and the next, so a slot never waits on a round trip."""
STOP_GRACE = 10.0
"""Seconds the scenarios in flight get to hand back their records once the run stops."""
CLOSE_GRACE = 5.0
"""Seconds the slots get to retire their agents at the end."""
JUDGE_LEASE = 300.0
"""Seconds a judge permit may be held (a judge call times out after 60)."""


class RayExecutor:
    """Runs scenarios on a Ray cluster (``--ray-address``, ``RAY_ADDRESS`` or ``--ray-local``)."""

    def __init__(self) -> None:
        self.bound: Run | None = None

    def bind(self, run: Run) -> None:
        self.bound = run

    def run(
        self,
        scenarios: list[Any],
        make_worker: Callable[[], Any],
        jobs: int,
        on_result: Callable[[dict[str, Any]], None],
        cancel: Any,
    ) -> None:
        from .cluster import connect
        from .package import check_size

        run = self.bound
        if run is None:
            raise AgentpackError("the ray executor needs bind(run) before run(); agentpack's Runner does that")
        settings = RaySettings.read(run.options.executor_options)
        if not scenarios:
            return
        check_size(run.manifest.root, settings.max_upload_mb)
        with connect(settings, run.manifest.root) as ray:
            Dispatch(ray, run, settings, jobs, on_result).run(scenarios)


class _Slot:
    """The driver's view of one slot actor: its node once placed, and its calls in flight."""

    __slots__ = ("handle", "ready", "node", "load", "alive")

    def __init__(self, handle: Any, ready: Any) -> None:
        self.handle = handle
        self.ready = ready
        self.node: dict[str, Any] | None = None
        self.load = 0
        self.alive = True


class Dispatch:
    """One run's feeding loop: scenarios to slots, records back, slots replaced when their node is lost."""

    def __init__(
        self, ray: Any, run: Run, settings: RaySettings, jobs: int, on_result: Callable[[dict[str, Any]], None]
    ) -> None:
        from .node import Slot
        from .package import judge_env, uses_judge

        self.ray = ray
        self.runner = run
        self.settings = settings
        self.jobs = jobs
        self.on_result = on_result
        self.actor = ray.remote(concurrency_groups={"control": 1})(Slot).options(
            num_cpus=settings.cpus, max_restarts=0, max_task_retries=0, scheduling_strategy="SPREAD"
        )
        limiter = None
        if uses_judge(run.manifest):
            from .limiter import JudgeLimit

            limiter = ray.remote(JudgeLimit).options(num_cpus=0).remote(settings.judge_concurrency, JUDGE_LEASE)
        options = {"jobs": jobs, "step_timeout": run.options.step_timeout, "isolation": run.options.isolation}
        # the manifest and the judge's settings (an API key) travel by reference, through the object store
        self.args = (ray.put(run.manifest), options, ray.put(judge_env()), limiter)
        self.limiter = limiter
        self.slots: list[_Slot] = []
        self.created = 0
        self.inflight: dict[Any, tuple[_Slot, Any, int]] = {}
        self.pending: deque[tuple[Any, int]] = deque()
        self.reported: set[int] = set()
        self.placed_at: float | None = None
        self.waiting_since = time.monotonic()
        self.warned_version = False

    # -- the loop ------------------------------------------------------------------------------------
    def run(self, scenarios: list[Any]) -> None:
        run = self.runner
        self.pending.extend((scenario, 0) for scenario in scenarios)
        for _ in range(min(self.jobs, len(scenarios))):
            self._new_slot()
        try:
            try:
                while self.pending or self.inflight:
                    if run.cancel.is_set():
                        break
                    if time.monotonic() >= run.deadline:
                        run.stop_reason = "max_duration_exceeded"
                        run.cancel.set()
                        break
                    self._fill()
                    self._settle(self._wait(0.2))
                    self._check_stalled()
            except KeyboardInterrupt:
                run.cancel.set()  # stop_reason stays "interrupted"
            if run.cancel.is_set():
                self._stop(run.stop_reason)
        finally:
            self._close()

    def _wait(self, timeout: float) -> list[Any]:
        refs = list(self.inflight) + [slot.ready for slot in self.slots if slot.alive and slot.node is None]
        if not refs:
            time.sleep(min(timeout, 0.05))
            return []
        ready, _ = self.ray.wait(refs, num_returns=1, timeout=timeout)
        if ready:  # everything that is ready by now, not one at a time
            ready, _ = self.ray.wait(refs, num_returns=len(refs), timeout=0)
        return ready

    def _fill(self) -> None:
        """Hand pending scenarios to placed slots: one each first, a second only while enough are waiting."""
        placed = [slot for slot in self.slots if slot.alive and slot.node is not None]
        for depth in range(1, DEPTH + 1):
            for slot in placed:
                if not self.pending or (depth > 1 and len(self.pending) <= len(placed)):
                    return
                if slot.load < depth:
                    self._submit(slot, *self.pending.popleft())

    def _submit(self, slot: _Slot, scenario: Any, lost: int) -> None:
        deadline = self.runner.deadline
        remaining = None if math.isinf(deadline) else max(0.0, deadline - time.monotonic())
        ref = slot.handle.run.remote(scenario.index, remaining)
        self.inflight[ref] = (slot, scenario, lost)
        slot.load += 1

    # -- results -------------------------------------------------------------------------------------
    def _settle(self, refs: list[Any]) -> None:
        errors = self.ray.exceptions
        for ref in refs:
            entry = self.inflight.pop(ref, None)
            if entry is None:
                self._placed(ref)
                continue
            slot, scenario, lost = entry
            slot.load -= 1
            try:
                result = self.ray.get(ref)
            except errors.RayTaskError as exc:  # a bug in the worker, not the node: report it, do not rerun
                self._error(scenario, "error", f"the scenario crashed on node {self._where(slot)}: {exc}", slot)
                continue
            except errors.RayError as exc:  # the slot's actor, its node or the result is gone
                self._lose(slot, exc)
                self._again(scenario, lost + 1, exc)
                continue
            if result is not None:
                record, agent = result
                if agent:
                    self.runner.note_agent(agent)
                self._report(record, slot, lost)

    def _placed(self, ref: Any) -> None:
        slot = next((s for s in self.slots if s.ready == ref), None)
        if slot is None or not slot.alive:
            return
        try:
            info = self.ray.get(ref)
        except self.ray.exceptions.RuntimeEnvSetupError as exc:
            raise AgentpackError(
                f"a node could not set up the job (the manifest's folder as working_dir): {_last_line(exc)}"
            ) from None
        except self.ray.exceptions.RayError as exc:
            if getattr(exc, "actor_init_failed", False):  # the slot's constructor raised: it would on every node
                raise AgentpackError(
                    f"a scenario slot could not start on its node: {_last_line(exc)}",
                    hint="every node needs agentpack-agent-rpc (and the plugins of the manifest's graders) installed",
                ) from None
            self._lose(slot, exc)
            return
        slot.node = info["node"]
        self.placed_at = time.monotonic()
        if info["version"] != __version__ and not self.warned_version:
            self.warned_version = True
            self.runner.warnings.append(
                f"node {slot.node['ip']} has agentpack-agent-rpc {info['version']}, this machine {__version__}"
            )

    def _report(self, record: dict[str, Any], slot: _Slot, lost: int) -> None:
        index = record["index"]
        if index in self.reported:  # a scenario sent again after a node loss may finish twice
            return
        self.reported.add(index)
        record["node"] = dict(slot.node or {}, resubmitted=lost)
        run = self.runner
        if record["exit_reason"] == "max_duration_exceeded" and not run.cancel.is_set():
            run.stop_reason = "max_duration_exceeded"
            run.cancel.set()
        self.on_result(record)

    def _error(self, scenario: Any, reason: str, message: str, slot: _Slot | None, lost: int = 0) -> None:
        record = self.runner.skipped(scenario, reason, message)
        record["status"] = "error"
        if slot is not None:
            self._report(record, slot, lost)
        elif scenario.index not in self.reported:
            self.reported.add(scenario.index)
            record["node"] = {"resubmitted": lost}
            self.on_result(record)

    # -- faults --------------------------------------------------------------------------------------
    def _new_slot(self) -> None:
        handle = self.actor.remote(*self.args)
        self.slots.append(_Slot(handle, handle.ready.remote()))
        self.created += 1

    def _lose(self, slot: _Slot, exc: BaseException) -> None:
        """A slot whose node (or actor) is gone: dropped, and replaced while the budget lasts."""
        if not slot.alive:
            return
        slot.alive = False
        self._kill(slot.handle)
        if self.created < self.jobs * (1 + self.settings.node_retries) and (self.pending or self.inflight):
            self._new_slot()

    def _again(self, scenario: Any, lost: int, exc: BaseException) -> None:
        if lost > self.settings.node_retries:
            message = f"its node was lost {lost} times (last: {_first_line(exc)})"
            self._error(scenario, "node_lost", message, None, lost)
        else:
            self.pending.appendleft((scenario, lost))

    def _check_stalled(self) -> None:
        """No placed slot for ``start_timeout``: the cluster cannot take the job (or has lost every node)."""
        now = time.monotonic()
        if any(slot.alive and slot.node is not None for slot in self.slots):
            self.waiting_since = now
            return
        if any(slot.alive for slot in self.slots) and now - self.waiting_since < self.settings.start_timeout:
            return
        if self.placed_at is None:
            resources = self.ray.cluster_resources()
            raise AgentpackError(
                f"no node took a scenario slot within {self.settings.start_timeout:g} s: each needs "
                f"{self.settings.cpus:g} CPU, the cluster offers {resources.get('CPU', 0):g}",
                hint="AGENTPACK_AGENT_RPC_RAY_CPUS sets what a slot needs; AGENTPACK_AGENT_RPC_RAY_START_TIMEOUT "
                "how long to wait",
            )
        while self.pending:
            scenario, lost = self.pending.popleft()
            self._error(scenario, "node_lost", "no node was left to run it", None, lost)

    # -- the end -------------------------------------------------------------------------------------
    def _stop(self, reason: str) -> None:
        """Stop every slot, then take the records of the scenarios that were running (as long as STOP_GRACE)."""
        kill = reason == "interrupted"
        for slot in self.slots:
            if slot.alive and slot.node is not None:
                slot.handle.stop.options(concurrency_group="control").remote(reason, kill)
        self.pending.clear()
        deadline = time.monotonic() + STOP_GRACE
        while self.inflight and time.monotonic() < deadline:
            ready, _ = self.ray.wait(list(self.inflight), num_returns=1, timeout=max(0.0, deadline - time.monotonic()))
            for ref in ready:
                slot, _, lost = self.inflight.pop(ref)
                try:
                    result = self.ray.get(ref)
                except self.ray.exceptions.RayError:
                    continue  # lost while stopping: reported as not run
                if result is not None:
                    self._report(result[0], slot, lost)
        self.inflight.clear()

    def _close(self) -> None:
        """Retire every slot's agent (waiting up to CLOSE_GRACE), then end the actors."""
        ray = self.ray
        closing = [
            slot.handle.close.options(concurrency_group="control").remote()
            for slot in self.slots
            if slot.alive and slot.node is not None
        ]
        if closing:
            ray.wait(closing, num_returns=len(closing), timeout=CLOSE_GRACE)
        for slot in self.slots:
            self._kill(slot.handle)
        if self.limiter is not None:
            self._kill(self.limiter)

    def _kill(self, handle: Any) -> None:
        try:
            self.ray.kill(handle, no_restart=True)
        except self.ray.exceptions.RayError:  # already gone with its node
            pass

    @staticmethod
    def _where(slot: _Slot) -> str:
        return (slot.node or {}).get("ip", "?")


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _last_line(exc: BaseException) -> str:
    """The last line of a remote error: its traceback's exception line."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[-1] if lines else type(exc).__name__
