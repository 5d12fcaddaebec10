"""What a driver sees of one process attempt: prompts, tools, and the mediated ``call``.

Every tool operation passes through ``AgentSession.call``: its declaration and
arguments are checked, its effective approval tier enforced (``auto`` runs,
``confirm`` waits for an approval broker, ``manual`` delivers a draft), and it is
journalled before it runs (``idempotency``) so a resumed run never repeats a side effect
that already happened, nor blindly one whose outcome a crash left unknown.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from agentpack.io import jsonio
from agentpack.io.crashpoints import crashpoint as _crashpoint
from agentpack.io.hashing import sha256_json

from .. import effective
from ..model import Component
from .approvals import ApprovalRequest
from .bindings import ToolError
from .errors import Cancelled, OperationRejected, ProcessTimeout, ToolFailure
from .idempotency import (
    DONE,
    EXECUTED,
    FAILED,
    LOGICAL,
    RECONCILED,
    REFUSED,
    SUPERSEDED,
    calling,
    idempotency_key,
    resolve_in_doubt,
)
from .workspace import AccessError

STEP = re.compile(r"^\s*[-*] \[[ xX]\] (.+)$", re.MULTILINE)
SEP = "__"


def crashpoint(name: str) -> None:
    """A named point where crash tests kill the run (``AGENTPACK_OPENEXPERTS_CRASH_AT``)."""
    _crashpoint(name, prefix="AGENTPACK_OPENEXPERTS")


def strict_json(value: Any, operation: str) -> Any:
    """A tool's result as strict JSON (other values as strings); ``ToolFailure`` when it cannot be one:
    NaN or infinity, a cycle, or nesting deeper than ``agentpack.io.jsonio`` reads back."""
    try:
        return jsonio.loads(json.dumps(value, default=str, allow_nan=False))
    except (ValueError, RecursionError) as exc:  # JsonError is a ValueError
        raise ToolFailure(f"{operation} returned a result that is not JSON: {exc}") from None


def checklist(body: str) -> list[str]:
    """The process's checklist steps, in order."""
    return [m.group(1).strip() for m in STEP.finditer(body)]


def shape_schema(shape: Any) -> dict[str, Any]:
    """A tool YAML type shape as JSON Schema (unknown properties allowed, as the spec's shapes are loose)."""
    if not isinstance(shape, dict):
        return {"type": "object"}
    out: dict[str, Any] = {}
    if shape.get("type") in ("string", "number", "integer", "boolean", "object", "array"):
        out["type"] = shape["type"]
    if isinstance(shape.get("description"), str):
        out["description"] = shape["description"]
    if isinstance(shape.get("enum"), list):
        out["enum"] = shape["enum"]
    if isinstance(shape.get("properties"), dict):
        out["properties"] = {k: shape_schema(v) for k, v in shape["properties"].items()}
    if isinstance(shape.get("items"), dict):
        out["items"] = shape_schema(shape["items"])
    if isinstance(shape.get("required"), list):
        out["required"] = shape["required"]
    return out


@dataclass
class AgentResult:
    narrative: str | None = None
    structured: dict[str, Any] | None = None
    confidence: str | None = None
    recommended_action: str | None = None


@dataclass
class ResumeInfo:
    attempt: int
    completed_steps: list[int]
    failures: list[dict[str, Any]]
    scratchpad: str | None
    scratchpad_text: str | None

    def prompt(self, steps: list[str]) -> str:
        done = ", ".join(map(str, self.completed_steps)) or "none"
        lines = [f"This is attempt {self.attempt}. Steps already completed: {done}."]
        for failure in self.failures[-3:]:
            lines.append(f"- attempt {failure.get('attempt')} failed ({failure.get('reason')}): {failure.get('error')}")
        nxt = next((i for i in range(1, len(steps) + 1) if i not in self.completed_steps), None)
        if nxt:
            lines.append(f"Resume at step {nxt}; do not repeat completed steps.")
        if self.scratchpad:
            lines.append(
                f"Your scratchpad {self.scratchpad} holds your working data"
                + (":\n\n" + self.scratchpad_text if self.scratchpad_text else " (it is empty).")
            )
        return "\n".join(lines)


