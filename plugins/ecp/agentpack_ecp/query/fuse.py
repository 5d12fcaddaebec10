"""Reciprocal-rank fusion of the rankings of several indexes."""

from __future__ import annotations

from .retrieve import Hit

RRF_K = 60
FUSION_FLOOR = 0.1


def fuse(rankings: list[list[Hit]], top_k: int) -> list[Hit]:
    """Reciprocal-rank fusion (k=60) of each ranking's confident hits; one ranking passes through as is.

    A hit scoring under ``FUSION_FLOOR`` of its own ranking's best score is left out of the fusion:
    otherwise a weak tail that several indexes share outranks one index's clear best answer.
    """
    rankings = [r for r in rankings if r]
    if len(rankings) == 1:
        return rankings[0][:top_k]
    rankings = [[h for h in r if h.score >= FUSION_FLOOR * r[0].score] for r in rankings]
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    for ranking in rankings:
        for rank, hit in enumerate(ranking, 1):
            scores[hit.key] = scores.get(hit.key, 0.0) + 1.0 / (RRF_K + rank)
            first.setdefault(hit.key, hit)
    order = sorted(scores, key=lambda k: (-scores[k], k))[:top_k]
    return [
        Hit(k, round(scores[k], 6), first[k].index_id, first[k].record, first[k].text, first[k].source, first[k].load)
        for k in order
    ]
