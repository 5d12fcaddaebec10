"""``agentpack ecp watch``: run a pack's ``refresh_triggers`` until stopped.

* ``schedule`` triggers: cron expressions (``croniter``; five fields, or six
  with seconds last) evaluated in UTC; a refresh runs at each due time.
* ``event`` triggers: every event (``git-push``, ``file-change``, ...) is
  served the same way: the sources are polled cheaply (the commit of each
  git source's branch, ``size``/``mtime`` of each in-scope file otherwise) and a
  refresh runs once a change has been stable for one poll interval.
* ``manual`` triggers are left to ``agentpack ecp refresh``.

A refresh that finds the pack locked, or fails, is reported and the watch
goes on. SIGINT/SIGTERM stop it between polls.
"""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.io.errors import AgentpackError

from ..pack.layout import PACK_INTERNAL_DIRS
from ..pack.manifest import ExpertPack, load_pack
from ..sources.git import resolve_commit
from ..sources.recipes import SourceError, resolve_location
from ..sources.scope import Scope
from .policy import Policy
from .refresh import refresh


@dataclass
class Triggers:
    schedules: list[str] = field(default_factory=list)
    events: list[str] = field(default_factory=list)


def parse_triggers(policy_raw: dict[str, Any], file: str) -> Triggers:
    from croniter import croniter

    triggers = Triggers()
    for i, trigger in enumerate(policy_raw.get("refresh_triggers") or []):
        if not isinstance(trigger, dict):
            continue
        kind, spec = trigger.get("type"), str(trigger.get("spec") or "")
        if kind == "schedule":
            if not croniter.is_valid(spec):
                raise AgentpackError(
                    f"refresh_triggers[{i}].spec '{spec}' is not a cron expression",
                    file=file,
                    hint="five fields (minute hour day month weekday), e.g. '0 3 * * *'",
                )
            triggers.schedules.append(spec)
        elif kind == "event":
            triggers.events.append(spec)
    return triggers


def next_due(spec: str, after: datetime) -> datetime:
    from croniter import croniter

    return croniter(spec, after).get_next(datetime)


def source_signature(pack: ExpertPack) -> tuple:
    """A cheap fingerprint of every source: branch commits for git, (path, size, mtime) otherwise."""
    parts: list[Any] = []
    skip = {os.path.realpath(pack.root / d) for d in PACK_INTERNAL_DIRS}
    skip |= {os.path.realpath(pack.root / e.path) for e in pack.indexes}
    for source in pack.sources:
        try:
            root = resolve_location(source.uri, pack.root)
        except SourceError:
            continue
        if source.type == "git":
            branch = source.revision.get("branch") or "HEAD"
            try:
                parts.append((source.source_id, resolve_commit(root, str(branch))))
            except SourceError as exc:
                parts.append((source.source_id, exc.message))
            continue
        scope = Scope(source.include, source.exclude)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(
                d for d in dirnames if os.path.realpath(os.path.join(dirpath, d)) not in skip and d != ".backup"
            )
            rel_dir = os.path.relpath(dirpath, root)
            for name in sorted(filenames):
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                if scope.matches(rel):
                    try:
                        st = os.stat(os.path.join(dirpath, name))
                    except OSError:
                        continue
                    parts.append((source.source_id, rel, st.st_size, st.st_mtime_ns))
    return tuple(parts)


class Watcher:
    """The watch loop; ``run`` returns the number of refreshes that did not succeed."""

    def __init__(
        self,
        root: Path,
        *,
        interval: float = 2.0,
        max_runs: int | None = None,
        duration: float | None = None,
        clock: Clock = SYSTEM_CLOCK,
        on_event: Callable[[dict[str, Any]], None] = lambda e: None,
        on_evals: Callable[[Any, dict[str, Any]], None] | None = None,
    ) -> None:
        self.pack = load_pack(root)
        self.root = self.pack.root
        policy = Policy.load(self.pack)
        self.triggers = parse_triggers(policy.raw, policy.file)
        self.interval = interval
        self.max_runs = max_runs
        self.duration = duration
        self.clock = clock
        self.emit = on_event
        self.on_evals = on_evals
        """Receives each refresh's eval gate outcome with the refresh's result (for recording it)."""
        self.stop = threading.Event()
        self.runs = 0
        self.failures = 0

    def _refresh(self, reason: str) -> None:
        self.runs += 1
        event: dict[str, Any] = {"event": "refresh", "reason": reason, "at": self.clock.iso()}
        gate: list[Any] = []
        result: dict[str, Any] = {"decision": "error"}
        try:
            result = refresh(self.root, clock=self.clock, who="service:watch", on_evals=gate.append)
            event.update(
                run_id=result["run_id"],
                decision=result["decision"],
                exit_status=result["exit_status"],
                changed_files=(result.get("plan") or {}).get("changed_files", 0),
            )
            self.failures += result["exit_status"] != 0
        except AgentpackError as exc:
            event.update(decision="error", exit_status=exc.exit_code, error=str(exc))
            self.failures += 1
        if gate and self.on_evals is not None:
            self.on_evals(gate[0], {**result, "trigger": reason})
        self.emit(event)

    def run(self) -> int:
        if not self.triggers.schedules and not self.triggers.events:
            raise AgentpackError(
                "the maintenance policy has no schedule or event trigger to watch",
                hint='add refresh_triggers such as {"type": "schedule", "spec": "0 3 * * *"}',
            )
        started = self.clock.monotonic()
        due = {spec: next_due(spec, self.clock.now()) for spec in self.triggers.schedules}
        signature = source_signature(self.pack) if self.triggers.events else None
        pending_since: tuple | None = None
        self.emit(
            {
                "event": "watching",
                "at": self.clock.iso(),
                "schedules": self.triggers.schedules,
                "events": self.triggers.events,
                "next": {s: d.isoformat() for s, d in due.items()},
            }
        )
        while not self.stop.is_set():
            if self.max_runs is not None and self.runs >= self.max_runs:
                break
            if self.duration is not None and self.clock.monotonic() - started >= self.duration:
                break
            now = self.clock.now()
            fired = [spec for spec, when in due.items() if when <= now]
            for spec in fired:
                due[spec] = next_due(spec, now)
            if fired:
                self._refresh(f"schedule {', '.join(fired)}")
                signature = source_signature(self.pack) if self.triggers.events else None
                continue
            if signature is not None:
                current = source_signature(self.pack)
                if current != signature:
                    if pending_since == current:  # stable for one interval: the writer is done
                        self._refresh(f"event {', '.join(self.triggers.events)}: sources changed")
                        signature, pending_since = source_signature(self.pack), None
                        continue
                    pending_since = current
                else:
                    pending_since = None
            self.stop.wait(self.interval)
        self.emit({"event": "stopped", "at": self.clock.iso(), "runs": self.runs, "failures": self.failures})
        return self.failures


def install_signal_handlers(watcher: Watcher) -> None:
    def stop(signum, frame) -> None:
        watcher.stop.set()

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
