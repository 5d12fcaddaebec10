"""The built-in reporters: text, json, junit, sarif, github, html; and the ``html`` run exporter (a run's
viewer page as a file), which lives here because it draws with the viewer, as the HTML reporter does."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, TextIO

from agentpack.kernel.hookspecs import hookimpl
from agentpack.kernel.registry import Reporter, RunExporter, SchemaInfo, register_schema_folder

if TYPE_CHECKING:
    from agentpack.kernel.models import Report
    from agentpack.kernel.runtypes import Run

BUILTIN = (  # name, description, module, suffix; the text reporter renders a LazyReport as it is
    ("text", "findings and results for people", "text", ".txt"),
    ("json", "the versioned JSON envelope (schema_version 1)", "jsonfmt", ".json"),
    ("junit", "JUnit XML for CI test tabs", "junit", ".xml"),
    ("sarif", "SARIF 2.1.0 for code scanning", "sarif", ".sarif"),
    ("github", "GitHub Actions annotations", "github", ".txt"),
    ("html", "a self-contained HTML report", "html", ".html"),
)


def _lazy(module: str) -> Callable[[Report], str]:
    def render(report: Report) -> str:
        text: str = importlib.import_module(f"agentpack.results.reporters.{module}").render(report)
        return text

    return render


@hookimpl
def agentpack_register_reporters(register: Callable[[Reporter], None]) -> None:
    for name, description, module, suffix in BUILTIN:
        lazy = name == "text"
        register(Reporter(name=name, description=description, render=_lazy(module), suffix=suffix, lazy=lazy))


def _export_html(runs: Iterable[Run], out: TextIO, options: dict[str, str]) -> None:
    importlib.import_module("agentpack.results.reporters.html").export_run(runs, out, options)


@hookimpl
def agentpack_register_run_exporters(register: Callable[[RunExporter], None]) -> None:
    register(
        RunExporter(
            name="html",
            description="one run's page as agentpack view shows it, a self-contained file",
            export=_export_html,
            suffix=".html",
        )
    )


@hookimpl
def agentpack_register_schemas(register: Callable[[SchemaInfo], None]) -> None:
    """The report envelope every reporter renders and ``-o json`` prints."""
    from pathlib import Path

    register_schema_folder(register, Path(__file__).parents[2] / "kernel" / "schemas", "agentpack")
