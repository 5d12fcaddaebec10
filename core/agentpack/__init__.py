"""agentpack: load, validate, query, evaluate and report on packaged-agent formats.

The Python API (``docs/python-api.md``)::

    import agentpack

    pack = agentpack.load("my-expert")
    print(agentpack.validate(pack).ok)
    answer = agentpack.query(pack, "How are passwords hashed?", top_k=3)
    print(agentpack.report(agentpack.evaluate(pack), format="text"))

The functions come from ``agentpack.api``; the result types (``Pack``, ``ValidationItem``, ``Finding``,
``QueryResponse``, ``Citation``, ``EvalReport``, ``Report``) and the errors (``AgentpackError``,
``PackError``) are exported here too, with ``hookimpl`` for plugins and ``__version__``. Names
outside these are internal and may move. Importing ``agentpack`` loads no plugin and no heavy dependency:
each name is imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pluggy import HookimplMarker

    from agentpack.api import evaluate, formats, invoke, load, query, report, validate
    from agentpack.io.errors import AgentpackError, PackError
    from agentpack.kernel.invocation import InvokeResult
    from agentpack.kernel.models import EvalReport, Finding, Report, ValidationItem
    from agentpack.kernel.packtypes import Citation, Pack, QueryResponse

    hookimpl: HookimplMarker
    __version__: str

_LAZY = {
    "__version__": "agentpack.kernel.version",
    "hookimpl": "agentpack.kernel.hookspecs",
    **dict.fromkeys(("evaluate", "formats", "invoke", "load", "query", "report", "validate"), "agentpack.api"),
    "InvokeResult": "agentpack.kernel.invocation",
    **dict.fromkeys(("AgentpackError", "PackError"), "agentpack.io.errors"),
    **dict.fromkeys(("EvalReport", "Finding", "Report", "ValidationItem"), "agentpack.kernel.models"),
    **dict.fromkeys(("Citation", "Pack", "QueryResponse"), "agentpack.kernel.packtypes"),
}

__all__ = [
    "AgentpackError",
    "Citation",
    "EvalReport",
    "Finding",
    "InvokeResult",
    "Pack",
    "PackError",
    "QueryResponse",
    "Report",
    "ValidationItem",
    "__version__",
    "evaluate",
    "formats",
    "hookimpl",
    "invoke",
    "load",
    "query",
    "report",
    "validate",
]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'agentpack' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value
