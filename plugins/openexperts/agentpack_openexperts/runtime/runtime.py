"""``ExpertRuntime``: a framework-agnostic runtime for an expert package.

Wires triggers (cron, webhook, channel), concurrency, execution policy,
approvals, state and delivery around a pluggable agent driver::

    rt = ExpertRuntime("examples/openexperts/acme-support", tools={"crm": crm}, driver="scripted",
                       driver_options={"script": "script.yaml"}, broker="approve", workdir=tmp)
    with rt.started(http=True):
        rt.fire("new_ticket", {"ticket_id": "T-1"})
        rt.wait_idle(10)
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.io.errors import AgentpackError, require
from agentpack.kernel.host import Host
from agentpack.kernel.plugins import get_host
from agentpack.kernel.schemas import SchemaStore

from .. import effective
from ..dotpath import MISSING, resolve
from ..loader import load_package
from ..model import ExpertPackage
from ..names import WORKDIR
from ..registry import lookup, registered
from ..validate import validate_package
from .approvals import CallbackBroker
from .backends import open_backend
from .bindings import ToolBox
from .delivery import Outbox
from .events import lane_for, map_inputs, normalise_channel
from .executor import Executor, RunOutcome
from .prompts import DEFAULT_BUDGET, Prompts
from .queue import Job
from .redaction import RedactingFilter, Redactor
from .scheduler import Scheduler
from .serverconfig import ServerSettings
from .session import shape_schema
from .workspace import Workspace

log = logging.getLogger("agentpack.openexperts")


Delivery = tuple[str, list[str]]
"""A signed delivery's dedupe scope and keys (``webhooks.delivery_keys``)."""
REPLAYED = {"accepted": False, "duplicate": True, "replay": True, "error": "this delivery was already received"}


class _NotTaken(Exception):
    """Rolls back a channel delivery that no trigger took."""


@dataclass
class BindContext:
    """What a binder factory gets: the folder relative paths resolve against, and the runtime."""

    base: Path
    runtime: ExpertRuntime


