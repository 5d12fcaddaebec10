"""The Python API: load, validate, query, evaluate and report on packs of every installed format.

``import agentpack`` exposes these functions and the result types (``docs/python-api.md``)::

    pack = agentpack.load("my-expert")
    agentpack.validate(pack).ok
    agentpack.query(pack, "How are passwords hashed?", top_k=3).citations
    print(agentpack.report(agentpack.evaluate(pack), format="junit"))

Every function uses the process-wide host (the installed plugins, loaded once); pass ``host=`` to use
another. Errors a user can act on are ``agentpack.AgentpackError`` (``PackError`` for a pack that cannot
be read), with the file and line. Names outside this module and the result types are internal and may move.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentpack.kernel.host import Host
    from agentpack.kernel.invocation import InvokeResult
    from agentpack.kernel.models import EvalReport, Report, ValidationItem
    from agentpack.kernel.packtypes import Pack, QueryResponse
    from agentpack.kernel.registry import FormatInfo


def _host(host: Host | None) -> Host:
    if host is not None:
        return host
    from agentpack.kernel.plugins import get_host

    return get_host()


def _pack(pack: Pack | str | Path, host: Host, format: str | None = None) -> Pack:
    from agentpack.kernel.packtypes import Pack

    return pack if isinstance(pack, Pack) else host.load(pack, format)


def formats(*, host: Host | None = None) -> dict[str, FormatInfo]:
    """The installed formats by name (each ``FormatInfo`` names its plugin)."""
    return _host(host).formats()


def load(path: str | Path, *, format: str | None = None, host: Host | None = None) -> Pack:
    """Load ``path`` as a pack, detecting its format unless ``format`` names one.

    Raises ``PackError`` (file, line, hint) when no installed format reads it or it cannot be read.
    """
    return _host(host).load(path, format)


def validate(
    pack: Pack | str | Path, *, strict: bool = False, format: str | None = None, host: Host | None = None
) -> ValidationItem:
    """Check ``pack`` (a loaded pack or a path) against its format's rules and the cross-cutting ones.

    The result has ``ok`` (no error), ``format`` and ``findings`` (severity, code, message, file, line).
    A path that cannot be loaded gives one ``PACK`` error finding, as ``agentpack validate`` does.
    """
    from agentpack.io.errors import PackError
    from agentpack.kernel.models import Finding, ValidationItem

    h = _host(host)
    try:
        loaded = _pack(pack, h, format)
    except PackError as exc:
        finding = Finding.error(
            "PACK", exc.message, file=exc.file or str(pack), line=exc.line, column=exc.column, hint=exc.hint
        )
        return ValidationItem(path=str(pack), findings=[finding])
    return ValidationItem(path=str(loaded.path), format=loaded.format, findings=h.validate(loaded, strict=strict))


def query(
    pack: Pack | str | Path,
    question: str,
    *,
    top_k: int = 5,
    mode: str | None = None,
    filters: Mapping[str, str] | None = None,
    host: Host | None = None,
    **options: Any,
) -> QueryResponse:
    """Ask ``pack`` a question; the answer carries its ``citations``.

    ``mode`` and the keyword ``options`` are the format's own (ECP: ``mode="fts"``...).
    """
    from agentpack.kernel.packtypes import QueryRequest

    h = _host(host)
    request = QueryRequest(question=question, top_k=top_k, mode=mode, filters=dict(filters or {}), options=options)
    return h.query(_pack(pack, h), request)


def evaluate(
    pack: Pack | str | Path,
    *,
    suite: str | None = None,
    filter: str | None = None,
    jobs: int = 1,
    host: Host | None = None,
    **options: Any,
) -> EvalReport:
    """Run the evaluations of ``pack``; the result has ``ok``, ``totals`` and ``suites`` of cases.

    Keyword ``options`` are what ``agentpack eval --option KEY=VALUE`` passes to the format.
    """
    from agentpack.kernel.models import EvalOptions

    h = _host(host)
    return h.evaluate(_pack(pack, h), EvalOptions(suite=suite, filter=filter, jobs=jobs, options=options))


def invoke(
    pack: Pack | str | Path,
    input: Any,
    *,
    workspace: str | Path | None = None,
    host: Host | None = None,
    **options: Any,
) -> InvokeResult:
    """Run ``pack`` once with the JSON value ``input`` (a skill.yaml skill, under its declared sandbox).

    The result has ``ok``, ``status``, ``output`` and located ``errors``; ``workspace`` is the folder the run
    may read and write as it declared (``None``: a fresh empty one). Keyword ``options`` are the format's own.
    """
    from agentpack.kernel.invocation import InvokeRequest

    h = _host(host)
    request = InvokeRequest(input=input, workspace=Path(workspace) if workspace else None, options=options)
    return h.invoke(_pack(pack, h), request)


def report(
    results: ValidationItem | EvalReport | Report | Iterable[ValidationItem | EvalReport],
    *,
    format: str = "text",
    host: Host | None = None,
) -> str:
    """Render results as ``agentpack -o FORMAT`` would: ``text``, ``json``, ``junit``, ``sarif``, ``html``..."""
    from agentpack.kernel.models import EvalReport, Report, ValidationItem
    from agentpack.kernel.version import __version__

    if isinstance(results, Report):
        envelope = results
    else:
        listed = [results] if isinstance(results, ValidationItem | EvalReport) else list(results)
        items = [r for r in listed if isinstance(r, ValidationItem)]
        evaluations = [r for r in listed if isinstance(r, EvalReport)]
        if len(items) + len(evaluations) != len(listed):
            raise TypeError("report() takes what validate() and evaluate() return, or a Report")
        envelope = Report(command="eval" if evaluations else "validate", items=items, evaluations=evaluations)
    envelope.tool.version = __version__
    return _host(host).reporter(format).render(envelope)


__all__ = ["evaluate", "formats", "invoke", "load", "query", "report", "validate"]
