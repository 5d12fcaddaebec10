"""The environment variables the plugin reads: ``AGENTPACK_AGENT_RPC_*``, with the reference runtime's names as aliases.

``ecp-runtime`` reads ``ECP_RPC_TIMEOUT``, ``ECP_LLM_JUDGE_*`` and the
OpenAI client's ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``; they keep working,
and the ``AGENTPACK_AGENT_RPC_*`` name wins when both are set.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

TIMEOUT = "AGENTPACK_AGENT_RPC_TIMEOUT"
JUDGE_MODEL = "AGENTPACK_AGENT_RPC_JUDGE_MODEL"
JUDGE_TEMPERATURE = "AGENTPACK_AGENT_RPC_JUDGE_TEMPERATURE"
JUDGE_BASE_URL = "AGENTPACK_AGENT_RPC_JUDGE_BASE_URL"
JUDGE_API_KEY = "AGENTPACK_AGENT_RPC_JUDGE_API_KEY"
PID_NAMESPACE = "AGENTPACK_AGENT_RPC_PID_NAMESPACE"

ALIASES: dict[str, tuple[str, ...]] = {
    TIMEOUT: ("ECP_RPC_TIMEOUT",),
    JUDGE_MODEL: ("ECP_LLM_JUDGE_MODEL",),
    JUDGE_TEMPERATURE: ("ECP_LLM_JUDGE_TEMPERATURE",),
    JUDGE_BASE_URL: ("ECP_LLM_JUDGE_BASE_URL", "OPENAI_BASE_URL"),
    JUDGE_API_KEY: ("OPENAI_API_KEY",),
    PID_NAMESPACE: (),
}
"""Each variable and its aliases, in the order they are looked up."""


FILE_SETTINGS = {JUDGE_MODEL: "model", JUDGE_BASE_URL: "base-url", JUDGE_TEMPERATURE: "temperature"}
"""The judge's variables that the project's configuration (``[tool.agentpack.judge]``) gives defaults for."""


def getenv(name: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The value of ``name``, else of its first alias that is set (an empty value counts as unset), else the
    project configuration's default for it (``[tool.agentpack.judge]``, read in this process only)."""
    env = os.environ if environ is None else environ
    for key in (name, *ALIASES[name]):
        value = env.get(key)
        if value:
            return value
    if name in FILE_SETTINGS:
        return file_settings().get(name)
    return None


def file_settings() -> dict[str, str]:
    """The judge's variables the project configuration sets, by variable name (the environment wins over them)."""
    from agentpack.kernel.config import load

    judge = load().judge
    return {variable: judge[key] for variable, key in FILE_SETTINGS.items() if key in judge}


def described(name: str) -> str:
    """``name`` with its aliases, for messages: ``AGENTPACK_AGENT_RPC_TIMEOUT (or ECP_RPC_TIMEOUT)``."""
    return f"{name} (or {' or '.join(ALIASES[name])})" if ALIASES[name] else name
