"""Self-contained HTML files: the viewer's stylesheet and script inline, nothing fetched.

``document`` wraps a body built with ``agentpack.results.viewer.html``; ``run_document`` is a run's page as
``agentpack view`` shows it (summary, charts, the plugins' views for its format, the cases failures
first), without the links that need the viewer. Reports written by commands use these, so the file
and the viewer show a run the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from agentpack.results.viewer.assets import CSS, JS
from agentpack.results.viewer.html import esc

if TYPE_CHECKING:
    from agentpack.kernel.registry import RunView
    from agentpack.kernel.runtypes import Run

REPORT_CSS = "body{margin:1.5rem 2rem;max-width:1200px}"


def document(title: str, body: Any) -> str:
    """An HTML file of its own: ``body`` (an ``Html`` fragment, or text to escape) with the CSS and script inline."""
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        '<meta name=viewport content="width=device-width,initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}{REPORT_CSS}</style></head>"
        f"<body>{esc(body)}<script>{JS}</script></body></html>\n"
    )


def run_document(run: Run, views: Sequence[RunView] = ()) -> str:
    """``run`` as a self-contained page: what ``agentpack view`` shows at ``/runs/ID``."""
    from agentpack.results.viewer.pages import run_page

    return document(f"agentpack {run.command} report", run_page(run, views, None, standalone=True))
