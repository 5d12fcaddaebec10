"""Agent drivers: what runs a process's agentic loop against an ``AgentSession``.

* ``openai``: any OpenAI-compatible chat API with tool calling (``agentpack.io.llm.ChatClient``);
* ``scripted``: follows a script of tool calls per checklist step (tests, demos);
* ``plan``: walks the checklist and calls the operations each step names (dry runs);
* ``noop``: completes every step at once (benchmarks).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from agentpack.io import jsonio
from agentpack.io.errors import AgentpackError
from agentpack.io.yamlio import load_yaml

from ..dotpath import MISSING, resolve
from ..effective import tier
from .errors import DriverError, ProcessFailure
from .session import SEP, AgentResult, AgentSession

_PLACEHOLDER = re.compile(r"\$\{([^{}]+)\}")
_OPERATION = re.compile(r"`?\b([a-z][a-z0-9_-]*)\.([a-z][a-z0-9_]*)\b`?")
PAD_MARK = "<!-- scripted-driver saved values -->"


class NoopDriver:
    def run(self, session: AgentSession) -> AgentResult:
        for number in range(1, len(session.steps) + 1):
            session.call("complete_step", {"step": number})
        return AgentResult(narrative=f"{session.process.name} done", structured={})


class PlanDriver:
    """Calls every ``tool.op`` a step mentions, with the inputs whose names match the operation's input."""

    def run(self, session: AgentSession) -> AgentResult:
        package = session.runtime.package
        available = set(session.operations())
        lines = []
        for number, step in enumerate(session.steps, start=1):
            session.check()
            calls = []
            for tool, op in _OPERATION.findall(step):
                name = f"{tool}.{op}"
                if name not in available:
                    continue
                shape = package.operations(tool).get(op, {}).get("input") or {}
                props = shape.get("properties") if isinstance(shape, dict) else None
                args = {k: v for k, v in session.inputs.items() if isinstance(props, dict) and k in props}
                outcome = session.call(name, args)
                if not outcome.get("ok"):
                    session.plan.append(
                        {
                            "operation": name,
                            "tier": tier(package, name).value,
                            "arguments": args,
                            "executed": False,
                            "note": outcome.get("error"),
                        }
                    )
                    state = "not called: arguments unknown without an agent"
                else:
                    state = "executed" if outcome.get("result") is not None else "described"
                calls.append(f"{name} -> {state}")
            session.call("complete_step", {"step": number, "summary": "; ".join(calls)})
            lines.append(f"{number}. {step}" + (f" [{'; '.join(calls)}]" if calls else ""))
        return AgentResult(narrative="\n".join(lines), structured={"steps": len(session.steps)})


class ScriptedDriver:
    """Runs a script: per process, a list of steps, each a list of actions, then ``finish``.

    Actions: ``{call: tool.op, args: {...}, save: name}``, ``{read: path, save: name}``,
    ``{write: path, content: text}``, ``{escalate: reason, recommended_action: text}``,
    ``{fail: message}``. ``${inputs.x}`` and ``${saved.name.path}`` are substituted. Saved values
    are kept in the scratchpad, so a resumed run skips completed steps and still has them.
    """

    def __init__(self, script: dict[str, Any]) -> None:
        processes = script.get("processes") if isinstance(script, dict) else None
        if not isinstance(processes, dict):
            raise AgentpackError("a driver script needs a 'processes' mapping: {process name: {steps: [...]}}")
        self.processes = processes

    @classmethod
    def from_file(cls, path: str | Path) -> ScriptedDriver:
        return cls(load_yaml(path).data)

    def run(self, session: AgentSession) -> AgentResult:
        script = self.processes.get(session.process.name)
        if not isinstance(script, dict):
            raise DriverError(f"the script has nothing for process '{session.process.name}'")
        saved = self._restore(session)
        done = set(session.resume.completed_steps) if session.resume else set()
        for number, actions in enumerate(script.get("steps") or [], start=1):
            if number in done:
                continue
            session.check()
            for action in actions or []:
                self._act(session, action, saved)
            self._persist(session, saved, number)
            session.call("complete_step", {"step": number})
        final = self._fill(script.get("finish") or {}, session, saved)
        session.call(
            "finish", {k: final.get(k) for k in ("narrative", "structured", "confidence", "recommended_action")}
        )
        return session.finished or AgentResult()

    def _act(self, session: AgentSession, action: dict[str, Any], saved: dict[str, Any]) -> None:
        action = self._fill(action, session, saved)
        if "fail" in action:
            raise ProcessFailure(str(action["fail"]))
        if "call" in action:
            outcome = session.call(action["call"], action.get("args") or {})
        elif "read" in action:
            outcome = session.call("read_file", {"path": action["read"]})
        elif "write" in action:
            outcome = session.call("write_file", {"path": action["write"], "content": action.get("content", "")})
        elif "escalate" in action:
            outcome = session.call(
                "escalate", {"reason": action["escalate"], "recommended_action": action.get("recommended_action", "")}
            )
        else:
            raise DriverError(f"unknown script action: {sorted(action)}")
        if not outcome.get("ok") and not action.get("expect_error"):
            raise DriverError(f"{action}: {outcome.get('error')}")
        if action.get("save"):
            saved[action["save"]] = outcome.get("result", outcome.get("content", outcome))

    def _fill(self, value: Any, session: AgentSession, saved: dict[str, Any]) -> Any:
        scope = {"inputs": session.inputs, "saved": saved, "run_id": session.run_id, "attempt": session.attempt}
        if isinstance(value, str):
            whole = _PLACEHOLDER.fullmatch(value)
            if whole:
                found = resolve(scope, whole.group(1))
                return None if found is MISSING else found
            return _PLACEHOLDER.sub(lambda m: _text(resolve(scope, m.group(1))), value)
        if isinstance(value, dict):
            return {k: self._fill(v, session, saved) for k, v in value.items()}
        if isinstance(value, list):
            return [self._fill(v, session, saved) for v in value]
        return value

    def _persist(self, session: AgentSession, saved: dict[str, Any], step: int) -> None:
        if not session.scratchpad:
            return
        lines = [f"- [{'x' if i <= step else ' '}] {text}" for i, text in enumerate(session.steps, start=1)]
        body = "\n".join(lines) + f"\n\n{PAD_MARK}\n```json\n{json.dumps(saved, sort_keys=True, default=str)}\n```\n"
        session.call("write_file", {"path": session.scratchpad, "content": body})

    def _restore(self, session: AgentSession) -> dict[str, Any]:
        if not session.scratchpad:
            return {}
        outcome = session.call("read_file", {"path": session.scratchpad})
        text = outcome.get("content") or ""
        if PAD_MARK not in text:
            return {}
        block = text.split(PAD_MARK, 1)[1].split("```json", 1)[-1].split("```", 1)[0]
        try:
            return jsonio.loads(block)
        except ValueError:
            return {}