BUILTIN_TOOLS = [
    {
        "name": "read_file",
        "description": "Read a package file (function, knowledge, persona), a state file or a scratch file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    },
    {
        "name": "write_file",
        "description": "Write a state file (state/...) or a scratch file (scratch/...).",
        "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    {
        "name": "read_function",
        "description": "Read a function's instructions by name.",
        "parameters": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    },
    {
        "name": "complete_step",
        "description": "Mark a checklist step (1-based) as done.",
        "parameters": {
            "type": "object",
            "properties": {"step": {"type": "integer"}, "summary": {"type": "string"}},
            "required": ["step"],
        },
    },
    {
        "name": "escalate",
        "description": "Hand off to a human: why, the context, and your recommended action.",
        "parameters": {
            "type": "object",
            "properties": {
                "reason": {"type": "string"},
                "recommended_action": {"type": "string"},
                "context": {"type": "object"},
            },
            "required": ["reason", "recommended_action"],
        },
    },
    {
        "name": "finish",
        "description": "Finish the process with its outputs.",
        "parameters": {
            "type": "object",
            "properties": {
                "narrative": {"type": "string"},
                "structured": {"type": "object"},
                "confidence": {"type": "string", "enum": ["high", "medium", "low"]},
                "recommended_action": {"type": "string"},
            },
        },
    },
]


@dataclass
class AgentSession:
    runtime: Any
    run: dict[str, Any]
    process: Component
    policy: effective.ProcessPolicy
    segment: int
    attempt: int
    deadline: float | None
    resume: ResumeInfo | None
    scratchpad: str | None
    dry_run: bool = False
    finished: AgentResult | None = None
    plan: list[dict[str, Any]] = field(default_factory=list)
    _seen: dict[tuple[str, str], int] = field(default_factory=dict)

    # -- views for drivers -----------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        return self.run["run_id"]

    @property
    def inputs(self) -> dict[str, Any]:
        return self.run["inputs"]

    @property
    def session_id(self) -> str:
        return self.run["session"]

    @property
    def steps(self) -> list[str]:
        return checklist(self.process.body)

    @property
    def system_prompt(self) -> str:
        return self.runtime.prompts.system()

    @property
    def task_prompt(self) -> str:
        return self.runtime.prompts.task(self)

    def operations(self) -> list[str]:
        return effective.process_operations(self.runtime.package, self.process)

    def tool_specs(self) -> list[dict[str, Any]]:
        """OpenAI-style function tools: the process's operations (``tool__op``) and the built-ins."""
        package = self.runtime.package
        specs = []
        for name in self.operations():
            tool, _, op = name.partition(".")
            declared = package.operations(tool).get(op, {})
            tier = effective.tier(package, name).value
            specs.append(
                {
                    "type": "function",
                    "function": {
                        "name": f"{tool}{SEP}{op}",
                        "description": f"{declared.get('description', name)} (approval: {tier})",
                        "parameters": shape_schema(declared.get("input")) or {"type": "object"},
                    },
                }
            )
        specs += [{"type": "function", "function": spec} for spec in BUILTIN_TOOLS]
        return specs

    # -- control -------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise when the attempt is over its timeout or the runtime is stopping (drivers call it per turn)."""
        if self.runtime.stopping.is_set():
            raise Cancelled("the runtime is stopping")
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise ProcessTimeout(f"process '{self.process.name}' exceeded its timeout")

    def remaining(self) -> float | None:
        return None if self.deadline is None else max(0.0, self.deadline - time.monotonic())

    # -- the one entry point for tool calls ------------------------------------------------------------
    def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        """Call ``tool__op``/``tool.op`` or a built-in; returns ``{"ok": ..., ...}`` (JSON-able)."""
        self.check()
        arguments = dict(arguments or {})
        if SEP in name or ("." in name and name.split(".", 1)[0] in self.runtime.package.required_tools):
            tool, _, op = name.partition(SEP) if SEP in name else name.partition(".")
            return self.operation(tool, op, arguments)
        handler = getattr(self, f"_builtin_{name}", None)
        if handler is None:
            return {"ok": False, "error": f"unknown tool '{name}'"}
        try:
            return handler(**arguments)
        except TypeError as exc:
            return {"ok": False, "error": f"bad arguments for {name}: {exc}"}

    def operation(self, tool: str, op: str, arguments: dict[str, Any]) -> dict[str, Any]:
        rt = self.runtime
        package = rt.package
        full = f"{tool}.{op}"
        if tool not in package.required_tools:
            return {"ok": False, "error": f"tool '{tool}' is not in requires.tools"}
        declared = package.operations(tool)
        if declared and op not in declared:
            return {
                "ok": False,
                "error": f"tool '{tool}' has no operation '{op}' (operations: {', '.join(sorted(declared))})",
            }
        problem = rt.check_arguments(full, declared.get(op, {}).get("input"), arguments)
        tier = effective.tier(package, full).value
        if problem and not (self.dry_run and (tier != "auto" or not rt.tools.has(tool))):
            return {"ok": False, "error": problem}
        digest = sha256_json(arguments)
        occurrence = self._seen.get((full, digest), 0)
        self._seen[(full, digest)] = occurrence + 1
        key = idempotency_key(self.run_id, full, digest, occurrence)
        earlier = self._earlier(full, digest, occurrence)
        if earlier is not None and earlier["status"] in DONE:
            return self._replayed(full, digest, arguments, earlier["result"], tier)
        description = declared.get(op, {}).get("description", full)
        if self.dry_run and (tier != "auto" or not rt.tools.has(tool)):
            why = "not executed in a dry run" if tier != "auto" else "no binding for this tool"
            if problem:
                why += f"; {problem}"
            entry = {
                "operation": full,
                "tier": tier,
                "arguments": arguments,
                "executed": False,
                "description": description,
                "note": why,
            }
            self.plan.append(entry)
            rt.store.record_call(
                self.run_id, self.segment, full, digest, rt.redact(arguments), None, tier, "described", rt.now()
            )
            return {"ok": True, "dry_run": True, **entry}
        if tier == "manual":
            return self._draft(full, digest, arguments, description, key, earlier)
        if earlier is not None:  # started in a killed segment (approved then, if confirm): its outcome is unknown
            happened, result = resolve_in_doubt(
                rt.store, self.run_id, earlier, rt.tools.bindings.get(tool), full, arguments, tier
            )
            if happened:
                return self._replayed(full, digest, arguments, result, tier)
        elif tier == "confirm":
            self._approve(full, digest, arguments, description)
        # write-ahead: the journal holds the call before it runs, so a resumed run knows it may have run
        seq = rt.store.begin_call(self.run_id, self.segment, full, digest, rt.redact(arguments), tier, key, rt.now())
        crashpoint("call.journalled")
        try:
            with calling(key):
                answer = rt.tools.call(tool, op, arguments)
        except ToolError as exc:
            rt.store.finish_call(self.run_id, seq, REFUSED, {"error": rt.redact(str(exc))}, rt.now())
            return {"ok": False, "error": str(exc)}
        except Exception as exc:  # the tool itself failed: the attempt fails and the retry policy applies
            rt.store.finish_call(self.run_id, seq, FAILED, {"error": rt.redact(repr(exc))}, rt.now())
            raise ToolFailure(f"{full} failed: {exc}") from exc
        crashpoint("call.returned")
        try:
            result = strict_json(answer, full)
        except ToolFailure as exc:
            rt.store.finish_call(self.run_id, seq, FAILED, {"error": rt.redact(str(exc))}, rt.now())
            raise
        rt.store.finish_call(self.run_id, seq, EXECUTED, rt.redact(result), rt.now())
        crashpoint("call.recorded")
        if self.dry_run:
            self.plan.append(
                {
                    "operation": full,
                    "tier": tier,
                    "arguments": arguments,
                    "executed": True,
                    "description": description,
                    "result": result,
                }
            )
        return {"ok": True, "result": result, "tier": tier}

    def _earlier(self, full: str, digest: str, occurrence: int) -> dict[str, Any] | None:
        """The journal entry of the call this one repeats (it ran, or was started and may have run), for a
        non-idempotent process that resumes or retries."""
        if self.policy.idempotent or self.segment == 1:
            return None
        earlier = self.runtime.store.calls_like(self.run_id, full, digest, LOGICAL, self.segment)
        return earlier[occurrence] if occurrence < len(earlier) else None

    def _replayed(self, full: str, digest: str, arguments: dict[str, Any], result: Any, tier: str) -> dict[str, Any]:
        rt = self.runtime
        rt.store.record_call(
            self.run_id, self.segment, full, digest, rt.redact(arguments), result, tier, "replayed", rt.now()
        )
        return {"ok": True, "result": result, "replayed": True, "tier": tier}

    def _draft(
        self,
        full: str,
        digest: str,
        arguments: dict[str, Any],
        description: str,
        key: str,
        earlier: dict[str, Any] | None,
    ) -> dict[str, Any]:
        """A ``manual`` operation: a draft for a person, delivered once (its id comes from the call's key, so a
        resumed run finds a draft it delivered before it was killed instead of sending a second one)."""
        rt = self.runtime
        draft_id = f"draft-{key.removeprefix('oex-')[:16]}"
        result = {"draft_id": draft_id, "draft_delivered": True, "executed": False}
        if earlier is not None and any(
            m["data"].get("draft_id") == draft_id for m in rt.store.messages(self.run_id, kind="draft")
        ):
            rt.store.set_call(self.run_id, earlier["seq"], RECONCILED, result)
            return self._replayed(full, digest, arguments, result, "manual")
        if earlier is not None:
            rt.store.set_call(self.run_id, earlier["seq"], SUPERSEDED)
        seq = rt.store.begin_call(
            self.run_id, self.segment, full, digest, rt.redact(arguments), "manual", key, rt.now()
        )
        rt.outbox.send(
            self.policy.channel,
            "draft",
            self.run_id,
            self.process.name,
            {
                "draft_id": draft_id,
                "operation": full,
                "arguments": arguments,
                "description": description,
                "note": "manual tier: prepared for a human to execute; it was not executed",
            },
        )
        crashpoint("draft.delivered")
        if self.policy.on_manual_ready:
            rt.outbox.escalate(
                self.policy.escalation_channel,
                self.run_id,
                self.process.name,
                f"a manual action is ready: {full}",
                {"inputs": self.inputs, "arguments": arguments},
                f"review draft {draft_id} and execute {full} yourself",
            )
        rt.store.finish_call(self.run_id, seq, "draft_delivered", result, rt.now())
        return {"ok": True, "result": result, "tier": "manual"}

    def _approve(self, full: str, digest: str, arguments: dict[str, Any], description: str) -> None:
        rt = self.runtime
        request = ApprovalRequest(
            id=f"approval-{secrets.token_urlsafe(16)}",  # unguessable, not a counter: POST /approvals/<id> decides
            run_id=self.run_id,
            process=str(self.process.name),
            operation=full,
            arguments=rt.redact(arguments),
            description=f"{full} {json.dumps(rt.redact(arguments), sort_keys=True)} for process {self.process.name}",
            created=rt.clock.iso(),
        )
        rt.desk.open(request)
        rt.outbox.send(self.policy.channel, "approval_request", self.run_id, self.process.name, request.to_json())
        try:
            rt.broker.notify(request, rt.desk)
            approved, by = self._wait(request)
        finally:
            rt.desk.close(request.id)
        if approved is None:
            rt.store.record_call(
                self.run_id,
                self.segment,
                full,
                digest,
                rt.redact(arguments),
                None,
                "confirm",
                "approval_timeout",
                rt.now(),
            )
            raise OperationRejected(f"approval for {full} timed out")
        if not approved:
            rt.store.record_call(
                self.run_id,
                self.segment,
                full,
                digest,
                rt.redact(arguments),
                {"by": by},
                "confirm",
                "rejected",
                rt.now(),
            )
            raise OperationRejected(f"{full} was rejected by {by or 'the approver'}")

    def _wait(self, request: ApprovalRequest) -> tuple[bool | None, str]:
        """Wait for the decision; honour ``policy.approval.timeout``/``on_timeout`` and the process deadline."""
        rt = self.runtime
        limit = self.policy.approval_timeout

        def bounded(seconds: float | None) -> float:
            candidates = [c for c in (seconds, self.remaining()) if c is not None]
            return min(candidates) if candidates else 3600.0

        waited = 0.0
        while True:
            step = bounded(limit - waited if limit is not None else None)
            approved, by = rt.desk.wait(request.id, min(step, 0.5))
            waited += min(step, 0.5)
            if approved is not None:
                return approved, by
            self.check()
            if limit is not None and waited >= limit:
                break
        if self.policy.on_timeout != "escalate":
            return None, ""
        rt.outbox.escalate(
            self.policy.escalation_channel,
            self.run_id,
            self.process.name,
            f"approval for {request.operation} timed out",
            {"inputs": self.inputs, "arguments": request.arguments},
            f"approve or reject {request.operation} (request {request.id}); it can still be approved",
        )
        late = self.remaining() if self.deadline is not None else limit
        end = time.monotonic() + (late or 0.0)
        while time.monotonic() < end:
            approved, by = rt.desk.wait(request.id, min(0.5, max(0.0, end - time.monotonic())))
            if approved is not None:
                return approved, by
            self.check()
        return None, ""

    # -- built-in tools ------------------------------------------------------------------------------
    def _builtin_read_file(self, path: str) -> dict[str, Any]:
        try:
            text, kind = self.runtime.workspace.read(path, self.session_id)
        except AccessError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "path": path, "kind": kind, "content": text}

    def _builtin_write_file(self, path: str, content: str) -> dict[str, Any]:
        try:
            kind = self.runtime.workspace.write(path, str(content), self.session_id)
        except AccessError as exc:
            return {"ok": False, "error": str(exc)}
        return {"ok": True, "path": path, "kind": kind}

    def _builtin_read_function(self, name: str) -> dict[str, Any]:
        fn = self.runtime.package.functions().get(name)
        if fn is None:
            return {"ok": False, "error": f"no function named '{name}'"}
        return {
            "ok": True,
            "name": name,
            "description": fn.meta.get("description"),
            "inputs": fn.list_of("inputs"),
            "outputs": fn.list_of("outputs"),
            "knowledge": fn.list_of("knowledge"),
            "instructions": fn.body,
        }

    def _builtin_complete_step(self, step: int, summary: str = "") -> dict[str, Any]:
        steps = self.steps
        if not isinstance(step, int) or not 1 <= step <= max(len(steps), 1):
            return {"ok": False, "error": f"step must be between 1 and {len(steps)}"}
        rt = self.runtime
        rt.store.complete_step(self.run_id, step, rt.redact(summary), self.segment, rt.now())
        crashpoint("step.completed")
        return {"ok": True, "step": step}

    def _builtin_escalate(
        self, reason: str, recommended_action: str, context: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        rt = self.runtime
        rt.outbox.escalate(
            self.policy.escalation_channel,
            self.run_id,
            self.process.name,
            reason,
            {"inputs": self.inputs, **(context or {})},
            recommended_action,
        )
        return {"ok": True, "escalated": True}

    def _builtin_finish(
        self,
        narrative: str | None = None,
        structured: dict[str, Any] | None = None,
        confidence: str | None = None,
        recommended_action: str | None = None,
    ) -> dict[str, Any]:
        self.finished = AgentResult(narrative, structured, confidence, recommended_action)
        return {"ok": True, "finished": True}
