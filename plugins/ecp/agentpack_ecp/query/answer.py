"""One query as a user or service asks it: optional model synthesis (``synthesis.py``) and a query
log record (``pack/logs.py``) around ``response.query_pack``. ``agentpack query`` and ``expert_query``
both answer through here, so every path obeys the same security and logging rules."""

from __future__ import annotations

from typing import Any

from agentpack.io.clock import SYSTEM_CLOCK, Clock
from agentpack.io.console import note
from agentpack.io.errors import AgentpackError

from ..pack.logs import logger_for
from ..pack.manifest import ExpertPack
from .rerank import Reranker
from .response import query_pack
from .synthesis import query_synthesizer

SYNTHESIS_MODES = ("auto", "local", "llm")


def answer(
    pack: ExpertPack,
    request: dict[str, Any],
    options: dict[str, Any] | None = None,
    *,
    clock: Clock = SYSTEM_CLOCK,
    rerankers: dict[str, Reranker] | None = None,
) -> dict[str, Any]:
    """Answer ``request`` from the loaded ``ExpertPack``.

    ``options``: ``synthesis`` (``auto``: a configured provider when the pack
    allows it, ``local``, ``llm``) and ``actor`` (who asks, for the log). ``rerankers``: those a
    ``request["rerank"]`` may name.
    """
    options = options or {}
    mode = str(options.get("synthesis") or "auto")
    if mode not in SYNTHESIS_MODES:
        raise AgentpackError(f"unknown synthesis mode '{mode}'; use one of: {', '.join(SYNTHESIS_MODES)}")
    started = clock.monotonic()
    synthesize = query_synthesizer(pack.security, mode=mode)
    response = query_pack(pack, request, clock=clock, synthesize=synthesize, rerankers=rerankers)
    logger = logger_for(pack.root, pack.manifest, pack.policy, clock=clock)
    try:
        logger.query(
            str(request.get("question") or ""),
            response,
            who=str(options.get("actor") or "user"),
            request={
                "top_k": request.get("top_k"),
                "mode": request.get("mode"),
                "filters": request.get("filters") or {},
            },
            duration_ms=(clock.monotonic() - started) * 1000,
        )
    except OSError as exc:  # a read-only pack still answers
        note(f"warning: could not write the query log: {exc}")
    return response
