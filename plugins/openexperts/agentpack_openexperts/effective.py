"""Effective configuration: package defaults merged into each trigger and process, with provenance.

Every value is a ``Sourced`` (value plus where it came from), so ``experts explain``
can say why a process times out after 10 minutes or why ``email.send`` is manual.
Merging is field by field, nested ``retry`` fields included: a process that sets
only ``retry.max_attempts`` keeps the package's ``backoff`` and ``delay``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .durations import DurationError, parse_duration
from .model import Component, ExpertPackage

SPEC_DEFAULT = "spec default"

EXECUTION_DEFAULTS: dict[str, Any] = {
    "timeout": None,
    "idempotent": False,
    "retry.max_attempts": 1,
    "retry.backoff": "exponential",
    "retry.delay": "30s",
    "on_failure": "escalate",
    "resume_from_execution_log": False,
}
DELIVERY_DEFAULTS: dict[str, Any] = {"format": "both", "channel": "main", "sla": None, "sla_breach": "warn"}
ESCALATION_DEFAULTS: dict[str, Any] = {"channel": "main", "on_low_confidence": True, "on_manual_ready": True}
APPROVAL_DEFAULTS: dict[str, Any] = {"timeout": None, "on_timeout": "reject"}


@dataclass(frozen=True)
class Sourced:
    value: Any
    source: str
    """``file:line (/pointer)`` or ``spec default`` / a note."""

    def to_json(self) -> dict[str, Any]:
        return {"value": self.value, "source": self.source}


def _lookup(data: Any, dotted: str) -> tuple[bool, Any]:
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return False, None
        data = data[part]
    return True, data


def _source(file: str | None, line: int | None, pointer: str) -> str:
    return f"{file}:{line} ({pointer})" if line else f"{file} ({pointer})"


def _layered(defaults: dict[str, Any], layers: list[tuple[Any, str, Any]]) -> dict[str, Sourced]:
    """``layers``: (data, base pointer, document) from most general to most specific."""
    result = {}
    for key, default in defaults.items():
        chosen = Sourced(default, SPEC_DEFAULT)
        for data, base, doc in layers:
            found, value = _lookup(data, key)
            if found:
                pointer = base + "/" + key.replace(".", "/")
                chosen = Sourced(value, _source(doc.file, doc.line_of(pointer), pointer))
        result[key] = chosen
    return result


def execution(package: ExpertPackage, process: Component | None) -> dict[str, Sourced]:
    layers = [(package.section("execution"), "/execution", package.manifest)]
    if process is not None:
        layers.append((process.meta.get("execution") or {}, "/execution", process.doc))
    return _layered(EXECUTION_DEFAULTS, layers)


def delivery(package: ExpertPackage, process: Component | None) -> dict[str, Sourced]:
    layers = [(package.section("delivery"), "/delivery", package.manifest)]
    if process is not None:
        layers.append((process.meta.get("delivery") or {}, "/delivery", process.doc))
    return _layered(DELIVERY_DEFAULTS, layers)


def escalation(package: ExpertPackage) -> dict[str, Sourced]:
    return _layered(
        ESCALATION_DEFAULTS,
        [(package.section("policy").get("escalation") or {}, "/policy/escalation", package.manifest)],
    )


def approval(package: ExpertPackage) -> dict[str, Sourced]:
    return _layered(
        APPROVAL_DEFAULTS, [(package.section("policy").get("approval") or {}, "/policy/approval", package.manifest)]
    )


def tier(package: ExpertPackage, operation: str) -> Sourced:
    """The approval tier of ``tool.operation``: override, then policy default, then ``confirm``."""
    doc = package.manifest
    policy = package.data.get("policy")
    if not isinstance(policy, dict):
        return Sourced("confirm", "no policy block: the spec's safe default")
    approval_block: dict[str, Any] = policy["approval"] if isinstance(policy.get("approval"), dict) else {}
    overrides: dict[str, Any] = approval_block["overrides"] if isinstance(approval_block.get("overrides"), dict) else {}
    if operation in overrides:
        pointer = f"/policy/approval/overrides/{operation}"
        return Sourced(overrides[operation], _source(doc.file, doc.line_of(pointer), pointer))
    if "default" in approval_block:
        pointer = "/policy/approval/default"
        return Sourced(approval_block["default"], _source(doc.file, doc.line_of(pointer), pointer))
    return Sourced("confirm", "policy.approval.default omitted: the spec's safe default")


def trigger(package: ExpertPackage, index: int) -> dict[str, Sourced]:
    """Effective ``concurrency``, ``concurrency_key``, ``session``, ``tz``, ``dedupe_key`` of trigger ``index``."""
    doc = package.manifest
    data = package.triggers[index]
    base = f"/triggers/{index}"

    def own(key: str) -> Sourced | None:
        if key in data:
            pointer = f"{base}/{key}"
            return Sourced(data[key], _source(doc.file, doc.line_of(pointer), pointer))
        return None

    concurrency = package.section("concurrency")
    package_mode = (
        Sourced(concurrency["default"], _source(doc.file, doc.line_of("/concurrency/default"), "/concurrency/default"))
        if "default" in concurrency
        else Sourced("parallel", SPEC_DEFAULT)
    )
    package_key = (
        Sourced(concurrency["key"], _source(doc.file, doc.line_of("/concurrency/key"), "/concurrency/key"))
        if "key" in concurrency
        else Sourced(None, SPEC_DEFAULT)
    )
    return {
        "type": own("type") or Sourced(None, SPEC_DEFAULT),
        "process": own("process") or Sourced(None, SPEC_DEFAULT),
        "concurrency": own("concurrency") or package_mode,
        "concurrency_key": own("concurrency_key") or package_key,
        "session": own("session") or Sourced("isolated", SPEC_DEFAULT),
        "tz": own("tz") or Sourced("UTC" if data.get("type") == "cron" else None, SPEC_DEFAULT),
        "dedupe_key": own("dedupe_key") or Sourced(None, SPEC_DEFAULT),
        "payload_mapping": own("payload_mapping") or Sourced(None, "none: the raw payload is the input"),
    }


def seconds(value: Any) -> float | None:
    """A duration value as seconds (``None`` stays ``None``; a bad value is ``None`` too)."""
    if value is None:
        return None
    try:
        return parse_duration(value)
    except DurationError:
        return None


@dataclass
class ProcessPolicy:
    """What the runtime needs for one process, resolved once."""

    timeout: float | None
    idempotent: bool
    max_attempts: int
    backoff: str
    delay: float
    on_failure: str
    resume: bool
    format: str
    channel: str
    sla: float | None
    sla_breach: str
    approval_timeout: float | None
    on_timeout: str
    escalation_channel: str
    on_low_confidence: bool
    on_manual_ready: bool

    def backoff_delay(self, attempt: int) -> float:
        """Delay before attempt ``attempt + 1`` (``attempt`` counts from 1)."""
        return self.delay if self.backoff == "fixed" else self.delay * (2 ** (attempt - 1))


def process_policy(package: ExpertPackage, process: Component | None) -> ProcessPolicy:
    ex = execution(package, process)
    de = delivery(package, process)
    ap = approval(package)
    es = escalation(package)
    max_attempts = ex["retry.max_attempts"].value
    return ProcessPolicy(
        timeout=seconds(ex["timeout"].value),
        idempotent=bool(ex["idempotent"].value),
        max_attempts=max_attempts if isinstance(max_attempts, int) and max_attempts >= 1 else 1,
        backoff=ex["retry.backoff"].value,
        delay=seconds(ex["retry.delay"].value) or 0.0,
        on_failure=ex["on_failure"].value,
        resume=bool(ex["resume_from_execution_log"].value),
        format=de["format"].value,
        channel=de["channel"].value,
        sla=seconds(de["sla"].value),
        sla_breach=de["sla_breach"].value,
        approval_timeout=seconds(ap["timeout"].value),
        on_timeout=ap["on_timeout"].value,
        escalation_channel=es["channel"].value,
        on_low_confidence=bool(es["on_low_confidence"].value),
        on_manual_ready=bool(es["on_manual_ready"].value),
    )


def process_operations(package: ExpertPackage, process: Component) -> list[str]:
    """``tool.op`` names the process may use: every operation of its tools and of its functions' tools."""
    tools: list[str] = [t for t in process.list_of("tools") if isinstance(t, str)]
    functions = package.functions()
    for name in process.list_of("functions"):
        fn = functions.get(name) if isinstance(name, str) else None
        if fn is not None:
            tools.extend(t for t in fn.list_of("tools") if isinstance(t, str) and t not in tools)
    return [f"{tool}.{op}" for tool in dict.fromkeys(tools) for op in package.operations(tool)]
