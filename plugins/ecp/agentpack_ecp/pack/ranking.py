"""A pack's ranking settings (EXPERT.yaml ``context.ranking``): file-role weights, the pack's own role
patterns, the per-file diversity weight. Read by the query's last ranking step (``query/ranking.py``)
and checked by ``agentpack validate`` (ECP190)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentpack.io.errors import AgentpackError

from .manifest import ExpertPack, as_dict

ROLE_WEIGHTS = {"test": 0.5, "example": 0.7, "generated": 0.5, "vendored": 0.6}
DIVERSITY = 0.5
"""Defaults, chosen before the held-out benchmark ran (``bench/ecp_heldout.py``) and not tuned on it."""


@dataclass(frozen=True)
class RankingSettings:
    """``context.ranking`` of a pack: role weights, extra path patterns per role, the diversity weight."""

    weights: dict[str, float] = field(default_factory=lambda: dict(ROLE_WEIGHTS))
    patterns: dict[str, tuple[str, ...]] = field(default_factory=dict)
    diversity: float = DIVERSITY


def ranking_settings(pack: ExpertPack) -> RankingSettings:
    """The pack's ranking settings over the defaults; a located error (EXPERT.yaml line, field) when malformed."""

    def fail(pointer: str, expected: str) -> AgentpackError:
        where = pack.where(pointer)
        return AgentpackError(f"{pointer}: expected {expected}", file=where["file"], line=where["line"])

    def weight(value: Any, pointer: str) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise fail(pointer, f"a number from 0 to 1, got {value!r}")
        return float(value)

    raw = as_dict(pack.manifest.get("context")).get("ranking")
    if raw is None:
        return RankingSettings()
    at = "/context/ranking"
    if not isinstance(raw, dict):
        raise fail(at, "a mapping (diversity, roles)")
    diversity = weight(raw["diversity"], f"{at}/diversity") if "diversity" in raw else DIVERSITY
    roles = raw.get("roles") or {}
    if not isinstance(roles, dict):
        raise fail(f"{at}/roles", "a mapping of role names to {weight, paths}")
    weights, patterns = dict(ROLE_WEIGHTS), {}
    for name, spec in roles.items():
        role = f"{at}/roles/{name}"
        if not isinstance(spec, dict):
            raise fail(role, "a mapping (weight, paths)")
        if "weight" in spec:
            weights[str(name)] = weight(spec["weight"], f"{role}/weight")
        elif str(name) not in weights:
            raise fail(role, "a weight (a role of the pack's own has no default)")
        paths = spec.get("paths") or []
        if not isinstance(paths, list) or not all(isinstance(p, str) and p for p in paths):
            raise fail(f"{role}/paths", "a list of path patterns")
        patterns[str(name)] = tuple(paths)
    return RankingSettings(weights, patterns, diversity)
