"""``llm_judge``: ask an OpenAI-compatible chat model whether a field meets the criteria.

Settings, first found wins: the grader's ``model``/``temperature``, the
manifest's ``judge`` pins, ``AGENTPACK_AGENT_RPC_JUDGE_MODEL`` /
``_TEMPERATURE`` / ``_BASE_URL`` (or their aliases ``ECP_LLM_JUDGE_*``, and
``OPENAI_BASE_URL``; see ``env``), then ``gpt-4o-mini``, ``0`` and the OpenAI
endpoint. ``AGENTPACK_AGENT_RPC_JUDGE_API_KEY`` (or ``OPENAI_API_KEY``) is
required; without it, or when the endpoint fails, the check is an *error* with
the reason, never a crash.
The verdict is the last ``RESULT: PASS`` or ``RESULT: FAIL`` in the reply.
"""

from __future__ import annotations

import re
from typing import Any

from ..env import JUDGE_API_KEY, JUDGE_BASE_URL, JUDGE_MODEL, JUDGE_TEMPERATURE, described, getenv
from .base import Check, GradeContext, clip

DEFAULT_MODEL = "gpt-4o-mini"
SYSTEM = "You are an impartial judge. You evaluate an AI agent's output against specific criteria."
VERDICT = re.compile(r"RESULT:\s*(PASS|FAIL)", re.IGNORECASE)


class LlmJudge:
    def __init__(self, config: dict[str, Any]) -> None:
        self.name = config.get("name")
        self.field = config.get("field", "public_output")
        self.prompt = config["prompt"]
        self.assertion = config.get("assertion")
        self.model = config.get("model")
        self.temperature = config.get("temperature")

    def settings(self, context: GradeContext) -> tuple[str, float, str | None]:
        env = context.env or None
        model = self.model or context.judge.get("model") or getenv(JUDGE_MODEL, env) or DEFAULT_MODEL
        temperature = self.temperature
        if temperature is None:
            temperature = context.judge.get("temperature")
        if temperature is None:
            try:
                temperature = float(getenv(JUDGE_TEMPERATURE, env) or "0")
            except ValueError:
                temperature = 0.0
        base_url = context.judge.get("base_url") or getenv(JUDGE_BASE_URL, env)
        return model, float(temperature), base_url

    def messages(self, text: str, context: GradeContext) -> list[dict[str, str]]:
        criteria = self.prompt + (f"\n\nAssertion: {self.assertion}" if self.assertion else "")
        user = (
            f"[USER INPUT]\n{context.input}\n\n[TEXT TO EVALUATE ({self.field})]\n{text}\n\n[CRITERIA]\n{criteria}\n\n"
            "Does the text satisfy the criteria? Give a short reasoning, then end with exactly "
            '"RESULT: PASS" or "RESULT: FAIL".'
        )
        return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]

    def grade(self, result: Any, context: GradeContext) -> Check:
        text = getattr(result, self.field, None) or ""
        model, temperature, base_url = self.settings(context)
        expected = {"criteria": self.prompt, "model": model}
        api_key = getenv(JUDGE_API_KEY, context.env or None)
        if not api_key:
            return Check(
                "llm_judge",
                self.field,
                False,
                expected,
                clip(text),
                f"cannot judge: {described(JUDGE_API_KEY)} is not set",
                error=True,
                name=self.name,
            )
        from agentpack.io.llm import ChatClient, ChatError

        client = context.shared(
            ("llm_judge", model, temperature, base_url, api_key),
            lambda: ChatClient(
                model=model,
                api_key=api_key,
                base_url=base_url,
                temperature=temperature,
                timeout=60.0,
                distribution="agentpack-agent-rpc",
            ),
        )
        try:
            reply = client.complete(self.messages(text, context))
        except ChatError as exc:
            return Check(
                "llm_judge",
                self.field,
                False,
                expected,
                clip(text),
                f"judge call failed: {exc.message}",
                error=True,
                name=self.name,
            )
        content = reply.content or ""
        verdicts = VERDICT.findall(content)
        if not verdicts:
            return Check(
                "llm_judge",
                self.field,
                False,
                expected,
                clip(text),
                f"judge reply has no RESULT: PASS/FAIL verdict: {clip(content, 300)!r}",
                error=True,
                name=self.name,
            )
        passed = verdicts[-1].upper() == "PASS"
        reasoning = VERDICT.sub("", content).strip() or "(no reasoning given)"
        return Check(
            "llm_judge",
            self.field,
            passed,
            expected,
            clip(text),
            f"judge ({model}) says {'PASS' if passed else 'FAIL'}: {clip(reasoning, 1000)}",
            score=1.0 if passed else 0.0,
            name=self.name,
        )