def _text(value: Any) -> str:
    if value is MISSING or value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)


class OpenAIDriver:
    """The agentic loop over an OpenAI-compatible ``/chat/completions`` endpoint with tool calling."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str | None = None,
        api_key: str | None = None,
        max_turns: int = 30,
        temperature: float | None = None,
        timeout: float = 120.0,
    ) -> None:
        from agentpack.io.llm import ChatClient

        self.client = ChatClient(
            model=model,
            api_key=api_key,
            base_url=base_url,
            temperature=temperature,
            timeout=timeout,
            distribution="agentpack-openexperts",
        )
        self.max_turns = max_turns

    def run(self, session: AgentSession) -> AgentResult:
        from agentpack.io.llm import ChatError

        messages: list[dict[str, Any]] = [
            {"role": "system", "content": session.system_prompt},
            {"role": "user", "content": session.task_prompt},
        ]
        tools = session.tool_specs()
        for _ in range(self.max_turns):
            session.check()
            try:
                reply = self.client.complete(messages, tools=tools)
            except ChatError as exc:
                raise DriverError(str(exc)) from None
            if not reply.tool_calls:
                return session.finished or _final(reply.content)
            messages.append(
                {
                    "role": "assistant",
                    "content": reply.content,
                    "tool_calls": [
                        {
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": json.dumps(c.arguments)},
                        }
                        for c in reply.tool_calls
                    ],
                }
            )
            for call in reply.tool_calls:
                name = call.name
                if "." in name and SEP not in name:
                    name = name.replace(".", SEP, 1)
                outcome = session.call(name, call.arguments)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call.id,
                        "content": json.dumps(outcome, default=str, ensure_ascii=False),
                    }
                )
            if session.finished is not None:
                return session.finished
        raise DriverError(f"the model did not finish within {self.max_turns} turns")

    def close(self) -> None:
        """Close the chat client's keep-alive connections (the runtime's ``stop`` calls it)."""
        self.client.close()


def _final(content: str | None) -> AgentResult:
    """A final assistant message: JSON with narrative/structured/confidence, or plain narrative."""
    text = (content or "").strip()
    candidate = text
    if candidate.startswith("```"):
        candidate = candidate.strip("`").split("\n", 1)[-1]
    try:
        data = jsonio.loads(candidate)  # the model wrote it: strict JSON, or plain narrative
    except ValueError:
        return AgentResult(narrative=text)
    if isinstance(data, dict) and {"narrative", "structured"} & set(data):
        return AgentResult(
            narrative=data.get("narrative"),
            structured=data.get("structured"),
            confidence=data.get("confidence"),
            recommended_action=data.get("recommended_action"),
        )
    return AgentResult(narrative=text, structured=data if isinstance(data, dict) else None)
