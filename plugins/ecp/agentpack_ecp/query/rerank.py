"""The optional rerank stage: a registered scorer re-orders the fused hits before the answer is built."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from agentpack.io.errors import AgentpackError

from .retrieve import Hit

RERANK_DEPTH = 20
"""How many fused hits a reranker sees (the rest keep their place after them)."""


class Reranker(NamedTuple):
    name: str
    score: Callable[[str, list[str]], list[float]]


def registered(host: Any) -> dict[str, Reranker]:
    """The rerankers the plugins of ``host`` register, by name."""
    found: dict[str, Reranker] = {}
    host.pm.hook.agentpack_ecp_register_rerankers(register=lambda r: found.setdefault(r.name, r))
    return found


def rerank(question: str, hits: list[Hit], name: str, rerankers: dict[str, Reranker]) -> list[Hit]:
    """``hits`` re-ordered by the reranker ``name`` (an ``AgentpackError`` when none has that name)."""
    reranker = rerankers.get(name)
    if reranker is None:
        known = ", ".join(sorted(rerankers)) or "none is registered"
        raise AgentpackError(f"unknown reranker '{name}' ({known})")
    head, tail = hits[:RERANK_DEPTH], hits[RERANK_DEPTH:]
    scores = reranker.score(question, [h.get_text() or "" for h in head])
    if len(scores) != len(head):
        raise AgentpackError(f"reranker '{name}' returned {len(scores)} scores for {len(head)} hits")
    order = sorted(range(len(head)), key=lambda i: (-float(scores[i]), i))
    return [head[i] for i in order] + tail
