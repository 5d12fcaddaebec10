"""The lifecycle state of a pack (``expert/context/.lifecycle/state.json``), written atomically.

It records published generations (for rollback), the last refresh, the last
eval results and the time of the last full rebuild; ``agentpack ecp status``
and ``expert_status`` read it.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

from agentpack.io.fsutil import atomic_write_json

from ..pack import layout
from ..pack.files import read_json_state

MAX_GENERATIONS = 200


def read_json(path: Path) -> dict[str, Any] | None:
    data = read_json_state(
        path, problem="unreadable lifecycle file", hint="delete it if the pack's lifecycle state can be rebuilt"
    )
    return data if isinstance(data, dict) else None


def load(root: Path) -> dict[str, Any]:
    state = read_json(layout.state_path(root)) or {}
    state.setdefault("generations", [])
    return state


def trimmed(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` keeping the last ``MAX_GENERATIONS`` generations (what ``save`` writes)."""
    state["generations"] = state.get("generations", [])[-MAX_GENERATIONS:]
    return state


def save(root: Path, state: dict[str, Any]) -> None:
    atomic_write_json(layout.state_path(root), trimmed(state))


def update(root: Path, **fields: Any) -> dict[str, Any]:
    state = load(root)
    state.update(fields)
    save(root, state)
    return state


def parse_time(value: object) -> datetime | None:
    """An ISO 8601 time as the state and build records write it (``...Z``), or ``None``."""
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
