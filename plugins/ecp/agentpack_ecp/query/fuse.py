"""Weighted reciprocal-rank fusion of the rankings of several indexes.

Rank fusion rather than a sum of scores: BM25, FTS5 and cosine scores live on different scales, and
ranks need no calibration. A ranking counts ``FUSION_WEIGHTS[format]`` (1 unless listed): decided on
the tuning half of ``bench/ecp_retrieval.py``, where the vector side is the weaker ranker.
"""

from __future__ import annotations

from .retrieve import Hit

RRF_K = 60
FUSION_FLOOR = 0.1
FUSION_WEIGHTS = {"vector-index-v1": 0.25}


def fuse(rankings: list[list[Hit]], top_k: int, weights: list[float] | None = None) -> list[Hit]:
    """Reciprocal-rank fusion (k=60, ranking ``i`` weighted ``weights[i]``, default 1) of each ranking's
    confident hits; one ranking passes through as is.

    A hit scoring under ``FUSION_FLOOR`` of its own ranking's best score is left out of the fusion:
    otherwise a weak tail that several indexes share outranks one index's clear best answer.
    """
    weighted = [(r, w) for r, w in zip(rankings, weights or [1.0] * len(rankings), strict=True) if r]
    if len(weighted) == 1:
        return weighted[0][0][:top_k]
    scores: dict[str, float] = {}
    first: dict[str, Hit] = {}
    ranks: dict[str, dict[str, int]] = {}
    for ranking, weight in weighted:
        confident = [h for h in ranking if h.score >= FUSION_FLOOR * ranking[0].score]
        for rank, hit in enumerate(confident, 1):
            scores[hit.key] = scores.get(hit.key, 0.0) + weight / (RRF_K + rank)
            first.setdefault(hit.key, hit)
            ranks.setdefault(hit.key, {})[hit.index_id] = rank
    order = sorted(scores, key=lambda k: (-scores[k], k))[:top_k]
    return [
        Hit(
            k,
            round(scores[k], 6),
            h.index_id,
            h.record,
            h.text,
            h.source,
            h.load,
            dict(h.features, fused_ranks=ranks[k]),
        )
        for k in order
        for h in [first[k]]
    ]
