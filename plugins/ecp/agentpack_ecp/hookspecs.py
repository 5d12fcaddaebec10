"""The ECP plugin's own hooks, added to the manager through ``agentpack_add_hookspecs``.

Any plugin may implement them (with ``agentpack.hookimpl``):

* ``agentpack_ecp_register_rerankers`` -- rerank stages a query may name (``--option rerank=NAME``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentpack.kernel.hookspecs import hookspec

if TYPE_CHECKING:
    from .query.rerank import Reranker


@hookspec
def agentpack_ecp_register_rerankers(register: Callable[[Reranker], None]) -> None:
    """Register rerankers: ``register(Reranker(name, score))``.

    ``score(question, texts) -> list[float]`` scores the texts of the fused hits (at most
    ``RERANK_DEPTH``, best first); the hits are re-ordered by it, ties kept in fused order.
    """
