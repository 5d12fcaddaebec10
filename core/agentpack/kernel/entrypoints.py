"""Entry points of one group, found by reading ``entry_points.txt`` files directly.

``importlib.metadata`` costs about 30 ms to import (email, zipfile, csv), most
of ``agentpack --help``'s budget. Plugins only need the group's entries, so we
scan ``sys.path`` for ``*.dist-info``/``*.egg-info`` folders ourselves, with
the same precedence: the first distribution of a name on ``sys.path`` wins.
A ``sys.path`` that holds zip archives falls back to ``importlib.metadata``.
"""

from __future__ import annotations

import importlib
import os
import re
import sys
from typing import Any, NamedTuple

_SUFFIXES = (".dist-info", ".egg-info")


class EntryPoint(NamedTuple):
    name: str
    value: str
    distribution: str | None
    version: str | None

    def load(self) -> Any:
        module, _, attr = self.value.partition(":")
        obj: Any = importlib.import_module(module.strip())
        for part in filter(None, attr.strip().split(".")):
            obj = getattr(obj, part)
        return obj


def _normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _parse(text: str, group: str) -> list[tuple[str, str]]:
    entries, current = [], None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = line[1:-1].strip()
        elif current == group and "=" in line:
            name, _, value = line.partition("=")
            entries.append((name.strip(), value.strip()))
    return entries


def _from_metadata(group: str) -> list[EntryPoint]:
    from importlib.metadata import entry_points

    return [
        EntryPoint(
            ep.name, ep.value, ep.dist.metadata["Name"] if ep.dist else None, ep.dist.version if ep.dist else None
        )
        for ep in entry_points(group=group)
    ]


def entry_points(group: str) -> list[EntryPoint]:
    """Every entry point of ``group``, sorted by name."""
    if any(os.path.isfile(p) for p in sys.path if p):
        return sorted(_from_metadata(group), key=lambda e: e.name)
    seen: set[str] = set()
    found: list[EntryPoint] = []
    for folder in sys.path:
        try:
            names = sorted(os.listdir(folder or "."))
        except OSError:
            continue
        for entry in names:
            if not entry.endswith(_SUFFIXES):
                continue
            stem = entry.rsplit(".", 1)[0]
            dist, _, rest = stem.partition("-")
            version = rest.split("-", 1)[0] or None
            key = _normalize(dist)
            if key in seen:
                continue
            seen.add(key)
            try:
                with open(os.path.join(folder or ".", entry, "entry_points.txt"), encoding="utf-8") as handle:
                    text = handle.read()
            except OSError:
                continue
            found += [EntryPoint(n, v, key, version) for n, v in _parse(text, group)]
    return sorted(found, key=lambda e: e.name)
