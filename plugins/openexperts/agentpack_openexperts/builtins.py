"""The plugin's own built-in drivers, brokers, binders, queue, preset and channel (registered through
its hooks, exactly as a third-party plugin would). Factories import their modules lazily."""

from __future__ import annotations

import os
from typing import Any

from agentpack.io.errors import AgentpackError

from .registry import BinderSpec, BrokerSpec, ChannelSpec, DriverSpec, PresetSpec, QueueSpec


def _scripted(options: dict[str, Any]):
    from .runtime.drivers import ScriptedDriver

    script = options.get("script")
    if script is None:
        raise AgentpackError("the scripted driver needs a script (--script FILE)")
    return ScriptedDriver(script) if isinstance(script, dict) else ScriptedDriver.from_file(script)


MODEL_ENV = ("AGENTPACK_OPENEXPERTS_MODEL", "OPENEXPERTS_MODEL")
"""Where the openai driver finds its model when none is given; the second name is the older alias."""


def _openai(options: dict[str, Any]):
    from .runtime.drivers import OpenAIDriver

    model = options.get("model") or next((os.environ[n] for n in MODEL_ENV if os.environ.get(n)), None)
    if not model:
        raise AgentpackError(f"the openai driver needs a model (--model NAME or {MODEL_ENV[0]})")
    key = options.get("api_key") or os.environ.get(options.get("api_key_env") or "OPENAI_API_KEY")
    return OpenAIDriver(
        model=model,
        base_url=options.get("base_url") or os.environ.get("OPENAI_BASE_URL"),
        api_key=key,
        max_turns=int(options.get("max_turns", 30)),
    )


def _plan(options: dict[str, Any]):
    from .runtime.drivers import PlanDriver

    return PlanDriver()


def _noop(options: dict[str, Any]):
    from .runtime.drivers import NoopDriver

    return NoopDriver()


def drivers() -> list[DriverSpec]:
    return [
        DriverSpec("openai", "any OpenAI-compatible chat API with tool calling (--model, --base-url)", _openai),
        DriverSpec("scripted", "follows a script of tool calls per checklist step (--script FILE)", _scripted),
        DriverSpec("plan", "walks the checklist and calls the operations each step names (dry runs)", _plan),
        DriverSpec("noop", "completes every step at once (benchmarks)", _noop),
    ]


def brokers() -> list[BrokerSpec]:
    from .runtime import approvals

    return [
        BrokerSpec("prompt", "asks on the terminal", lambda o: approvals.PromptBroker()),
        BrokerSpec("http", "decisions arrive on POST /approvals/<id>", lambda o: approvals.HttpBroker()),
        BrokerSpec("approve", "approves every confirm operation", lambda o: approvals.StaticBroker(True)),
        BrokerSpec("reject", "rejects every confirm operation", lambda o: approvals.StaticBroker(False)),
    ]


def _python(config: dict[str, Any], context: Any):
    from .runtime.bindings import python_binder

    return python_binder(config, context)


def _skill(config: dict[str, Any], context: Any):
    from .runtime.skill_adapter import skill_binder

    return skill_binder(config, context)


def _mcp(config: dict[str, Any], context: Any):
    from .runtime.mcp_bridge import mcp_binder

    return mcp_binder(config, context)


def binders() -> list[BinderSpec]:
    return [
        BinderSpec("python", "operations as Python callables (module:attr or file.py:attr)", _python),
        BinderSpec("skill", "deterministic skills of the skillctl format (skill.yaml)", _skill),
        BinderSpec("mcp", "an MCP server over stdio (official mcp SDK)", _mcp),
    ]


def _memory(options: dict[str, Any]):
    from .runtime.queue import InProcessQueue

    return InProcessQueue(int(options.get("workers", 4)))


def _postgres(options: dict[str, Any]):
    from .runtime.postgres.queue import PostgresQueue
    from .runtime.postgres.store import PostgresStore

    store = options.get("store")
    if not isinstance(store, PostgresStore):
        raise AgentpackError("the postgres queue needs a PostgreSQL store (--store postgresql://...)")
    return PostgresQueue(store, int(options.get("workers", 4)), float(options.get("lease", 30.0)))


def queues() -> list[QueueSpec]:
    return [
        QueueSpec("memory", "in-process lanes on a fixed pool of worker threads", _memory),
        QueueSpec("postgres", "jobs in PostgreSQL (procrastinate) shared by every worker process", _postgres),
    ]


def _gmail(payload: Any) -> Any:
    from .runtime.events import gmail_enrich

    return gmail_enrich(payload)


def presets() -> list[PresetSpec]:
    return [
        PresetSpec(
            "gmail",
            "Gmail message lists or Pub/Sub pushes; adds message_id, thread_id, sender_email "
            "and contact_id (the sender's address)",
            _gmail,
            fields=("message_id", "thread_id", "sender_email", "contact_id"),
        )
    ]


def _main(runtime: Any):
    from .runtime.delivery import MainChannel

    return MainChannel(runtime)


def channels() -> list[ChannelSpec]:
    return [ChannelSpec("main", "the primary agent session and chat (outbox + listeners)", _main)]
