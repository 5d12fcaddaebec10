"""The run store: every evaluation run recorded in SQLite, compared, trended and exported.

Public API for plugins: ``record_run(...)`` records a run (a command calls it
after writing its reports); ``build_run(...)`` makes the run without storing it,
``write_run_report(run, path)`` writes it as ``--report FILE`` (the suffix picks
the format; ``.html`` is the viewer's run page) and ``save_run(run, ...)``
stores it; ``open_store(path)`` reads runs back, ``Run`` and
``Case`` are what the store returns, and ``StoreError`` is raised for a store
that cannot be opened, is damaged or is busy. Importing this package is
light: ``sqlite3`` and the rest load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Case, Run
    from .record import build_run, record_run, save_run
    from .reportfile import write_run_report
    from .store import RunStore, StoreError, default_store_path, open_store

_EXPORTS = {
    "Case": "model",
    "Run": "model",
    "build_run": "record",
    "record_run": "record",
    "save_run": "record",
    "write_run_report": "reportfile",
    "RunStore": "store",
    "StoreError": "store",
    "default_store_path": "store",
    "open_store": "store",
}

__all__ = [
    "Case",
    "Run",
    "RunStore",
    "StoreError",
    "build_run",
    "default_store_path",
    "open_store",
    "record_run",
    "save_run",
    "write_run_report",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentpack.runs' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
