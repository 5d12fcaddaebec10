"""A loaded pack as an agent: each step is one query (``query.answer``), its result the protocol's fields.

``public_output`` is the answer; ``evaluation_context`` the citations, one line each
(``[1] docs/caching.md:1-11 (source corpus, revision 622e756863cc)``, or ``no citation``);
``tool_calls`` the retrieval, one ``expert.search`` call per index searched, with the question
and ``top_k`` as arguments and ``{status, hits}`` as its ``result``. ``agent/initialize``'s
``config`` may set ``top_k``, ``mode``, ``filters`` and ``synthesis`` for the session.
"""

from __future__ import annotations

from typing import Any

from agentpack.agents import Agent

from ..pack.manifest import ExpertPack
from ..query.answer import answer

TOOL_NAME = "expert.search"
SETTINGS = ("top_k", "mode", "filters", "synthesis")


def expert_agent(pack: ExpertPack, **settings: Any) -> Agent:
    """``pack`` as an SDK agent (``handle``, ``serve_stdio``, ``serve_http``) answering with ``ExpertAgent``."""
    expert = ExpertAgent(pack, **settings)
    agent = Agent(expert.name, capabilities={"tool_calls": {}, "evaluation_context": {}})
    agent.initialize(expert.initialize)
    agent.step(expert.step)
    agent.reset(expert.reset)
    return agent


class ExpertAgent:
    """Answers steps from ``pack`` with the given query settings (``top_k``, ``mode``, ``filters``, ``synthesis``)."""

    def __init__(self, pack: ExpertPack, **settings: Any) -> None:
        self.pack = pack
        self.name = pack.name
        self.defaults = {k: v for k, v in settings.items() if k in SETTINGS and v is not None}
        self.settings = dict(self.defaults)

    def initialize(self, config: dict[str, Any]) -> None:
        self.settings = {**self.defaults, **{k: v for k, v in config.items() if k in SETTINGS and v is not None}}

    def reset(self) -> None:
        """Every step is a query of its own: there is no conversation state to clear."""

    def step(self, text: str) -> dict[str, Any]:
        request = {
            "question": text,
            "top_k": int(self.settings.get("top_k") or 5),
            "mode": self.settings.get("mode"),
            "filters": dict(self.settings.get("filters") or {}),
        }
        options = {"synthesis": self.settings.get("synthesis") or "auto", "actor": "agent"}
        return step_result(answer(self.pack, request, options), request)


def step_result(response: dict[str, Any], request: dict[str, Any]) -> dict[str, Any]:
    """The ``agent/step`` result of one ECP query response."""
    context = "\n".join(citation_line(n, c) for n, c in enumerate(response["citations"], 1)) or "no citation"
    calls = [
        {
            "name": TOOL_NAME,
            "arguments": {
                "index_id": r["index_id"],
                "format": r.get("format"),
                "question": request["question"],
                "top_k": request["top_k"],
            },
            "result": {"status": r["status"], "hits": r.get("hits", 0)},
        }
        for r in response["retrieval"]["indexes"]
        if not str(r.get("reason", "")).startswith("not used in mode")
    ]
    return {
        "status": "done",
        "public_output": response["answer"],
        "evaluation_context": context,
        "private_thought": context,
        "tool_calls": calls,
    }


def citation_line(number: int, citation: dict[str, Any]) -> str:
    loc = citation.get("loc") or {}
    where = citation.get("artifact_path") or citation.get("uri", "")
    if loc:
        where += f":{loc.get('start_line')}-{loc.get('end_line')}"
    revision = citation.get("revision") or {}
    ident = str(revision.get("commit") or revision.get("hash") or revision.get("query_hash") or "")[:12]
    return f"[{number}] {where} (source {citation['source_id']}" + (f", revision {ident})" if ident else ")")
