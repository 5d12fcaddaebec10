"""The built-in run exporters: ``jsonl`` and ``csv`` (``html`` is registered with the HTML reporter)."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from agentpack.kernel.hookspecs import hookimpl
from agentpack.kernel.registry import RunExporter

BUILTIN = (
    ("jsonl", "one JSON object per run (with cases and report)", ".jsonl"),
    ("csv", "one row per run (--option rows=cases: one row per case)", ".csv"),
)


def _lazy(name: str) -> Callable[..., None]:
    def export(runs: Any, out: Any, options: dict[str, str]) -> None:
        getattr(importlib.import_module("agentpack.results.runs.export"), name)(runs, out, options)

    return export


@hookimpl
def agentpack_register_run_exporters(register: Callable[[RunExporter], None]) -> None:
    for name, description, suffix in BUILTIN:
        register(RunExporter(name=name, description=description, export=_lazy(f"export_{name}"), suffix=suffix))