class ExpertRuntime:
    """The runtime of one expert package.

    ``host`` is the ``agentpack.kernel.host.Host`` whose registrations (drivers, brokers,
    binders, queues, presets, channels) the runtime uses; callers that have one (the
    CLI, a plugin hook) pass it. The default, for the Python API, is the process-wide
    ``get_host()``.
    """

    def __init__(
        self,
        package: ExpertPackage | str | Path,
        *,
        tools: ToolBox | dict[str, Any] | None = None,
        driver: Any = "plan",
        driver_options: dict[str, Any] | None = None,
        broker: Any = "reject",
        broker_options: dict[str, Any] | None = None,
        workdir: str | Path | None = None,
        clock: Clock = SYSTEM_CLOCK,
        ids: Callable[[], str] | None = None,
        workers: int = 4,
        queue: str | None = None,
        store: str | None = None,
        queue_options: dict[str, Any] | None = None,
        dedupe_window: float = 86400.0,
        knowledge_budget: int = DEFAULT_BUDGET,
        keep_scratch: bool = False,
        listeners: tuple[Callable[[dict[str, Any]], None], ...] = (),
        host: Host | None = None,
        validate: bool = True,
    ) -> None:
        self.host = host if host is not None else get_host()
        self.package = package if isinstance(package, ExpertPackage) else load_package(package)
        if validate:
            self._check_package()
        self.clock = clock
        self._ids = ids
        self._counter = itertools.count(1)
        self.workdir = Path(workdir) if workdir else self.package.root / WORKDIR
        backend = open_backend(store, self.workdir, self.package.name or self.package.root.name, clock, workers=workers)
        self.store = backend.store
        self.driver: Any = None
        self.tools = ToolBox()
        try:
            self._assemble(backend, broker, broker_options, driver, driver_options, tools, listeners, knowledge_budget)
            options = {"workers": workers, "store": self.store, **(queue_options or {})}
            self.queue = lookup(self.host, "queue", queue or backend.queue).factory(options)
        except BaseException:  # nothing half-made stays open: the store, the driver's connections
            self._close_parts()
            raise
        self.scheduler = Scheduler()
        self.executor = Executor(self)
        self.dedupe_window = dedupe_window
        self.keep_scratch = keep_scratch
        self.stopping = threading.Event()
        self.sla_breached: set[str] = set()
        self.server: Any = None
        self.inactive: dict[str, str] = {}
        self._shapes = SchemaStore()  # the operations' input shapes as schemas, added on first use
        self._shape_ids: set[str] = set()
        self._shapes_lock = threading.Lock()
        self._started = False
        self._log_filter = RedactingFilter(self.redact)  # the runtime's log records, redacted until stop()
        log.addFilter(self._log_filter)

    # -- construction helpers --------------------------------------------------------------------
    def _assemble(
        self,
        backend: Any,
        broker: Any,
        broker_options: dict[str, Any] | None,
        driver: Any,
        driver_options: dict[str, Any] | None,
        tools: Any,
        listeners: Any,
        knowledge_budget: Any,
    ) -> None:
        """The parts between the store and the queue: redaction, workspace, prompts, outbox, broker, driver, tools."""
        self.redact = Redactor(self.package)
        self.workspace = Workspace(self.package, self.workdir, self.redact)
        self.prompts = Prompts(self.package, self.workspace, knowledge_budget)
        self.listeners = list(listeners)
        channels = {name: spec.factory(self) for name, spec in registered(self.host, "channel").items()}
        self.outbox = Outbox(self.store, self.clock, self.redact, channels)
        self.desk = backend.desk
        self.broker = self._make("broker", broker, broker_options)
        self.driver = self._make("driver", driver, driver_options)
        if isinstance(tools, ToolBox):
            self.tools = tools
        elif isinstance(tools, dict):
            for name, binding in tools.items():
                self.tools.bind(name, binding)

    def _close_parts(self) -> None:
        """Close the tools, the driver (when it holds connections: an optional ``close``) and the store."""
        self.tools.close()
        close_driver = getattr(self.driver, "close", None)
        if close_driver is not None:
            close_driver()
        self.store.close()

    def _make(self, kind: str, value: Any, options: dict[str, Any] | None) -> Any:
        if isinstance(value, str):
            return lookup(self.host, kind, value).factory(dict(options or {}))
        if kind == "broker" and callable(value) and not hasattr(value, "notify"):
            return CallbackBroker(value)
        return value

    def _check_package(self) -> None:
        findings = validate_package(self.package, self.host)
        errors = [f for f in findings if f.severity == "error"]
        if errors:
            first = errors[0]
            more = f" (and {len(errors) - 1} more; run 'agentpack validate')" if len(errors) > 1 else ""
            raise AgentpackError(
                f"the package has errors: {first.code} {first.message}{more}", file=first.file, line=first.line
            )
        for finding in findings:
            if finding.severity == "warning":
                log.warning("%s %s: %s", finding.code, finding.location(), finding.message)

    # -- small services --------------------------------------------------------------------------
    def now(self) -> float:
        return self.clock.now().timestamp()

    def new_id(self, prefix: str = "run-") -> str:
        if self._ids is not None:
            return f"{prefix}{self._ids()}"
        return f"{prefix}{int(time.time() * 1000):x}-{os.getpid():x}-{next(self._counter):04d}"

    def check_arguments(self, operation: str, shape: Any, arguments: dict[str, Any]) -> str | None:
        """A message when ``arguments`` do not fit the operation's declared input shape."""
        if not isinstance(shape, dict):
            return None
        schema_id = f"urn:agentpack:openexperts:operation:{operation}"
        with self._shapes_lock:
            if schema_id not in self._shape_ids:
                self._shapes.add({"$id": schema_id, **shape_schema(shape)})
                self._shape_ids.add(schema_id)
        if self._shapes.is_valid(schema_id, arguments):
            return None
        error = next(iter(self._shapes.validator(schema_id).iter_errors(arguments)), None)
        if error is None:
            return None
        where = "/" + "/".join(map(str, error.absolute_path))
        return f"invalid arguments for {operation} at {where}: {error.message}"

    def missing_tools(self) -> list[str]:
        return self.tools.missing(self.package.required_tools)

    def require_tools(self) -> None:
        missing = self.missing_tools()
        if missing:
            raise AgentpackError(
                f"requires.tools is not satisfied: no binding for {', '.join(repr(t) for t in missing)}",
                file=self.package.manifest.file,
                line=self.package.manifest.line_of("/requires/tools"),
                hint="bind them with --bindings FILE (python, skill or mcp) or ExpertRuntime(tools=...)",
            )

    # -- lifecycle ---------------------------------------------------------------------------------
    def start(
        self, *, http: bool = False, port: int = 0, cron: bool = True, server: ServerSettings | None = None
    ) -> None:
        """Start the queue, the cron schedules and, with ``http``, the HTTP server (``server``, or
        loopback on ``port``); the server binds first, so a port in use stops here with one line."""
        if self._started:
            return
        executes = getattr(self.queue, "workers", 1) > 0  # an intake of a shared queue runs no process itself
        if executes:
            self.require_tools()
        if http:
            for module in ("starlette", "uvicorn"):
                require(module, distribution="agentpack-openexperts", extra="server", feature="the HTTP server")
            from .http import RuntimeServer

            self.server = RuntimeServer(self, server if server is not None else ServerSettings(port=port))
        self.store.purge_dedupe(self.now(), self.dedupe_window)
        self.workspace.init_persistent()
        self.workspace.start_session("main")
        for trig in self.package.triggers:
            needed = trig.get("requires_tool")
            if needed and executes and not self.tools.has(needed):
                self.inactive[trig["name"]] = f"tool '{needed}' is not bound"
                log.warning("trigger '%s' is inactive: tool '%s' is not bound", trig["name"], needed)
        self.queue.start(self._handle)
        self.scheduler.start()
        if cron:
            for index, trig in enumerate(self.package.triggers):
                if trig.get("type") == "cron" and trig["name"] not in self.inactive:
                    self._schedule_cron(index)
        if self.server is not None:
            self.server.start()
            if hasattr(self.broker, "base_url"):
                self.broker.base_url = self.server.url
        self._started = True

    def stop(self, timeout: float = 10.0) -> None:
        if self.server is not None:
            self.server.stop()
            self.server = None
        self.stopping.set()
        if self._started:
            self.queue.stop()
        self.scheduler.stop()
        self._close_parts()
        log.removeFilter(self._log_filter)
        self._started = False

    @contextmanager
    def started(self, **kwargs: Any) -> Iterator[ExpertRuntime]:
        self.start(**kwargs)
        try:
            yield self
        finally:
            self.stop()

    def wait_idle(self, timeout: float | None = None) -> bool:
        return self.queue.join(timeout)

    @property
    def url(self) -> str | None:
        return self.server.url if self.server is not None else None

    def webhook_urls(self) -> dict[str, str]:
        base = self.url or ""
        return {t["name"]: f"{base}/hooks/{t['name']}" for t in self.package.triggers if t.get("type") == "webhook"}

    # -- invocations ------------------------------------------------------------------------------
    def _handle(self, job: Job) -> RunOutcome:
        return self.executor.execute(job.run_id)

    def create_run(
        self,
        process: str,
        inputs: dict[str, Any],
        *,
        trigger: str | None = None,
        payload: Any = None,
        session: str | None = None,
        lane: str | None = None,
        dry_run: bool = False,
    ) -> str:
        self.package.process(process)
        run_id = self.new_id("run-")
        self.store.create_run(
            run_id,
            process,
            trigger,
            session or run_id,
            lane,
            self.redact(inputs),
            self.redact(payload),
            self.now(),
            dry_run=dry_run,
        )
        return run_id

    def submit(self, process: str, inputs: dict[str, Any], **kwargs: Any) -> str:
        run_id = self.create_run(process, inputs, **kwargs)
        self.queue.submit(Job(run_id), kwargs.get("lane"))
        return run_id

    def run_process(self, process: str, inputs: dict[str, Any] | None = None, *, dry_run: bool = False) -> RunOutcome:
        """Run ``process`` now, on this thread, to a terminal state (the ``experts run --process`` path)."""
        if not dry_run:
            self.require_tools()
        self.workspace.init_persistent()
        run_id = self.create_run(process, dict(inputs or {}), dry_run=dry_run)
        if not self._started:
            self.scheduler.start()
        return self.executor.execute(run_id, dry_run=dry_run)

    def fire(self, trigger: str, payload: Any, *, delivery: Delivery | None = None) -> dict[str, Any]:
        """A trigger fires with ``payload``: preset, dedupe, input mapping, lane, then queue.

        ``delivery`` (``(scope, keys)``, ``webhooks.delivery_keys``) is recorded in the transaction that
        creates the run, so a delivery that was not accepted (an inactive trigger, a failure) can be retried."""
        index = next((i for i, t in enumerate(self.package.triggers) if t.get("name") == trigger), None)
        if index is None:
            raise AgentpackError(f"no trigger named '{trigger}'")
        if trigger in self.inactive:
            return {"accepted": False, "error": f"trigger '{trigger}' is inactive: {self.inactive[trigger]}"}
        trig = self.package.triggers[index]
        eff = effective.trigger(self.package, index)
        warnings: list[str] = []
        if trig.get("preset"):
            preset = registered(self.host, "preset").get(trig["preset"])
            if preset is not None:
                payload = preset.enrich(payload)
        dedupe = trig.get("dedupe_key")
        with self.store.transaction():  # the delivery and dedupe keys, the run and its job commit together
            if delivery is not None and not self._first_delivery(delivery):
                return dict(REPLAYED, trigger=trigger)
            if dedupe:
                key = resolve(payload, dedupe)
                if key is MISSING:
                    warnings.append(f"dedupe_key '{dedupe}' is not in the payload; the event cannot be deduplicated")
                elif not self.store.first_sighting(
                    trigger, json.dumps(key, sort_keys=True, default=str), self.now(), self.dedupe_window
                ):
                    return {"accepted": False, "duplicate": True, "trigger": trigger}
            return self._accept(trigger, trig, eff, payload, warnings)

    def _accept(
        self, trigger: str, trig: dict[str, Any], eff: dict[str, Any], payload: Any, warnings: list[str]
    ) -> dict[str, Any]:
        inputs, more = map_inputs(payload, trig.get("payload_mapping"))
        warnings += more
        session = "main" if eff["session"].value == "main" else None
        lane, more = lane_for(
            trigger, eff["concurrency"].value, eff["concurrency_key"].value, payload, session or "isolated"
        )
        warnings += more
        for warning in warnings:
            log.warning("trigger '%s': %s", trigger, warning)
        run_id = self.submit(trig["process"], inputs, trigger=trigger, payload=payload, session=session, lane=lane)
        return {
            "accepted": True,
            "duplicate": False,
            "trigger": trigger,
            "run_id": run_id,
            "lane": lane,
            "warnings": warnings,
        }

    def channel_message(self, channel_name: str, raw: Any, *, delivery: Delivery | None = None) -> list[dict[str, Any]]:
        """Route a message from ``channel_name`` to every channel trigger that listens to it.

        ``delivery`` is recorded only when a trigger took the message, in the same transaction."""
        message = normalise_channel(channel_name, raw)
        answers: list[dict[str, Any]] = []
        try:
            with self.store.transaction():
                if delivery is not None and not self._first_delivery(delivery):
                    return [dict(REPLAYED, channel=channel_name)]
                for trig in self.package.triggers:
                    source = trig.get("preset") or trig.get("requires_tool")
                    if trig.get("type") == "channel" and (source is None or source == channel_name):
                        answers.append(self.fire(trig["name"], message))
                if not any(a.get("accepted") or a.get("duplicate") for a in answers):
                    raise _NotTaken  # nothing took the message: the delivery key is not kept
        except _NotTaken:
            pass
        return answers

    def _first_delivery(self, delivery: Delivery) -> bool:
        scope, keys = delivery
        now = self.now()
        return all([self.store.first_sighting(scope, key, now, self.dedupe_window) for key in keys])

    def _schedule_cron(self, index: int) -> None:
        from zoneinfo import ZoneInfo

        from croniter import croniter

        trig = self.package.triggers[index]
        expr, tz = trig["expr"], ZoneInfo(trig.get("tz") or "UTC")
        seconds_first = len(expr.split()) == 6

        def arm() -> None:
            now = datetime.now(tz)
            nxt = croniter(expr, now, second_at_beginning=seconds_first).get_next(datetime)
            self.scheduler.call_later(nxt.timestamp() - time.time(), lambda: fire(nxt))

        def fire(when: datetime) -> None:
            if self.stopping.is_set():
                return
            try:
                with self.store.transaction():  # one process of those sharing the store fires each tick
                    if self.store.claim_tick(trig["name"], when.timestamp()):
                        self.fire(trig["name"], {"trigger": trig["name"], "scheduled_for": when.isoformat()})
            finally:
                arm()

        arm()

    # -- recovery -------------------------------------------------------------------------------
    def resume_interrupted(self) -> list[RunOutcome]:
        """Finish runs a previous process left queued or running (crash, kill, stop), oldest first."""
        self.require_tools()
        self.workspace.init_persistent()
        self.scheduler.start()
        return [
            self.executor.execute(run["run_id"], dry_run=run["dry_run"])
            for run in self.store.runs(("queued", "running"))
        ]

    def replay_dead_letter(self, letter_id: str) -> RunOutcome:
        letters = {d["id"]: d for d in self.store.dead_letters(include_replayed=True)}
        letter = letters.get(letter_id)
        if letter is None:
            raise AgentpackError(f"no dead letter '{letter_id}' (list them with 'agentpack experts dead-letters list')")
        if letter["replayed_as"]:
            raise AgentpackError(f"dead letter '{letter_id}' was already replayed as run {letter['replayed_as']}")
        self.require_tools()
        self.workspace.init_persistent()
        self.scheduler.start()
        run_id = self.create_run(
            letter["process"], letter["inputs"], trigger=letter["trigger"], payload=letter["payload"]
        )
        self.store.mark_replayed(letter_id, run_id)
        return self.executor.execute(run_id)
