"""Optional answer synthesis with a chat model (spec 5.5 and 6.3.3).

The provider speaks the OpenAI-compatible chat API and is configured from the
environment:

* ``AGENTPACK_ECP_LLM_MODEL`` (required to enable it), ``AGENTPACK_ECP_LLM_BASE_URL``
  (default ``https://api.openai.com/v1``), ``AGENTPACK_ECP_LLM_API_KEY``,
* ``AGENTPACK_ECP_LLM_PROVIDER``: the provider's name for the allowlist (by
  default guessed from the host: openai, anthropic, openrouter, else the host).

A provider on a loopback address is local: excerpts never leave the machine,
so it is always allowed. Any other provider is remote and is used only when
``security.allow_remote_llm`` is true, the provider is in
``security.allowed_remote_llm_providers`` and ``security.contains_secrets`` is
not true. Otherwise, or when the call fails, the local extractive answer stays
and ``synthesis`` says why.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from agentpack.io.llm import DEFAULT_BASE_URL, ChatClient, ChatError, is_loopback

from .extractive import extractive_answer

KNOWN_HOSTS = {"api.openai.com": "openai", "api.anthropic.com": "anthropic", "openrouter.ai": "openrouter"}
MAX_EVIDENCE = 8
MAX_SNIPPET_CHARS = 2000
SYSTEM_PROMPT = (
    "You answer questions using only the numbered excerpts you are given. Cite the excerpts you use as [n]. "
    "If the excerpts do not contain the answer, say so plainly. Be concise."
)


@dataclass(frozen=True)
class Provider:
    name: str
    base_url: str
    model: str
    api_key: str | None

    @property
    def local(self) -> bool:
        return is_loopback(self.base_url)

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None) -> Provider | None:
        env = os.environ if env is None else env
        model = env.get("AGENTPACK_ECP_LLM_MODEL")
        if not model:
            return None
        base_url = env.get("AGENTPACK_ECP_LLM_BASE_URL") or DEFAULT_BASE_URL
        host = (urlparse(base_url).hostname or "").lower()
        name = env.get("AGENTPACK_ECP_LLM_PROVIDER") or next(
            (v for k, v in KNOWN_HOSTS.items() if host == k or host.endswith("." + k)), host
        )
        return cls(name=name, base_url=base_url, model=model, api_key=env.get("AGENTPACK_ECP_LLM_API_KEY"))


def refusal(security: dict[str, Any], provider: Provider) -> str | None:
    """Why ``provider`` may not see this pack's excerpts, or ``None`` when it may."""
    if provider.local:
        return None
    if security.get("contains_secrets") is True:
        return "security.contains_secrets is true: excerpts never go to a remote model"
    if security.get("allow_remote_llm") is not True:
        return "security.allow_remote_llm is not true"
    allowed = security.get("allowed_remote_llm_providers")
    if not isinstance(allowed, list) or provider.name not in allowed:
        return f"provider '{provider.name}' is not in security.allowed_remote_llm_providers"
    return None


def _prompt(question: str, chunks: list[dict[str, Any]]) -> list[dict[str, str]]:
    parts = []
    for n, chunk in enumerate(chunks, 1):
        citation = chunk.get("citation") or {}
        where = citation.get("chunk_id") or citation.get("artifact_path") or "?"
        parts.append(f"[{n}] {where}\n{str(chunk.get('snippet', ''))[:MAX_SNIPPET_CHARS]}")
    user = f"Question: {question}\n\nExcerpts:\n\n" + "\n\n".join(parts)
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def synthesize(
    question: str,
    response: dict[str, Any],
    security: dict[str, Any],
    *,
    provider: Provider | None = None,
    mode: str = "auto",
    client_factory: Callable[..., Any] | None = None,
    on_usage: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """Return ``response`` with a model-written ``answer`` when allowed (``mode``: auto, local, llm)."""
    local_meta = dict(response.get("synthesis") or {"provider": "local", "method": "extractive"})
    if mode == "local":
        return response
    provider = provider or Provider.from_env()
    if provider is None:
        if mode == "llm":
            local_meta["fallback_reason"] = "no synthesis provider is configured (set AGENTPACK_ECP_LLM_MODEL)"
            return {**response, "synthesis": local_meta}
        return response
    reason = refusal(security, provider)
    if reason:
        local_meta["fallback_reason"] = reason
        return {**response, "synthesis": local_meta}
    chunks = [c for c in response.get("chunks") or [] if isinstance(c, dict)][:MAX_EVIDENCE]
    if not chunks:
        return response
    factory = client_factory or ChatClient
    try:
        with factory(
            model=provider.model,
            api_key=provider.api_key,
            base_url=provider.base_url,
            temperature=0.0,
            timeout=60.0,
            distribution="agentpack-ecp",
        ) as client:
            result = client.complete(_prompt(question, chunks))
    except ChatError as exc:
        local_meta["fallback_reason"] = f"synthesis provider failed: {exc.message}"
        return {**response, "synthesis": local_meta}
    if on_usage is not None:
        on_usage(result.usage)
    if not result.content or not result.content.strip():
        local_meta["fallback_reason"] = "the synthesis provider returned an empty answer"
        return {**response, "synthesis": local_meta}
    meta = {
        "provider": provider.name,
        "model": provider.model,
        "method": "llm",
        "max_evidence_chunks": MAX_EVIDENCE,
        "remote": not provider.local,
    }
    if result.usage:
        meta["usage"] = result.usage
    return {**response, "answer": result.content.strip(), "synthesis": meta}


def query_synthesizer(
    security: dict[str, Any],
    *,
    mode: str = "auto",
    provider: Provider | None = None,
    on_usage: Callable[[dict[str, Any]], None] | None = None,
    client_factory: Callable[..., Any] | None = None,
):
    """A ``synthesize(question, chunks, as_of) -> (answer, synthesis)`` callable for ``response.query_pack``,
    or ``None`` when the local extractive answer is all there is to do."""
    if mode == "local":
        return None
    provider = provider or Provider.from_env()
    if provider is None and mode != "llm":
        return None

    def run(question: str, chunks: list[dict[str, Any]], as_of: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        answer, meta = extractive_answer(question, chunks, MAX_EVIDENCE)
        out = synthesize(
            question,
            {"answer": answer, "chunks": chunks, "synthesis": meta},
            security,
            provider=provider,
            mode=mode,
            client_factory=client_factory,
            on_usage=on_usage,
        )
        return out["answer"], out["synthesis"]

    return run


def usage_cost(usage: dict[str, Any], env: Mapping[str, str] | None = None) -> tuple[int, float]:
    """Tokens of one call and their cost from ``AGENTPACK_ECP_LLM_USD_PER_1K_TOKENS`` (0 when unset)."""
    env = os.environ if env is None else env
    tokens = int(usage.get("total_tokens") or (usage.get("prompt_tokens") or 0) + (usage.get("completion_tokens") or 0))
    try:
        price = float(env.get("AGENTPACK_ECP_LLM_USD_PER_1K_TOKENS") or 0)
    except ValueError:
        price = 0.0
    return tokens, tokens * price / 1000
