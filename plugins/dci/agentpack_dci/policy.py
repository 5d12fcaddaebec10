"""DependentPolicy: defaults per mode, consumer ``Pol(...)``, runtime overrides, provider hints.

Precedence: runtime/user override > consumer ``Pol(...)`` > defaults. Provider
hints only tighten, and only the hinting provider's own gates (see docs/dci.md).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, NamedTuple

from agentpack.io.errors import AgentpackError

THRESHOLDS = ("min-total-score", "min-contract-score", "min-required-coverage")
KEYS = (*THRESHOLDS, "max-candidates", "selection-mode", "max-providers", "on-missing-required")
SELECTION_MODES = ("single", "cover")
ON_MISSING = ("hard-fail", "offer-emulation", "auto-emulate")
STRICTNESS = {"hard-fail": 3, "offer-emulation": 2, "auto-emulate": 1}


class PolicyError(AgentpackError):
    """A policy key or value that is not allowed (message says what is expected)."""


def defaults(mode: str) -> dict[str, Any]:
    strict = mode == "strict"
    return {
        "min-total-score": 0.45,
        "min-contract-score": 0.30,
        "min-required-coverage": 1.00 if strict else 0.60,
        "max-candidates": 5,
        "selection-mode": "single",
        "max-providers": 3,
        "on-missing-required": "hard-fail" if strict else "offer-emulation",
    }


def parse_value(key: str, raw: str) -> Any:
    """The typed value of one policy entry; ``PolicyError`` when the key or value is not allowed."""
    if key not in KEYS:
        raise PolicyError(f"unknown policy key '{key}'; allowed: {', '.join(KEYS)}")
    raw = raw.strip()
    if key in THRESHOLDS:
        try:
            value = float(raw)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or not 0.0 <= value <= 1.0:
            raise PolicyError(f"'{key}' must be a number from 0 to 1, not '{raw}'")
        return value
    if key in ("max-candidates", "max-providers"):
        if not raw.isdigit() or int(raw) < 1:
            raise PolicyError(f"'{key}' must be an integer >= 1, not '{raw}'")
        return int(raw)
    choices = SELECTION_MODES if key == "selection-mode" else ON_MISSING
    if raw not in choices:
        raise PolicyError(f"'{key}' must be one of {', '.join(choices)}, not '{raw}'")
    return raw


def parse_pairs(pairs: Iterable[tuple[str, str]]) -> dict[str, Any]:
    return {key: parse_value(key, value) for key, value in pairs}


class EffectivePolicy(NamedTuple):
    defaults: dict[str, Any]
    effective: dict[str, Any]
    source: str
    """``defaults``, ``consumer``, ``runtime`` or ``consumer+runtime``: who changed anything."""


def resolve_policy(mode: str, consumer: dict[str, Any], runtime: dict[str, Any]) -> EffectivePolicy:
    base = defaults(mode)
    effective = {**base, **consumer, **runtime}
    changed = [name for name, layer in (("consumer", consumer), ("runtime", runtime)) if layer]
    return EffectivePolicy(base, effective, "+".join(changed) or "defaults")


class Hints(NamedTuple):
    """A provider's ``Pol(...)`` hints: what tightened its own gates, and what was ignored and why."""

    thresholds: dict[str, float]
    on_missing: str | None
    applied: dict[str, Any]
    ignored: dict[str, str]


NO_HINTS = Hints({}, None, {}, {})


def provider_hints(pairs: tuple[tuple[str, str], ...], effective: dict[str, Any]) -> Hints:
    """Keep only hints that tighten: higher thresholds, stricter ``on-missing-required``.

    ``max-candidates``, ``max-providers`` and ``selection-mode`` describe the
    consumer's run as a whole; a provider's hint on them is ignored.
    """
    if not pairs:
        return NO_HINTS
    thresholds: dict[str, float] = {}
    applied: dict[str, Any] = {}
    ignored: dict[str, str] = {}
    on_missing = None
    for key, raw in pairs:
        try:
            value = parse_value(key, raw)
        except PolicyError as exc:
            ignored[key] = str(exc)
            continue
        if key in THRESHOLDS:
            if value > effective[key]:
                thresholds[key] = applied[key] = value
            else:
                ignored[key] = "does not tighten the effective policy"
        elif key == "on-missing-required":
            if STRICTNESS[value] > STRICTNESS[effective[key]]:
                on_missing = applied[key] = value
            else:
                ignored[key] = "does not tighten the effective policy"
        else:
            ignored[key] = "run-level setting; providers cannot change it"
    return Hints(thresholds, on_missing, applied, ignored)
