"""Tide height prediction: the harmonic sum."""

from __future__ import annotations

import math
from datetime import datetime, timedelta, timezone

from .station import Station

EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)


def _hours_since_epoch(when: datetime) -> float:
    return (when - EPOCH).total_seconds() / 3600.0


def predict_height(station: Station, when: str | datetime) -> float:
    """Predicted height at ``when``: mean level plus the sum of every constituent's cosine term."""
    if isinstance(when, str):
        when = datetime.fromisoformat(when.replace("Z", "+00:00"))
    hours = _hours_since_epoch(when)
    height = station.mean_level
    for c in station.constituents:
        height += c.amplitude * math.cos(math.radians(c.speed * hours - c.phase))
    return round(height, 3)


def predict_series(station: Station, start: datetime, hours: int, step_minutes: int = 10) -> list[float]:
    """Heights from ``start`` every ``step_minutes`` for ``hours`` hours."""
    steps = hours * 60 // step_minutes
    return [predict_height(station, start + timedelta(minutes=i * step_minutes)) for i in range(steps)]
