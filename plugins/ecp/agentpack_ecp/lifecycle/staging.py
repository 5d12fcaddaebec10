"""Evaluating a staged build before it is published.

``with staged_indexes(root, "expert/context/.staging/<run>"):`` makes
``manifest.load_pack(root)`` point every index entry at its staged copy
(``<staging>/<entry path>``, where ``build_pack(out_dir=...)`` wrote it), and
gives ``query`` a private index cache for the duration, so the evals query the
staged indexes while every other caller (other threads of an MCP server) keeps
being served the published ones. Sources, suites and summaries stay the pack's.
"""

from __future__ import annotations

import contextvars
import copy
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any


@dataclass
class StagedView:
    root: Path
    staging: str
    """The staging directory, relative to the pack root (POSIX)."""
    cache: dict[Any, Any] = field(default_factory=dict)


_ACTIVE: contextvars.ContextVar[StagedView | None] = contextvars.ContextVar("ecp_staged_view", default=None)


@contextmanager
def staged_indexes(root: Path, staging: str) -> Iterator[StagedView]:
    view = StagedView(Path(root).resolve(), staging.rstrip("/"))
    token = _ACTIVE.set(view)
    try:
        yield view
    finally:
        _ACTIVE.reset(token)
        view.cache.clear()


def active(root: Path) -> StagedView | None:
    """The staged view in force for the pack at ``root`` in this context, if any."""
    view = _ACTIVE.get()
    return view if view is not None and view.root == Path(root).resolve() else None


def redirect(root: Path, data: Any) -> Any:
    """``data`` (EXPERT.yaml) with index paths moved into the active staging directory, if any."""
    view = active(root)
    if view is None or not isinstance(data, dict):
        return data
    data = copy.deepcopy(data)
    indexes = ((data.get("context") or {}).get("artifacts") or {}).get("indexes")
    for entry in indexes if isinstance(indexes, list) else []:
        if not isinstance(entry, dict):
            continue
        for key in ("path", "descriptor"):
            if isinstance(entry.get(key), str) and entry[key]:
                entry[key] = f"{view.staging}/{PurePosixPath(entry[key]).as_posix()}"
    return data


def cache_for(root: Path, default: dict[Any, Any]) -> dict[Any, Any]:
    """The index cache ``query`` should use for ``root``: the staged view's own, else ``default``."""
    view = active(root)
    return view.cache if view is not None else default
