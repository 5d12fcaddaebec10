"""The run store: every evaluation run recorded in SQLite, compared, trended and exported.

Public API for plugins: ``record_run(...)`` records a run (a command calls it
after writing its reports), ``open_store(path)`` reads runs back, ``Run`` and
``Case`` are what the store returns, and ``StoreError`` is raised for a store
that cannot be opened, is damaged or is busy. Importing this package is
light: ``sqlite3`` and the rest load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .model import Case, Run
    from .record import record_run
    from .store import RunStore, StoreError, default_store_path, open_store

_EXPORTS = {
    "Case": "model",
    "Run": "model",
    "record_run": "record",
    "RunStore": "store",
    "StoreError": "store",
    "default_store_path": "store",
    "open_store": "store",
}

__all__ = ["Case", "Run", "RunStore", "StoreError", "default_store_path", "open_store", "record_run"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentpack.runs' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value
