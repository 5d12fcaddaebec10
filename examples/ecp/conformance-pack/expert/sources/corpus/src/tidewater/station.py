"""Stations and their harmonic constituents."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

DATA_DIR = Path(__file__).parent / "stations"


@dataclass(frozen=True)
class Constituent:
    """One tidal component: amplitude (metres), phase (degrees) and speed (degrees per hour)."""

    name: str
    amplitude: float
    phase: float
    speed: float


@dataclass
class Station:
    """A coastal station: its name, mean level and constituents."""

    name: str
    mean_level: float
    constituents: list[Constituent] = field(default_factory=list)

    @classmethod
    def load(cls, name: str) -> "Station":
        """Load a station from the bundled JSON data files."""
        data = json.loads((DATA_DIR / f"{name}.json").read_text())
        parts = [Constituent(**c) for c in data["constituents"]]
        return cls(name=name, mean_level=data["mean_level"], constituents=parts)

    def fingerprint(self) -> str:
        """SHA-256 over the constituents; the prediction cache is keyed by it."""
        blob = json.dumps([c.__dict__ for c in self.constituents], sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()
