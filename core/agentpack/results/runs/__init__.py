"""The run store: every evaluation run recorded in SQLite, compared, trended and exported.

Public API for plugins: ``record_run(...)`` records a run (a command calls it
after writing its reports); ``build_run(...)`` makes the run without storing it and ``save_run(run, ...)``
stores it (``agentpack.cli.reportfile.write_run_report`` writes it as ``--report FILE``);
``open_store(path)`` reads runs back, ``Run`` and
``Case`` are what the store returns, and ``StoreError`` is raised for a store
that cannot be opened, is damaged or is busy. Importing this package is
light: ``sqlite3`` and the rest load on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentpack.kernel.runtypes import Case, Run
    from agentpack.results.runs.record import build_run, record_run, save_run
    from agentpack.results.runs.store import RunStore, StoreError, default_store_path, open_store

_EXPORTS = {
    "Case": "agentpack.kernel.runtypes",
    "Run": "agentpack.kernel.runtypes",
    "build_run": "agentpack.results.runs.record",
    "record_run": "agentpack.results.runs.record",
    "save_run": "agentpack.results.runs.record",
    "RunStore": "agentpack.results.runs.store",
    "StoreError": "agentpack.results.runs.store",
    "default_store_path": "agentpack.results.runs.store",
    "open_store": "agentpack.results.runs.store",
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
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'agentpack.results.runs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
