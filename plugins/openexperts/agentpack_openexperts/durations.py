"""Human durations (``30s``, ``5m``, ``2h``, ``1h30m``, ``250ms``) to seconds."""

from __future__ import annotations

import re

from agentpack.io.errors import AgentpackError

UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0, "w": 604800.0}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|s|m|h|d|w)")
_WHOLE = re.compile(r"^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d|w))+$")


class DurationError(AgentpackError, ValueError):
    """A duration string that does not follow the grammar (a ``ValueError`` too, for callers that parse values)."""


def parse_duration(text: object) -> float:
    """Seconds in ``text``; raise ``DurationError`` naming the expected form."""
    if not isinstance(text, str) or not _WHOLE.match(text.strip()):
        raise DurationError(
            f"{text!r} is not a duration; expected a number and a unit (ms, s, m, h, d, w), "
            "e.g. '30s', '5m', '2h' or '1h30m'"
        )
    return sum(float(n) * UNITS[u] for n, u in _PART.findall(text.strip()))
